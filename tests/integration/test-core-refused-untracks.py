#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A call refused before it writes leaves freezerd as it found it, tracking included.

A path outside the tracked subtrees is tracked when a call looks it up (README,
"Tracking").  A call that names several paths, or checks more after its lookup, could be
refused after a lookup that tracked an earlier path: that path stayed tracked (in
tracked.json, published with InterfacesAdded, its directory watched) by a call that did
nothing ("one bad path ... means nothing is written and the error names it").

  "track": ["/t1", "/p/q"]
  /t1/a       tracked
  /p/q/r      tracked; /p and /p/z/y outside
  /o/a/b/c/d, /o/a/b/e, /o/a/f, /o/g, /o2/a/b, /o2/a-b, /o2/a.b: outside, nested
  /other/x    outside the tracked subtrees (a sleeper)
  /other/y    outside too; cgroup.freeze of /other and /other/y owned by nobody
  /other/h    (with /dev/fuse) a task blocked on a FUSE mount: its freeze never finishes

Refused calls, each followed by: ListGroups unchanged, no object at /other/x or /other
(Get of its Path: UnknownObject), Untrack of /other/x and of /other: NotTracked,
tracked.json unchanged, no InterfacesAdded or InterfacesRemoved, every cgroup.freeze of
/other as it was, and freezerd's inotify instance holding as many watches as before:
  * ApplyBatch [(/other/x, 1), (/other/missing, 1)]: NoSuchGroup naming request 1;
  * ApplyBatch [(/other/x, 1), (/, 1)]: InvalidPath ("/" is the cgroup root);
  * ApplyBatch [(/, 0), (/other/x, 1), (/missing, 1)] and [(/o/a/b, 1), (/o, 1), (/, 0),
    (/missing, 1)]: NoSuchGroup; FreezeExcept(/, [/missing]): NoSuchGroup; Freeze(/):
    InvalidPath;
  * ApplyBatch [(/other/x, 1), (/t1/cgroup.procs, 1)]: InvalidPath (a file);
  * ApplyBatch [(/other/y, 1), (/other/x, 1)] RECURSIVE: /other/x the same, after /other/y;
  * FreezeExcept(/other, [/other/missing]): NoSuchGroup, after /other was looked up;
  * FreezeExcept(/other, [/other/x]) with /other/x's own cgroup.freeze 1: InvalidArgs;
  * as nobody: ApplyBatch [(/other/y, 1), (/other/x, 1)]: AccessDenied for /other/x,
    which nobody may not have tracked, after /other/y was; Freeze(/other, RECURSIVE):
    AccessDenied for /other/x (root's, its flag would change), after /other was tracked;
  * ApplyBatch of nested new roots, then (/o/missing, 1): NoSuchGroup, the call's roots all
    undone at once (sorted), each pruning what it alone needed: child then parent, parent
    then child, four levels, names that sort around '/' (/o2/a-b, /o2/a.b, /o2/a/b,
    /o2/a), a parent of the configured /p/q (with /p/z/y beside it, or with /p/q and
    /p/q/r named too), five at once; and with /o/a/b Track()ed before the call, the
    call's roots below, above and beside it (it stays tracked).
Calls accepted keep what they tracked:
  * Freeze(/other/h, 300 ms) fails with Timeout (with /dev/fuse): it wrote, /other/h stays
    tracked (in tracked.json, published);
  * ApplyBatch [(/other/x, 0)] succeeds with nothing to write: /other/x is tracked, its
    InterfacesAdded here before the reply, and in tracked.json;
  * a refused call naming /other/x again (tracked before it) leaves it tracked; nor is
    /t1, the configured root, dropped by a refused call naming it."""

import os
import pwd
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ERROR_UNKNOWN_OBJECT = 'org.freedesktop.DBus.Error.UnknownObject'
ERROR_ACCESS_DENIED = 'org.freedesktop.DBus.Error.AccessDenied'
OTHER = ('/other', '/other/x', '/other/y')
NESTED = ('/o/a/b/c/d', '/o/a/b/e', '/o/a/f', '/o/g', '/p/q/r', '/p/z/y', '/o2/a/b', '/o2/a-b', '/o2/a.b')


def watches(d):
    return ft.anon_fd_items(d.pid, 'inotify', b'inotify wd:')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    fuse = os.path.exists('/dev/fuse') and os.access(ft.FUSE_HANG_BIN, os.X_OK)
    nobody = pwd.getpwnam('nobody').pw_uid
    with ft.Scratch('core-refused-untracks') as sc, ft.Bus() as bus:
        sc.mkdir('/t1/a')
        sc.spawn_sleepers('/other/x', 1)
        sc.mkdir('/other/y')
        for g in NESTED:
            sc.mkdir(g)
        for g in ('/other', '/other/y'):
            os.chown(sc.abspath(g, 'cgroup.freeze'), nobody, nobody)
        with ft.Daemon(bus, sc.root, config={'track': ['/t1', '/p/q']}) as d:
            c = d.client
            u = ft.client_as_nobody(bus)
            rec = c.record()
            published = ft.published_paths(c)
            ft.check_equal(published, ['/', '/p/q', '/p/q/r', '/t1', '/t1/a'], 'published at start')
            roots = ft.tracked_roots(d.state_dir)
            n_watches = watches(d)
            flags = {g: sc.read_freeze(g) for g in OTHER}

            def left_as_found(what):
                ft.check_equal(ft.published_paths(c), published, f'{what}: ListGroups unchanged')
                for g in ('/other', '/other/x'):
                    ft.expect_dbus_error(ERROR_UNKNOWN_OBJECT, c.group_property, g, 'Path')
                    ft.expect_dbus_error(ft.ERROR_NOT_TRACKED, c.call, 'Untrack', g)
                ft.check_equal(ft.tracked_roots(d.state_dir), roots, f'{what}: tracked.json unchanged')
                # Sent at the end of the turn of the refused call: here before the replies above.
                ft.check_equal(rec.interfaces_added(), [], f'{what}: no InterfacesAdded')
                ft.check_equal(rec.interfaces_removed(), [], f'{what}: no InterfacesRemoved')
                ft.check_equal({g: sc.read_freeze(g) for g in OTHER}, flags, f'{what}: no cgroup.freeze written')
                ft.check_equal(watches(d), n_watches, f'{what}: as many inotify watches as before')

            def refused(what, error, contains, fn, *args):
                e = ft.expect_dbus_error(error, fn, *args)
                ft.check(contains in e.message, f'{what}: the error says {contains!r}', e.message)
                left_as_found(what)

            refused('ApplyBatch [/other/x, /other/missing]', ft.ERROR_NO_SUCH_GROUP,
                    'Request 1: /other/missing does not exist', c.call, 'ApplyBatch',
                    [('/other/x', True), ('/other/missing', True)], 'auto', 0, 0)
            refused('ApplyBatch [/other/x, /]', ft.ERROR_INVALID_PATH, 'Request 1: / is freezerd\'s cgroup root',
                    c.call, 'ApplyBatch', [('/other/x', True), ('/', True)], 'auto', 0, 0)
            refused('ApplyBatch [/, /other/x, /missing]', ft.ERROR_NO_SUCH_GROUP, 'Request 2: /missing does not exist',
                    c.call, 'ApplyBatch', [('/', False), ('/other/x', True), ('/missing', True)], 'auto', 0, 0)
            refused('ApplyBatch [/o/a/b, /o, /, /missing]', ft.ERROR_NO_SUCH_GROUP,
                    'Request 3: /missing does not exist', c.call, 'ApplyBatch',
                    [('/o/a/b', True), ('/o', True), ('/', False), ('/missing', True)], 'auto', 0, 0)
            refused('FreezeExcept(/, [/missing])', ft.ERROR_NO_SUCH_GROUP, '/missing does not exist', c.call,
                    'FreezeExcept', '/', ['/missing'], 0, 0)
            refused('Freeze(/)', ft.ERROR_INVALID_PATH, 'cgroup root', c.call, 'Freeze', '/', 0, 0)
            refused('ApplyBatch [/other/x, /t1/cgroup.procs]', ft.ERROR_INVALID_PATH, 'Request 1:', c.call,
                    'ApplyBatch', [('/other/x', True), ('/t1/cgroup.procs', True)], 'auto', 0, 0)
            refused('ApplyBatch RECURSIVE [/other/y, /other/x, /other/missing]', ft.ERROR_NO_SUCH_GROUP,
                    'Request 2:', c.call, 'ApplyBatch',
                    [('/other/y', True), ('/other/x', True), ('/other/missing', True)], 'auto', 0,
                    ft.FLAG_RECURSIVE)
            refused('FreezeExcept(/other, [/other/missing])', ft.ERROR_NO_SUCH_GROUP, '/other/missing does not exist',
                    c.call, 'FreezeExcept', '/other', ['/other/missing'], 0, 0)
            sc.write_freeze('/other/x', 1)
            flags['/other/x'] = 1
            refused('FreezeExcept(/other, [/other/x]), /other/x frozen by its own flag', ft.ERROR_INVALID_ARGS,
                    'Cannot keep /other/x running', c.call, 'FreezeExcept', '/other', ['/other/x'], 0, 0)
            sc.write_freeze('/other/x', 0)
            flags['/other/x'] = 0
            if u:
                refused('ApplyBatch as nobody [/other/y, /other/x]', ERROR_ACCESS_DENIED, '/other/x', u.call,
                        'ApplyBatch', [('/other/y', True), ('/other/x', True)], 'auto', 0, 0)
                refused('Freeze(/other, RECURSIVE) as nobody', ERROR_ACCESS_DENIED, '/other/x', u.call, 'Freeze',
                        '/other', 0, ft.FLAG_RECURSIVE)
            else:
                print('# no user nobody: the AccessDenied cases are left out')

            # Nested new roots, all undone at once: the prune of each takes what it alone
            # needed, whichever order the call named them in.
            def refused_nested(what, paths):
                items = [(p, True) for p in paths] + [('/o/missing', True)]
                refused(f'ApplyBatch {what}', ft.ERROR_NO_SUCH_GROUP, f'Request {len(paths)}: /o/missing', c.call,
                        'ApplyBatch', items, 'auto', 0, 0)

            def nested_cases():
                refused_nested('child then parent', ['/o/a/b', '/o/a'])
                refused_nested('parent then child', ['/o/a', '/o/a/b'])
                refused_nested('four levels', ['/o/a/b/c/d', '/o/a/b', '/o/a', '/o'])
                refused_nested('names sorting around /', ['/o2/a/b', '/o2/a-b', '/o2/a.b', '/o2/a'])
                refused_nested('a parent of the configured /p/q', ['/p/z/y', '/p'])
                refused_nested('/p/q, /p/q/r, then their parent', ['/p/q', '/p/q/r', '/p'])
                refused_nested('five at once', ['/o/g', '/o/a/f', '/o/a/b/e', '/o/a/b/c', '/o/a'])

            nested_cases()
            # A root tracked before the call, the call's roots below, above and beside it.
            before_track = (published, roots, n_watches)
            c.call('Track', '/o/a/b')
            rec.clear()
            published = ft.published_paths(c)
            roots = ft.tracked_roots(d.state_dir)
            n_watches = watches(d)
            ft.check_equal(roots, ['/o/a/b'], 'Track(/o/a/b): in tracked.json')
            refused_nested('with /o/a/b tracked: below, then above it', ['/o/a/b/c', '/o/a', '/o'])
            refused_nested('with /o/a/b tracked: beside it', ['/o/a/f', '/o/g'])
            nested_cases()
            c.call('Untrack', '/o/a/b')
            rec.clear()
            ft.check_equal((ft.published_paths(c), ft.tracked_roots(d.state_dir) or [], watches(d)),
                           (before_track[0], before_track[1] or [], before_track[2]),
                           'Untrack(/o/a/b): ListGroups, tracked.json, watches as before its Track()')
            published, roots, n_watches = before_track[0], ft.tracked_roots(d.state_dir), before_track[2]

            # A refused call naming the configured root keeps it (nothing to undo there).
            refused('ApplyBatch [/t1, /other/missing]', ft.ERROR_NO_SUCH_GROUP, 'Request 1:', c.call, 'ApplyBatch',
                    [('/t1', True), ('/other/missing', True)], 'auto', 0, 0)
            ft.check_equal(sc.read_freeze('/t1'), 0, '  ... /t1 not written')

            if fuse:
                with ft.FuseHang() as fh:
                    sc.mkdir('/other/h')
                    fh.spawn_stuck(sc, '/other/h')
                    ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'Freeze', '/other/h', 300000, 0)
                    ft.check('/other/h' in ft.published_paths(c), 'Freeze(/other/h) that timed out: it wrote, '
                             '/other/h stays tracked')
                    ft.check('/other/h' in ft.tracked_roots(d.state_dir), '  ... and in tracked.json')
                    ft.check_equal(sc.read_freeze('/other/h'), 1, '  ... its flag written')
                    c.call('Untrack', '/other/h')
                    sc.write_freeze('/other/h', 0)
                rec.clear()
                published = ft.published_paths(c)
                roots = ft.tracked_roots(d.state_dir)
                n_watches = watches(d)
            else:
                print('# no /dev/fuse or fuse-hang: the Timeout case is left out')

            # Accepted: what it tracked stays, announced before the reply.
            ft.check_equal(c.call('ApplyBatch', [('/other/x', False)], 'auto', 0, 0), (0, 1),
                           'ApplyBatch [thaw /other/x]: nothing to write, succeeds')
            ft.check_equal([o for o, _i in rec.interfaces_added()], [ft.group_object('/other/x')],
                           '  ... InterfacesAdded of /other/x, before the reply')
            ft.check('/other/x' in ft.published_paths(c), '  ... /other/x tracked')
            ft.check('/other/x' in (ft.tracked_roots(d.state_dir) or []), '  ... and in tracked.json')
            rec.clear()
            published = ft.published_paths(c)
            roots = ft.tracked_roots(d.state_dir)
            n_watches = watches(d)
            ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, c.call, 'ApplyBatch',
                                     [('/other/x', True), ('/other/missing', True)], 'auto', 0, 0)
            ft.check_equal(ft.published_paths(c), published, 'a refused call naming /other/x, tracked before it: '
                           'it stays')
            ft.check_equal(ft.tracked_roots(d.state_dir), roots, '  ... tracked.json unchanged')
            ft.check_equal(rec.interfaces_removed(), [], '  ... no InterfacesRemoved')
            ft.check_equal(watches(d), n_watches, '  ... as many inotify watches')
            ft.check_equal(sc.read_freeze('/other/x'), 0, '  ... /other/x not written')
            if u:
                u.close()
    print('# checked: a refused call tracks nothing, an accepted one keeps what it tracked')


ft.run(test)
