#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A pressure event that the kernel signals while freezerd's main loop is busy
with the trigger's previous one is delivered too.

  /hot    a trigger (cpu some, 100 ms per 2 s); CPU hogs, more than there are
          CPUs (at least 4), started once the main loop is held, killed after
          the kernel fired twice
  /stall  empty; Freeze of it holds freezerd's main loop for STALL seconds
          (FREEZERD_TEST_WRITE_DELAY_USEC: the delay follows the cgroup.freeze
          write, in the main loop)

The watcher thread takes the kernel's first event and hands it to the held main
loop; the kernel's second comes a window later, still inside the hold.  Until
this test, the trigger was EPOLLONESHOT and re-armed (EPOLL_CTL_MOD) only once
the main loop had handled the first: the re-arm's poll reported and cleared
the second (PSI's poll is destructive), epoll queued the trigger, and
epoll_wait()'s own poll then found nothing, so the second was lost.

Checked: the kernel fired at least twice during the hold (a raw trigger of the
test's own, armed next to freezerd's, says so) and freezerd sent no signal
meanwhile (its main loop was held); the hogs were gone at least three windows
before the hold ended (no later pressure can stand in for the second event);
after the hold freezerd sends PressureExceeded twice, or more: as many as its
log says the kernel sent its trigger.  freezerd's trigger is not the raw one:
unprivileged, it is updated by another aggregator of the kernel, every 2 s,
with windows of its own, and can fire a third time during the hold (the
hogs' last tenth of a second, or the kernel's interpolation of the previous
window: seen under load, "got 3, expected 2").
No sleeps: every wait is on D-Bus messages, inotify or the raw trigger's
thread, with a deadline."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

HOG = ['sh', '-c', 'while :; do :; done']
WINDOW = 2_000_000          # usec: a whole multiple of 2 s (freezerd lacks CAP_SYS_RESOURCE)
THRESHOLD = 100_000         # usec
STALL = 20.0                # seconds the main loop is held
SLACK = 1.0 * ft.TIMEOUT_MULTIPLIER


def exceeded(client, tid):
    return [s for s in client.signals if s.member == 'PressureExceeded' and s.body[0] == tid]


def kernel_events(d, tid):
    """The kernel's events of freezerd's trigger tid that freezerd read and did not drop as
    spurious, from its debug log (pressure.c, trigger_fire())."""
    log = d.log()
    return (log.count(f'Pressure trigger {tid}: kernel event ') -
            log.count(f'Pressure trigger {tid}: dropping a spurious event'))


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'psi')
    ncpu = os.cpu_count() or 1

    with ft.Scratch('pressure-disarmed') as sc, ft.Bus() as bus:
        sc.mkdir('/hot')
        sc.mkdir('/stall')
        sc.require_pressure('/hot')
        env = {'FREEZERD_TEST_WRITE_DELAY_USEC': str(int(STALL * 1e6)), 'FREEZERD_LOG_LEVEL': 'debug'}
        with ft.Daemon(bus, sc.root, env=env) as d:
            c = d.client
            c.add_match(type='signal', sender=ft.BUS_NAME)
            tid = c.group_call('/hot', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            raw = ft.RawPsiTrigger(sc.abspath('/hot', 'cpu.pressure'), f'some {THRESHOLD} {WINDOW}')
            try:
                # -- hold the main loop: it sleeps right after writing /stall's cgroup.freeze
                freeze = c.call_async('Freeze', '/stall', 0, 0)
                sc.wait_events('/stall', frozen=1)
                held = time.monotonic()
                hogs = [sc.spawn('/hot', HOG) for _ in range(max(4, 2 * ncpu))]

                # -- the kernel fires twice (one window apart) while the loop is held
                ft.wait_for(lambda: len(raw.events) >= 2 or freeze.done(), deadline=held + STALL,
                            what='two events of the raw trigger on /hot')
                ft.check(not freeze.done() and len(raw.events) >= 2,
                         'the kernel fired twice before the hold ended (else the test proves nothing)',
                         f'{len(raw.events)} event(s) in {time.monotonic() - held:.1f} s')
                sc.kill('/hot')
                sc.wait_events('/hot', populated=0)
                cooled = time.monotonic()
                for p in hogs:
                    p.wait()
                ft.check_equal(len(exceeded(c, tid)), 0, 'no PressureExceeded while the main loop is held')
                at = [round(raw.t0 + t - held, 2) for t, _text in raw.events]
                print(f'# raw trigger events at {at} s into the hold; '
                      f'hogs gone at {cooled - held:.2f} s', flush=True)

                # -- the hold ends: both events are delivered
                freeze.result(timeout=STALL + SLACK)
                released = time.monotonic()
                ft.check(released - cooled >= 3 * WINDOW / 1e6,
                         'the hogs were gone three windows before the hold ended (no later event '
                         'can stand in for the second)', f'{released - cooled:.2f} s')
                deadline = released + WINDOW / 1e6 + SLACK
                while (len(exceeded(c, tid)) < max(2, kernel_events(d, tid)) and
                       time.monotonic() < deadline):
                    ft.loop().run_once(min(0.1, max(0, deadline - time.monotonic())))
                n = len(exceeded(c, tid))
                ft.check(n >= 2, 'PressureExceeded for both events the kernel signalled during the hold',
                         f'{n} signal(s)')
                ft.check_equal(n, kernel_events(d, tid),
                               'a PressureExceeded for each kernel event of its trigger that freezerd read')
            finally:
                raw.close()


ft.run(test)
