#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""One freezerd per runtime directory: a second one started on the same
directories (an operator starting it by hand while the service runs) must
leave the first's batch in flight alone.

  /a   one sleeper
  /s   a task blocked (D) on a FUSE mount that never answers: /s cannot finish
       freezing until the FUSE server goes

Checks:
  * freezerd 1 runs an ApplyBatch freezing /a and /s, with ROLLBACK_ON_TIMEOUT
    (so that its journal stays while it waits): it wrote both flags and its
    journal, and waits for /s.
  * A second freezerd on the same runtime and state directories and the same
    bus (the service runs, and one is started by hand) exits 1 with one line
    saying that the name org.freezerd.Freezer1 is owned by another process
    (another freezerd?), PID <freezerd 1>, and changes nothing, as below.
  * On the same directories but another bus it exits 1 with
    one log line "Another freezerd (PID <freezerd 1>) is running with runtime
    directory DIR", and changes nothing: both cgroup.freeze still 1 (/a still
    frozen), the journal still there with the same bytes, the runtime and state
    directories hold the same files, the private socket is the same inode and
    freezerd 1 answers there.
  * One on another bus, a runtime directory that does not exist and freezerd
    1's state directory exits 1, "Another freezerd (PID <freezerd 1>) is running with
    state directory DIR", and makes nothing: the runtime directory is still
    not there (until session 35 it was made, with a lock file, before the
    state directory's lock was found held).  So too the other way round.
  * A third freezerd, on directories of its own but the same bus, exits 1 with
    one line saying that the name org.freezerd.Freezer1 is owned by another
    process (another freezerd?); the flags are still as freezerd 1 wrote them,
    though its runtime directory holds a copy of freezerd 1's journal (before
    session 38 it took the name last: it recovered that journal, thawing /a
    and /s under freezerd 1, and left a lock file in each directory).  A
    runtime and state directory that do not exist are not made.
  * The batch was not cancelled: once the FUSE server goes, it succeeds
    (2 writes, 0 skipped), its journal is gone (its journal file emptied), and
    the kernel says frozen."""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LONG_USEC = 120 * 1000000


def snapshot(d):
    """{name: bytes (regular files) or inode (anything else)} of the directory d."""
    out = {}
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        st = os.lstat(p)
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, 'rb') as f:
                out[name] = f.read()
        else:
            out[name] = ('inode', st.st_ino)
    return out


def run_freezerd(bus, sc, config, runtime_dir, state_dir):
    """Run freezerd to its end; returns (exit status, its log lines)."""
    argv = ft.FREEZERD_WRAPPER + [ft.FREEZERD_BIN, f'--address={bus.address}', f'--cgroup-root={sc.root}',
                                  f'--config={config}', f'--runtime-dir={runtime_dir}', f'--state-dir={state_dir}']
    env = dict(os.environ)
    env.pop('NOTIFY_SOCKET', None)
    print('# running ' + ' '.join(argv), flush=True)
    try:
        r = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=ft.DEFAULT_TIMEOUT, preexec_fn=ft._child_setup(pdeathsig=signal.SIGKILL))
    except subprocess.TimeoutExpired:
        ft.fail('the second freezerd did not exit')
    out = r.stdout + r.stderr
    print(f'# exit status {r.returncode}, output:\n' + ''.join(f'#   {x}\n' for x in out.splitlines()), flush=True)
    # Its log lines, without a wrapper's (valgrind's "==PID== ...").
    return r.returncode, [x for x in out.splitlines() if not re.match(r'==\d+==', x)]


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    dirs = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}daemon-{os.getpid()}-instance-')
    run, state = os.path.join(dirs, 'run'), os.path.join(dirs, 'state')
    run3, state3 = os.path.join(dirs, 'run3'), os.path.join(dirs, 'state3')
    for d in (run, state, run3, state3):
        os.mkdir(d)
    try:
        with ft.Scratch('core-single-instance') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
            sc.mkdir('/a')
            sc.spawn_sleepers('/a', 1)
            fuse.spawn_stuck(sc, '/s')
            ft.loop().watch(run, ft.Inotify.IN_MODIFY | ft.Inotify.IN_CREATE | ft.Inotify.IN_DELETE)

            with ft.Daemon(bus, sc.root, state_dir=state, runtime_dir=run) as d1, ft.Bus() as bus2:
                c = d1.client
                sock = os.path.join(run, 'private')
                pending = c.call_async('ApplyBatch', [('/a', True), ('/s', True)], 'auto', LONG_USEC,
                                       ft.FLAG_ROLLBACK_ON_TIMEOUT)

                def journals():
                    return ft.live_journals(run)
                ft.wait_for(lambda: journals() and sc.frozen('/a') and sc.read_freeze('/s') == 1,
                            what='the batch\'s journal, /a frozen and /s\'s flag written')
                ft.check_equal(len(journals()), 1, 'freezerd 1 wrote the batch\'s journal')
                ft.check(not pending.done(), 'the batch waits for /s')
                run_before, state_before = snapshot(run), snapshot(state)

                # ---- the same directories and the same bus: the name stops it first
                status, lines = run_freezerd(bus, sc, d1.config_path, run, state)
                ft.check_equal(status, 1, 'a second freezerd on the same directories and bus exits 1')
                want = f'the name {ft.BUS_NAME} is owned by another process (another freezerd?), PID {d1.pid}.'
                ft.check(len(lines) == 1 and want in lines[0], f'... with one line saying "{want}"', lines)
                ft.check_equal((sc.read_freeze('/a'), sc.read_freeze('/s'), sc.frozen('/a')), (1, 1, True),
                               '... and both flags stay as freezerd 1 wrote them, /a frozen')
                ft.check_equal((snapshot(run), snapshot(state)), (run_before, state_before),
                               "... and freezerd 1's directories are unchanged")

                # ---- the same directories, another bus: the locks stop it
                status, lines = run_freezerd(bus2, sc, d1.config_path, run, state)
                ft.check_equal(status, 1, 'a second freezerd on the same runtime directory (another bus) exits 1')
                want = f'Another freezerd (PID {d1.pid}) is running with runtime directory {run}'
                ft.check(len(lines) == 1 and want in lines[0], f'... with one line: "{want}"', lines)
                ft.check_equal((sc.read_freeze('/a'), sc.read_freeze('/s'), sc.frozen('/a')), (1, 1, True),
                               '... and both flags stay as freezerd 1 wrote them, /a frozen')
                ft.check_equal(snapshot(run), run_before,
                               '... the runtime directory is unchanged: the journal (same bytes), the private '
                               'socket (same inode), nothing added')
                ft.check_equal(snapshot(state), state_before, '... the state directory is unchanged')
                with ft.Client(f'unix:path={sock}', direct=True) as p:
                    ft.check_equal(p.group_property('/a', 'FreezerState'), 'frozen',
                                   'freezerd 1 still answers on its private socket')
                ft.check_equal(c.group_property('/s', 'FreezerState'), 'freezing', 'freezerd 1 still says /s freezing')
                ft.check(not pending.done(), 'the batch still waits: it was not cancelled')

                # ---- a runtime directory that does not exist, the same state directory, and the other
                # way round
                for new_run, new_state, held, what in ((os.path.join(dirs, 'new', 'run'), state, state, 'state'),
                                                       (run, os.path.join(dirs, 'new', 'state'), run, 'runtime')):
                    status, lines = run_freezerd(bus2, sc, d1.config_path, new_run, new_state)
                    ft.check_equal(status, 1, f'a second freezerd on the same {what} directory exits 1')
                    want = f'Another freezerd (PID {d1.pid}) is running with {what} directory {held}'
                    ft.check(len(lines) == 1 and want in lines[0], f'... with one line: "{want}"', lines)
                    ft.check(not os.path.exists(os.path.join(dirs, 'new')),
                             '... and makes no directory, no lock file', os.listdir(dirs))
                    shutil.rmtree(os.path.join(dirs, 'new'), ignore_errors=True)
                    ft.check_equal((snapshot(run), snapshot(state)), (run_before, state_before),
                                   "... and freezerd 1's directories are unchanged")

                # ---- directories of its own, the same bus; its runtime directory holds a journal (a
                # copy of freezerd 1's: /a and /s were 0 before), which it must not recover
                journal = journals()[0]
                shutil.copyfile(os.path.join(run, journal), os.path.join(run3, journal))
                status, lines = run_freezerd(bus, sc, d1.config_path, run3, state3)
                ft.check_equal(status, 1, 'a third freezerd on other directories but the same bus exits 1')
                want = f'the name {ft.BUS_NAME} is owned by another process (another freezerd?), PID {d1.pid}.'
                ft.check(len(lines) == 1 and want in lines[0], f'... with one line saying "{want}"', lines)
                ft.check_equal((sc.read_freeze('/a'), sc.read_freeze('/s')), (1, 1),
                               '... and the flags stay as freezerd 1 wrote them: the journal in its runtime '
                               'directory was not recovered')
                ft.check_equal((sorted(os.listdir(run3)), os.listdir(state3)), ([journal], []),
                               '... which it left as it was, and its state directory empty: no lock file')
                ft.check_equal(snapshot(run), run_before, '... and freezerd 1\'s runtime directory is unchanged')
                new_run, new_state = os.path.join(dirs, 'new', 'run'), os.path.join(dirs, 'new', 'state')
                status, lines = run_freezerd(bus, sc, d1.config_path, new_run, new_state)
                ft.check(status == 1 and len(lines) == 1 and want in lines[0] and
                         not os.path.exists(os.path.join(dirs, 'new')),
                         '... and one on directories that do not exist makes neither', (status, lines))
                ft.check(not pending.done(), 'the batch still waits')

                # ---- the batch ends as it would have alone
                fuse.release()
                writes, skipped = pending.result()
                ft.check_equal((writes, skipped), (2, 0), 'once the FUSE server goes, the batch succeeds: 2 writes')
                ft.check_equal(journals(), [], 'its journal is gone')
                ft.check_equal((sc.frozen('/a'), sc.frozen('/s')), (True, True), 'the kernel says both frozen')
                c.call('ApplyBatch', [('/a', False), ('/s', False)], 'auto', 0, 0)
                ft.check_equal((sc.frozen('/a'), sc.frozen('/s')), (False, False), 'thawed again')
    finally:
        shutil.rmtree(dirs, ignore_errors=True)


if __name__ == '__main__':
    ft.run(test)
