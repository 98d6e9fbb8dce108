#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""cgroup.freeze written behind freezerd's back, while calls wait and while idle
(issue 5, "Faults and load").

  /s            a sleeper and a task blocked (D) on a FUSE mount that never
                answers: a freeze of /s never completes
  /t, /u        a sleeper each: the other groups of the pending batches
  /i/...        16 groups (4 parents with 3 children each), a sleeper in each child

1. Reversal while waiting (5 rounds): Freeze("/s") (manager and group object),
   Freeze("/s", ROLLBACK), ApplyBatch([/s, /t], ROLLBACK) and ApplyBatch([/s, /u])
   wait; `echo 0 > /s/cgroup.freeze` makes every one fail with Cancelled naming
   /s.  The ROLLBACK batch restores /t; the other batch leaves /u frozen; the
   external 0 stays (it is not ours to undo).  Before that, writing the same
   value (1) behind freezerd's back cancels nothing.
2. Idle: 400 writes behind freezerd's back to random groups of /i (random
   values, in bursts of 1-5 writes to one group, some flipping it back and forth
   faster than freezerd reads).  After each burst freezerd must report every
   group's Freeze, Frozen and FreezerState as the kernel has them (woken by
   PropertiesChanged); a Freeze and a Thaw through freezerd then work on every
   group.
3. Races: 60 times, a Freeze (or Thaw) of a group of /i is sent and the opposite
   value written behind freezerd's back right after: the call gets a reply
   (success or Cancelled), and freezerd then reports what the kernel has."""

import collections
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

PARENTS = [f'/i/p{i}' for i in range(4)]
IDLE = [g for p in PARENTS for g in [p] + [f'{p}/c{j}' for j in range(3)]]
ROUNDS = 5
IDLE_WRITES = 400
RACES = 60
LONG_USEC = 120 * 1000000


def outcome(fig, method, pending, timeout=None):
    """('ok', '') or (error name, message) of a PendingCall; tallied."""
    try:
        pending.result(timeout=timeout)
    except ft.DBusError as e:
        fig.reply(method, e.name)
        return e.name, e.message
    fig.reply(method)
    return 'ok', ''


def state_of(freeze, frozen, parent_freeze):
    if freeze:
        return 'frozen' if frozen else 'freezing'
    if parent_freeze:
        return 'frozen-by-parent' if frozen else 'freezing-by-parent'
    return 'thawing' if frozen else 'running'


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    seed = os.environ.get('FREEZERD_TEST_SEED')
    seed = int(seed) if seed else random.SystemRandom().randrange(1 << 32)
    print(f'# seed {seed} (FREEZERD_TEST_SEED={seed} repeats this run)', flush=True)
    rng = random.Random(seed)
    fig = ft.Figures('test-fault-external')
    fig.lines.append(f'seed:            {seed}')
    race_outcomes = collections.Counter()
    with ft.Scratch('fault-external') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        for g in ('/s', '/t', '/u'):
            sc.spawn_sleepers(g, 1)
        for g in IDLE:
            sc.mkdir(g)
            if g not in PARENTS:
                sc.spawn_sleepers(g, 1)
        fuse.spawn_stuck(sc, '/s')

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            rec = c.record()

            def external(path, value):
                sc.write_freeze(path, value)
                fig.faults['cgroup.freeze written behind freezerd\'s back'] += 1

            def kernel_view(groups):
                out = {}
                for g in groups:
                    f, z = sc.read_freeze(g), sc.read_events(g)['frozen']
                    parent = g.rsplit('/', 1)[0]
                    out[g] = (bool(f), bool(z), state_of(f, z, parent in groups and sc.read_freeze(parent)))
                return out

            def daemon_view(groups):
                objs = c.managed_objects()
                fig.reply('GetManagedObjects')
                out = {}
                for g in groups:
                    p = objs.get(ft.group_object(g), {}).get(ft.GROUP_IFACE)
                    out[g] = None if p is None else (p['Freeze'], p['Frozen'], p['FreezerState'])
                return out

            def wait_agree(groups, what):
                """Until freezerd reports what the kernel has (re-read after every signal)."""
                deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
                while True:
                    n = len(c.signals)
                    want = kernel_view(groups)
                    got = daemon_view(groups)
                    if got == want and kernel_view(groups) == want:
                        break
                    if time.monotonic() >= deadline:
                        diff = {g: (got[g], want[g]) for g in groups if got[g] != want[g]}
                        ft.fail(f'{what}: freezerd and the kernel disagree (daemon, kernel): {diff}')
                    if len(c.signals) == n:
                        ft.loop().run_once(deadline - time.monotonic())
                fig.checked['group states compared with the kernel'] += len(groups)

            # ---- 1. reversal while waiting
            for rnd in range(ROUNDS):
                what = f'round {rnd}'
                pending = [
                    ('Freeze', c.call_async('Freeze', '/s', LONG_USEC, 0)),
                    ('Freeze', c.group_call_async('/s', 'Freeze', LONG_USEC, 0)),
                    ('Freeze', c.call_async('Freeze', '/s', LONG_USEC, ft.FLAG_ROLLBACK_ON_TIMEOUT)),
                    ('ApplyBatch', c.call_async('ApplyBatch', [('/s', True), ('/t', True)], 'auto', LONG_USEC,
                                                ft.FLAG_ROLLBACK_ON_TIMEOUT)),
                    ('ApplyBatch', c.call_async('ApplyBatch', [('/u', True), ('/s', True)], 'auto', LONG_USEC, 0)),
                ]
                state = c.group_property('/s', 'FreezerState')
                fig.reply('Get')
                ft.check_equal(state, 'freezing', f'{what}: five calls wait on /s')
                # The same value behind freezerd's back is no reversal.  To know freezerd has
                # read that write, a second one (to /i/p0) follows: freezerd reads its inotify
                # queue in order, so once it signals /i/p0's new flag it has seen /s's write.
                rec.clear()
                external('/s', 1)
                external('/i/p0', 1)
                rec.wait_property(ft.group_object('/i/p0'), 'Freeze', True)
                ft.check(not any(p.done() for _m, p in pending), f'{what}: writing 1 again cancels nothing')
                external('/i/p0', 0)
                external('/s', 0)
                results = [outcome(fig, m, p) for m, p in pending]
                ft.check([n for n, _m in results] == [ft.ERROR_CANCELLED] * 5,
                         f'{what}: echo 0 > /s/cgroup.freeze fails all five with Cancelled', results)
                ft.check(all('/s' in m for _n, m in results), f'{what}: each message names /s', results)
                if rnd == 0:
                    for _n, m in results[2:4]:
                        print(f'#   {m}', flush=True)
                ft.check_equal({g: sc.read_freeze(g) for g in ('/s', '/t', '/u')}, {'/s': 0, '/t': 0, '/u': 1},
                               f'{what}: /s keeps the external 0, the ROLLBACK batch restored /t, /u stays frozen')
                wait_agree(['/s', '/t', '/u'], f'{what}: after the reversal')
                ft.check_equal(outcome(fig, 'Thaw', c.call_async('Thaw', '/u', LONG_USEC, 0)), ('ok', ''),
                               f'{what}: Thaw(/u)')
                fig.checked['groups with calls reversed behind freezerd\'s back'] += 1

            # ---- 2. idle writes
            wait_agree(IDLE, 'before the idle writes')
            done = 0
            bursts = 0
            while done < IDLE_WRITES:
                g = rng.choice(IDLE)
                for _ in range(rng.randint(1, 5)):
                    external(g, rng.randint(0, 1))
                    done += 1
                bursts += 1
                wait_agree(IDLE, f'after {done} writes behind freezerd\'s back (last to {g})')
            ft.check(True, f'{done} writes in {bursts} bursts: freezerd followed the kernel after each')
            for g in IDLE:
                external(g, 0)
            results = {g: outcome(fig, 'Freeze', c.call_async('Freeze', g, LONG_USEC, 0)) for g in IDLE}
            ft.check_equal(results, {g: ('ok', '') for g in IDLE}, 'Freeze through freezerd succeeds on each of the '
                                                                  '16 groups')
            ft.check_equal([sc.read_events(g)['frozen'] for g in IDLE], [1] * len(IDLE),
                           'a Freeze through freezerd works on each of the 16 groups')
            writes, _skipped = c.call('ApplyBatch', [(g, False) for g in IDLE], 'auto', LONG_USEC, 0)
            fig.reply('ApplyBatch')
            ft.check_equal([sc.read_events(g)['frozen'] for g in IDLE], [0] * len(IDLE),
                           f'one ApplyBatch thaws them ({writes} writes)')
            wait_agree(IDLE, 'after the Freeze and Thaw through freezerd')

            # ---- 3. races
            for i in range(RACES):
                g = rng.choice(IDLE)
                if i % 2:  # a Thaw race: the flag set behind freezerd's back first
                    external(g, 1)
                    wait_agree(IDLE, f'race {i}: before')
                freeze = sc.read_freeze(g) == 0
                method = 'Freeze' if freeze else 'Thaw'
                p = c.call_async(method, g, LONG_USEC, 0)
                external(g, 0 if freeze else 1)
                name, msg = outcome(fig, method, p)
                race_outcomes[name.rsplit('.', 1)[-1]] += 1
                ft.check(name in ('ok', ft.ERROR_CANCELLED, ft.ERROR_FROZEN_BY_PARENT),
                         f'race {i}: {method}({g}) against an external {int(not freeze)}: {name}', msg)
                wait_agree(IDLE, f'race {i}: afterwards')
            c.call('ApplyBatch', [(g, False) for g in IDLE], 'auto', LONG_USEC, 0)
            fig.reply('ApplyBatch')
            wait_agree(IDLE + ['/s', '/t', '/u'], 'at the end')
    fig.lines.append('races:           ' + ', '.join(f'{k} {v}' for k, v in sorted(race_outcomes.items())))
    fig.print()


ft.run(test)
