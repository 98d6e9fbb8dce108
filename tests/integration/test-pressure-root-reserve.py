#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Users other than root, together, never take every pressure trigger: a
quarter of the total is kept for root.

freezerd runs under `prlimit --nofile=64:128`: 16 triggers in all, 4 for one
uid but root, 12 for all the uids but root together, 4 kept for root.  The
clients connect with effective uids 65534, 1, 2 and 3 (the bus learns them
from SO_PEERCRED; no user is needed).

  * uids 65534, 1 and 2 take 4 system-wide triggers each, then LimitsExceeded
    "one user"; uid 3's first add then fails with LimitsExceeded saying the rest
    is kept for root (until session 46 it took 4 too, and root's add failed:
    "freezerd has 16 pressure triggers already");
  * root then gets 4, and a fifth fails with LimitsExceeded for the total;
  * uid 65534 removes one: uid 3 gets one (the bound counts live triggers);
  * with FREEZERD_TEST_PRESSURE_CLOSE_DELAY_USEC, the fd of a removed trigger
    counts against that bound until closed: with the 12 taken and one of them
    removed, uid 3's add fails with LimitsExceeded "retry", naming the users
    other than root (it got the trigger); once the fd is closed, it works.
No sleeps: every wait is on D-Bus replies or /proc, with a deadline."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ERROR_LIMITS_EXCEEDED = 'org.freezerd.Freezer1.Error.LimitsExceeded'
WINDOW = 2_000_000          # usec: a whole multiple of 2 s (for callers other than root)
THRESHOLD = 100_000         # usec
NOFILE = 64                 # 16 triggers in all, 4 for one uid but root, 4 kept for root
TOTAL = NOFILE // 4
PER_UID = TOTAL // 4
UIDS = (65534, 1, 2, 3)
DELAY = 1.5 * ft.TIMEOUT_MULTIPLIER  # s: far beyond the 50 ms an add may wait for closes


def add(client):
    return client.call('AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]


def fill(client, what):
    """Triggers of client until a refusal: (ids, error)."""
    ids = []
    while len(ids) <= TOTAL:
        try:
            ids.append(add(client))
        except ft.DBusError as e:
            return ids, e
    ft.fail(f'{what}: more than {TOTAL} triggers')


def take_users_share(bus, clients):
    """The first three uids take their 4 each: the users' share, 12."""
    for uid in UIDS[:3]:
        c = ft.client_as(bus, uid)
        clients.append(c)
        ids, e = fill(c, f'uid {uid}')
        ft.check_equal(len(ids), PER_UID, f'uid {uid}: {PER_UID} triggers')
        ft.check(e.name == ERROR_LIMITS_EXCEEDED and 'one user' in e.message,
                 '  ... then LimitsExceeded for one user', f'{e.name}: {e.message}')
        c.ids = ids


def part_reserve(sc, bus):
    clients = []
    try:
        with ft.Daemon(bus, sc.root, wrapper=['prlimit', f'--nofile={NOFILE}:{2 * NOFILE}', '--']) as d:
            take_users_share(bus, clients)
            last = ft.client_as(bus, UIDS[3])
            clients.append(last)
            ids, e = fill(last, f'uid {UIDS[3]}')
            ft.check_equal(len(ids), 0, f'uid {UIDS[3]}, with {3 * PER_UID} triggers held by other users but '
                           f'root: none (until session 46 it got {PER_UID})')
            ft.check(e.name == ERROR_LIMITS_EXCEEDED and 'kept for root' in e.message,
                     '  ... LimitsExceeded saying the rest is kept for root', f'{e.name}: {e.message}')

            root_ids, e = fill(d.client, 'root')
            ft.check_equal(len(root_ids), TOTAL - 3 * PER_UID, f'root then gets the {TOTAL - 3 * PER_UID} kept '
                           'for it (until session 46 none: "freezerd has 16 pressure triggers already")')
            ft.check(e.name == ERROR_LIMITS_EXCEEDED and f'freezerd has {TOTAL}' in e.message,
                     '  ... then LimitsExceeded for the total', f'{e.name}: {e.message}')

            first = clients[0]
            first.call('RemovePressureTrigger', first.ids.pop())
            ft.wait_pressure_trigger_fds(d.pid, TOTAL - 1, 'the removed trigger\'s fd closed')
            add(last)
            ft.check(True, f'uid {UIDS[0]} removed one: uid {UIDS[3]} gets one')
    finally:
        for c in clients:
            c.close()


def part_pending(sc, bus):
    clients = []
    env = {'FREEZERD_TEST_PRESSURE_CLOSE_DELAY_USEC': str(int(DELAY * 1e6))}
    try:
        with ft.Daemon(bus, sc.root, env=env,
                       wrapper=['prlimit', f'--nofile={NOFILE}:{2 * NOFILE}', '--']) as d:
            take_users_share(bus, clients)
            first = clients[0]
            first.call('RemovePressureTrigger', first.ids.pop())
            last = ft.client_as(bus, UIDS[3])
            clients.append(last)
            e = ft.expect_dbus_error(ERROR_LIMITS_EXCEEDED, last.call, 'AddPressureTrigger', 'cpu', 'some',
                                     THRESHOLD, WINDOW)
            ft.check('users other than root' in e.message and 'retry' in e.message,
                     f'{3 * PER_UID - 1} triggers of users but root and a removed one\'s fd being closed: '
                     f'uid {UIDS[3]} gets LimitsExceeded, retry (until session 46 it got the trigger)', e.message)
            ft.wait_pressure_trigger_fds(d.pid, 3 * PER_UID - 1, 'the removed trigger\'s fd closed', 10 * DELAY)
            add(last)
            ft.check(True, '  ... once it is closed, the add works')
    finally:
        for c in clients:
            c.close()


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'psi')
    with ft.Scratch('pressure-root-reserve') as sc, ft.Bus() as bus:
        part_reserve(sc, bus)
        part_pending(sc, bus)


ft.run(test)
