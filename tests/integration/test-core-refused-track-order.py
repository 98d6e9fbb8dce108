#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A call refused after its lookup marked a configured root as asked for leaves no
order of the roots unsaved: the stop does not write tracked.json again.

  "track": ["/r1", "/r2"]; /r1 made during the test, /r2 there at the start
  /other     Track()ed: tracked.json lists it

A configured root that waits for its directory is tracked by a call's lookup when the
call comes before freezerd read the mkdir's IN_CREATE: the lookup marks it as asked for
by a call and moves it last among the roots (track_root_touch()), and the refusal
makes it the configuration's alone again.  tracked.json keeps only the roots calls
asked for, in their order, so its place there does not matter; but the move left
Manager.track_order_unsaved set, and the stop wrote the file again, the same.  The
order is made certain as in test-core-track-new: freezerd is stopped in epoll_wait(),
the call is written into its private socket, /r1 is made, freezerd goes on.

  * ApplyBatch [(/r1, 1), (/missing, 1)] fails with NoSuchGroup, /r1 not written;
  * /r1 is tracked (published: the configuration's), tracked.json unchanged;
  * after the stop (SIGTERM, exit 0), tracked.json is the same file (its inode and
    mtime as before the call: a save renames a new file over it), /other in it."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-refused-track-order') as sc, ft.Bus() as bus:
        sc.mkdir('/r2/a')
        sc.mkdir('/other')
        with ft.Daemon(bus, sc.root, config={'track': ['/r1', '/r2']}) as d:
            c = d.client
            c.call('Track', '/other')
            path = os.path.join(d.state_dir, 'tracked.json')
            ft.check_equal(ft.tracked_roots(d.state_dir), ['/other'], 'tracked.json lists /other')
            st = os.stat(path)
            with ft.Client(f'unix:path={os.path.join(d.runtime_dir, "private")}', direct=True) as priv:
                ft.stop_in_epoll_wait(d.pid)
                try:
                    call = priv.call_async('ApplyBatch', [('/r1', True), ('/missing', True)], 'auto', 0, 0)
                    sc.mkdir('/r1')
                finally:
                    os.kill(d.pid, signal.SIGCONT)
                e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, call.result)
            ft.check('/missing does not exist' in e.message and 'nothing was written' in e.message,
                     'ApplyBatch [/r1, /missing] is refused: /missing does not exist', e.message)
            ft.check_equal(sc.read_freeze('/r1'), 0, '/r1 not written')
            ft.check('/r1' in ft.published_paths(c), '/r1 is tracked (the configuration\'s root)',
                     ft.published_paths(c))
            ft.check_equal(ft.tracked_roots(d.state_dir), ['/other'], 'tracked.json unchanged by the refused call')
            ft.check_equal(d.stop(), 0, 'freezerd exits 0 at SIGTERM')
            after = os.stat(path)
            ft.check_equal((after.st_ino, after.st_mtime_ns), (st.st_ino, st.st_mtime_ns),
                           'the stop did not write tracked.json again (same inode and mtime)')
            ft.check_equal(ft.tracked_roots(d.state_dir), ['/other'], 'tracked.json still lists /other alone')
    print('# checked: a refused call leaves no order of the roots for the stop to save')


ft.run(test)
