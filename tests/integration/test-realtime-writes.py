#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Big cgroup.freeze writes from a real-time thread ("realtime_writes", see
daemon/freeze-writer.h), and the main loop's writes where that is refused or
switched off.

  /big       1,100 empty children c0..c1099, and two sleepers in /big/c0:
             a write of /big's flag freezes or thaws 1,101 groups (>= 1,024)
  /small     three children: below the threshold
  /z/x       empty, removed during a batch to make a write fail

Each part checks what the kernel reports (cgroup.freeze, cgroup.events of
every group, the sleepers' task state) and what freezerd logged at debug
level ("Wrote N of M cgroup.freeze from a real-time thread (G groups change)"):

  realtime   the default: a Freeze of /big, and a batch thawing /big and
             /small, each written by the thread (one log line per call: its
             writes done, attempted, and the groups they change); a Freeze of
             /small (4 groups) is written by the main loop; a RECURSIVE freeze
             and thaw of /big (1,101 nested flags) count the top's subtree
             once, not once per level; the thread ends after the last call
             (freezerd is back to one thread).
  failure    FREEZERD_TEST_WRITE_DELAY_USEC holds each write 0.3 s (times the
             harness's multiplier: the test must act within it); a batch
             (top-down) freezes /big, then /z/x, which the test removes as
             soon as /big's flag reads 1.  /z/x's write fails inside the
             thread: NoSuchGroup naming /z/x, and with ROLLBACK /big is
             written back (flag 0, thawed), without it /big stays frozen and
             the message says so.  The same with "realtime_writes": false.
  refused    freezerd under setpriv without CAP_SYS_NICE and RLIMIT_RTPRIO 0:
             one notice that real-time scheduling is refused, however many
             big calls follow, and the main loop writes them correctly.  After
             a SIGHUP the next big call asks the kernel again (its refusal
             stuck until a restart, also once RLIMIT_RTPRIO was raised): one
             more notice, and only one.
  failed     freezerd moved (cgroup v1 pids controller, where there is one)
             into a group of pids.max 1: the writer thread cannot be started
             (EAGAIN), one warning however many big calls follow, the main
             loop writes them.  After a SIGHUP the warning comes once more,
             and only once, as the refusal's notice does (until session 36
             it was given once per run of freezerd).
  off        "realtime_writes": false: no thread, no notice, the same results.
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

CHILDREN = 1100
LONG_USEC = 60 * 1000000
RT_LINE = re.compile(r'Wrote (\d+) of (\d+) cgroup\.freeze from a real-time thread \((\d+) groups change\)')
REFUSED = 'Real-time scheduling is refused'
FAILED = 'Cannot start the real-time writer thread'
PIDS_V1 = '/sys/fs/cgroup/pids'
DEBUG = {'FREEZERD_LOG_LEVEL': 'debug'}


def rt_lines(d):
    """(written, attempted, groups changing) of each call the thread wrote."""
    return [tuple(int(x) for x in t) for t in RT_LINE.findall(d.log())]


def check_subtree(sc, frozen, what):
    """Every group of /big reports `frozen`, and so do its sleepers' tasks."""
    sc.wait_events('/big', frozen=int(frozen))
    wrong = [f'/big/c{i}' for i in range(CHILDREN) if sc.frozen(f'/big/c{i}') != frozen]
    ft.check(not wrong, f'{what}: every child of /big {"frozen" if frozen else "thawed"}',
             f'{len(wrong)} not, e.g. {wrong[:3]}')
    def tasks():
        states = sc.proc_states('/big/c0')
        return len(states) == 2 and all(ft.task_frozen(st) == frozen for st in states.values())
    ft.wait_for(tasks, poll=0.01, what=f'{what}: the sleepers in /big/c0 {"frozen" if frozen else "running"}')


def part_realtime(sc, bus):
    with ft.Daemon(bus, sc.root, env=DEBUG) as d:
        c = d.client
        c.call('Freeze', '/big', LONG_USEC, 0)
        ft.check_equal(sc.read_freeze('/big'), 1, 'realtime: /big flag after Freeze')
        check_subtree(sc, True, 'realtime: Freeze')
        ft.check_equal(rt_lines(d), [(1, 1, CHILDREN + 1)], 'realtime: the Freeze of /big written by the thread')

        c.call('Freeze', '/small', LONG_USEC, 0)
        sc.wait_events('/small', frozen=1)
        ft.check_equal(len(rt_lines(d)), 1, 'realtime: the Freeze of /small (4 groups) written by the main loop')

        writes, skipped = c.call('ApplyBatch', [('/big', False), ('/small', False)], 'auto', LONG_USEC, 0)
        ft.check_equal((writes, skipped), (2, 0), 'realtime: batch writes, skipped')
        ft.check_equal(sc.read_freeze('/big'), 0, 'realtime: /big flag after the batch')
        ft.check_equal(sc.read_freeze('/small'), 0, 'realtime: /small flag after the batch')
        check_subtree(sc, False, 'realtime: batch thaw')
        sc.wait_events('/small', frozen=0)
        ft.check_equal(rt_lines(d)[1:], [(2, 2, CHILDREN + 1 + 4)],
                       'realtime: the batch written by the thread, both writes in one call')
        ft.check(REFUSED not in d.log(), 'realtime: no refusal as root')

        # RECURSIVE: 1,101 nested flags in one batch.  Only the top's write
        # changes the subtree; the children's find it done and count nothing.
        n_rt = len(rt_lines(d))
        writes, _ = c.call('ApplyBatch', [('/big', True)], 'auto', LONG_USEC, 4)
        ft.check_equal(writes, CHILDREN + 1, 'realtime: RECURSIVE freeze writes')
        check_subtree(sc, True, 'realtime: RECURSIVE freeze')
        c.call('Thaw', '/big', LONG_USEC, 4)
        check_subtree(sc, False, 'realtime: RECURSIVE thaw')
        ft.check(all(sc.read_freeze(f'/big/c{i}') == 0 for i in range(CHILDREN)), 'realtime: every flag cleared')
        ft.check_equal(rt_lines(d)[n_rt:], [(CHILDREN + 1, CHILDREN + 1, CHILDREN + 1)] * 2,
                       'realtime: RECURSIVE freeze and thaw by the thread, each counting the top only')

        # The thread waits 100 ms for the next big call, then ends: freezerd
        # is single-threaded at rest (no event tells of a thread's end: polled).
        threads = lambda: ft.thread_count(d.pid)  # noqa: E731
        ft.check(threads() <= 2, 'realtime: one writer thread at most', threads())
        ft.wait_for(lambda: threads() == 1, timeout=2 * ft.TIMEOUT_MULTIPLIER, poll=0.01,
                    what='freezerd back to one thread after the last big call')
        ft.check_equal(threads(), 1, 'realtime: freezerd single-threaded again after the last big call')


def part_failure(sc, bus, realtime):
    what = f'failure ({"thread" if realtime else "main loop"})'
    # The test removes /z/x between the two writes: a window the test's slower
    # runs (ASan, valgrind) get longer as well.
    env = dict(DEBUG, FREEZERD_TEST_WRITE_DELAY_USEC=str(int(300000 * ft.TIMEOUT_MULTIPLIER)))
    with ft.Daemon(bus, sc.root, env=env, config={'realtime_writes': realtime}) as d:
        c = d.client
        for rollback in (True, False):
            sc.mkdir('/z/x')
            c.call('GetGroup', '/z/x')  # known to freezerd before the batch names it
            ft.loop().watch(sc.abspath('/big', 'cgroup.freeze'))
            n_rt = len(rt_lines(d))
            call = c.call_async('ApplyBatch', [('/big', True), ('/z/x', True)], 'top-down', LONG_USEC,
                                1 if rollback else 0)
            # /big is written first; the write of /z/x follows 0.3 s (times the multiplier) later.
            ft.wait_for(lambda: sc.read_freeze('/big') == 1 or call.done(), what=f'{what}: /big written')
            ft.check(not call.done(), f'{what}: the batch still writing when /big reads 1')
            sc.rmdir('/z/x')
            e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, call.result, timeout=3 * ft.DEFAULT_TIMEOUT)
            # The thread wrote /big, and /z/x's write failed.
            ft.check_equal(rt_lines(d)[n_rt:], [(1, 2, CHILDREN + 2)] if realtime else [],
                           f'{what}: the batch written by the thread' if realtime else f'{what}: no thread')
            ft.check('/z/x' in e.message and 'no longer exists' in e.message,
                     f'{what}: the error names /z/x', e.message)
            if rollback:
                ft.check('rolled back' in e.message, f'{what}: the error says the batch was rolled back', e.message)
                ft.check_equal(sc.read_freeze('/big'), 0, f'{what}: /big written back')
                check_subtree(sc, False, f'{what}: rollback')
            else:
                ft.check('stay applied: /big' in e.message, f'{what}: the error says /big stays frozen', e.message)
                ft.check_equal(sc.read_freeze('/big'), 1, f'{what}: /big stays written')
                check_subtree(sc, True, f'{what}: no rollback')
                c.call('Thaw', '/big', LONG_USEC, 0)
                check_subtree(sc, False, f'{what}: thawed after')


def part_refused(sc, bus):
    wrapper = ['setpriv', '--bounding-set=-sys_nice', '--inh-caps=-sys_nice', '--',
               'prlimit', '--rtprio=0', '--']
    with ft.Daemon(bus, sc.root, env=DEBUG, wrapper=wrapper) as d:
        c = d.client
        for rnd in range(2):
            c.call('Freeze', '/big', LONG_USEC, 0)
            check_subtree(sc, True, f'refused: Freeze {rnd}')
            c.call('Thaw', '/big', LONG_USEC, 0)
            check_subtree(sc, False, f'refused: Thaw {rnd}')
        ft.check_equal(d.log().count(REFUSED), 1, 'refused: the refusal logged once')
        ft.check_equal(rt_lines(d), [], 'refused: nothing written by a thread')

        # A SIGHUP, which reads "realtime_writes": true again, has the next big write
        # ask the kernel again: the cause may be gone by then (an RLIMIT_RTPRIO raised
        # with prlimit --pid, which root here cannot do: it lacks CAP_SYS_RESOURCE for
        # the hard limit).  Still refused, the notice comes once more, and only once.
        d.reload()
        for rnd in range(2):
            c.call('Freeze', '/big', LONG_USEC, 0)
            check_subtree(sc, True, f'refused, after a SIGHUP: Freeze {rnd}')
            c.call('Thaw', '/big', LONG_USEC, 0)
            check_subtree(sc, False, f'refused, after a SIGHUP: Thaw {rnd}')
        ft.check_equal(d.log().count(REFUSED), 2, 'refused, after a SIGHUP: the kernel asked again (the refusal '
                       'stuck until a restart), the refusal logged once more')
        ft.check_equal(rt_lines(d), [], 'refused, after a SIGHUP: nothing written by a thread')


def pids_v1_group(pid):
    """The cgroup v1 pids group of pid, relative to PIDS_V1 ('' for the root)."""
    with open(f'/proc/{pid}/cgroup') as f:
        for line in f:
            _, controllers, path = line.rstrip('\n').split(':', 2)
            if 'pids' in controllers.split(','):
                return path.lstrip('/')
    return None


def part_failed(sc, bus):
    if not os.path.exists(os.path.join(PIDS_V1, 'pids.max')) and \
            not os.path.exists(os.path.join(PIDS_V1, 'cgroup.procs')):
        print(f'# no cgroup v1 pids controller at {PIDS_V1}: a thread that cannot start is not checked', flush=True)
        return
    with ft.Daemon(bus, sc.root, env=DEBUG) as d:
        c = d.client
        home = pids_v1_group(d.pid)
        if home is None:
            print('# freezerd is in no v1 pids group: a thread that cannot start is not checked', flush=True)
            return
        # One task only: the writer thread cannot be made (EAGAIN).  Moved back
        # before freezerd exits: a sanitizer's leak check starts a thread then.
        limited = os.path.join(PIDS_V1, f'freezerd-test-realtime-{os.getpid()}')
        os.mkdir(limited)
        try:
            ft.wait_for(lambda: ft.thread_count(d.pid) == 1, poll=0.01,
                        what='failed: freezerd single-threaded')
            with open(os.path.join(limited, 'pids.max'), 'w') as f:
                f.write('1')
            with open(os.path.join(limited, 'cgroup.procs'), 'w') as f:
                f.write(str(d.pid))

            def rounds(what):
                for rnd in range(2):
                    c.call('Freeze', '/big', LONG_USEC, 0)
                    check_subtree(sc, True, f'{what}: Freeze {rnd}')
                    c.call('Thaw', '/big', LONG_USEC, 0)
                    check_subtree(sc, False, f'{what}: Thaw {rnd}')

            rounds('failed')
            ft.check_equal(d.log().count(FAILED), 1, 'failed: the thread\'s failure logged once')
            ft.check_equal(rt_lines(d), [], 'failed: nothing written by a thread')

            d.reload()
            rounds('failed, after a SIGHUP')
            ft.check_equal(d.log().count(FAILED), 2, 'failed, after a SIGHUP: the failure logged once more (it was '
                           'not logged again until a restart)')
            ft.check_equal(rt_lines(d), [], 'failed, after a SIGHUP: nothing written by a thread')
            ft.check(REFUSED not in d.log(), 'failed: no refusal logged')
        finally:
            with open(os.path.join(PIDS_V1, home, 'cgroup.procs'), 'w') as f:
                f.write(str(d.pid))
            os.rmdir(limited)


def part_off(sc, bus):
    with ft.Daemon(bus, sc.root, env=DEBUG, config={'realtime_writes': False}) as d:
        c = d.client
        c.call('Freeze', '/big', LONG_USEC, 0)
        check_subtree(sc, True, 'off: Freeze')
        writes, _ = c.call('ApplyBatch', [('/big', False)], 'auto', LONG_USEC, 0)
        ft.check_equal(writes, 1, 'off: batch writes')
        check_subtree(sc, False, 'off: batch thaw')
        ft.check_equal(rt_lines(d), [], 'off: nothing written by a thread')
        ft.check(REFUSED not in d.log(), 'off: no refusal logged')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('realtime-writes') as sc, ft.Bus() as bus:
        for i in range(CHILDREN):
            sc.mkdir(f'/big/c{i}')
        for i in range(3):
            sc.mkdir(f'/small/s{i}')
        sc.mkdir('/z')
        sc.spawn_sleepers('/big/c0', 2)
        part_realtime(sc, bus)
        part_failure(sc, bus, True)
        part_failure(sc, bus, False)
        part_refused(sc, bus)
        part_failed(sc, bus)
        part_off(sc, bus)


if __name__ == '__main__':
    ft.run(test)
