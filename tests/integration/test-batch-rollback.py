#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""ApplyBatch timeouts, with and without ROLLBACK_ON_TIMEOUT (flag 1).

  /r/g0 .. /r/g9   a `sleep` each; /r/g7 also holds `stat -f MOUNT` blocked (D) on a
                   FUSE mount whose server never answers: g7 can never finish freezing

1. ROLLBACK, all ten running: a batch freezing the ten with a 1 s timeout fails
   with Timeout (naming /r/g7) after about 1 s, and every group's cgroup.freeze and
   kernel frozen are exactly as before, in the kernel files and in the daemon's
   Freeze/Frozen/FreezerState.
2. ROLLBACK, mixed start: g2 and g5 frozen before (their requests are skipped), and
   g3 frozen before with the batch thawing it: after the Timeout g2, g5 and g3 are
   frozen again, the others running, all flags as before; the message says that
   every flag it changed was restored.
3. No flag: Timeout, the nine others frozen (flag 1, frozen 1), g7 with flag 1,
   frozen 0 and FreezerState "freezing"; the message names /r/g7 and no other group.
4. ROLLBACK, and a later call asks for one of its flags: A freezes g0 and g7
   (ROLLBACK, waits on g7); B's Freeze of g7 with NO_WAIT succeeds (its flag is 1
   already: skipped).  At A's Timeout g0 is restored and g7 stays frozen by its
   flag, as B was told; A's message says g7 was kept for a later call.  (Before,
   A's rollback took g7 back to 0 behind B.)
   4b. The same with B's Freeze having ROLLBACK (and a shorter timeout): B
   takes over g7's restoring; at B's Timeout it writes g7 back to 0, which
   cancels A, whose rollback restores g0: both back to 0.
5. The same with a crash: once B asked for g7, A's journal lists g0 alone;
   freezerd killed (SIGKILL) while A waits, and started again: g0 restored, g7
   left at 1.
   5b. The same with B an ApplyBatch with ROLLBACK that freezes g1 and asks for
   g7: killed while both wait, the restart restores g0 (A's journal), g1 and g7
   (B's: it took g7's restoring over).  (Before, B's journal was emptied as it
   took g7 over: the restart left g1 and g7 frozen.)
   5c. The same with B a Freeze of g7 with ROLLBACK: the restart restores g0
   and g7.  (Before, B wrote no journal: g7 stayed frozen.)
Every case ends with one ApplyBatch thawing the ten."""

import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = [f'/r/g{i}' for i in range(10)]
STUCK = '/r/g7'
TIMEOUT_USEC = 1_000_000


def check_still_blocked(stuck):
    """The FUSE reader in STUCK is back in its uninterruptible wait.  A thaw wakes it for a
    moment (it runs through FUSE's wait loop: "R" in /proc), and it sleeps again since the
    server never answers; a reader that was answered would exit instead."""
    def blocked():
        st = ft.proc_state(stuck.pid)
        if st is None:
            ft.fail(f'the process in {STUCK} is gone: its read was answered')
        return st.state == 'D'
    ft.wait_for(blocked, timeout=ft.DEFAULT_TIMEOUT, what=f'the process in {STUCK} blocked again ("D")')
    ft.check(True, f'the process in {STUCK} is still blocked')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    long_usec = int(ft.DEFAULT_TIMEOUT * 1e6)
    with ft.Scratch('batch-rollback') as sc, ft.Bus() as bus, ft.FuseHang() as fuse:
        for g in GROUPS:
            sc.mkdir(g)
            sc.spawn_sleepers(g, 1)
        stuck = fuse.spawn_stuck(sc, STUCK)
        ft.check(True, f'pid {stuck.pid} is blocked (D) on the FUSE mount in {STUCK}')

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            rec = c.record()
            objs = {g: c.call('GetGroup', g)[0] for g in GROUPS}

            def kernel():
                return {g: (sc.read_freeze(g), sc.read_events(g)['frozen']) for g in GROUPS}

            def daemon_props():
                out = {}
                for g in GROUPS:
                    p = c.get_all(objs[g], ft.GROUP_IFACE)
                    out[g] = (p['Freeze'], p['Frozen'], p['FreezerState'])
                return out

            def expect_props(state, what):
                """Wait (woken by PropertiesChanged) until the daemon's view is `state`."""
                want = {g: (bool(f), bool(z), 'frozen' if f and z else 'freezing' if f else
                            'thawing' if z else 'running') for g, (f, z) in state.items()}
                deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
                while True:
                    # The Get calls pump the loop themselves: a PropertiesChanged that
                    # arrives during them must not be slept through.
                    n = len(c.signals)
                    got = daemon_props()
                    if got == want or time.monotonic() >= deadline:
                        break
                    if len(c.signals) == n:
                        ft.loop().run_once(deadline - time.monotonic())
                ft.check_equal(got, want, what)

            def thaw_all(what):
                writes, skipped = c.call('ApplyBatch', [(g, False) for g in GROUPS], 'auto', long_usec, 0)
                state = kernel()
                ft.check(all(v == (0, 0) for v in state.values()), f'{what}: one batch thaws the ten', state)
                expect_props(state, f'{what}: the daemon shows the ten running')
                return writes

            def timed_batch(requests, flags):
                t0 = time.monotonic()
                e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'ApplyBatch', requests, 'auto',
                                         TIMEOUT_USEC, flags, timeout=ft.DEFAULT_TIMEOUT + 2)
                took = time.monotonic() - t0
                ft.check(0.9 <= took < ft.DEFAULT_TIMEOUT, f'the Timeout came after the 1 s timeout ({took:.3f}s)')
                print(f'#   error: {e.message}', flush=True)
                ft.check(STUCK in e.message, f'the Timeout message names {STUCK}', e.message)
                others = [g for g in GROUPS if g != STUCK and re.search(re.escape(g) + r'\b', e.message)]
                ft.check(not others, 'the Timeout message names no group that finished', e.message)
                return e

            # -- 1. ROLLBACK, from all running.
            before = kernel()
            ft.check(all(v == (0, 0) for v in before.values()), 'case 1: the ten run', before)
            expect_props(before, 'case 1: the daemon shows the ten running')
            timed_batch([(g, True) for g in GROUPS], ft.FLAG_ROLLBACK_ON_TIMEOUT)
            after = kernel()
            ft.check_equal(after, before, 'case 1 (rollback): cgroup.freeze and frozen of the ten as before')
            expect_props(before, 'case 1 (rollback): Freeze, Frozen, FreezerState of the ten as before')
            for g in GROUPS:
                sc.wait_tasks_frozen(g, frozen=False)
            ft.check(all(sc.no_task_frozen(g) for g in GROUPS), 'case 1: no task is left in the freezer trap')
            check_still_blocked(stuck)

            # -- 2. ROLLBACK, mixed start: g2, g5 frozen (skipped), g3 frozen and thawed by the batch.
            for g in ('/r/g2', '/r/g5', '/r/g3'):
                c.call('Freeze', g, long_usec, 0)
            before = kernel()
            ft.check_equal({g: v for g, v in before.items() if v != (0, 0)},
                           {'/r/g2': (1, 1), '/r/g3': (1, 1), '/r/g5': (1, 1)}, 'case 2: g2, g3, g5 frozen before')
            expect_props(before, 'case 2: the daemon agrees')
            requests = [(g, True) for g in GROUPS if g != '/r/g3'] + [('/r/g3', False)]
            e = timed_batch(requests, ft.FLAG_ROLLBACK_ON_TIMEOUT)
            ft.check(e.message.endswith('. Every flag this call changed was restored'),
                     'case 2: the message says that the flags it changed were restored', e.message)
            ft.check_equal({g: sc.read_freeze(g) for g in GROUPS}, {g: f for g, (f, _z) in before.items()},
                           'case 2 (rollback): every cgroup.freeze as before (g3 set again)')
            # g3's re-freeze is asynchronous in the kernel: wait for its cgroup.events.
            sc.wait_events('/r/g3', frozen=1)
            ft.check_equal(kernel(), before, 'case 2 (rollback): cgroup.freeze and frozen of the ten as before')
            expect_props(before, 'case 2 (rollback): Freeze, Frozen, FreezerState of the ten as before')
            ft.check_equal(thaw_all('case 2'), 3, 'case 2: the thaw wrote the three flags set before')

            # -- 3. No flag: the nine others stay frozen, g7 stays freezing.
            rec.clear()
            e = timed_batch([(g, True) for g in GROUPS], 0)
            after = kernel()
            want = {g: (1, 0 if g == STUCK else 1) for g in GROUPS}
            ft.check_equal(after, want, 'case 3 (no rollback): all ten flags 1, the nine others frozen, g7 not')
            expect_props(after, 'case 3: Freeze, Frozen, FreezerState (g7 "freezing")')
            ft.check_equal(c.get_property(objs[STUCK], ft.GROUP_IFACE, 'FreezerState'), 'freezing',
                           f'{STUCK} FreezerState is "freezing"')
            ft.check(re.search(re.escape(STUCK) + r' \(freezing\)', e.message) is not None,
                     'the message gives the state of the group that did not finish', e.message)
            for g in GROUPS:
                if g != STUCK:
                    sc.wait_tasks_frozen(g)
            ft.check(True, 'the sleepers of the nine others are in the freezer trap')
            ft.check_equal(thaw_all('case 3'), 10, 'case 3: the thaw wrote ten flags')
            check_still_blocked(stuck)

            def a_waits(timeout_usec, what):
                """A = ApplyBatch([g0, g7], ROLLBACK), once both its flags are written."""
                a = c.call_async('ApplyBatch', [('/r/g0', True), (STUCK, True)], 'auto', timeout_usec,
                                 ft.FLAG_ROLLBACK_ON_TIMEOUT)
                ft.wait_for(lambda: sc.read_freeze(STUCK) == 1 and sc.read_freeze('/r/g0') == 1,
                            what=f'{what}: A wrote both flags')
                return a

            # -- 4. ROLLBACK, and B asks for g7 as A set it.
            a = a_waits(2 * TIMEOUT_USEC, 'case 4')
            with ft.Client(bus.address) as b:
                ft.check_equal(tuple(b.call('Freeze', STUCK, long_usec, ft.FLAG_NO_WAIT)), (),
                               'case 4: B\'s Freeze of g7 (NO_WAIT) succeeds')
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, a.result, ft.DEFAULT_TIMEOUT + 2)
            print(f'#   error: {e.message}', flush=True)
            ft.check_equal((sc.read_freeze('/r/g0'), sc.read_freeze(STUCK)), (0, 1),
                           'case 4: A\'s rollback restored g0 and left g7 at 1, as B asked')
            ft.check(f'{STUCK} was kept: a later call asked for it too' in e.message,
                     'case 4: A\'s message says g7 was kept for a later call', e.message)
            ft.check_equal(thaw_all('case 4'), 1, 'case 4: the thaw wrote g7\'s flag')
            check_still_blocked(stuck)

            # -- 4b. B asks for g7 with ROLLBACK too: B takes over its restoring.
            a = a_waits(3 * TIMEOUT_USEC, 'case 4b')
            with ft.Client(bus.address) as b:
                e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, b.call, 'Freeze', STUCK, TIMEOUT_USEC,
                                         ft.FLAG_ROLLBACK_ON_TIMEOUT, timeout=ft.DEFAULT_TIMEOUT + 2)
            ft.check('restored' in e.message, 'case 4b: B (ROLLBACK, its request skipped) times out first and '
                     'restores g7, which it took over from A', e.message)
            e = ft.expect_dbus_error(ft.ERROR_CANCELLED, a.result, ft.DEFAULT_TIMEOUT + 2)
            ft.check(STUCK in e.message and 'restored' in e.message,
                     'case 4b: A is Cancelled by that write and restores g0', e.message)
            ft.check_equal((sc.read_freeze('/r/g0'), sc.read_freeze(STUCK)), (0, 0),
                           'case 4b: both flags back to 0 (no call asked to keep g7)')
            check_still_blocked(stuck)

            print('# summary: 4 timed-out batches over 10 groups (3 with ROLLBACK_ON_TIMEOUT, 1 without), '
                  'each checked in cgroup.freeze, cgroup.events and the daemon\'s properties; '
                  f'{len(rec.signals)} signals in case 3', flush=True)

        # -- 5. The same with a crash while A waits.
        with tempfile.TemporaryDirectory(prefix=f'{ft.TMP_PREFIX}rollback-{os.getpid()}-') as dirs:
            runtime_dir, state_dir = os.path.join(dirs, 'run'), os.path.join(dirs, 'state')
            with ft.CrashableDaemon(bus, sc.root, runtime_dir=runtime_dir, state_dir=state_dir) as d:
                # 120 s: outlives a loaded machine (A must still wait when it is killed).
                d.client.call_async('ApplyBatch', [('/r/g0', True), (STUCK, True)], 'auto', 120 * 1000000,
                                    ft.FLAG_ROLLBACK_ON_TIMEOUT)
                ft.wait_for(lambda: sc.read_freeze(STUCK) == 1 and sc.read_freeze('/r/g0') == 1,
                            what='case 5: A wrote both flags')

                def journaled():
                    return [[e['path'] for e in (ft.read_journal(runtime_dir, n) or {}).get('groups', [])]
                            for n in ft.live_journals(runtime_dir)]
                ft.check_equal(journaled(), [['/r/g0', STUCK]], 'case 5: A\'s journal lists g0 and g7')
                with ft.Client(bus.address) as b:
                    b.call('Freeze', STUCK, long_usec, ft.FLAG_NO_WAIT)
                ft.check_equal(journaled(), [['/r/g0']], 'case 5: once B asked for g7, A\'s journal lists g0 alone')
                d.sigkill()
                d.wait_dead()
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir, state_dir=state_dir) as d:
                ft.check_equal((sc.read_freeze('/r/g0'), sc.read_freeze(STUCK)), (0, 1),
                               'case 5: after the restart g0 is restored, g7 left at 1 as B asked')
                d.client.call('Thaw', STUCK, long_usec, 0)
            check_still_blocked(stuck)

            def a_freezes_g0_and_g7(d, case):
                """A: a batch with ROLLBACK freezing g0 and g7, which waits for good (g7 is stuck)."""
                d.client.call_async('ApplyBatch', [('/r/g0', True), (STUCK, True)], 'auto', 120 * 1000000,
                                    ft.FLAG_ROLLBACK_ON_TIMEOUT)
                ft.wait_for(lambda: sc.read_freeze(STUCK) == 1 and sc.read_freeze('/r/g0') == 1,
                            what=f'{case}: A wrote both flags')

            # -- 5b. B has ROLLBACK too, and is killed while it waits: its journal lists g7 (taken
            # over from A, with A's previous flag) and g1 (its own write); A's lists g0.
            with ft.CrashableDaemon(bus, sc.root, runtime_dir=runtime_dir, state_dir=state_dir) as d:
                a_freezes_g0_and_g7(d, 'case 5b')
                with ft.Client(bus.address) as b:
                    b.call_async('ApplyBatch', [('/r/g1', True), (STUCK, True)], 'auto', 120 * 1000000,
                                 ft.FLAG_ROLLBACK_ON_TIMEOUT)
                    ft.wait_for(lambda: sc.read_freeze('/r/g1') == 1, what='case 5b: B wrote g1')
                    # A round trip: B's call is through (its journals written) once this answers.
                    b.group_property(STUCK, 'FreezerState')
                    ft.check_equal(sorted(map(sorted, journaled())), [['/r/g0'], ['/r/g1', STUCK]],
                                   'case 5b: A\'s journal lists g0, B\'s lists g1 and g7, which it restores now')
                    d.sigkill()
                    d.wait_dead()
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir, state_dir=state_dir) as d:
                ft.check_equal([sc.read_freeze(g) for g in ('/r/g0', '/r/g1', STUCK)], [0, 0, 0],
                               'case 5b: after the restart g0, g1 and g7 are restored (neither call finished)')
            check_still_blocked(stuck)

            # -- 5c. B a Freeze of g7 with ROLLBACK: it writes nothing, and its journal lists g7.
            with ft.CrashableDaemon(bus, sc.root, runtime_dir=runtime_dir, state_dir=state_dir) as d:
                a_freezes_g0_and_g7(d, 'case 5c')
                with ft.Client(bus.address) as b:
                    b.call_async('Freeze', STUCK, 120 * 1000000, ft.FLAG_ROLLBACK_ON_TIMEOUT)
                    ft.wait_for(lambda: len(ft.live_journals(runtime_dir)) == 2, what='case 5c: B\'s journal')
                    ft.check_equal(sorted(journaled()), [['/r/g0'], [STUCK]],
                                   'case 5c: A\'s journal lists g0, B\'s lists g7')
                    d.sigkill()
                    d.wait_dead()
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir, state_dir=state_dir) as d:
                ft.check_equal([sc.read_freeze(g) for g in ('/r/g0', STUCK)], [0, 0],
                               'case 5c: after the restart g0 and g7 are restored (neither call finished)')
            check_still_blocked(stuck)


ft.run(test)
