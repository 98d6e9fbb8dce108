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
    (the flag covers the whole subtree, followed or not); Thaw likewise;
  * Thaw("/deep", RECURSIVE) clears the own flags of the groups below level
    256 too (levels 300 and 600, frozen by someone else), after those of the
    groups freezerd follows, and they read frozen 0 at its reply, the
    sleeper running; ApplyBatch([thaw /deep], RECURSIVE) likewise, counting
    their writes (before, both left them frozen and succeeded);
  * a group below level 256 nested so deep that its cgroup.freeze's path
    passes PATH_MAX (no open(2) takes it) fails the RECURSIVE thaw with
    LimitsExceeded naming the group below level 256 that holds it (whole, in
    double quotes: its name ends in a space), nothing written (neither level
    300's flag nor level 2's, which freezerd follows)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LEVELS = 600
DEPTH_MAX = 256
WARNING = 'Not following the groups below'
LONG_NAME = 'x' * 249 + ' '  # its trailing space: the message puts the path in double quotes
LONG_LEVELS = 15  # below level 256 ("deep" and 255 "/d": 514 bytes): 4,279 bytes, past PATH_MAX (4,096)


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

            # A RECURSIVE thaw clears the flags below level 256 too: "thaw everything
            # under /deep" must not leave the sleeper stopped with a success.
            unfollowed = [level(300), level(LEVELS)]
            for how in ('Thaw', 'ApplyBatch'):
                for g in unfollowed:
                    sc.write_freeze(g, 1)
                sc.wait_tasks_frozen(level(LEVELS), frozen=True)
                if how == 'Thaw':
                    c.call('Thaw', '/deep', 0, ft.FLAG_RECURSIVE)
                else:
                    writes, _skipped = c.call('ApplyBatch', [('/deep', False)], 'auto', 0, ft.FLAG_RECURSIVE)
                    ft.check_equal(writes, len(unfollowed), f'{how} RECURSIVE counts the {len(unfollowed)} writes '
                                                            f'below level {DEPTH_MAX}')
                ft.check_equal([(sc.read_freeze(g), sc.read_events(g).get('frozen')) for g in unfollowed],
                               [(0, 0)] * len(unfollowed),
                               f'{how} RECURSIVE of /deep: levels 300 and {LEVELS} read cgroup.freeze 0 and frozen 0 '
                               f'at its reply')
                sc.wait_tasks_frozen(level(LEVELS), frozen=False)
                ft.check(True, f'{how} RECURSIVE of /deep: the sleeper at level {LEVELS} runs again')

            # A branch below level 256 whose cgroup.freeze no open(2) takes (its path
            # passes PATH_MAX): made and removed through dir fds, as no path reaches it.
            fds = [os.open(sc.abspath(level(DEPTH_MAX)), os.O_RDONLY | os.O_DIRECTORY)]
            try:
                for _ in range(LONG_LEVELS):
                    os.mkdir(LONG_NAME, dir_fd=fds[-1])
                    fds.append(os.open(LONG_NAME, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
                c.call('Freeze', level(2), 0, 0)
                sc.write_freeze(level(300), 1)
                e = ft.expect_dbus_error(ft.ERROR_LIMITS_EXCEEDED, c.call, 'Thaw', '/deep', 0, ft.FLAG_RECURSIVE)
                ft.check(f'"{level(DEPTH_MAX)}/{LONG_NAME}"' in e.message and 'PATH_MAX' in e.message
                         and 'nothing was written' in e.message,
                         'a group too deep to open fails the RECURSIVE thaw, naming the group below level '
                         f'{DEPTH_MAX} that holds it, whole, in double quotes (its name ends in a space)', e.message)
                ft.check_equal((sc.read_freeze(level(2)), sc.read_freeze(level(300))), (1, 1),
                               'and nothing was written (levels 2 and 300 keep their flags)')
            finally:
                for i in range(len(fds) - 1, 0, -1):
                    os.close(fds[i])
                    os.rmdir(LONG_NAME, dir_fd=fds[i - 1])
                os.close(fds[0])
            c.call('Thaw', '/deep', 0, ft.FLAG_RECURSIVE)
            ft.check_equal((sc.read_freeze(level(2)), sc.read_freeze(level(300))), (0, 0),
                           'with that branch gone the RECURSIVE thaw clears both')
            ft.check(d.proc.poll() is None, 'freezerd is still running')


if __name__ == '__main__':
    ft.run(test)
