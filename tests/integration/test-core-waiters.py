#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Many waiters at once, waiters that go away, and independent deadlines.

  /s   a sleeper and a task blocked on a FUSE mount that never answers
       (a new blocked task for each round)

Checks:
  * 1000 Freeze calls on /s pending at once from 10 connections (manager and
    group object, timeouts 60 s and UINT64_MAX), plus 50 from a connection that
    disconnects while they wait: freezerd keeps answering other calls
    ("freezing"); when the blocked task is killed every one of the 1000
    succeeds, with the kernel at frozen 1, and freezerd is still alive.
  * 1000 pending Freeze calls, then Thaw: every one fails with Cancelled.
  * Memory goes back: after those two bursts freezerd's RSS is within 1 MiB of
    what it was before the first (1000 waiting calls hold more than that: glibc
    alone kept about 1.4 KiB per call), and three more bursts of 1000
    cancelled calls add at most 384 KiB (a leak of 128 bytes a call would add
    that much; 1000 waiting calls hold about 1.4 MiB).  The first bursts leave a high-water mark (heap fragmentation,
    tables grown to 1000 entries) that varies from run to run by a few
    hundred KiB, which is why the bound on growth is taken after them.
  * Deadlines are per call and do not overflow: with Freeze(UINT64_MAX) and
    Freeze(60 s) waiting, Freeze(300 ms) times out alone (no rollback) and the
    others are still waiting; they succeed once the blocked task is killed.
  * Freeze(300 ms, ROLLBACK) while Freeze(60 s) waits: after the rollback the
    waiting call is not left hanging against the kernel: if cgroup.freeze was
    written back to 0 it fails with Cancelled, otherwise it is still waiting."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LONG = 60 * 1000000
UINT64_MAX = (1 << 64) - 1


def send_many(clients, n_each):
    calls = []
    for i, cl in enumerate(clients):
        for j in range(n_each):
            timeout = UINT64_MAX if j % 2 else LONG
            if (i + j) % 3 == 0:
                calls.append(cl.group_call_async('/s', 'Freeze', timeout, 0))
            else:
                calls.append(cl.call_async('Freeze', '/s', timeout, 0))
    return calls


def outcome(p):
    try:
        p.result()
        return 'ok'
    except ft.DBusError as e:
        return e.name


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('core-waiters') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        sc.mkdir('/s')
        sc.spawn_sleepers('/s', 1)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            clients = [ft.Client(bus.address) for _ in range(10)]
            try:
                # ---- 1000 waiters that succeed
                for cl in clients:  # every connection set up before the baseline
                    cl.group_property('/s', 'FreezerState')
                rss0 = ft.rss_kib(d.pid)
                stuck = fuse.spawn_stuck(sc, '/s')
                calls = send_many(clients, 100)
                quitter = ft.Client(bus.address)
                for _ in range(50):
                    quitter.call_async('Freeze', '/s', LONG, 0)
                quitter.close()
                # A Get on each connection is answered after that connection's calls were handled.
                got = {cl.group_property('/s', 'FreezerState') for cl in clients}
                ft.check_equal(got, {'freezing'}, 'freezerd keeps answering while 1050 calls wait: freezing')
                ft.check(not any(p.done() for p in calls), '1000 Freeze calls are waiting')
                os.kill(stuck.pid, signal.SIGKILL)
                results = [outcome(p) for p in calls]
                ft.check(results == ['ok'] * 1000, 'all 1000 succeed once the kernel reports frozen 1',
                         {r: results.count(r) for r in set(results)})
                ft.check_equal(sc.read_events('/s').get('frozen'), 1, 'the kernel says frozen 1')
                ft.check_equal(d.exit_status, None, 'freezerd is alive after a client vanished with 50 waiters')
                ft.check_equal(c.group_property('/s', 'FreezerState'), 'frozen', 'and answers: frozen')
                c.call('Thaw', '/s', 0, 0)

                # ---- 1000 waiters that are cancelled
                stuck = fuse.spawn_stuck(sc, '/s')
                calls = send_many(clients, 100)
                for cl in clients:
                    cl.group_property('/s', 'FreezerState')
                ft.check(not any(p.done() for p in calls), '1000 Freeze calls are waiting again')
                rss_waiting = ft.rss_kib(d.pid)
                c.call('Thaw', '/s', 0, 0)
                results = [outcome(p) for p in calls]
                ft.check(results == [ft.ERROR_CANCELLED] * 1000, 'Thaw cancels all 1000',
                         {r: results.count(r) for r in set(results)})
                c.call('ListGroups')  # a loop turn after the replies: the burst's memory is given back
                rss1 = ft.rss_kib(d.pid)
                for _ in range(3):  # the same blocked task keeps /s from finishing
                    calls = send_many(clients, 100)
                    for cl in clients:
                        cl.group_property('/s', 'FreezerState')
                    c.call('Thaw', '/s', 0, 0)
                    results = [outcome(p) for p in calls]
                    if results != [ft.ERROR_CANCELLED] * 1000:
                        ft.check(False, 'Thaw cancels all 1000 of a later burst', {r: results.count(r) for r in set(results)})
                        break
                c.call('ListGroups')
                rss2 = ft.rss_kib(d.pid)
                print(f'# RSS (KiB) before 1000 waiters {rss0}, with 1000 waiting {rss_waiting}, '
                      f'after two bursts {rss1}, after three more {rss2}', flush=True)
                if not ft.under_asan(d.pid):  # ASan's quarantine keeps freed memory
                    ft.check(rss1 - rss0 <= 1024, 'the memory of 1000 waiting calls goes back once they are answered '
                             '(RSS within 1 MiB of before)', f'{rss0} -> {rss1} KiB')
                    ft.check(rss2 - rss1 <= 384, 'three more bursts of 1000 cancelled calls add at most 384 KiB of RSS '
                             '(no memory kept per call)', f'{rss1} -> {rss2} KiB')

                # ---- independent deadlines
                pmax = c.call_async('Freeze', '/s', UINT64_MAX, 0)
                plong = clients[0].call_async('Freeze', '/s', LONG, 0)
                ft.expect_dbus_error(ft.ERROR_TIMEOUT, clients[1].call, 'Freeze', '/s', 300000, 0)
                ft.check(not pmax.done() and not plong.done(),
                         'Freeze(UINT64_MAX) and Freeze(60 s) still wait after Freeze(300 ms) timed out')
                ft.check_equal(sc.read_freeze('/s'), 1, 'cgroup.freeze stays 1')
                os.kill(stuck.pid, signal.SIGKILL)
                ft.check_equal((outcome(pmax), outcome(plong)), ('ok', 'ok'), 'both succeed when the task dies')
                c.call('Thaw', '/s', 0, 0)

                # ---- rollback while another call waits
                stuck = fuse.spawn_stuck(sc, '/s')
                plong = clients[0].call_async('Freeze', '/s', LONG, 0)
                ft.expect_dbus_error(ft.ERROR_TIMEOUT, clients[1].call, 'Freeze', '/s', 300000,
                                     ft.FLAG_ROLLBACK_ON_TIMEOUT)
                flag = sc.read_freeze('/s')
                # The Get is answered after freezerd handled everything before it.
                state = clients[0].group_property('/s', 'FreezerState')
                if flag == 0:
                    ft.check_equal(outcome(plong), ft.ERROR_CANCELLED,
                                   'the rollback wrote 0: the other waiting Freeze is Cancelled')
                    ft.check_equal(state, 'running', 'state running')
                else:
                    ft.check(not plong.done() and state == 'freezing',
                             'the rollback kept 1 for the other waiter, which still waits', state)
                    c.call('Thaw', '/s', 0, 0)
                    ft.check_equal(outcome(plong), ft.ERROR_CANCELLED, 'and is Cancelled by the Thaw')

                # ---- the same with the rollback call first (its previous value is 0)
                prb = clients[1].call_async('Freeze', '/s', 300000, ft.FLAG_ROLLBACK_ON_TIMEOUT)
                ft.check_equal(clients[1].group_property('/s', 'Freeze'), True, 'the rollback call set the flag')
                plong = clients[0].call_async('Freeze', '/s', LONG, 0)
                ft.check_equal(outcome(prb), ft.ERROR_TIMEOUT, 'Freeze(300 ms, ROLLBACK) times out')
                flag = sc.read_freeze('/s')
                state = clients[0].group_property('/s', 'FreezerState')
                if flag == 0:
                    ft.check_equal(outcome(plong), ft.ERROR_CANCELLED,
                                   'the rollback wrote 0: the other waiting Freeze is Cancelled')
                    ft.check_equal(state, 'running', 'state running')
                else:
                    ft.check(not plong.done() and state == 'freezing',
                             'the rollback kept 1 for the other waiter, which still waits', state)
                    c.call('Thaw', '/s', 0, 0)
                    ft.check_equal(outcome(plong), ft.ERROR_CANCELLED, 'and is Cancelled by the Thaw')
                print(f'# rollback with another waiter: cgroup.freeze {flag} afterwards')
            finally:
                for cl in clients:
                    cl.close()
    print('# checked: 1000 simultaneous waiters (success and Cancelled), a client vanishing with 50 waiters, '
          'per-call deadlines incl. UINT64_MAX, rollback with another waiter')


ft.run(test)
