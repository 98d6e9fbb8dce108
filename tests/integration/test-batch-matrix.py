#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Batch hierarchy matrix: the kernel selftest of the freezer optimisations
(../shared/reference/001_0fba8fcd76ccfea7.txt, patch 3/3, test_freezer.sh), run
through freezerd's ApplyBatch on real processes.

        A
       / \\
      B   C
    / | \\  \\
    D E F   G
   /
  H

Every group holds a `sleep`.  Each of the 13 rows of the selftest's matrix (the
values written to cgroup.freeze of A..H, and the "frozen" value expected in each
group's cgroup.events) is applied as ONE ApplyBatch of eight requests.  When the
batch replies, for every group:
  * cgroup.freeze is the row's value and cgroup.events says the expected frozen;
  * the daemon's Freeze, Frozen and FreezerState agree (FreezerState derived
    from the own flag, the effective flag and the kernel's frozen);
  * writes/skipped count the flags that changed / did not change;
  * the sleepers of the frozen groups sit in the freezer trap, the others not.
The whole matrix runs once per order: auto, top-down, bottom-up (one daemon)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ['/A', '/A/B', '/A/C', '/A/B/D', '/A/B/E', '/A/B/F', '/A/C/G', '/A/B/D/H']
NAMES = [g.rsplit('/', 1)[1] for g in GROUPS]

# Copied from test_freezer.sh:  values written to freeze A..H | expected frozen A..H
MATRIX = '''
    1  0  0  0  0  0  0  0     1  1  1  1  1  1  1  1
    1  1  0  0  0  0  0  0     1  1  1  1  1  1  1  1
    1  0  1  0  0  0  0  0     1  1  1  1  1  1  1  1
    0  0  0  0  0  0  0  0     0  0  0  0  0  0  0  0
    1  1  1  1  0  0  0  0     1  1  1  1  1  1  1  1
    1  1  1  0  0  0  0  0     1  1  1  1  1  1  1  1
    1  1  0  0  0  0  0  0     1  1  1  1  1  1  1  1
    1  0  0  0  0  0  0  0     1  1  1  1  1  1  1  1
    0  0  0  1  0  0  0  0     0  0  0  1  0  0  0  1
    0  0  0  1  0  0  0  1     0  0  0  1  0  0  0  1
    0  0  0  1  0  0  0  0     0  0  0  1  0  0  0  1
    0  0  1  1  0  0  0  0     0  0  1  1  0  0  1  1
    0  0  0  0  0  0  0  0     0  0  0  0  0  0  0  0
'''
ROWS = []
for line in MATRIX.strip().splitlines():
    v = [int(x) for x in line.split()]
    ROWS.append((v[:8], v[8:]))

ORDERS = ['auto', 'top-down', 'bottom-up']


def parent(path):
    return path.rsplit('/', 1)[0] or None


def effective(flags):
    """{path: e_freeze} from {path: own flag}."""
    out = {}
    for g in GROUPS:  # parents come before children in GROUPS
        p = parent(g)
        out[g] = bool(flags[g]) or (p in out and out[p])
    return out


def derive_state(freeze, e_freeze, frozen):
    if freeze:
        return 'frozen' if frozen else 'freezing'
    if e_freeze:
        return 'frozen-by-parent' if frozen else 'freezing-by-parent'
    return 'thawing' if frozen else 'running'


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    timeout_usec = int(ft.DEFAULT_TIMEOUT * 1e6)

    # The matrix itself: its expected bits are what the own flags imply.
    for i, (values, expected) in enumerate(ROWS):
        e = effective(dict(zip(GROUPS, values)))
        ft.check_equal([int(e[g]) for g in GROUPS], expected, f'row {i + 1}: the selftest\'s expected bits follow '
                                                              f'from its values')

    with ft.Scratch('batch-matrix') as sc, ft.Bus() as bus:
        for g in GROUPS:
            sc.mkdir(g)
        for g in GROUPS:
            sc.spawn_sleepers(g, 1)
        for g in GROUPS:
            ft.check_equal(len(sc.pids(g)), 1, f'{g} holds one sleeping process')

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            objs = {g: c.call('GetGroup', g)[0] for g in GROUPS}
            batches = 0
            for order in ORDERS:
                current = {g: 0 for g in GROUPS}
                for i, (values, expected) in enumerate(ROWS):
                    row = f'{order} row {i + 1:2} [{" ".join(map(str, values))}]'
                    requests = [(g, bool(v)) for g, v in zip(GROUPS, values)]
                    want_writes = sum(1 for g, v in zip(GROUPS, values) if current[g] != v)
                    writes, skipped = c.call('ApplyBatch', requests, order, timeout_usec, 0)
                    batches += 1
                    ft.check_equal((writes, skipped), (want_writes, 8 - want_writes),
                                   f'{row}: ApplyBatch returns (writes, skipped)')
                    current = dict(zip(GROUPS, values))

                    # The reply means the kernel has confirmed: read everything at once.
                    kernel_freeze = [sc.read_freeze(g) for g in GROUPS]
                    kernel_frozen = [sc.read_events(g)['frozen'] for g in GROUPS]
                    ft.check_equal(kernel_freeze, values, f'{row}: cgroup.freeze of {"".join(NAMES)}')
                    ft.check_equal(kernel_frozen, expected, f'{row}: cgroup.events frozen of {"".join(NAMES)}')

                    eff = effective(current)
                    got, want = {}, {}
                    for g, v, x in zip(GROUPS, values, expected):
                        props = c.get_all(objs[g], ft.GROUP_IFACE)
                        got[g] = (props['Freeze'], props['Frozen'], props['FreezerState'])
                        want[g] = (bool(v), bool(x), derive_state(v, eff[g], x))
                    ft.check_equal(got, want, f'{row}: Freeze, Frozen, FreezerState of the eight groups')

                    # Per-task cross-check: the sleepers of frozen groups sit in the freezer trap.
                    for g, x in zip(GROUPS, expected):
                        sc.wait_tasks_frozen(g, frozen=bool(x))

                # The last row thaws everything: the processes run again.
                for g in GROUPS:
                    sc.wait_tasks_frozen(g, frozen=False)
                ft.check(all(sc.no_task_frozen(g) for g in GROUPS),
                         f'{order}: after the last row no task is in the freezer trap')

            ft.check_equal(sorted(p for g in GROUPS for p in sc.pids(g)),
                           sorted(p.pid for p in sc.procs), 'the eight sleepers are all still there')
            print(f'# summary: {len(ORDERS)} orders x {len(ROWS)} rows = {batches} batches of 8 requests, '
                  f'8 groups checked after each (kernel cgroup.freeze/cgroup.events, Freeze/Frozen/FreezerState)',
                  flush=True)


ft.run(test)
