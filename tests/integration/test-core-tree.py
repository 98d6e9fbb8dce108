#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The kernel selftest's tree scenario (tools/testing/selftests/cgroup/test_freezer.c,
test_cgfreeze_tree) driven through freezerd:

        A
     / / \\ \\
    B  E  I  K
   / \\ |
  C  D F
       |
       G
       |
       H

  one sleeper in C and in H, three in K.

Steps and checks (each state checked against the kernel's cgroup.freeze and
cgroup.events, and every group's FreezerState against the state derived from
them):
  1. Freeze B, F, G (each reply comes with the group's "frozen 1"); A and E are
     not frozen (kernel) and "running" (freezerd).
  2. Freeze A: A, B, E frozen; E, I, K, C, D, H frozen-by-parent, B, F, G frozen.
  3. Thaw B: fails with FrozenByParent, the message names /A; B's own flag is
     cleared (Freeze false, cgroup.freeze 0) and B stays frozen (kernel frozen 1,
     FreezerState frozen-by-parent).  Thaw G while F still has its flag: the
     message names /A/E/F, the nearest freezing ancestor.  Thaw F with NO_WAIT:
     FrozenByParent too.  C and H are still frozen.
  4. Thaw A: A, C and K are not frozen, every group "running", every task out
     of the freezer trap."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

A, B, C, D, E, F, G, H, I, K = ('/A', '/A/B', '/A/B/C', '/A/B/D', '/A/E', '/A/E/F', '/A/E/F/G', '/A/E/F/G/H',
                                '/A/I', '/A/K')
GROUPS = [A, B, C, D, E, F, G, H, I, K]


def converge(sc, c, mirror, expected, what):
    """Wait until the kernel-derived states are `expected` (a dict for some groups) and
    freezerd's signalled states equal the kernel-derived ones; then check with Get."""
    def ok():
        k = ft.kernel_states(sc, GROUPS)
        return all(k[p] == s for p, s in expected.items()) and mirror.states() == k
    try:
        ft.wait_for(ok, what=f'{what}: states to settle')
    except ft.TestFailure:
        ft.fail(f'{what}: kernel-derived {ft.kernel_states(sc, GROUPS)}, signalled {mirror.states()}, '
                f'expected {expected}')
    k = ft.kernel_states(sc, GROUPS)
    got = {p: c.group_property(p, 'FreezerState') for p in GROUPS}
    ft.check_equal(got, k, f'{what}: every FreezerState (Get) matches the kernel')
    ft.check_equal({p: k[p] for p in expected}, expected, f'{what}: the expected states')


def paths_in(message):
    return set(re.findall(r'/[A-Za-z0-9_./-]*[A-Za-z0-9_]', message))


def expect_frozen_by_parent(c, sc, path, ancestor, flags=0, via_group=False):
    if via_group:
        e = ft.expect_dbus_error(ft.ERROR_FROZEN_BY_PARENT, c.group_call, path, 'Thaw', 0, flags)
    else:
        e = ft.expect_dbus_error(ft.ERROR_FROZEN_BY_PARENT, c.call, 'Thaw', path, 0, flags)
    found = paths_in(e.message)
    ft.check(ancestor in found, f'the FrozenByParent message of {path} names its freezing ancestor {ancestor}',
             repr(e.message))
    ft.check(path in found, f'the FrozenByParent message names {path}', repr(e.message))
    ft.check_equal(sc.read_freeze(path), 0, f'{path}: cgroup.freeze is 0 (own flag cleared)')
    ft.check_equal(c.group_property(path, 'Freeze'), False, f'{path}: Freeze property false')
    ft.check_equal(sc.frozen(path), True, f'{path}: the kernel still says frozen 1')
    ft.check_equal(c.group_property(path, 'Frozen'), True, f'{path}: Frozen property true')
    ft.check_equal(c.group_property(path, 'FreezerState'), 'frozen-by-parent', f'{path}: frozen-by-parent')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-tree') as sc, ft.Bus() as bus:
        for p in GROUPS:
            sc.mkdir(p)
        sc.spawn_sleepers(C, 1)
        sc.spawn_sleepers(H, 1)
        sc.spawn_sleepers(K, 3)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            mirror = ft.StateMirror(c, GROUPS)
            converge(sc, c, mirror, {p: 'running' for p in GROUPS}, 'start')

            # 1. Freeze B, F, G.
            for p in (B, F, G):
                c.call('Freeze', p, 0, 0)
                ft.check_equal(sc.read_events(p).get('frozen'), 1, f'Freeze({p}) replied with frozen 1')
            ft.check_equal(sc.frozen(A), False, 'the kernel says A is not frozen')
            ft.check_equal(sc.frozen(E), False, 'the kernel says E is not frozen')
            converge(sc, c, mirror, {A: 'running', E: 'running', B: 'frozen', C: 'frozen-by-parent',
                                     F: 'frozen', G: 'frozen', H: 'frozen-by-parent', K: 'running'},
                     'B, F, G frozen')

            # 2. Freeze A.
            c.call('Freeze', A, 0, 0)
            ft.check_equal(sc.read_events(A).get('frozen'), 1, 'Freeze(A) replied with frozen 1')
            for p in (B, E):
                ft.check_equal(sc.frozen(p), True, f'the kernel says {p} is frozen')
            converge(sc, c, mirror, {A: 'frozen', B: 'frozen', E: 'frozen-by-parent', F: 'frozen', G: 'frozen',
                                     C: 'frozen-by-parent', D: 'frozen-by-parent', H: 'frozen-by-parent',
                                     I: 'frozen-by-parent', K: 'frozen-by-parent'}, 'A frozen')

            # 3. Clear the own flags of B, G (F still set), F.
            expect_frozen_by_parent(c, sc, B, A)
            expect_frozen_by_parent(c, sc, G, F, via_group=True)
            expect_frozen_by_parent(c, sc, F, A, flags=ft.FLAG_NO_WAIT)
            for p in (C, H):
                ft.check_equal(sc.frozen(p), True, f'the kernel says {p} is still frozen')
            sc.wait_tasks_frozen(C)
            sc.wait_tasks_frozen(H)
            ft.check(sc.all_tasks_frozen(C) and sc.all_tasks_frozen(H), 'the tasks of C and H are still frozen')
            converge(sc, c, mirror, {A: 'frozen', **{p: 'frozen-by-parent' for p in GROUPS if p != A}},
                     'own flags of B, F, G cleared')

            # 4. Thaw A.
            c.call('Thaw', A, 0, 0)
            ft.check_equal(sc.read_events(A).get('frozen'), 0, 'Thaw(A) replied with frozen 0')
            for p in (C, K):
                ft.check_equal(sc.frozen(p), False, f'the kernel says {p} is not frozen')
            converge(sc, c, mirror, {p: 'running' for p in GROUPS}, 'A thawed')
            for p in (C, H, K):
                sc.wait_tasks_frozen(p, frozen=False)
            ft.check(all(sc.no_task_frozen(p) for p in (C, H, K)), 'no task is in the freezer trap')
            ft.check_equal({p: sc.read_freeze(p) for p in GROUPS}, {p: 0 for p in GROUPS},
                           'every cgroup.freeze is 0')
    print('# checked: test_cgfreeze_tree through freezerd: frozen-by-parent after the own flag is cleared, '
          'FrozenByParent naming the nearest freezing ancestor (manager, group object, NO_WAIT), thaw of the root')


ft.run(test)
