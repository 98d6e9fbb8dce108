#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A tree deeper than freezerd follows: whoever may mkdir in a delegated
subtree can nest cgroups thousands of levels deep (cgroup.max.depth is "max"
by default), and freezerd follows 256 levels below its cgroup root.

  /deep/d/d/.../d   600 levels (/deep is level 1), made before freezerd starts,
                    a sleeper in the deepest

Checks:
  * freezerd starts and is ready.  Its start-up scan recurses once per level;
    it kept a 16 KiB listing buffer on the stack at each, and ended (SIGSEGV)
    at about 500 levels;
  * the groups of levels 1 to 256 are objects, and "/" counts them as its
    Descendants; level 257 is not: GetGroup of it fails with LimitsExceeded
    naming the limit;
  * the log says once that the groups below level 256 are not followed;
  * a group made below level 256 while freezerd runs is not followed either,
    and the log says nothing more;
  * Freeze("/deep") confirms, and the kernel froze the sleeper at level 600
    (the flag covers the whole subtree, followed or not); Thaw likewise."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LEVELS = 600
DEPTH_MAX = 256
WARNING = 'Not following the groups below'


def level(n):
    """The API path of the group at level n (1: /deep)."""
    return '/deep' + '/d' * (n - 1)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('fault-deep') as sc, ft.Bus() as bus:
        os.makedirs(sc.abspath(level(LEVELS)))
        sc.spawn_sleepers(level(LEVELS), 1)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            ft.check_equal(c.group_property('/', 'Descendants'), DEPTH_MAX,
                           f'freezerd is ready, and "/" counts {DEPTH_MAX} descendants (levels 1 to {DEPTH_MAX})')
            objs = c.managed_objects()
            ft.check(ft.group_object(level(DEPTH_MAX)) in objs, f'level {DEPTH_MAX} is an object')
            ft.check(ft.group_object(level(DEPTH_MAX + 1)) not in objs, f'level {DEPTH_MAX + 1} is not')
            e = ft.expect_dbus_error(ft.ERROR_LIMITS_EXCEEDED, c.call, 'GetGroup', level(DEPTH_MAX + 1))
            ft.check(f'deeper than {DEPTH_MAX} levels' in e.message, 'the error names the limit', repr(e.message))
            ft.check_equal(d.log().count(WARNING), 1, 'the log says once that the groups below are not followed')

            # While it runs: the directory watch of level 256 reports a new child.
            os.mkdir(sc.abspath(level(DEPTH_MAX) + '/new'))
            c.call('ListGroups')  # a round trip after freezerd read the IN_CREATE
            ft.wait_for(lambda: c.group_property('/', 'Descendants') == DEPTH_MAX,
                        what='"/" to count the same descendants')
            ft.check(ft.group_object(level(DEPTH_MAX) + '/new') not in c.managed_objects(),
                     'a group made below level 256 is not followed')
            ft.check_equal(d.log().count(WARNING), 1, 'and the log says nothing more')

            c.call('Freeze', '/deep', 0, 0)
            ft.check_equal(sc.read_events('/deep').get('frozen'), 1, 'Freeze(/deep) confirmed')
            sc.wait_tasks_frozen(level(LEVELS), frozen=True)
            ft.check(True, f'the sleeper at level {LEVELS} is frozen')
            c.call('Thaw', '/deep', 0, 0)
            sc.wait_tasks_frozen(level(LEVELS), frozen=False)
            ft.check_equal(sc.read_events('/deep').get('frozen'), 0, 'Thaw(/deep) confirmed, the sleeper runs')
            ft.check(d.proc.poll() is None, 'freezerd is still running')


if __name__ == '__main__':
    ft.run(test)
