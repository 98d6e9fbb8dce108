#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A batch journal restores the groups its batch wrote, not others that have
their paths at the restart.

freezerd runs with FREEZERD_TEST_WRITE_DELAY_USEC (a pause after every
cgroup.freeze write) and is SIGKILLed in that pause, after the first write of an
ApplyBatch with ROLLBACK_ON_TIMEOUT: its journal is left for the next start.

  * Another --cgroup-root: the first freezerd runs over ROOT/sub and freezes
    /x (ROOT/sub/x); the next one runs over ROOT, where /x is ROOT/x, another
    group, frozen by hand.  The restart must thaw ROOT/sub/x (the batch's
    write) and leave ROOT/x frozen, and log that the journal names another
    cgroup root.  (Before session 33 the journal recorded the paths alone: the
    restart thawed ROOT/x and left ROOT/sub/x frozen.)
  * A group removed and made again between the crash and the restart (a unit
    restarted meanwhile): the batch thawed /y (frozen before it, by hand); /y
    is then removed and made again, not frozen.  The new /y is another group
    (another cgroup id): the restart must leave it running, count it gone and
    log that it was made again.  (Before, the restart froze the new /y.)
  * A journal whose groups were removed for good: counted gone, nothing else
    written, freezerd starts.
  * Groups freezerd does not follow for their names (odd-groups.h): a Thaw
    RECURSIVE of /p clears the flags of /p/bad\\xff, /p/bad\\xff/in and
    /p/ctl\\x01 (each frozen by its own flag) after its own; killed after the
    first of those writes, the restart writes it back: all three frozen again,
    as a failed write leaves them, /p thawed (its own journal was over).  The
    journal holds their paths escaped and in hex ("raw").  (Before session 33
    they were in no journal: the restart left one thawed, two frozen.)  An odd
    group whose flag was 0 when that journal was made and that its owner sets
    while the thaw writes the others is left frozen: no journal could put it
    back after a crash.  (Before, the thaw cleared it.)"""

import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LONG_USEC = 120 * 1000000
ODD = [b'bad\xff/in', b'bad\xff', b'ctl\x01']
# Long enough for the kill to land inside the pause after the first write.
DELAY = {'FREEZERD_TEST_WRITE_DELAY_USEC': str(30 * 1000000)}


def kill_after_first_write(d, sc, runtime_dir, items, path, value):
    """ApplyBatch(items, ROLLBACK) on d; SIGKILL d once path's flag is value (the batch's
    first write landed) and its journal is there.  Returns the journal."""
    ft.loop().watch(runtime_dir, ft.Inotify.IN_MODIFY)
    ft.loop().watch(sc.abspath(path, 'cgroup.freeze'), ft.Inotify.IN_MODIFY)
    d.client.call_async('ApplyBatch', items, 'auto', LONG_USEC, ft.FLAG_ROLLBACK_ON_TIMEOUT)
    ft.wait_for(lambda: sc.read_freeze(path) == value and ft.live_journals(runtime_dir), timeout=3 * ft.DEFAULT_TIMEOUT,
                what=f'the batch to write {path} with its journal in place')
    d.sigkill()
    d.wait_dead()
    names = ft.live_journals(runtime_dir)
    ft.check_equal(len(names), 1, 'one journal left by the kill')
    return ft.read_journal(runtime_dir, names[0])


def read_flag(d):
    with open(d + b'/cgroup.freeze') as f:
        return int(f.read())


def write_flag(d, v):
    with open(d + b'/cgroup.freeze', 'w') as f:
        f.write(str(v))


def recovered(log):
    return re.findall(r'Recovered interrupted batch (\d+): (\d+) groups? restored to (?:its|their) previous flags?, '
                      r'(\d+) had it already \(not written before the stop\), (\d+) gone, (\d+) failed', log)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('journal-restart') as sc, ft.Bus() as bus:
        runtime_dir = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}journal-restart-{os.getpid()}-')
        try:
            # ---- another --cgroup-root
            for g in ('/sub/x', '/x'):
                sc.mkdir(g)
                sc.spawn_sleepers(g, 1)
            sc.write_freeze('/x', 1)
            sc.wait_events('/x', frozen=1)
            with ft.CrashableDaemon(bus, sc.abspath('/sub'), runtime_dir=runtime_dir, env=DELAY) as d:
                j = kill_after_first_write(d, sc, runtime_dir, [('/x', True)], '/sub/x', 1)
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir) as d:
                ft.check_equal(sc.read_freeze('/sub/x'), 0, "the batch's group (ROOT/sub/x) restored: thawed")
                ft.check_equal(sc.read_freeze('/x'), 1, 'ROOT/x, another group of that path now, left frozen')
                log = d.log()
                ft.check(f'was written by a freezerd with cgroup root {sc.abspath("/sub")} (now {sc.root})' in log,
                         'the other cgroup root logged', log)
                ft.check_equal(recovered(log), [(str(j['id']), '1', '0', '0', '0')], 'one group restored')
                ft.check_equal(ft.live_journals(runtime_dir), [], 'the journal gone')
            ft.check_equal(j.get('root'), sc.abspath('/sub'), 'the journal records its cgroup root')
            sc.wait_events('/sub/x', frozen=0)
            ft.check(sc.frozen('/x'), 'ROOT/x still frozen')
            sc.write_freeze('/x', 0)

            # ---- a group removed and made again since the crash
            sc.mkdir('/y')
            sc.spawn_sleepers('/y', 1)
            sc.write_freeze('/y', 1)
            sc.wait_events('/y', frozen=1)
            with ft.CrashableDaemon(bus, sc.root, runtime_dir=runtime_dir, env=DELAY) as d:
                j = kill_after_first_write(d, sc, runtime_dir, [('/y', False)], '/y', 0)
            sc.kill('/y')
            ft.wait_for(lambda: not sc.populated('/y'), timeout=ft.DEFAULT_TIMEOUT, what='/y to empty')
            sc.rmdir('/y')
            sc.mkdir('/y')
            sc.spawn_sleepers('/y', 1)
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir) as d:
                ft.check_equal(sc.read_freeze('/y'), 0, 'the new /y (another group) left running')
                log = d.log()
                ft.check_equal(recovered(log), [(str(j['id']), '0', '0', '1', '0')], 'the old /y counted gone')
                ft.check('(/y) was removed and made again since the stop' in log, 'the new /y logged', log)
                ft.check_equal(ft.live_journals(runtime_dir), [], 'the journal gone')
            ft.check(not sc.frozen('/y') and sc.no_task_frozen('/y'), 'no task of the new /y frozen')
            ft.check(all(g.get('cgroup') for g in j['groups']), 'the journal records the cgroup ids', j)

            # ---- groups removed for good
            sc.mkdir('/z')
            with ft.CrashableDaemon(bus, sc.root, runtime_dir=runtime_dir, env=DELAY) as d:
                j = kill_after_first_write(d, sc, runtime_dir, [('/z', True)], '/z', 1)
            sc.rmdir('/z')
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir) as d:
                ft.check_equal(recovered(d.log()), [(str(j['id']), '0', '0', '1', '0')], '/z counted gone')
                ft.check_equal(ft.live_journals(runtime_dir), [], 'the journal gone')

            # ---- groups not followed for their names
            sc.mkdir('/p')
            p = os.fsencode(sc.abspath('/p'))
            for name in ODD[::-1]:
                os.makedirs(p + b'/' + name, exist_ok=True)
            sleeper = ft.subprocess.Popen(['sleep', '1000'])
            sc.procs.append(sleeper)
            with open(p + b'/' + ODD[0] + b'/cgroup.procs', 'w') as f:
                f.write(str(sleeper.pid))
            for name in ODD:
                write_flag(p + b'/' + name, 1)
            sc.write_freeze('/p', 1)
            ft.wait_for(lambda: ft.task_frozen(ft.proc_state(sleeper.pid)), what='the sleeper of /p/bad\\xff/in to freeze')
            # The pause is shorter here: /p's own write pauses too, before the odd ones.
            env = {'FREEZERD_TEST_WRITE_DELAY_USEC': str(3 * 1000000)}
            for name in ODD:
                ft.loop().watch(p + b'/' + name + b'/cgroup.freeze', ft.Inotify.IN_MODIFY)
            with ft.CrashableDaemon(bus, sc.root, runtime_dir=runtime_dir, env=env) as d:
                call = d.client.call_async('Thaw', '/p', LONG_USEC, ft.FLAG_RECURSIVE)
                # (In the order of the directory's listing, each after the groups below it.)
                ft.wait_for(lambda: sorted(read_flag(p + b'/' + n) for n in ODD) == [0, 1, 1] or call.done(),
                            timeout=3 * ft.DEFAULT_TIMEOUT, what='the first odd group thawed')
                ft.check(not call.done(), 'the call waits in the pause after the first odd write',
                         call.result() if call.done() else None)
                d.sigkill()
                d.wait_dead()
            names = ft.live_journals(runtime_dir)
            ft.check_equal(len(names), 1, 'the journal of the odd groups left by the kill')
            with open(os.path.join(runtime_dir, names[0]), 'rb') as f:
                j = json.loads(f.read())
            ft.check_equal(sorted((g['path'], bytes.fromhex(g.get('raw', '')), g['prev'], g['new'])
                                  for g in j['groups']),
                           [('/p/bad\\xff', b'/p/' + ODD[1], True, False),
                            ('/p/bad\\xff/in', b'/p/' + ODD[0], True, False),
                            ('/p/ctl\\x01', b'/p/' + ODD[2], True, False)],
                           'the journal holds the three, escaped and in hex')
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir) as d:
                ft.check_equal([read_flag(p + b'/' + n) for n in ODD], [1, 1, 1],
                               'the odd groups all frozen again, as before the call')
                ft.check_equal(sc.read_freeze('/p'), 0, '/p stays thawed')
                ft.check_equal(recovered(d.log()), [(str(j['id']), '1', '2', '0', '0')],
                               'one odd group restored, two had their flag')
                ft.check_equal(ft.live_journals(runtime_dir), [], 'the journal gone')
            for name in ODD:
                write_flag(p + b'/' + name, 0)

            # ---- an odd group whose flag was 0 when the journal was made, set by its
            # owner while the thaw writes the others: left alone (before, the thaw
            # cleared it, with no journal to put it back after a crash)
            # (bad\xff/in is written before bad\xff, its parent: bottom-up.)
            write_flag(p + b'/' + ODD[0], 1)
            write_flag(p + b'/' + ODD[2], 1)
            sc.write_freeze('/p', 1)
            with ft.CrashableDaemon(bus, sc.root, runtime_dir=runtime_dir, env=env) as d:
                call = d.client.call_async('Thaw', '/p', LONG_USEC, ft.FLAG_RECURSIVE)
                ft.wait_for(lambda: read_flag(p + b'/' + ODD[0]) == 0 or call.done(),
                            timeout=3 * ft.DEFAULT_TIMEOUT, what='/p/bad\\xff/in thawed')
                ft.check(not call.done(), 'the call waits in the pause after that write',
                         call.result() if call.done() else None)
                write_flag(p + b'/' + ODD[1], 1)
                call.result(timeout=3 * ft.DEFAULT_TIMEOUT)
                ft.check_equal([read_flag(p + b'/' + n) for n in ODD], [0, 1, 0],
                               'the two journaled cleared, /p/bad\\xff, set meanwhile, left frozen')
                ft.check_equal(ft.live_journals(runtime_dir), [], 'the journal gone')
            write_flag(p + b'/' + ODD[1], 0)
        finally:
            shutil.rmtree(runtime_dir, ignore_errors=True)


if __name__ == '__main__':
    ft.run(test)
