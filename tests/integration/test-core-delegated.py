#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezerd without root, over a subtree handed over as systemd's Delegate= does
(README, "Running without root (a delegated subtree)").

U = nobody.  The scratch root holds /d, made by root and given to U the way
Delegate= gives it: the directory, cgroup.procs, cgroup.subtree_control and
cgroup.threads chowned, not cgroup.freeze.  freezerd runs as U with
--cgroup-root=/d, so its API paths are relative to /d:

  /app        made by U (mkdir as U: every file of it is U's)
  /app/sub    made by U, two sleepers (in the leaf: a group with tasks of its
              own and an empty child can report "frozen 1" before its tasks are
              frozen, README "Kernel behaviour to know")
  /mixed      made by U, with the empty child /mixed/sub and a sleeper of
              root's in /mixed itself
  /mixedfuse  the same, root's task in it stuck on a FUSE mount that never
              answers (uninterruptible sleep)
  /mixedvfork the same, root's tests/vfork-hold in it: a vfork() parent in
              uninterruptible sleep and its child, asleep, not exec'd
  /mixedfork  the same, root's python stuck on FUSE, with a child it forked
              (a fork(), not a vfork()) that has not exec'd and stopped itself
              (SIGSTOP: counted frozen already, so that the kernel's early
              "frozen 1" stays, as it does for /mixedfuse); neither exec'd, so
              their memories have the same size, and only their resident
              pages tell them apart
  /rootgrp    made by root inside the subtree, a sleeper
  /self       made by U, where freezerd is moved for one check
  /big        made by U, with 1,024 empty groups below

The bus is a private dbus-daemon opened to other uids, so that U and root both
call over it; U also calls over freezerd's private socket.  Calls as U go through
freezectl run with setpriv.

Checks:
  * freezerd as U with the default runtime and state directories (/run/freezerd,
    /var/lib/freezerd) exits 1 at once, naming /run/freezerd and "Permission
    denied": there is no per-user default.
  * With its own directories: the private socket is U's, mode 0600.
  * As U, over the bus and over the private socket: freeze /app and /app/sub, the
    kernel frozen 1, thaw, frozen 0.  What Delegate= hands over is enough for
    the groups U makes: their cgroup.freeze is U's.
  * As U: freeze /mixed is confirmed well before its 8 s timeout, although
    freezerd as U cannot see where root's task in it sleeps (a group with tasks
    of its own and children, whose "frozen 1" freezerd checks against its own
    tasks where it can: test-core-own-tasks); the task is then in the trap.
  * As U: freeze /mixedfuse with a 1 s timeout fails with Timeout naming root's
    stuck task, although the kernel says "frozen 1" (session 28's build
    confirmed it: it took any hidden sleeping task at the kernel's word).
    Freeze /mixedvfork is confirmed well before its timeout: the vfork() parent,
    which the kernel counts frozen, is recognised by its child in the group.
    Freeze /mixedfork times out naming the stuck task: a child that has not
    exec'd does not make its parent a vfork() parent unless they share their
    memory (session 29's build took it for one, and confirmed the freeze).
  * As U: freeze /rootgrp fails with AccessDenied (its cgroup.freeze is root's),
    cgroup.freeze still 0.  As root: Failed, with the kernel's "Permission
    denied" (root may; freezerd as U cannot write root's file: it was
    AccessDenied, as if root might not), still 0 (test-fault-errnames).
  * As root: Freeze and Thaw of /app (U's) work.
  * As U, "/sp " (a trailing space) with "/sp /a" stuck on FUSE and frozen before,
    `freeze "/sp " --except="/sp /keep"` times out, no flag named: the note to a caller
    who is not root suggests 'freezectl tree '/sp '' (a shell word) and names "/sp " in
    double quotes in its words (it printed both bare).
  * Freeze of / (the delegated top, whose cgroup.freeze Delegate= leaves to
    root) is InvalidPath for both: freezerd never writes its root.
  * Another uid (daemon) cannot connect to the private socket.
  * freezerd moved into /self: U's freeze of /self is refused (InvalidArgs,
    "contains freezerd itself"); freezerd is moved back.
  * Pressure: freezerd as U lacks CAP_SYS_RESOURCE, so a 1 s window is refused
    to root too (InvalidArgs naming CAP_SYS_RESOURCE); a 2 s trigger on /app
    (whose memory.pressure is U's) and a system-wide one are armed; one on
    /rootgrp (whose memory.pressure is root's) fails with Failed (freezerd may not, not the caller) naming
    the file.
  * /big frozen and thawed as U (1,025 groups change, so the real-time writer is
    tried): done either way; where freezerd's RLIMIT_RTPRIO is 0 (U has no
    CAP_SYS_NICE) the log says once that real-time scheduling is refused.
  * freezerd --user as U without $XDG_RUNTIME_DIR: a usage error (exit 2) saying
    to give --runtime-dir.  With HOME and XDG_RUNTIME_DIR set (and no other XDG_
    variable), and no --config, --runtime-dir or --state-dir: its private socket
    is $XDG_RUNTIME_DIR/freezerd/private, it makes ~/.local/state/freezerd, it
    reads ~/.config/freezerd/freezerd.json (DefaultTimeoutUSec 7 s), and U
    freezes and thaws /app through it."""

import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ERROR_ACCESS_DENIED = 'org.freedesktop.DBus.Error.AccessDenied'
# What systemd's Delegate= chows besides the directory (cg_set_access(); later
# versions add memory.oom.group and memory.reclaim).  Not cgroup.freeze.
DELEGATE_FILES = ('cgroup.procs', 'cgroup.subtree_control', 'cgroup.threads')
BIG = 1024
CALL_USEC = 5 * 1000000
PF_FORKNOEXEC = 0x40  # include/linux/sched.h: forked, and has not exec'd since
# /mixed and /mixedvfork: a freeze taken at the kernel's word replies at once (0.1-0.2 s
# with freezectl's start, under ASan), one that waits for hidden tasks at FREEZE_TIMEOUT.
FREEZE_TIMEOUT = 8  # (within as_uid()'s 10 s for freezectl)
PROMPT = min(2.0 * ft.TIMEOUT_MULTIPLIER, FREEZE_TIMEOUT / 2)


def proc_stat(pid):
    """(state, ppid, flags, vsize, rss) from /proc/PID/stat (fields 3, 4, 9, 23, 24), or None
    if gone."""
    try:
        with open(f'/proc/{pid}/stat', 'rb') as f:
            fields = f.read().rsplit(b')', 1)[1].split()
    except OSError:
        return None
    return fields[0].decode(), int(fields[1]), int(fields[6]), int(fields[20]), int(fields[21])


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl', 'fuse')
    try:
        nobody = pwd.getpwnam('nobody')
    except KeyError:
        ft.skip('no user "nobody" to run freezerd as')
    uid, gid = nobody.pw_uid, nobody.pw_gid
    env = {k: v for k, v in os.environ.items() if k not in ('DBUS_SESSION_BUS_ADDRESS', 'DBUS_SYSTEM_BUS_ADDRESS')}

    def as_uid(u, g, *argv):
        return subprocess.run(['setpriv', f'--reuid={u}', f'--regid={g}', '--clear-groups', '--', *argv],
                              capture_output=True, text=True, timeout=ft.DEFAULT_TIMEOUT, env=env)

    def as_user(*argv):
        return as_uid(uid, gid, *argv)

    def user_ok(*argv):
        r = as_user(*argv)
        if r.returncode != 0:
            ft.fail(f'{" ".join(argv)} as nobody exited {r.returncode}: {r.stderr.strip()}')
        return r

    with ft.Scratch('core-delegated') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        top = sc.mkdir('/d')
        for p in [top] + [os.path.join(top, f) for f in DELEGATE_FILES]:
            os.chown(p, uid, gid)
        ft.check_equal(os.stat(os.path.join(top, 'cgroup.freeze')).st_uid, 0,
                       "the delegated top's cgroup.freeze stays root's, as with Delegate=")

        def mkdir_as_user(rel):
            user_ok('mkdir', sc.abspath(rel))
            ft.loop().watch(sc.abspath(rel, 'cgroup.events'))

        for g in ('/d/app', '/d/app/sub', '/d/mixed', '/d/mixed/sub', '/d/mixedfuse', '/d/mixedfuse/sub',
                  '/d/mixedvfork', '/d/mixedvfork/sub', '/d/mixedfork', '/d/mixedfork/sub', '/d/self', '/d/big',
                  '/d/sp ', '/d/sp /a', '/d/sp /keep'):
            mkdir_as_user(g)
        ft.check_equal(os.stat(sc.abspath('/d/app', 'cgroup.freeze')).st_uid, uid,
                       "a group nobody makes has nobody's cgroup.freeze")
        sc.spawn_sleepers('/d/app/sub', 2)
        sc.spawn_sleepers('/d/rootgrp', 1)
        mixed_sleeper = sc.spawn_sleepers('/d/mixed', 1)[0]
        stuck = fuse.spawn_stuck(sc, '/d/mixedfuse')
        vfork_parent = sc.spawn('/d/mixedvfork', [ft.VFORK_HOLD_BIN])
        # A parent stuck on FUSE with a child it forked that has not exec'd, as a prefork
        # server's parent has.
        fork_parent = fuse.spawn_stuck(sc, '/d/mixedfork', [sys.executable, '-c', f"""if True:
            import os, signal
            if os.fork() == 0:
                os.kill(os.getpid(), signal.SIGSTOP)
                os._exit(0)
            os.statvfs({fuse.mountpoint!r})"""])

        def fork_child_found():
            for p in sc.pids('/d/mixedfork'):
                st = proc_stat(p)
                if st and st[1] == fork_parent.pid and st[2] & PF_FORKNOEXEC:
                    return p
            return None
        fork_child = ft.wait_for(fork_child_found, what="the stuck python's child, forked and not exec'd", poll=0.005)
        ft.wait_for(lambda: (proc_stat(fork_child) or ('',))[0] == 'T', what=f'the child {fork_child} to stop',
                    poll=0.005)
        ps, cs = proc_stat(fork_parent.pid), proc_stat(fork_child)
        ft.check(ps[3] == cs[3] and ps[4] != cs[4], '/mixedfork: the parent and its forked child have memories of '
                 'the same size, but not the same resident pages', (ps, cs))

        def vfork_child_found():
            pids = [p for p in sc.pids('/d/mixedvfork') if p != vfork_parent.pid]
            st = ft.proc_state(vfork_parent.pid)
            return pids[0] if pids and st and st.state == 'D' else None
        vfork_child = ft.wait_for(vfork_child_found, what='vfork-hold\'s child, its parent in uninterruptible sleep',
                                  poll=0.005)
        bus.open_to_other_uids()

        # No runtime or state directory given: the defaults are root's.  (A --config= file
        # must exist: an empty object, readable by nobody.)
        with tempfile.NamedTemporaryFile('w', prefix=f'{ft.TMP_PREFIX}delegated-config-', suffix='.json') as cfg:
            cfg.write('{}\n')
            cfg.flush()
            os.chmod(cfg.name, 0o644)
            r = as_user(ft.FREEZERD_BIN, f'--address={bus.address}', f'--cgroup-root={top}', f'--config={cfg.name}')
        ft.check(r.returncode == 1 and '/run/freezerd' in r.stderr and 'Permission denied' in r.stderr,
                 'as nobody with the default directories: exit 1 naming /run/freezerd and "Permission denied"',
                 f'exit {r.returncode}: {r.stderr.strip()}')

        with ft.Daemon(bus, top, user=uid) as d:
            c = d.client
            private = os.path.join(d.runtime_dir, 'private')
            st = os.stat(private)
            ft.check(st.st_uid == uid and stat.S_IMODE(st.st_mode) == 0o600,
                     "the private socket is nobody's, mode 0600", f'uid {st.st_uid}, mode {st.st_mode:o}')

            # The user's own groups, over the bus and over the private socket.
            for where, opt in (('the bus', f'--address={bus.address}'), ('the private socket', f'--socket={private}')):
                for g in ('/app', '/app/sub'):
                    user_ok(ft.FREEZECTL_BIN, opt, 'freeze', g)
                    ft.check_equal(sc.read_events('/d' + g)['frozen'], 1, f'nobody froze {g} over {where}')
                    user_ok(ft.FREEZECTL_BIN, opt, 'thaw', g)
                    ft.check_equal(sc.read_events('/d' + g)['frozen'], 0, f'nobody thawed {g} over {where}')

            # A group of the user's with tasks of its own and a child, one of them root's, whose
            # wchan the kernel hides from freezerd as nobody: taken at the kernel's word, not
            # waited for until the timeout.
            t0 = time.monotonic()
            user_ok(ft.FREEZECTL_BIN, f'--socket={private}', 'freeze', f'--timeout={FREEZE_TIMEOUT}s', '/mixed')
            dt = time.monotonic() - t0
            ft.check(dt < PROMPT, f"nobody froze /mixed, whose own task is root's, without waiting for the timeout "
                     f'({dt * 1000:.0f} ms)')
            ft.check_equal(sc.read_events('/d/mixed')['frozen'], 1, 'the kernel says /mixed frozen')
            ft.wait_for(lambda: ft.task_frozen(ft.proc_state(mixed_sleeper.pid)),
                        timeout=5 * ft.TIMEOUT_MULTIPLIER, poll=0.002,
                        what=f"root's sleeper {mixed_sleeper.pid} of /mixed in the freezer trap")
            user_ok(ft.FREEZECTL_BIN, f'--socket={private}', 'thaw', '/mixed')
            ft.check_equal(sc.read_events('/d/mixed')['frozen'], 0, 'nobody thawed /mixed')

            # The same with root's task stuck on FUSE (uninterruptible sleep, which the freezer
            # cannot wake): the kernel says "frozen 1" for good, but the task is not frozen, and
            # the call times out naming it (the build before confirmed the freeze: it took a
            # hidden task asleep at the kernel's word whatever its sleep).
            t0 = time.monotonic()
            r = as_user(ft.FREEZECTL_BIN, f'--socket={private}', 'freeze', '--timeout=1s', '/mixedfuse')
            dt = time.monotonic() - t0
            ft.check(r.returncode != 0 and 'Timeout' in r.stderr and
                     f'Not frozen: task {stuck.pid} (stat) of /mixedfuse, in uninterruptible sleep (where, the kernel '
                     'does not show freezerd)' in r.stderr,
                     f"nobody's freeze of /mixedfuse, whose own task is root's and stuck on FUSE: a Timeout naming "
                     f'task {stuck.pid}, and saying that freezerd cannot see where it sleeps',
                     f'exit {r.returncode}: {r.stderr.strip()}')
            ft.check(dt >= 0.9, 'after the timeout (1 s)', f'{dt:.2f} s')
            ft.check_equal(sc.read_events('/d/mixedfuse')['frozen'], 1, 'the kernel says /mixedfuse frozen all the '
                           'same (its report ignores its own tasks once its child is frozen)')
            ft.check_equal(ft.proc_state(stuck.pid).state, 'D', f'task {stuck.pid} is still in uninterruptible sleep')
            user_ok(ft.FREEZECTL_BIN, f'--socket={private}', 'thaw', '/mixedfuse')

            # freeze --except timing out, its cover's flag set before: the note to a caller
            # who is not root names PATH as a shell word in its commands, with path_q() in
            # its words.
            fuse.spawn_stuck(sc, '/d/sp /a')
            user_ok(ft.FREEZECTL_BIN, f'--socket={private}', 'freeze', '--no-wait', '/sp /a')
            r = as_user(ft.FREEZECTL_BIN, f'--socket={private}', 'freeze', '/sp ', '--except=/sp /keep',
                        '--timeout=300ms')
            lines = r.stderr.split('\n')
            ft.check(r.returncode == 1 and len(lines) == 3 and 'Timeout' in lines[0],
                     'nobody\'s freeze --except of "/sp ", its cover frozen before: a Timeout, and a note', r)
            ft.check_equal(lines[1:], ["freezectl: note: the groups whose flags stay set (without --rollback) are "
                                       "not printed: 'freezectl tree '/sp '' shows them ('freezectl thaw' of those "
                                       'it shows frozen clears them: they are yours; a thaw --recursive of "/sp " '
                                       'is refused unless "/sp "\'s own flag is yours too)', ''],
                           '... the note names "/sp " as a shell word in its command, in double quotes in its words')
            user_ok(ft.FREEZECTL_BIN, f'--socket={private}', 'thaw', '--recursive', '/sp ')

            # A vfork() parent of root's, in uninterruptible sleep until its child execs (the
            # child sleeps instead): the kernel counts it frozen, and so does freezerd, seeing its
            # child, not yet exec'd, in the group.
            t0 = time.monotonic()
            user_ok(ft.FREEZECTL_BIN, f'--socket={private}', 'freeze', f'--timeout={FREEZE_TIMEOUT}s', '/mixedvfork')
            dt = time.monotonic() - t0
            ft.check(dt < PROMPT, f"nobody froze /mixedvfork, whose own tasks are root's vfork() parent and child, "
                     f'without waiting for the timeout ({dt * 1000:.0f} ms)')
            ft.check_equal(ft.proc_state(vfork_parent.pid).state, 'D', 'the vfork() parent is in uninterruptible '
                           'sleep')
            ft.wait_for(lambda: ft.task_frozen(ft.proc_state(vfork_child)),
                        timeout=5 * ft.TIMEOUT_MULTIPLIER, poll=0.002,
                        what=f'the vfork() child {vfork_child} in the freezer trap')
            user_ok(ft.FREEZECTL_BIN, f'--socket={private}', 'thaw', '/mixedvfork')

            # A task stuck on FUSE whose process forked a child that has not exec'd: not a vfork()
            # parent (their memories differ), so not frozen.
            r = as_user(ft.FREEZECTL_BIN, f'--socket={private}', 'freeze', '--timeout=1s', '/mixedfork')
            ft.check(r.returncode != 0 and 'Timeout' in r.stderr and
                     f'Not frozen: task {fork_parent.pid} (python3) of /mixedfork, in uninterruptible sleep' in r.stderr,
                     f"nobody's freeze of /mixedfork, whose own task is root's and stuck on FUSE beside its forked "
                     f'child {fork_child}: a Timeout naming task {fork_parent.pid}',
                     f'exit {r.returncode}: {r.stderr.strip()}')
            ft.check_equal(ft.proc_state(fork_parent.pid).state, 'D',
                           f'task {fork_parent.pid} is still in uninterruptible sleep')
            user_ok(ft.FREEZECTL_BIN, f'--socket={private}', 'thaw', '/mixedfork')

            # A group root made inside the subtree.
            r = as_user(ft.FREEZECTL_BIN, f'--socket={private}', 'freeze', '/rootgrp')
            ft.check(r.returncode == 1 and 'AccessDenied' in r.stderr,
                     "nobody's freeze of root's /rootgrp: AccessDenied", f'exit {r.returncode}: {r.stderr.strip()}')
            e = ft.expect_dbus_error('org.freedesktop.DBus.Error.Failed', c.call, 'Freeze', '/rootgrp', CALL_USEC,
                                     0)
            ft.check('Permission denied' in e.message, "root's freeze of /rootgrp: the kernel refused freezerd's "
                     'write', e.message)
            ft.check_equal(sc.read_freeze('/d/rootgrp'), 0, '/rootgrp: nothing was written')

            # Root on the user's groups.
            c.call('Freeze', '/app', CALL_USEC, 0)
            ft.check_equal(sc.read_events('/d/app')['frozen'], 1, "root froze nobody's /app")
            c.call('Thaw', '/app', CALL_USEC, 0)
            ft.check_equal(sc.read_events('/d/app')['frozen'], 0, "root thawed nobody's /app")

            # The delegated top is freezerd's root.
            ft.expect_dbus_error(ft.ERROR_INVALID_PATH, c.call, 'Freeze', '/', CALL_USEC, 0)
            r = as_user(ft.FREEZECTL_BIN, f'--socket={private}', 'freeze', '/')
            ft.check(r.returncode == 1 and 'InvalidPath' in r.stderr, "nobody's freeze of /: InvalidPath",
                     f'exit {r.returncode}: {r.stderr.strip()}')

            # Another uid: the private socket is closed to it.
            try:
                other = pwd.getpwnam('daemon')
            except KeyError:
                other = None
            if other is not None:
                r = as_uid(other.pw_uid, other.pw_gid, ft.FREEZECTL_BIN, f'--socket={private}', 'freeze', '/app')
                ft.check(r.returncode == 1 and 'Permission denied' in r.stderr,
                         'the user "daemon" cannot connect to the private socket',
                         f'exit {r.returncode}: {r.stderr.strip()}')

            # freezerd's own group.
            with open(f'/proc/{d.pid}/cgroup') as f:
                own = next(line.split(':', 2)[2].strip() for line in f if line.startswith('0::'))
            back = os.path.join(sc.mount, own.lstrip('/'), 'cgroup.procs')
            with open(sc.abspath('/d/self', 'cgroup.procs'), 'w') as f:
                f.write(str(d.pid))
            try:
                r = as_user(ft.FREEZECTL_BIN, f'--socket={private}', 'freeze', '/self')
                ft.check(r.returncode == 1 and 'contains freezerd itself' in r.stderr,
                         "nobody's freeze of /self, where freezerd runs: refused",
                         f'exit {r.returncode}: {r.stderr.strip()}')
                ft.check_equal(sc.read_freeze('/d/self'), 0, '/self: nothing was written')
            finally:
                with open(back, 'w') as f:
                    f.write(str(d.pid))

            # Pressure triggers without CAP_SYS_RESOURCE.
            e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, c.group_call, '/app', 'AddPressureTrigger',
                                     'memory', 'some', 150000, 1000000)
            ft.check('CAP_SYS_RESOURCE' in e.message, 'a 1 s window is refused to root: freezerd lacks '
                     'CAP_SYS_RESOURCE', e.message)
            (tid,) = c.group_call('/app', 'AddPressureTrigger', 'memory', 'some', 150000, 2000000)
            c.group_call('/app', 'RemovePressureTrigger', tid)
            ft.check(True, 'a 2 s trigger on /app (its memory.pressure is nobody\'s) is armed and removed')
            (tid,) = c.call('AddPressureTrigger', 'memory', 'some', 150000, 2000000)
            c.call('RemovePressureTrigger', tid)
            ft.check(True, 'a system-wide 2 s trigger is armed and removed')
            e = ft.expect_dbus_error('org.freedesktop.DBus.Error.Failed', c.group_call, '/rootgrp',
                                     'AddPressureTrigger', 'memory', 'some', 150000, 2000000)
            ft.check('may not write memory.pressure of /rootgrp' in e.message,
                     'a trigger on /rootgrp (its memory.pressure is root\'s): Failed (freezerd\'s refusal, not '
                     'the caller\'s) naming the file, not "not supported"', e.message)

            # A big write: the real-time writer, or the notice that it is refused.
            big = sc.abspath('/d/big')
            user_ok(sys.executable, '-c', f'import os\nfor i in range({BIG}): os.mkdir("{big}/g%d" % i)')
            ft.wait_for(lambda: c.group_property('/big', 'Descendants') == BIG, poll=0.02,
                        what=f'freezerd to track the {BIG} groups below /big')
            user_ok(ft.FREEZECTL_BIN, f'--socket={private}', 'freeze', '/big')
            ft.check_equal(sc.read_events('/d/big')['frozen'], 1, f'nobody froze /big ({BIG + 1} groups)')
            user_ok(ft.FREEZECTL_BIN, f'--socket={private}', 'thaw', '/big')
            ft.check_equal(sc.read_events('/d/big')['frozen'], 0, 'nobody thawed /big')
            with open(f'/proc/{d.pid}/limits') as f:
                rtprio = next(line.split()[3] for line in f if line.startswith('Max realtime priority'))
            refused = d.log().count('Real-time scheduling is refused')
            if rtprio == '0':
                ft.check_equal(refused, 1, 'RLIMIT_RTPRIO 0: the log says once that real-time scheduling is '
                               'refused')
            else:
                print(f'# RLIMIT_RTPRIO of freezerd is {rtprio}: the notice is not expected (logged {refused} '
                      'times)', flush=True)

        # --user: the user's directories by default, as systemd --user has them.
        uenv = {k: v for k, v in env.items() if not k.startswith('XDG_')}
        r = as_user(ft.FREEZERD_BIN, '--user', f'--cgroup-root={top}')
        ft.check(r.returncode == 2 and '$XDG_RUNTIME_DIR' in r.stderr and '--runtime-dir' in r.stderr,
                 '--user without $XDG_RUNTIME_DIR: a usage error saying to give --runtime-dir',
                 f'exit {r.returncode}: {r.stderr.strip()}')
        home = tempfile.mkdtemp(prefix='freezerd-test-home-')
        xdg = tempfile.mkdtemp(prefix='freezerd-test-xdg-')
        proc = None
        try:
            conf = os.path.join(home, '.config', 'freezerd')
            os.makedirs(conf)
            with open(os.path.join(conf, 'freezerd.json'), 'w') as f:
                json.dump({'default_timeout_usec': 7000000}, f)
            for d in (home, xdg, os.path.join(home, '.config'), conf, os.path.join(conf, 'freezerd.json')):
                os.chown(d, uid, gid)
            uenv.update(HOME=home, XDG_RUNTIME_DIR=xdg, DBUS_SESSION_BUS_ADDRESS=bus.address)
            proc = subprocess.Popen(['setpriv', f'--reuid={uid}', f'--regid={gid}', '--clear-groups', '--',
                                     ft.FREEZERD_BIN, '--user', f'--cgroup-root={top}'],
                                    env=uenv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            private = os.path.join(xdg, 'freezerd', 'private')
            ft.wait_for(lambda: os.path.exists(private) or proc.poll() is not None, poll=0.02,
                        what='the private socket of freezerd --user')
            if proc.poll() is not None:
                ft.fail(f'freezerd --user exited {proc.returncode}: {proc.stderr.read().strip()}')
            ft.check(True, 'freezerd --user keeps its runtime directory in $XDG_RUNTIME_DIR/freezerd')
            state = os.path.join(home, '.local', 'state', 'freezerd')
            ft.check(os.path.isdir(state) and os.stat(state).st_uid == uid,
                     'its state directory is ~/.local/state/freezerd, made by it')
            c = ft.Client(f'unix:path={private}', direct=True)
            try:
                ft.check_equal(c.manager_property('DefaultTimeoutUSec'), 7000000,
                               'it read ~/.config/freezerd/freezerd.json')
            finally:
                c.close()
            user_ok(ft.FREEZECTL_BIN, f'--socket={private}', 'freeze', '/app')
            ft.check_equal(sc.read_events('/d/app')['frozen'], 1, 'nobody froze /app through freezerd --user')
            user_ok(ft.FREEZECTL_BIN, f'--socket={private}', 'thaw', '/app')
            ft.check_equal(sc.read_events('/d/app')['frozen'], 0, 'and thawed it')
        finally:
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=ft.DEFAULT_TIMEOUT)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc is not None:
                proc.stderr.close()
            shutil.rmtree(home, ignore_errors=True)
            shutil.rmtree(xdg, ignore_errors=True)


ft.run(test)
