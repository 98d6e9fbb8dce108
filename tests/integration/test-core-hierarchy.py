#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The hierarchy matrix of the kernel freezer selftest proposed with the freezer
optimizations (Chen Ridong, "[PATCH v1 -next 3/3] cgroup/freezer: Add freeze
selftest", tools/testing/selftests/cgroup/test_freezer.sh), driven through
freezerd's Freeze and Thaw instead of writes to cgroup.freeze:

         A
        / \\
       B   C
     / | \\  \\
     D E F   G
    /
   H            one sleeper in each of H, E, F, G

For each of the 13 rows, the row's flags are applied in the order A, B, C, D,
E, F, G, H: Freeze for 1, Thaw for 0.  Checks per row:
  * each Freeze succeeds; each Thaw succeeds, or fails with FrozenByParent
    (message naming the nearest ancestor whose flag is set) exactly when an
    ancestor's flag is set in that row;
  * cgroup.freeze of every group equals the row;
  * cgroup.events "frozen" of every group equals the row's expected bits;
  * every group's FreezerState (signalled, then read with Get) equals the state
    derived from the kernel's flags and frozen bits."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ['/A', '/A/B', '/A/C', '/A/B/D', '/A/B/E', '/A/B/F', '/A/C/G', '/A/B/D/H']

MATRIX = [
    # value written to freeze   expected "frozen"
    # A  B  C  D  E  F  G  H  |  A  B  C  D  E  F  G  H
    '1  0  0  0  0  0  0  0     1  1  1  1  1  1  1  1',
    '1  1  0  0  0  0  0  0     1  1  1  1  1  1  1  1',
    '1  0  1  0  0  0  0  0     1  1  1  1  1  1  1  1',
    '0  0  0  0  0  0  0  0     0  0  0  0  0  0  0  0',

    '1  1  1  1  0  0  0  0     1  1  1  1  1  1  1  1',
    '1  1  1  0  0  0  0  0     1  1  1  1  1  1  1  1',
    '1  1  0  0  0  0  0  0     1  1  1  1  1  1  1  1',
    '1  0  0  0  0  0  0  0     1  1  1  1  1  1  1  1',

    '0  0  0  1  0  0  0  0     0  0  0  1  0  0  0  1',
    '0  0  0  1  0  0  0  1     0  0  0  1  0  0  0  1',
    '0  0  0  1  0  0  0  0     0  0  0  1  0  0  0  1',
    '0  0  1  1  0  0  0  0     0  0  1  1  0  0  1  1',
    '0  0  0  0  0  0  0  0     0  0  0  0  0  0  0  0',
]


def eventually(pred):
    """Wait (events, deadline) until pred() holds; False at the deadline (the caller checks)."""
    try:
        ft.wait_for(pred)
        return True
    except ft.TestFailure:
        return False


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-hierarchy') as sc, ft.Bus() as bus:
        for p in GROUPS:
            sc.mkdir(p)
        for p in ('/A/B/D/H', '/A/B/E', '/A/B/F', '/A/C/G'):
            sc.spawn_sleepers(p, 1)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            mirror = ft.StateMirror(c, GROUPS)
            for i, row in enumerate(MATRIX, 1):
                vals = [int(x) for x in row.split()]
                want_flags = dict(zip(GROUPS, vals[:8]))
                want_frozen = dict(zip(GROUPS, vals[8:]))
                problems = []
                for p in GROUPS:
                    freezing = [a for a in ft.ancestors(p) if want_flags[a]]
                    try:
                        c.call('Freeze' if want_flags[p] else 'Thaw', p, 0, 0)
                        if not want_flags[p] and freezing:
                            problems.append(f'Thaw({p}) succeeded although {freezing[-1]} has its flag set')
                    except ft.DBusError as e:
                        if want_flags[p] or not freezing or e.name != ft.ERROR_FROZEN_BY_PARENT:
                            problems.append(f'{"Freeze" if want_flags[p] else "Thaw"}({p}): {e}')
                        elif freezing[-1] not in re.findall(r'/[A-Za-z0-9/]*[A-Za-z0-9]', e.message):
                            problems.append(f'Thaw({p}): FrozenByParent does not name {freezing[-1]}: {e.message}')
                ft.check(not problems, f'row {i}: Freeze/Thaw in order A..H give the expected results',
                         '; '.join(problems))
                ft.check_equal({p: sc.read_freeze(p) for p in GROUPS}, want_flags, f'row {i}: every cgroup.freeze')
                # Each reply came with its own group's frozen bit; let the others settle too.
                eventually(lambda: {p: int(sc.frozen(p)) for p in GROUPS} == want_frozen)
                ft.check_equal({p: int(sc.frozen(p)) for p in GROUPS}, want_frozen,
                               f'row {i}: every cgroup.events frozen as the selftest expects')
                if not eventually(lambda: mirror.states() == ft.kernel_states(sc, GROUPS)):
                    ft.fail(f'row {i}: signalled {mirror.states()}, kernel-derived {ft.kernel_states(sc, GROUPS)}')
                got = {p: c.group_property(p, 'FreezerState') for p in GROUPS}
                ft.check_equal(got, ft.kernel_states(sc, GROUPS), f'row {i}: every FreezerState matches the kernel')
    print(f'# checked: {len(MATRIX)} rows of the selftest hierarchy matrix through Freeze/Thaw: results '
          '(FrozenByParent exactly where an ancestor freezes), flags, frozen bits, FreezerState')


ft.run(test)
