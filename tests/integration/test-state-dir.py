#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The state directory (tracked.json) as an operator's machine may leave it.

  * tracked.json damaged (cut short by hand, or without its "tracked" array):
    freezerd starts, logs the file and what is wrong with it, and keeps it as
    tracked.json.broken, which a later Track() (that saves tracked.json) leaves
    as it was.  (Before session 33 the log said "Ignoring unreadable FILE." and
    the next save wrote over it.)  Damaged again at a later start, it is kept
    as tracked.json.2.broken, the first one as it was (before session 34 the
    second replaced it).  A FIFO of that name (no writer) is said to
    be no regular file: it held up the start for good.  An entry of its
    "tracked" array that is no string (42, an object) is named in a warning,
    the others tracked (before, it was left out in silence, and the next save
    dropped it).
  * Another --cgroup-root: tracked.json saved by a freezerd over ROOT/sub,
    tracking its /x (ROOT/sub/x); the next one runs over ROOT, where /x is
    ROOT/x, another group.  It must track /sub/x (the same group), not /x, and
    say so; and back over ROOT/sub with a tracked.json saved over ROOT naming
    /a (outside ROOT/sub) and /sub/x, it tracks /x and says /a is not below
    its root.  (Before session 33 tracked.json held the paths alone: ROOT/x was
    tracked, ROOT/sub/x not.)
  * A state directory that turns read-only while freezerd runs (the same bind
    mount, made after the start): Track() of /b (with /b/x below it) fails
    with Failed, "Cannot save tracked subtrees to STATE/tracked.json, /b is not
    tracked: Read-only file system", and neither /b nor /b/x is tracked;
    Untrack() of /a fails so too ("/a stays tracked"), and /a stays tracked.
    Track() of /a/n (in /a's subtree) fails saying that /a/n stays tracked
    within the subtree of /a but is not kept as a track root of its own, and
    /a/n stays published (the message said "/a/n is not tracked").  Track()
    of /c, configured, says that it stays tracked by the configuration alone.
    A restart tracks what the replies said: /a, not /b.  (The replies were
    success, the failed saves logged only: the caller believed /b survived a
    restart, and /a gone.)
  * A state directory on a read-only file system (a bind mount made read-only
    here), with its lock file and tracked.json from before: freezerd starts,
    says that the directory is read-only and that Track() and Untrack() of
    roots fail, while what a lookup tracks holds until the stop (it said that
    "subtrees tracked from now on are not kept across a restart", as if
    Track() worked), tracks what tracked.json names, and a
    Track() fails with Failed naming tracked.json and the errno, and tracks
    nothing (its save fails, also logged); a lookup that tracks a path as it
    resolves it (GetGroup) still does, until the stop, and a Track() of it then
    fails saying that a restart may not track it.  Untrack() of /b (which
    tracked.json lacks) drops /b, and Track() of /a (which it has) succeeds
    (both failed, each saving the file again: /b could only be dropped by a
    restart).
    A
    second freezerd on the same state directory (another runtime directory and
    bus) still finds it locked (and does not name the PID in the file, which is
    the start's before, that could write it).  Without a lock file there it starts too.  (Before,
    freezerd exited 1: "Cannot open DIR/lock: Read-only file system".)"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


# Only /c by configuration: /a and /b are tracked by Track(), and tracked.json.
CONFIG = {'track': ['/c']}


def tracked(c):
    return sorted(p for p, _o, _s in c.call('ListGroups')[0] if p in ('/a', '/b'))


def run_second(bus, sc, runtime_dir, state_dir, config):
    argv = ft.FREEZERD_WRAPPER + [ft.FREEZERD_BIN, f'--address={bus.address}', f'--cgroup-root={sc.root}',
                                  f'--config={config}', f'--runtime-dir={runtime_dir}', f'--state-dir={state_dir}']
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('state-dir') as sc, ft.Bus() as bus:
        for g in ('/a', '/b', '/c'):
            sc.mkdir(g)
        base = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}state-dir-{os.getpid()}-')
        mounted = None
        try:
            # ---- tracked.json damaged
            for n, (text, why) in enumerate([('{"tracked": ["/a",\n', 'not JSON: '),
                                             ('{"track": ["/a"]}\n', 'no "tracked" array in it')]):
                state = os.path.join(base, f'state{n}')
                os.mkdir(state)
                path = os.path.join(state, 'tracked.json')
                with open(path, 'w') as f:
                    f.write(text)
                with ft.Daemon(bus, sc.root, config=CONFIG, state_dir=state) as d:
                    log = d.log()
                    ft.check(f'Cannot read {path}: {why}' in log and f'kept as {path}.broken' in log,
                             f'the damaged tracked.json ({why.rstrip(": ")}) named with what is wrong', log)
                    ft.check_equal(tracked(d.client), [], 'nothing tracked from it')
                    d.client.call('Track', '/b')
                with open(path + '.broken') as f:
                    ft.check_equal(f.read(), text, 'the damaged file kept as it was')
                with open(path) as f:
                    ft.check('"/b"' in f.read(), 'tracked.json saved anew')

            # ---- damaged again: kept next to the first
            path = os.path.join(base, 'state0', 'tracked.json')
            with open(path, 'w') as f:
                f.write('not json\n')
            with ft.Daemon(bus, sc.root, config=CONFIG, state_dir=os.path.dirname(path)) as d:
                ft.check(f'kept as {path}.2.broken' in d.log(), 'the second damaged one kept as .2.broken', d.log())
            with open(path + '.broken') as f:
                ft.check_equal(f.read(), '{"tracked": ["/a",\n', 'the first one kept as it was')
            with open(path + '.2.broken') as f:
                ft.check_equal(f.read(), 'not json\n', 'the second one kept')

            # ---- an entry that is no path: said, the others tracked
            state = os.path.join(base, 'entry')
            os.mkdir(state)
            path = os.path.join(state, 'tracked.json')
            with open(path, 'w') as f:
                f.write('{"tracked": ["/a", 42, {"path": "/b"}]}\n')
            with ft.Daemon(bus, sc.root, config=CONFIG, state_dir=state) as d:
                log = d.log()
                ft.check(f'Entry 2 of {path} is no path (42): not tracked, and the next save of the file leaves '
                         'it out.' in log and f'Entry 3 of {path} is no path ({{"path":"/b"}})' in log,
                         'each entry of tracked.json that is no string is named in a warning', log)
                ft.check_equal(tracked(d.client), ['/a'], 'the entry that is a path is tracked')

            # ---- a FIFO: the start must not wait for a writer
            state = os.path.join(base, 'fifo')
            os.mkdir(state)
            path = os.path.join(state, 'tracked.json')
            os.mkfifo(path)
            with ft.Daemon(bus, sc.root, config=CONFIG, state_dir=state, ready_timeout=30) as d:
                log = d.log()
                ft.check(f'Cannot read {path}: not a regular file; kept as {path}.broken' in log,
                         'the FIFO named as not a regular file', log)

            # ---- another --cgroup-root
            for g in ('/sub/x', '/sub/c', '/x'):
                sc.mkdir(g)
            sub = sc.abspath('/sub')
            state = os.path.join(base, 'moved')
            os.mkdir(state)
            with ft.Daemon(bus, sub, config=CONFIG, state_dir=state) as d:
                d.client.call('Track', '/x')
            with ft.Daemon(bus, sc.root, config=CONFIG, state_dir=state) as d:
                groups = [p for p, _o, _s in d.client.call('ListGroups')[0]]
                ft.check('/sub/x' in groups and '/x' not in groups, 'over ROOT: /sub/x tracked, /x not', groups)
                log = d.log()
                ft.check(f'{state}/tracked.json was saved by a freezerd with cgroup root {sub} (now {sc.root})' in log,
                         'the other cgroup root logged', log)
                d.client.call('Track', '/a')  # saved: over ROOT now, /a and /sub/x
            with ft.Daemon(bus, sub, config=CONFIG, state_dir=state) as d:
                groups = [p for p, _o, _s in d.client.call('ListGroups')[0]]
                ft.check('/x' in groups and '/a' not in groups, 'back over ROOT/sub: /x tracked, /a not', groups)
                ft.check(f'/a, tracked before the restart below cgroup root {sc.root}, is not below {sub}: not tracked'
                         in d.log(), '/a logged as not below the root', d.log())

            # ---- a state directory that turns read-only while freezerd runs
            sc.mkdir('/b/x')
            sc.mkdir('/a/n')
            state = os.path.join(base, 'turns-ro')
            os.mkdir(state)
            with ft.Daemon(bus, sc.root, config=CONFIG, state_dir=state) as d:
                d.client.call('Track', '/a')
                # A mount of its own, made after the start: the daemon's lock
                # file is open on the one below, so it can be made read-only.
                subprocess.run(['mount', '--bind', state, state], check=True)
                mounted = state
                subprocess.run(['mount', '-o', 'remount,bind,ro', state], check=True)
                e = ft.expect_dbus_error('org.freedesktop.DBus.Error.Failed', d.client.call, 'Track', '/b')
                ft.check_equal(e.message, f'Cannot save tracked subtrees to {state}/tracked.json, /b is not tracked: '
                               'Read-only file system', 'the Track() error names the file and the errno')
                groups = [p for p, _o, _s in d.client.call('ListGroups')[0]]
                ft.check('/b' not in groups and '/b/x' not in groups, 'neither /b nor /b/x tracked', groups)
                e = ft.expect_dbus_error('org.freedesktop.DBus.Error.Failed', d.client.call, 'Untrack', '/a')
                ft.check_equal(e.message, f'Cannot save tracked subtrees to {state}/tracked.json, /a stays tracked: '
                               'Read-only file system', 'the Untrack() error names the file and the errno')
                ft.check_equal(tracked(d.client), ['/a'], '/a stays tracked')
                e = ft.expect_dbus_error('org.freedesktop.DBus.Error.Failed', d.client.call, 'Track', '/a/n')
                ft.check_equal(e.message, f'Cannot save tracked subtrees to {state}/tracked.json, /a/n stays tracked '
                               'within the subtree of /a but is not kept as a track root of its own: Read-only file '
                               'system', 'a Track() within /a says that /a/n stays tracked in its subtree')
                groups = [p for p, _o, _s in d.client.call('ListGroups')[0]]
                ft.check('/a/n' in groups, '/a/n stays published', groups)
                e = ft.expect_dbus_error('org.freedesktop.DBus.Error.Failed', d.client.call, 'Track', '/c')
                ft.check_equal(e.message, f'Cannot save tracked subtrees to {state}/tracked.json, /c stays tracked '
                               'by the configuration alone: Read-only file system',
                               'a Track() of the configured /c says that the configuration alone tracks it')
                subprocess.run(['umount', state], check=True)
                mounted = None
            with ft.Daemon(bus, sc.root, config=CONFIG, state_dir=state) as d:
                ft.check_equal(tracked(d.client), ['/a'], 'a restart tracks what the replies said: /a, not /b')

            # ---- a read-only state directory
            state = os.path.join(base, 'ro')
            os.mkdir(state)
            with ft.Daemon(bus, sc.root, config=CONFIG, state_dir=state) as d:
                d.client.call('Track', '/a')
            ft.check(os.path.exists(os.path.join(state, 'lock')), 'the lock file made by the first start')
            subprocess.run(['mount', '--bind', state, state], check=True)
            mounted = state
            subprocess.run(['mount', '-o', 'remount,bind,ro', state], check=True)
            with ft.Daemon(bus, sc.root, config=CONFIG, state_dir=state) as d:
                log = d.log()
                ft.check(f'State directory {state} is on a read-only file system: {state}/tracked.json is read, but '
                         'cannot be saved: Track() and Untrack() of the roots it would change fail, and subtrees a '
                         'lookup tracks (a path outside the tracked subtrees) are tracked until the stop only.' in log,
                         'the read-only state directory logged, with what fails and what holds until the stop', log)
                ft.check_equal(tracked(d.client), ['/a'], 'tracked.json read: /a tracked again')
                e = ft.expect_dbus_error('org.freedesktop.DBus.Error.Failed', d.client.call, 'Track', '/b')
                ft.check_equal(e.message, f'Cannot save tracked subtrees to {state}/tracked.json, /b is not tracked: '
                               'Read-only file system', 'the Track() error names the file and the errno')
                ft.check_equal(tracked(d.client), ['/a'], 'Track() of /b tracks nothing')
                ft.check(re.search(rf'Cannot save tracked subtrees in {re.escape(state)}: Read-only file system',
                                   d.log()), 'the failed save logged', d.log())
                d.client.call('GetGroup', '/b')
                ft.check_equal(tracked(d.client), ['/a', '/b'], 'a lookup tracks /b still, until the stop')
                e = ft.expect_dbus_error('org.freedesktop.DBus.Error.Failed', d.client.call, 'Track', '/b')
                ft.check_equal(e.message, f'Cannot save tracked subtrees to {state}/tracked.json, /b stays tracked but '
                               'may not be after a restart: Read-only file system',
                               'a Track() of /b then says that a restart may not track it')
                d.client.call('Untrack', '/b')  # tracked.json lacks it: nothing to save
                ft.check_equal(tracked(d.client), ['/a'], 'Untrack() of /b, which the file lacks, drops it')
                d.client.call('Track', '/a')  # tracked.json has it: nothing to save
                other_run = os.path.join(base, 'run2')
                os.mkdir(other_run)
                # On another bus: on this one the bus name stops it before the directories.
                with ft.Bus() as bus2:
                    status, out = run_second(bus2, sc, other_run, state, d.config_path)
                ft.check_equal(status, 1, 'a second freezerd on the read-only state directory exits 1')
                # (Not the PID: the file holds that of the start before, which could write it.)
                ft.check(f'Another freezerd is running with state directory {state}.' in out,
                         'it finds the directory locked', out)
            subprocess.run(['umount', state], check=True)
            mounted = None

            # ---- read-only, without a lock file
            state = os.path.join(base, 'ro2')
            os.mkdir(state)
            subprocess.run(['mount', '--bind', state, state], check=True)
            mounted = state
            subprocess.run(['mount', '-o', 'remount,bind,ro', state], check=True)
            with ft.Daemon(bus, sc.root, config=CONFIG, state_dir=state) as d:
                ft.check_equal(tracked(d.client), [], 'no tracked.json: nothing more tracked')
            subprocess.run(['umount', state], check=True)
            mounted = None
        finally:
            if mounted:
                subprocess.run(['umount', mounted])
            shutil.rmtree(base, ignore_errors=True)


if __name__ == '__main__':
    ft.run(test)
