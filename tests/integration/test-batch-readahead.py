#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Waiting calls complete when every kernel event they wait for was read ahead.

After its own writes freezerd reads the queued inotify events ahead (to apply
writes behind its back before it settles) and handles them once the turn's
signals went out.  A call may be dispatched while freezerd prepares to wait
(sd-bus reads a call that arrived meanwhile); if its write drained every event
its tasks will cause, no fd will wake freezerd again, and the stashed events
must still be handled at once, not at the call's timeout.

freezerd runs with FREEZERD_TEST_WRITE_DELAY_USEC=20000: after each write it
pauses 20 ms, so that the tasks have frozen and the kernel has queued every
notification before freezerd reads ahead.

  /A {/A/c0 .. /A/c299}, a sleeper in each leaf (enough work after each
  reply that the next call arrives while freezerd prepares to wait)

12 cycles of ApplyBatch freeze [/A] then thaw [/A], each waiting (with the
daemon's 10 s timeout, the client allowing 15 s): each must complete within
3 s (6 s for a slower build: still well before the timeout, where a call that
missed its events completes), and the reply must match the kernel (one leaf checked at each reply, so
that the next call follows at once; every leaf after the last thaw)."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LEAVES = [f'/A/c{i}' for i in range(1000)]
CYCLES = 12
DAEMON_TIMEOUT = 10.0  # s: freezerd's default timeout (CONFIG_DEFAULT_TIMEOUT_USEC)
# s a call may take: 0.2 s is the slowest here, under ASan on a loaded machine too.
BOUND = min(3 * ft.TIMEOUT_MULTIPLIER, DAEMON_TIMEOUT * 0.6)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('readahead') as sc, ft.Bus() as bus:
        sc.mkdir('/A')
        for p in LEAVES:
            sc.mkdir(p)
            sc.spawn_sleepers(p, 1)
        with ft.Daemon(bus, sc.root, env={'FREEZERD_TEST_WRITE_DELAY_USEC': '20000'}) as d:
            c = d.client
            slowest = 0.0
            for i in range(CYCLES):
                for freeze in (True, False):
                    t = time.monotonic()
                    try:
                        c.call('ApplyBatch', [('/A', freeze)], 'auto', 0, 0, timeout=DAEMON_TIMEOUT + 5)
                    except ft.DBusError as e:
                        ft.fail(f'cycle {i}: the {"freeze" if freeze else "thaw"} failed: {e}')
                    took = time.monotonic() - t
                    slowest = max(slowest, took)
                    if took > BOUND:
                        ft.fail(f'cycle {i}: the {"freeze" if freeze else "thaw"} took {took:.1f} s (at most {BOUND:g} s)')
                    # One leaf at each reply (reading all would let freezerd go
                    # idle before the next call), all of them after the last.
                    if sc.frozen(LEAVES[i]) != freeze:
                        ft.fail(f'cycle {i}: at the reply, the kernel has {LEAVES[i]} not '
                                f'{"frozen" if freeze else "thawed"}')
            wrong = [p for p in LEAVES if sc.frozen(p)]
            ft.check(not wrong, 'after the last thaw every leaf is thawed', wrong[:5])
            ft.check(True, f'{CYCLES} freeze/thaw cycles completed, the slowest call in {slowest * 1000:.0f} ms')


ft.run(test)
