#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A crash of an idle freezerd ends as a stop would: the batch journals left by
a SIGKILL must make the next start write back exactly what a SIGTERM at the
same moment restores (the calls with ROLLBACK_ON_TIMEOUT still waiting undo
their flags, as README "Crash safety and restarts" and "The daemon" say; every
other flag stays).

  /a, /a/x, /a/y, /b, /b/z, /c, /e, /e/t   a `sleep` each
  /e/s                                     a `sleep` and a task blocked (D) on a
                                           FUSE mount: it never finishes freezing

Each case is a seeded random sequence of 2 to 6 steps: ApplyBatch (1 to 4
groups, /e/s frozen too every other time), Freeze, Thaw (RECURSIVE now and then),
FreezeExcept (its excluded groups at random: it may fail), each with
ROLLBACK_ON_TIMEOUT or not (NO_WAIT now and then), all with a 120 s timeout,
and writes of a cgroup.freeze behind freezerd's back.  After each call a round
trip (ListGroups) and a wait of up to 0.3 s for its reply: a call that touches
/e/s waits for good, the others are done, so the sequence ends the same way at
every run (where a slow machine made it end otherwise, the case is not
compared, and said so; at most a quarter of them may be).  freezerd is then
idle in its loop, with calls waiting.

The sequence runs twice, each from every flag 0 with a fresh freezerd on
fresh directories: once ended by SIGKILL and a start over the same runtime
directory (the flags read once it sent READY=1), once by SIGTERM (the flags
read once it exited).  The flags must be equal.  (Before, a call
with ROLLBACK_ON_TIMEOUT that asked for a flag a waiting call had written
(taking over its restoring) emptied its own journal: after the crash its own
writes and that flag stayed, where the stop undid them.)

FREEZERD_TEST_SEED=N repeats a run; FREEZERD_CRASH_IDLE_CASES sets the number
of cases (default 60)."""

import os
import random
import sys
import shutil
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ['/a', '/a/x', '/a/y', '/b', '/b/z', '/c', '/e', '/e/s', '/e/t']
STUCK = '/e/s'
# The groups a Freeze, Thaw or write picks from: those where /e/s is, more often.
PICK = GROUPS + ['/e', STUCK, STUCK, '/a/x']
LONG_USEC = 120 * 1000000
ROLLBACK = ft.FLAG_ROLLBACK_ON_TIMEOUT


def sequence(rng):
    seq = []
    for _ in range(rng.randint(2, 6)):
        kind = rng.choice(['batch', 'batch', 'freeze', 'thaw', 'except', 'write'])
        flags = rng.choice([0, ROLLBACK, ROLLBACK]) | (ft.FLAG_NO_WAIT if rng.random() < 0.1 else 0)
        if kind == 'write':
            seq.append(('write', rng.choice(PICK), int(rng.random() < 0.5)))
        elif kind == 'batch':
            reqs = [(g, rng.random() < 0.6) for g in rng.sample(GROUPS, rng.randint(1, 4))]
            if rng.random() < 0.5 and STUCK not in dict(reqs):
                reqs.append((STUCK, True))
            seq.append(('ApplyBatch', reqs, 'auto', LONG_USEC, flags | (ft.FLAG_RECURSIVE if rng.random() < 0.15
                                                                        else 0)))
        elif kind in ('freeze', 'thaw'):
            seq.append(('Freeze' if kind == 'freeze' else 'Thaw', rng.choice(PICK), LONG_USEC,
                        flags | (ft.FLAG_RECURSIVE if rng.random() < 0.3 else 0)))
        else:
            seq.append(('FreezeExcept', rng.choice(['/', '/a', '/e', '/b']), rng.sample(GROUPS, rng.randint(1, 2)),
                        LONG_USEC, flags & ROLLBACK))
    return seq


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    seed = os.environ.get('FREEZERD_TEST_SEED')
    seed = int(seed) if seed else random.SystemRandom().randrange(1 << 32)
    cases = int(os.environ.get('FREEZERD_CRASH_IDLE_CASES', '60'))
    print(f'# seed {seed} (FREEZERD_TEST_SEED={seed} repeats this run)', flush=True)
    rng = random.Random(seed)
    dirs = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}daemon-{os.getpid()}-crash-idle-')
    waiting = 0
    try:
        with ft.Scratch('crash-idle') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
            for g in GROUPS:
                sc.spawn_sleepers(g, 1)
            fuse.spawn_stuck(sc, STUCK)

            def flags():
                return {g: sc.read_freeze(g) for g in GROUPS}

            def run(seq, end, n):
                """The flags after seq, ended by end ('kill' or 'stop'); the calls left waiting."""
                for g in GROUPS:
                    sc.write_freeze(g, 0)
                base = os.path.join(dirs, f'{n}-{end}')
                state_dir, runtime_dir = base + '-state', base + '-run'
                os.mkdir(state_dir)
                os.mkdir(runtime_dir)
                with ft.CrashableDaemon(bus, sc.root, state_dir=state_dir, runtime_dir=runtime_dir) as d:
                    c = d.client
                    pending = []
                    ended = []  # whether each call had ended by the next step
                    for step in seq:
                        if step[0] == 'write':
                            _w, g, v = step
                            sc.write_freeze(g, v)
                            ft.wait_for(lambda: int(c.group_property(g, 'Freeze')) == v,
                                        what=f'freezerd to follow the write of {g}')
                            continue
                        p = c.call_async(*step)
                        pending.append(p)
                        c.call('ListGroups')  # a round trip: the call was handled
                        # Its reply, unless it waits for /e/s (for good).
                        deadline = time.monotonic() + 0.3
                        while not p.done() and time.monotonic() < deadline:
                            ft.loop().run_once(deadline - time.monotonic())
                        ended.append(p.done())
                    # Which calls had ended, by the next step and at the end: the two runs compare
                    # only where the same did (on a slow machine a call that ends at once may take
                    # longer than the wait, and a later call then takes over its flags, or not).
                    left = (tuple(ended), tuple(not p.done() for p in pending))
                    if end == 'kill':
                        d.sigkill()
                        d.wait_dead()
                    else:
                        ft.check_equal(d.stop(), 0, f'case {n}: freezerd stopped by SIGTERM exits 0')
                if end == 'kill':
                    with ft.Daemon(bus, sc.root, state_dir=state_dir, runtime_dir=runtime_dir):
                        return flags(), left
                return flags(), left

            unlike = 0
            for n in range(cases):
                seq = sequence(rng)
                killed, left = run(seq, 'kill', n)
                stopped, left_stopped = run(seq, 'stop', n)
                if left != left_stopped:
                    # Not the same calls ended by the kill and the stop: nothing to compare.
                    unlike += 1
                    print(f'# case {n}: other calls had ended in the two runs ({left} against {left_stopped}): '
                          'not compared', flush=True)
                    continue
                waiting += sum(left[1])
                ft.check_equal(killed, stopped, f'case {n}: {len(seq)} steps, {sum(left[1])} calls left waiting: '
                                                'the flags after a crash and a start are those a stop leaves')
            ft.check(unlike <= max(1, cases // 4),
                     f'{cases - unlike} of {cases} cases compared (other calls had ended in the two runs of '
                     f'{unlike})')
    finally:
        shutil.rmtree(dirs, ignore_errors=True)
    print(f'# {cases} cases, {waiting} calls left waiting at the crash or stop', flush=True)


ft.run(test)
