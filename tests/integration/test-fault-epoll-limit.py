#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The epoll watch limit reached: a group whose cgroup.events cannot be put in
freezerd's epoll set is still followed (re-read every 200 ms), the log says why,
calls waiting on it complete, and once the limit is raised it is polled again
and the re-reads stop.

freezerd polls the cgroup.events of every group that is not covered by an empty
ancestor (see "The daemon" in the README).  Before, a group that epoll refused was
neither polled nor covered: its changes went unseen for good, a call waiting on
it timed out, and the log blamed no limit ("No space left on device").

The epoll limit (/proc/sys/fs/epoll/max_user_watches) is system-wide and counted
per real uid, and no user namespace has one of its own.  So freezerd runs as
nobody, over a scratch subtree delegated to it (Scratch.delegate(), as systemd's
Delegate= does), and holds more watches than root does: one per group with a task
(K groups, a sleeper each, K = root's watches + 48; more such groups if root's
processes, which are the whole machine's, take more meanwhile).  The limit is then set to
exactly nobody's watches (written again until a look after the write agrees:
other processes of nobody may change theirs): freezerd's next epoll_ctl(ADD)
fails, root's processes (dbus-daemon, this harness) keep 48 or more to spare.
What is checked is counted in freezerd's own epoll set, not the uid's.  It is put back in a finally
(ft.MachineSetting: runs from other checkouts wait their turn), and at once
when the test fails or is stopped, before its groups are torn down.

  /k0 .. /k{K-1}   a sleeper each: polled
  /c               empty at first, so it vouches for /c/x0..x2 (covered, not polled)

  1. A sleeper into each of /c/x0..x2: /c reads populated, so x0..x2 must be
     polled, and epoll refuses them.  The log names the limit
     (fs.epoll.max_user_watches); their Populated is true.  A group made now,
     /c/x3, is tracked (InterfacesAdded) and followed: a sleeper into it, its
     Populated true.
  2. Freeze(/c/x1) (timeout 5 s, times the sanitizer's multiplier) completes, its tasks frozen, and so does Thaw.
  3. cgroup.kill of /c/x2: its PropertiesChanged says Populated false
     (/c stays populated, so only x2's own file tells).
  4. The limit raised again: the log says every group is polled again, and
     freezerd holds four more watches (x0..x3).  Freeze(/c/x0) completes and,
     with nothing happening, freezerd wakes up no more (no re-reads left): a
     second without a wake-up comes within 5."""

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

SYSCTL = '/proc/sys/fs/epoll/max_user_watches'
SPARE_ROOT = 48  # epoll watches root's processes may still add while the limit is low
COVERED = ['/c/x0', '/c/x1', '/c/x2']
NEW = '/c/x3'
CALL_USEC = int(5 * 1000000 * ft.TIMEOUT_MULTIPLIER)
IDLE_SECONDS = 1.0
IDLE_WINDOWS = 5


def epoll_items(pid):
    """Items in the epoll instances of one process (/proc/PID/fdinfo); what is gone is not counted."""
    return ft.anon_fd_items(pid, '[eventpoll]', b'tfd:')


def epoll_watches(uid):
    """Items in the epoll instances of every process whose real uid is uid: what the kernel
    counts against uid's limit.  Other processes of the machine come and go: only freezerd's
    own count (epoll_items(its pid)) is checked; this one sets the limit."""
    n = 0
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            if ft.proc_uids(pid)[0] != uid:
                continue
        except OSError:
            continue
        n += epoll_items(pid)
    return n


def lower_limit(uid):
    """Set the limit to uid's watches, again while other processes of uid change theirs,
    until a look after the write finds it exact (the next item of uid is refused)."""
    deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
    limit = epoll_watches(uid)
    while True:
        write_int(SYSCTL, limit)
        now = epoll_watches(uid)
        if now == limit:
            return limit
        if time.monotonic() > deadline:
            ft.fail(f'the epoll watches of uid {uid} did not settle (last {limit}, then {now})')
        limit = now


def read_int(path):
    with open(path) as f:
        return int(f.read())


def write_int(path, value):
    with open(path, 'w') as f:
        f.write(str(value))


def start_odd_name():
    """A process whose name (/proc/PID/status, Name:) is not UTF-8, as any process on the
    machine may have (the name is the executable's, here a symlink's): the counts must not
    stop at it.  Returns (process, its directory)."""
    tmp = tempfile.mkdtemp(prefix='freezerd-epoll-limit-')
    exe = os.path.join(os.fsencode(tmp), b'\xff\xfesleep')
    os.symlink(shutil.which('sleep'), exe)
    return subprocess.Popen([exe, '1000']), tmp


def voluntary_switches(pid):
    with open(f'/proc/{pid}/status') as f:
        return next(int(line.split()[1]) for line in f if line.startswith('voluntary_ctxt_switches:'))


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    try:
        nobody = pwd.getpwnam('nobody')
    except KeyError:
        ft.skip('no user "nobody" to run freezerd as')
    uid, gid = nobody.pw_uid, nobody.pw_gid
    odd, odd_dir = start_odd_name()
    # Other processes of nobody's count too: the limit is set to the uid's total,
    # so freezerd's next item is refused all the same (theirs too, for a second).
    others = epoll_watches(uid)
    setting = ft.MachineSetting(SYSCTL)  # other checkouts' runs of this test wait
    before = setting.value
    extra = 0  # groups added while root's processes took more watches (/e0 ..)
    violations = []
    fig = ft.Figures('test-fault-epoll-limit')

    def delegate(sc, relpath):
        sc.mkdir(relpath)
        sc.delegate(relpath, uid, gid)

    try:
        with ft.Scratch('fault-epoll-limit') as sc, ft.Bus() as bus:
            k = epoll_watches(0) + SPARE_ROOT
            for i in range(k):
                delegate(sc, f'/k{i}')
                sc.spawn_sleepers(f'/k{i}', 1)
            delegate(sc, '/c')
            for g in COVERED:
                delegate(sc, g)

            bus.open_to_other_uids()
            with ft.Daemon(bus, sc.root, user=uid) as d:
                c = d.client
                rec = c.record()
                ft.loop().watch(d.log_path, ft.Inotify.IN_MODIFY)  # wakes waits on the log

                def call(method, *args):
                    return fig.call(c, method, *args)

                ft.check_equal(len(call('ListGroups')[0]), k + 1 + len(COVERED) + 1,
                               'freezerd (as nobody) tracks every group and the root')

                # Root's processes are those of the whole machine (other daemons, other
                # tests): should they have taken more watches since k was counted, more
                # groups with a sleeper, until freezerd is ahead again.
                deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
                while True:
                    own = epoll_items(d.pid)
                    mine = epoll_watches(uid)
                    root = epoll_watches(0)
                    if mine >= root + SPARE_ROOT or time.monotonic() > deadline:
                        break
                    more = root + SPARE_ROOT - mine
                    for i in range(extra, extra + more):
                        delegate(sc, f'/e{i}')
                        sc.spawn_sleepers(f'/e{i}', 1)
                    extra += more
                    ft.wait_for(lambda: epoll_items(d.pid) >= own + more, poll=0.05,
                                what=f'freezerd to poll {more} more groups with a sleeper')
                print(f'# epoll watches: nobody {mine} (freezerd {own}, others {others}), root {root}; '
                      f'{k + extra} groups with a sleeper', flush=True)
                ft.check(mine >= root + SPARE_ROOT, f'freezerd holds {SPARE_ROOT} watches more than root '
                         f'({mine} against {root})')
                try:
                    lower_limit(uid)
                    fig.faults['fs.epoll.max_user_watches lowered to freezerd\'s watches'] += 1

                    # 1. Tasks come into the covered groups: they must be polled, and cannot be.
                    for g in COVERED:
                        sc.spawn_sleepers(g, 1)
                    line = ft.wait_for(lambda: next((ln for ln in d.log().splitlines()
                                                     if 'Cannot poll cgroup.events of /c/x' in ln), None),
                                       what='the log to say a group cannot be polled')
                    ft.check(True, f'logged: {line}')
                    if 'fs.epoll.max_user_watches' not in line:
                        violations.append(f'the log line does not name the epoll watch limit as the cause: {line!r}')
                    for g in COVERED:
                        rec.wait_property(ft.group_object(g), 'Populated', True)
                    # A group made now (below the populated /c, so not covered) is
                    # tracked all the same, and followed by re-reads.
                    delegate(sc, NEW)
                    rec.wait_for(lambda r: ft.group_object(NEW) in [o for o, _i in r.interfaces_added()],
                                 what=f'InterfacesAdded of {NEW}')
                    sc.spawn_sleepers(NEW, 1)
                    rec.wait_property(ft.group_object(NEW), 'Populated', True)
                    ft.check_equal(epoll_items(d.pid), own, 'freezerd holds no more watches than the limit')
                    fig.checked['groups refused by epoll, still followed'] += len(COVERED) + 1

                    # 2. A call waiting on one of them completes.
                    t0 = time.monotonic()
                    call('Freeze', '/c/x1', CALL_USEC, 0)
                    took = time.monotonic() - t0
                    ft.check_equal(sc.read_events('/c/x1')['frozen'], 1,
                                   'Freeze(/c/x1) replied: the kernel says frozen')
                    # Right after "frozen 1" a task can still be on its way into the trap.
                    sc.wait_tasks_frozen('/c/x1')
                    ft.check(sc.all_tasks_frozen('/c/x1'), "and /c/x1's task is frozen")
                    fig.lines.append(f'Freeze of a refused group: {took * 1000:.0f} ms')
                    call('Thaw', '/c/x1', CALL_USEC, 0)
                    ft.check_equal(sc.read_events('/c/x1')['frozen'], 0,
                                   'Thaw(/c/x1) replied: the kernel says thawed')

                    # 3. A change only the group's own cgroup.events tells.
                    rec.clear()
                    sc.kill('/c/x2')
                    rec.wait_property(ft.group_object('/c/x2'), 'Populated', False)
                    ft.check(sc.populated('/c'), '/c is still populated: only /c/x2 told')
                finally:
                    # At once, on a failure or meson's SIGTERM too (its SIGKILL comes 0.5 s
                    # later, before the teardown of the groups reaches the outer finally):
                    # meanwhile every other user's processes (other tests') have few watches to spare.
                    setting.put_back()

                # 4. The limit raised (put back above): polled again, the re-reads stop.
                ft.wait_for(lambda: 'Every group that needs it is polled again' in d.log(),
                            what='the log to say every group is polled again')
                ft.check_equal(epoll_items(d.pid), own + len(COVERED) + 1,
                               f'freezerd now polls the {len(COVERED) + 1} groups it could not')
                call('Freeze', '/c/x0', CALL_USEC, 0)
                ft.check_equal(sc.read_events('/c/x0')['frozen'], 1, 'Freeze(/c/x0) works with the limit raised')
                call('Thaw', '/c/x0', CALL_USEC, 0)
                # Idle: no re-read timer left.  Count freezerd's wake-ups over a second
                # of nothing, once the kernel's last notification of the Thaw (held back
                # up to 10 ms by its rate limit, and its work more on a busy machine) is
                # read: a window with none within IDLE_WINDOWS of them.  The re-reads (every
                # 200 ms) would wake it up in every window.
                time.sleep(0.2)  # not a wait for an event: the start of a measurement window
                woken = []
                while len(woken) < IDLE_WINDOWS and (not woken or woken[-1] > 0):
                    v0 = voluntary_switches(d.pid)
                    time.sleep(IDLE_SECONDS)  # a measurement window, not a wait for an event
                    woken.append(voluntary_switches(d.pid) - v0)
                ft.check_equal(woken[-1], 0, f'freezerd wakes up 0 times in {IDLE_SECONDS:.0f} s once every group is '
                               f'polled (wake-ups per window: {woken})')
                fig.checked['groups polled again after the limit'] += len(COVERED) + 1
    finally:
        setting.release()
        odd.kill()
        odd.wait()
        shutil.rmtree(odd_dir, ignore_errors=True)
    ft.check_equal(read_int(SYSCTL), before, f'{SYSCTL} is {before} as before')
    fig.lines.append(f'watches:         groups with a sleeper {k + extra}')
    fig.print()
    if violations:
        ft.fail('\n  '.join(['unclear report of the epoll watch limit:'] + violations))


ft.run(test)
