#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The fds of removed pressure triggers, until the watcher thread has closed
them, count against the bounds of the client and of the uid that removed them,
and an AddPressureTrigger that they alone keep from a bound waits only a
moment for them on the main loop, then fails with LimitsExceeded "retry".

freezerd runs with FREEZERD_TEST_PRESSURE_CLOSE_DELAY_USEC: each close of a
trigger's fd waits DELAY first, so that removed triggers' fds stay pending
long enough to be seen (a close is otherwise a grace period, 40 us to 17 ms).

  * one client's 64 triggers, one removed: another add fails with
    LimitsExceeded naming this client's bound and "retry" (until session 38
    it succeeded: pending fds counted only against the total, so a client
    adding and removing in a loop could hold as many fds as the total
    allowed); once the fd is closed, the add works;
  * under RLIMIT_NOFILE 64 (16 triggers in all, 4 for a uid but root's):
    nobody adds 4 and removes them (its client is gone with its last trigger),
    then adds again: LimitsExceeded naming this user's bound (it succeeded);
    once they are closed, the add works;
  * root's triggers up to the total bound, the last one removed: while its
    fd is still being closed, an add fails at once with
    LimitsExceeded "retry" (until session 38 the main loop waited, without a
    limit, for the thread's close in progress, here DELAY, and every other
    call with it); once it is closed, the add works.
No sleeps: every wait is on D-Bus replies or /proc, with a deadline."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ERROR_LIMITS_EXCEEDED = 'org.freezerd.Freezer1.Error.LimitsExceeded'
WINDOW = 2_000_000          # usec: a whole multiple of 2 s (freezerd lacks CAP_SYS_RESOURCE)
THRESHOLD = 100_000         # usec
DELAY = 1.5 * ft.TIMEOUT_MULTIPLIER  # s: far beyond the 50 ms an add may wait for closes
DEADLINE = 10 * DELAY
NOFILE = 64                 # 16 triggers in all, 4 for one uid but root


def env():
    return {'FREEZERD_TEST_PRESSURE_CLOSE_DELAY_USEC': str(int(DELAY * 1e6))}


def part_client(sc, bus):
    with ft.Daemon(bus, sc.root, env=env(), wrapper=['prlimit', '--nofile=4096:4096', '--']) as d:
        c = d.client
        add = lambda: c.group_call('/g', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]  # noqa: E731
        ids = [add() for _ in range(64)]
        c.group_call('/g', 'RemovePressureTrigger', ids.pop())
        e = ft.expect_dbus_error(ERROR_LIMITS_EXCEEDED, add)
        ft.check('this client' in e.message and 'retry' in e.message,
                 'a client with 63 triggers and the fd of a removed one not yet closed: LimitsExceeded, this '
                 'client\'s bound, retry (until session 38 it got a 65th fd)', e.message)
        ft.wait_pressure_trigger_fds(d.pid, 63, 'the removed trigger\'s fd closed', DEADLINE)
        ids.append(add())
        ft.check(True, '  ... once it is closed, the add works')


def part_uid_and_total(sc, bus):
    with ft.Daemon(bus, sc.root, env=env(), wrapper=['prlimit', f'--nofile={NOFILE}:{2 * NOFILE}', '--']) as d:
        c = d.client
        u = ft.client_as_nobody(bus)
        if u is None:
            print('# no user "nobody": the checks of one user\'s bound are skipped', flush=True)
        else:
            with u:
                uadd = lambda: u.call('AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]  # noqa: E731
                u_ids = [uadd() for _ in range(NOFILE // 16)]
                for tid in u_ids:
                    u.call('RemovePressureTrigger', tid)
                e = ft.expect_dbus_error(ERROR_LIMITS_EXCEEDED, uadd)
                ft.check('this user' in e.message and 'retry' in e.message,
                         f'nobody removed its {NOFILE // 16} triggers, their fds not yet closed: LimitsExceeded, '
                         'this user\'s bound, retry (until session 38 it got more)', e.message)
                ft.wait_pressure_trigger_fds(d.pid, 0, 'nobody\'s removed triggers\' fds closed', DEADLINE)
                tid = uadd()
                ft.check(True, '  ... once they are closed, the add works')
                u.call('RemovePressureTrigger', tid)

        ft.wait_pressure_trigger_fds(d.pid, 0, 'nobody\'s last trigger\'s fd closed', DEADLINE)

        # The total: root's triggers up to it, the last one removed, its fd
        # still being closed.
        add = lambda: c.group_call('/g', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]  # noqa: E731
        ids = [add() for _ in range(NOFILE // 4)]
        c.group_call('/g', 'RemovePressureTrigger', ids.pop())
        e = ft.expect_dbus_error(ERROR_LIMITS_EXCEEDED, add)
        ft.check('freezerd\'s' in e.message and 'retry' in e.message,
                 f'{len(ids)} triggers and a removed one\'s fd being closed, at the total bound of {NOFILE // 4}: '
                 'LimitsExceeded, retry, at once (until session 38 the main loop waited for the close, here '
                 f'{DELAY} s)', e.message)
        ft.wait_pressure_trigger_fds(d.pid, len(ids), 'the removed trigger\'s fd closed', DEADLINE)
        ids.append(add())
        ft.check(True, '  ... once it is closed, the add works')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'psi')
    with ft.Scratch('pressure-closing') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        sc.require_pressure('/g')
        part_client(sc, bus)
        part_uid_and_total(sc, bus)


ft.run(test)
