#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Subtrees given to Track() and removed wait to be made again, but no more than
1,024 of them: a client that Track()s each pod or scope by a new name does not
grow freezerd (and tracked.json, and every start) for good.

  "track": ["/other"]; /pods is not tracked, only kept for the roots below it
  /pods/first Track()ed and removed, /pods/keep Track()ed and left, then 1,030
  groups /pods/p-N made, Track()ed and removed

Checks:
  * tracked.json ends with /pods/keep and the 1,024 that waited the least:
    /pods/first and /pods/p-0 to p-5 are forgotten, each with a log line.
    freezerd kept all 1,032 (in memory, in tracked.json, at each restart).
  * /pods/first made again is not tracked; /pods/p-1029 made again is (the
    wait still holds), and so is /pods/p-6, which goes last: the next root
    removed past the limit forgets /pods/p-7, not it.
  * A restart with ten more waiting roots in tracked.json (an older freezerd's)
    forgets those ten, the least recent, before READY=1.
  * /pods/keep removed then, the least recent root with 1,024 waiting, is
    forgotten at once with one log line; it also got "was removed: it is
    tracked again once it is made" just before.
  * Track() of /order/a, /order/b, then /order/a again: at the stop tracked.json
    holds /order/b, /order/a, the order of the last Track()s (it kept /order/a,
    /order/b, the order the next start took back)."""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

WAITING_MAX = 1024
IN_MOVED_TO = 0x00000080



def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with tempfile.TemporaryDirectory(prefix=f'{ft.TMP_PREFIX}state-{os.getpid()}-') as state_dir:
        run(state_dir)


def run(state_dir):
    # Each save of tracked.json (a rename) wakes wait_for().
    ft.loop().watch(state_dir, IN_MOVED_TO)
    with ft.Scratch('core-track-removed') as sc, ft.Bus() as bus:
        sc.mkdir('/other')
        sc.mkdir('/pods')
        with ft.Daemon(bus, sc.root, config={'track': ['/other']}, state_dir=state_dir) as d:
            c = d.client

            def track_and_remove(p):
                os.mkdir(sc.abspath(p))
                c.call('Track', p)
                os.rmdir(sc.abspath(p))

            track_and_remove('/pods/first')
            sc.mkdir('/pods/keep')
            c.call('Track', '/pods/keep')
            n = 1030
            for i in range(n):
                track_and_remove(f'/pods/p-{i}')
            waiting = [f'/pods/p-{i}' for i in range(n - WAITING_MAX, n)]
            expected = ['/pods/keep'] + waiting
            ft.wait_for(lambda: ft.tracked_roots(state_dir) == expected, timeout=3 * ft.DEFAULT_TIMEOUT,
                        what='tracked.json to hold /pods/keep and the 1,024 that waited the least')
            ft.check(True, 'tracked.json holds /pods/keep and the 1,024 removed roots tracked last, in that order')
            for p in ['/pods/first'] + [f'/pods/p-{i}' for i in range(n - WAITING_MAX)]:
                ft.check(f'{p}, tracked at a call\'s request, is gone and more than 1024 such subtrees wait' in d.log(),
                         f'  ... the log says {p} is no longer tracked', d.log()[-3000:])

            # Made again: a forgotten one is not tracked, a waiting one is.
            rec = c.record()
            sc.mkdir('/pods/first')
            sc.mkdir('/pods/p-1029')
            sc.mkdir('/pods/p-6')
            rec.wait_for(lambda r: {ft.group_object('/pods/p-1029'), ft.group_object('/pods/p-6')} <=
                         {o for o, _i in r.interfaces_added()}, what='InterfacesAdded of /pods/p-1029 and /pods/p-6')
            ft.check_equal(ft.published_paths(c), ['/', '/other', '/pods/keep', '/pods/p-1029', '/pods/p-6'],
                           '/pods/p-1029 and /pods/p-6 made again are tracked again, /pods/first is not')
            # /pods/p-6, made last, goes last: past the limit /pods/p-7 goes first.
            sc.rmdir('/pods/p-6')
            sc.rmdir('/pods/first')
            track_and_remove('/pods/extra-0')  # 1,024 wait: p-7 to p-1028, p-6, extra-0
            track_and_remove('/pods/extra-1')
            ft.wait_for(lambda: '/pods/p-7' not in ft.tracked_roots(state_dir), timeout=3 * ft.DEFAULT_TIMEOUT,
                        what='/pods/p-7 to leave tracked.json')
            t = ft.tracked_roots(state_dir)
            ft.check('/pods/p-6' in t and '/pods/extra-1' in t and '/pods/p-8' in t and len(t) == WAITING_MAX + 2,
                     '  ... /pods/p-7 forgotten, /pods/p-6 (made again since) kept', t[:5])

        # A restart with ten more waiting in tracked.json: those ten go before READY=1.
        path = os.path.join(state_dir, 'tracked.json')
        with open(path) as f:
            saved = json.load(f)
        before = saved['tracked']
        saved['tracked'] = [f'/pods/old-{i}' for i in range(10)] + before
        with open(path, 'w') as f:
            json.dump(saved, f)
        with ft.Daemon(bus, sc.root, config={'track': ['/other']}, state_dir=state_dir) as d:
            ft.check_equal(ft.tracked_roots(state_dir), before, 'a restart forgets the ten least recent waiting roots')
            ft.check_equal(ft.published_paths(d.client), ['/', '/other', '/pods/keep', '/pods/p-1029'],
                           '  ... and tracks the others as before')
            # /pods/keep removed, with 1,024 waiting: the least recent, it is forgotten
            # at once, with one log line (until session 36 also "was removed: it is
            # tracked again once it is made" just before).
            sc.rmdir('/pods/keep')
            ft.wait_for(lambda: '/pods/keep' not in ft.tracked_roots(state_dir), timeout=3 * ft.DEFAULT_TIMEOUT,
                        what='/pods/keep to leave tracked.json')
            ft.check('/pods/keep, tracked at a call\'s request, is gone and more than 1024' in d.log() and
                     '/pods/keep, a tracked subtree, was removed' not in d.log(),
                     'a root removed and forgotten at once: one log line, that it is no longer tracked',
                     d.log()[-2000:])
        check_order_saved_at_stop(sc, bus)
    print(f'# checked: at most {WAITING_MAX} removed roots that calls asked for wait, the least recent forgotten')


def check_order_saved_at_stop(sc, bus):
    """A Track() of a root tracked already makes it the most recent, which tracked.json
    said only once something else changed: a restart before that brought the old order
    back.  It is not saved at once (a write and an fsync of the whole file per Track()),
    but at the stop."""
    with tempfile.TemporaryDirectory(prefix=f'{ft.TMP_PREFIX}state-{os.getpid()}-') as state_dir:
        for g in ('/order', '/order/a', '/order/b'):
            sc.mkdir(g)
        with ft.Daemon(bus, sc.root, config={'track': ['/other']}, state_dir=state_dir) as d:
            d.client.call('Track', '/order/a')
            d.client.call('Track', '/order/b')
            ft.check_equal(ft.tracked_roots(state_dir), ['/order/a', '/order/b'], 'tracked.json: /order/a, /order/b')
            d.client.call('Track', '/order/a')
            ft.check_equal(d.stop(), 0, 'freezerd stops')
        ft.check_equal(ft.tracked_roots(state_dir), ['/order/b', '/order/a'],
                       'a Track() of /order/a again makes it the most recent in tracked.json once freezerd stops')


ft.run(test)
