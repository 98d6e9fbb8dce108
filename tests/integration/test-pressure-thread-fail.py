#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The pressure watcher thread ending on an error (of its epoll_wait(), or of
the pipe to the main loop) is restarted by the main loop, which logs it once.

freezerd runs with FREEZERD_TEST_PRESSURE_THREAD_FAIL: the first epoll_wait()
of the listed watcher threads (numbered as started) fails (EIO), as if the
epoll set broke; one marked ":late" tells the main loop only once an
AddPressureTrigger joins it to start another.

  /busy  CPU hogs, more than there are CPUs (at least 4)

Checked:
  * a trigger on /busy, added as the only one (its thread is the one that
    fails), still fires PressureExceeded; until session 38 triggers stopped
    firing until the next AddPressureTrigger started another thread;
  * freezerd logged the failure once, and runs two threads again;
  * removing the trigger still closes its fd and the thread goes;
  * with FREEZERD_TEST_PRESSURE_THREAD_FAIL=1,2 the restarted thread fails
    too, before a single epoll_wait() worked: the trigger ends with
    PressureTriggerRemoved "error" (its client told, not left with a trigger
    that never fires), logged once; a trigger added after that fires;
  * with 1,3 the first thread fails, the restarted one works and leaves with
    the trigger removed, and the next thread, started by another trigger,
    fails as well: a failure after a thread that worked, it is restarted and
    the trigger fires (the count of failures was not reset by a thread that
    worked and left: the trigger ended, "error", without a restart);
  * with 1,2:late the restarted thread fails, but before the main loop hears
    of it, an AddPressureTrigger joins it and starts a third, which works:
    both triggers stay and fire (the main loop, hearing of the second failure
    then, ended them both, "error", though the third thread watched them).
No sleeps: every wait is on D-Bus messages or /proc, with a deadline."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

HOG = ['sh', '-c', 'while :; do :; done']
WINDOW = 2_000_000          # usec: a whole multiple of 2 s (freezerd lacks CAP_SYS_RESOURCE)
THRESHOLD = 100_000         # usec
SLACK = 1.0 * ft.TIMEOUT_MULTIPLIER
DEADLINE = 5 * ft.TIMEOUT_MULTIPLIER
MESSAGE = 'pressure watcher thread failed'
GAVE_UP = 'pressure watcher thread cannot run'


def fires(c, what):
    armed = time.monotonic()
    tid = c.group_call('/busy', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
    ft.wait_for(lambda: any(s.member == 'PressureExceeded' and s.body[0] == tid for s in c.signals),
                deadline=armed + 2 * WINDOW / 1e6 + SLACK, what=what)
    return tid


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'psi')
    ncpu = os.cpu_count() or 1

    with ft.Scratch('pressure-thread-fail') as sc, ft.Bus() as bus:
        sc.mkdir('/busy')
        sc.require_pressure('/busy')
        hogs = [sc.spawn('/busy', HOG) for _ in range(max(4, 2 * ncpu))]

        with ft.Daemon(bus, sc.root, env={'FREEZERD_TEST_PRESSURE_THREAD_FAIL': '1'}) as d:
            c = d.client
            c.add_match(type='signal', sender=ft.BUS_NAME)
            tid = fires(c, 'PressureExceeded of the /busy trigger, its first watcher thread failed (until '
                        'session 38 none came: the thread was not restarted)')
            ft.check(True, 'the trigger fires though its first watcher thread failed')
            ft.wait_for(lambda: d.log().count(MESSAGE) >= 1, timeout=DEADLINE, poll=0.02,
                        what='the failure logged')
            ft.check_equal(d.log().count(MESSAGE), 1, 'the failure is logged once')
            ft.check_equal(ft.thread_count(d.pid), 2, 'two threads: the watcher thread runs again')

            c.group_call('/busy', 'RemovePressureTrigger', tid)
            ft.wait_for(lambda: ft.pressure_trigger_fd_count(d.pid) == 0 and ft.thread_count(d.pid) == 1,
                        timeout=DEADLINE, poll=0.02, what='the trigger\'s fd closed and the thread gone')
            ft.check(True, 'removed, its fd is closed and the thread goes')

        with ft.Daemon(bus, sc.root, env={'FREEZERD_TEST_PRESSURE_THREAD_FAIL': '1,2'}) as d:
            c = d.client
            c.add_match(type='signal', sender=ft.BUS_NAME)
            tid = c.group_call('/busy', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            removed = lambda: [s.body[1] for s in c.signals  # noqa: E731
                               if s.member == 'PressureTriggerRemoved' and s.body[0] == tid]
            ft.wait_for(lambda: removed(), timeout=DEADLINE, poll=0.02,
                        what='PressureTriggerRemoved of the trigger whose watcher thread failed twice')
            ft.check_equal(removed(), ['error'], 'the restarted thread failed too: the trigger ends, "error"')
            ft.check_equal((d.log().count(MESSAGE), d.log().count(GAVE_UP)), (1, 1), '  ... logged once')
            tid = fires(c, 'PressureExceeded of a trigger added after the failures')
            ft.check(True, 'a trigger added after that fires')
            c.group_call('/busy', 'RemovePressureTrigger', tid)

        with ft.Daemon(bus, sc.root, env={'FREEZERD_TEST_PRESSURE_THREAD_FAIL': '1,3'}) as d:
            c = d.client
            c.add_match(type='signal', sender=ft.BUS_NAME)
            tid = c.group_call('/busy', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            ft.wait_for(lambda: d.log().count(MESSAGE) >= 1 and ft.thread_count(d.pid) == 2, timeout=DEADLINE,
                        poll=0.02, what='the first thread\'s failure logged, the second running')
            c.group_call('/busy', 'RemovePressureTrigger', tid)
            ft.wait_for(lambda: ft.thread_count(d.pid) == 1, timeout=DEADLINE, poll=0.02,
                        what='the second thread gone with the trigger')
            tid = fires(c, 'PressureExceeded of a trigger whose thread, the third, failed after the second worked '
                        '(it ended, "error": the second thread\'s working did not reset the count of failures)')
            ft.check(True, 'a thread failing after a restarted one worked and left is restarted: its trigger fires')
            ft.check_equal([s.body[1] for s in c.signals if s.member == 'PressureTriggerRemoved'], [],
                           '  ... no trigger ended')
            ft.check_equal(d.log().count(GAVE_UP), 0, '  ... freezerd did not give up')
            c.group_call('/busy', 'RemovePressureTrigger', tid)

        with ft.Daemon(bus, sc.root, env={'FREEZERD_TEST_PRESSURE_THREAD_FAIL': '1,2:late'}) as d:
            c = d.client
            c.add_match(type='signal', sender=ft.BUS_NAME)
            first = c.group_call('/busy', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            ft.wait_for(lambda: 'pressure watcher thread 2 failed' in d.log(), timeout=DEADLINE, poll=0.02,
                        what='the restarted thread failed, the main loop not yet told')
            second = fires(c, 'PressureExceeded of a trigger whose AddPressureTrigger started a thread after the '
                           'second failed (the main loop ended it, "error", when it heard of that failure)')
            ft.wait_for(lambda: any(s.member == 'PressureExceeded' and s.body[0] == first for s in c.signals),
                        timeout=DEADLINE, what='PressureExceeded of the first trigger')
            ft.check(True, 'a thread started after the failed one, before the main loop heard of the failure: '
                     'both triggers fire')
            ft.check_equal([s.body[1] for s in c.signals if s.member == 'PressureTriggerRemoved'], [],
                           '  ... no trigger ended')
            ft.check_equal(d.log().count(GAVE_UP), 0, '  ... freezerd did not give up')
            ft.check_equal(ft.thread_count(d.pid), 2, '  ... one watcher thread runs')
            c.group_call('/busy', 'RemovePressureTrigger', first)
            c.group_call('/busy', 'RemovePressureTrigger', second)
            ft.check(all(p.poll() is None for p in hogs), 'the /busy hogs ran throughout')


ft.run(test)
