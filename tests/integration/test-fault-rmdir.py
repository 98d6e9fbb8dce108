#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Groups removed (rmdir) and recreated (mkdir, same name) while calls wait on
them (issue 5, "Faults and load").

  /r/g     a sleeper and a task blocked (D) on a FUSE mount that never answers:
           a freeze of /r/g never completes while that task lives
  /r/h1, /r/h2   a sleeper each: the other groups of the pending batches
  /r/p     no task; /r/p/c a sleeper and a blocked task: Freeze("/r/p") waits
           for /r/p/c
  /r/e     empty: removed and recreated while idle

A group can only be removed once it is empty, and an empty group with
cgroup.freeze 1 reports "frozen 1" at once: whether freezerd sees the freeze
complete before the removal is a race.  So each round is run two ways:

  stalled  freezerd is SIGSTOPped, the group is killed (cgroup.kill) and
           removed, then SIGCONT: freezerd finds both events in one read and
           never saw the group frozen.  Every call waiting on /r/g must fail
           with NoSuchGroup naming it; the ROLLBACK batch must restore /r/h1,
           the batch without ROLLBACK leaves /r/h2 frozen.
  live     kill and rmdir while freezerd runs: every waiting call gets a reply,
           success (the freeze was seen complete) or NoSuchGroup.

In both, the object goes (InterfacesRemoved), a call on the path fails with
NoSuchGroup, and `mkdir /r/g` brings a new object on the same object path
(InterfacesAdded) with the new group's state (Freeze false), on which a
Freeze works.

Nested: Freeze("/r/p") waits on /r/p/c; /r/p/c is killed and removed (stalled
and live): the Freeze must then succeed, /r/p having nothing left to wait for.

Idle: /r/e frozen through freezerd, then removed and recreated 50 times, some
of them with freezerd stalled in between: freezerd must end up reporting the
new group (Freeze false, "running"), and a Freeze of it works."""

import collections
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ROUNDS = 6
IDLE_CYCLES = 50
LONG_USEC = 120 * 1000000
NESTED_TIMEOUT_USEC = 3 * 1000000  # the nested Freeze should be done in far less


def outcome(fig, method, pending, timeout=None):
    """'ok' or the error name of a PendingCall; tallied."""
    try:
        pending.result(timeout=timeout)
    except ft.DBusError as e:
        fig.reply(method, e.name)
        return e.name, e.message
    fig.reply(method)
    return 'ok', ''


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    fig = ft.Figures('test-fault-rmdir')
    live_outcomes = collections.Counter()
    violations = []
    with ft.Scratch('fault-rmdir') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        for g in ('/r/h1', '/r/h2'):
            sc.spawn_sleepers(g, 1)
        sc.mkdir('/r/e')

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            rec = c.record()
            stopped = [False]

            def stall():
                os.kill(d.pid, signal.SIGSTOP)
                stopped[0] = True
                ft.wait_for(lambda: (ft.proc_state(d.pid) or ft.ProcState(0, '?', '')).state == 'T', poll=0.002,
                            what='freezerd to stop')
                fig.faults['SIGSTOP of freezerd while groups go'] += 1

            def resume():
                if stopped[0]:
                    os.kill(d.pid, signal.SIGCONT)
                    stopped[0] = False

            def call(method, *args):
                return outcome(fig, method, c.call_async(method, *args))

            def added(path):
                return rec.wait_for(lambda r: any(o == ft.group_object(path) for o, _i in r.interfaces_added()),
                                    what=f'InterfacesAdded of {path}')

            def removed(path):
                return rec.wait_for(lambda r: any(o == ft.group_object(path) for o, _i in r.interfaces_removed()),
                                    what=f'InterfacesRemoved of {path}')

            def kill_rmdir(path):
                sc.kill(path)
                sc.wait_events(path, populated=0)
                sc.rmdir(path)
                fig.faults['cgroup.kill + rmdir of a group with waiting calls'] += 1

            def recreate_and_use(path, what):
                rec.clear()
                sc.mkdir(path)
                fig.faults['mkdir of the same name'] += 1
                added(path)
                props = c.get_all(ft.group_object(path), ft.GROUP_IFACE)
                fig.reply('GetAll')
                ft.check_equal((props['Freeze'], props['Frozen'], props['FreezerState']), (False, False, 'running'),
                               f'{what}: the recreated {path} is a new group: Freeze false, "running"')
                sc.spawn_sleepers(path, 1)
                ft.check_equal(call('Freeze', path, LONG_USEC, 0), ('ok', ''),
                               f'{what}: Freeze of the new {path} works')
                ft.check_equal(sc.read_events(path)['frozen'], 1, f'{what}: the kernel says frozen')
                ft.check_equal(call('Thaw', path, LONG_USEC, 0), ('ok', ''), f'{what}: and Thaw')
                fig.checked['recreated groups used'] += 1

            # ---- /r/g: calls waiting on a group that goes away
            sc.mkdir('/r/g')
            for rnd in range(ROUNDS):
                way = 'stalled' if rnd % 2 == 0 else 'live'
                what = f'round {rnd} ({way})'
                sc.spawn_sleepers('/r/g', 1)
                fuse.spawn_stuck(sc, '/r/g')
                for h in ('/r/h1', '/r/h2'):
                    ft.check_equal(sc.read_freeze(h), 0, f'{what}: {h} starts thawed')
                pending = [
                    ('Freeze', c.call_async('Freeze', '/r/g', LONG_USEC, 0)),
                    ('Freeze', c.group_call_async('/r/g', 'Freeze', LONG_USEC, 0)),
                    ('Freeze', c.call_async('Freeze', '/r/g', LONG_USEC, ft.FLAG_ROLLBACK_ON_TIMEOUT)),
                    ('ApplyBatch', c.call_async('ApplyBatch', [('/r/g', True), ('/r/h1', True)], 'auto', LONG_USEC,
                                                ft.FLAG_ROLLBACK_ON_TIMEOUT)),
                    ('ApplyBatch', c.call_async('ApplyBatch', [('/r/h2', True), ('/r/g', True)], 'auto', LONG_USEC, 0)),
                ]
                # Answered after the five (one connection, in order): they are all waiting.
                state = c.group_property('/r/g', 'FreezerState')
                fig.reply('Get')
                ft.check_equal(state, 'freezing', f'{what}: five calls wait on /r/g ("freezing")')
                ft.check(not any(p.done() for _m, p in pending), f'{what}: none answered yet')
                ft.check_equal((sc.read_freeze('/r/h1'), sc.read_freeze('/r/h2')), (1, 1),
                               f'{what}: the batches set /r/h1 and /r/h2')
                rec.clear()
                if way == 'stalled':
                    stall()
                    try:
                        kill_rmdir('/r/g')
                    finally:
                        resume()
                else:
                    kill_rmdir('/r/g')
                results = [outcome(fig, m, p) for m, p in pending]
                if way == 'stalled':
                    ft.check([r[0] for r in results] == [ft.ERROR_NO_SUCH_GROUP] * 5,
                             f'{what}: every waiting call fails with NoSuchGroup', results)
                    ft.check(all('/r/g' in msg for _n, msg in results), f'{what}: each message names /r/g', results)
                    print(f'#   {results[0][1]}', flush=True)
                    print(f'#   {results[3][1]}', flush=True)
                    ft.check_equal(sc.read_freeze('/r/h1'), 0, f'{what}: the ROLLBACK batch restored /r/h1')
                    ft.check_equal(sc.read_freeze('/r/h2'), 1, f'{what}: the batch without ROLLBACK left /r/h2 frozen')
                else:
                    for name, _msg in results:
                        live_outcomes[name] += 1
                    ft.check(all(n in ('ok', ft.ERROR_NO_SUCH_GROUP) for n, _m in results),
                             f'{what}: every waiting call got a reply: ' + ', '.join(n.rsplit('.', 1)[-1]
                                                                                   for n, _m in results), results)
                removed('/r/g')
                ft.check(True, f'{what}: InterfacesRemoved for /r/g')
                ft.check_equal(call('Freeze', '/r/g', LONG_USEC, 0)[0], ft.ERROR_NO_SUCH_GROUP,
                               f'{what}: Freeze of the removed /r/g fails with NoSuchGroup')
                fig.checked['removed groups with waiting calls'] += 1
                call('ApplyBatch', [('/r/h1', False), ('/r/h2', False)], 'auto', LONG_USEC, 0)
                recreate_and_use('/r/g', what)

            # ---- nested: the waited-for child goes away
            for way in ('stalled', 'live'):
                what = f'nested ({way})'
                sc.spawn_sleepers('/r/p/c', 1)
                fuse.spawn_stuck(sc, '/r/p/c')
                p = c.call_async('Freeze', '/r/p', NESTED_TIMEOUT_USEC, 0)
                state = c.group_property('/r/p', 'FreezerState')
                fig.reply('Get')
                ft.check_equal(state, 'freezing', f'{what}: Freeze(/r/p) waits for /r/p/c')
                if way == 'stalled':
                    stall()
                    try:
                        kill_rmdir('/r/p/c')
                    finally:
                        resume()
                else:
                    kill_rmdir('/r/p/c')
                t0 = time.monotonic()
                result = outcome(fig, 'Freeze', p, timeout=NESTED_TIMEOUT_USEC / 1e6 + ft.DEFAULT_TIMEOUT)
                took = time.monotonic() - t0
                ft.check_equal(sc.read_events('/r/p')['frozen'], 1, f'{what}: /r/p is frozen')
                if result == ('ok', ''):
                    ft.check(True, f'{what}: Freeze(/r/p) succeeds once the child it waited for is gone '
                                   f'({took:.3f} s)')
                else:
                    violations.append(f'{what}: Freeze(/r/p) did not complete when /r/p/c, the child it waited for, '
                                      f'was removed although /r/p was frozen: after {took:.1f} s it failed with '
                                      f'{result[0]}: {result[1]}')
                    print(f'#   VIOLATION: {violations[-1]}', flush=True)
                ft.check_equal(call('Thaw', '/r/p', LONG_USEC, 0), ('ok', ''), f'{what}: Thaw(/r/p)')
                fig.checked['parents whose waited-for child went'] += 1
                sc.mkdir('/r/p/c')

            # ---- idle: removed and recreated, sometimes behind a stalled freezerd
            def wait_daemon(pred, what):
                """Until pred() (which makes calls) holds, woken by freezerd's signals."""
                deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
                while True:
                    n = len(c.signals)
                    if pred():
                        return
                    if time.monotonic() >= deadline:
                        ft.fail(f'timed out waiting for {what}')
                    if len(c.signals) == n:
                        ft.loop().run_once(deadline - time.monotonic())

            def new_e_reported():
                try:
                    props = c.get_all(ft.group_object('/r/e'), ft.GROUP_IFACE)
                except ft.DBusError:
                    return False  # removed, not yet recreated
                return props['Freeze'] is False

            idle_results = collections.Counter()
            for i in range(IDLE_CYCLES):
                idle_results[call('Freeze', '/r/e', LONG_USEC, 0)[0]] += 1
                if i % 3 == 0:
                    stall()
                try:
                    sc.rmdir('/r/e')
                    os.mkdir(sc.abspath('/r/e'))
                    fig.faults['rmdir + mkdir while idle'] += 1
                finally:
                    resume()
                # The new /r/e has cgroup.freeze 0: once freezerd says so, go on.
                wait_daemon(new_e_reported, f'idle cycle {i}: freezerd to report the new /r/e')
            ft.check_equal(dict(idle_results), {'ok': IDLE_CYCLES}, f'the {IDLE_CYCLES} Freeze calls of the idle '
                                                                    'cycles succeeded')
            props = c.get_all(ft.group_object('/r/e'), ft.GROUP_IFACE)
            ft.check_equal((props['Freeze'], props['Frozen'], props['FreezerState']), (False, False, 'running'),
                           f'after {IDLE_CYCLES} rmdir/mkdir cycles /r/e is reported as the new group')
            fig.checked['idle rmdir/mkdir cycles'] += IDLE_CYCLES
            ft.check_equal(call('Freeze', '/r/e', LONG_USEC, 0), ('ok', ''), 'Freeze of the last /r/e works')
            ft.check_equal(sc.read_events('/r/e')['frozen'], 1, 'the kernel says frozen')
            groups = sorted(p for p, _o, _s in c.call('ListGroups')[0])
            fig.reply('ListGroups')
            ft.check_equal(groups, sorted(['/', '/r', '/r/g', '/r/h1', '/r/h2', '/r/p', '/r/p/c', '/r/e']),
                           'ListGroups: the groups that exist, once each')
            ft.check_equal(d.client.manager_property('Groups'), 8, 'Groups counts 8')
    fig.lines.append('live rounds:     ' + ', '.join(f'{k.rsplit(".", 1)[-1]} {v}'
                                                     for k, v in sorted(live_outcomes.items())))
    fig.lines.append(f'violations:      {len(violations)}')
    fig.print()
    if violations:
        ft.fail(f'{len(violations)} violations:\n  ' + '\n  '.join(violations))


ft.run(test)
