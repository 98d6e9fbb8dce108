#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A call refused at its writes, with nothing written, untracks what its lookups tracked.

  "track": ["/t1"]
  /t1/b       made, looked up (in the model), then removed a moment ago: freezerd has not
              read its IN_DELETE when the call comes
  /other/x    outside the tracked subtrees (a sleeper)

ApplyBatch [(/other/x, 1), (/t1/b, 1)] and [(/t1/b, 1), (/other/x, 1)] fail with
NoSuchGroup, "nothing was written": the write of /t1/b's cgroup.freeze fails before any
write (its open, ENOENT; or, where freezerd kept the file open since an earlier write,
the check of it).  /other/x, which the call's lookup tracked, must then be untracked as
for any call refused before it writes (test-core-refused-untracks): not published, no
InterfacesAdded, not in tracked.json, as many inotify watches as before.  The call was
accepted at the start of the writes, before the files were open, and /other/x stayed
tracked for good.

The order is made certain as in test-batch-vanished: freezerd is stopped waiting in
epoll_wait(), /t1/b removed, the call written into its private socket, and freezerd
goes on.  One whose removal freezerd read first after all ("does not exist") is tried
again, up to 5 times."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def watches(d):
    return ft.anon_fd_items(d.pid, 'inotify', b'inotify wd:')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-refused-untracks-vanished') as sc, ft.Bus() as bus:
        sc.mkdir('/t1/a')
        sc.spawn_sleepers('/other/x', 1)
        with ft.Daemon(bus, sc.root, config={'track': ['/t1']}) as d, \
                ft.Client(f'unix:path={os.path.join(d.runtime_dir, "private")}', direct=True) as priv:
            c = d.client
            rec = c.record()
            for written in (False, True):
                for first in (False, True):
                    reqs = [('/other/x', True), ('/t1/b', True)]
                    if first:
                        reqs.reverse()
                    what = (f'ApplyBatch {[p for p, _v in reqs]}, /t1/b '
                            f'({"written before" if written else "never written"}) removed a moment ago')
                    for attempt in range(5):
                        n_watches = watches(d)  # /t1/b not there: as after its removal
                        sc.mkdir('/t1/b')
                        c.call('GetGroup', '/t1/b')  # in the model
                        if written:  # freezerd keeps its cgroup.freeze open
                            c.call('Freeze', '/t1/b', 0, 0)
                            c.call('Thaw', '/t1/b', 0, 0)
                        published = ft.published_paths(c)
                        roots = ft.tracked_roots(d.state_dir)
                        rec.clear()
                        ft.stop_in_epoll_wait(d.pid)
                        try:
                            sc.rmdir('/t1/b')
                            call = priv.call_async('ApplyBatch', reqs, 'auto', 0, 0)
                        finally:
                            os.kill(d.pid, signal.SIGCONT)
                        e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, call.result)
                        if 'does not exist' not in e.message:
                            break
                        print(f'# the removal was read before the call, again: {e.message}', flush=True)
                    else:
                        ft.fail(f'{what}: the removal was read before the call in 5 tries')
                    ft.check('nothing was written' in e.message, f'{what}: nothing was written', e.message)
                    ft.check_equal(sc.read_freeze('/other/x'), 0, f'{what}: /other/x not written')
                    ft.check_equal(ft.published_paths(c), [p for p in published if p != '/t1/b'],
                                   f'{what}: /other/x not published')
                    ft.expect_dbus_error(ft.ERROR_NOT_TRACKED, c.call, 'Untrack', '/other/x')
                    ft.check_equal(ft.tracked_roots(d.state_dir), roots, f'{what}: tracked.json unchanged')
                    ft.check_equal(rec.interfaces_added(), [], f'{what}: no InterfacesAdded')
                    ft.check_equal(watches(d), n_watches, f'{what}: as many inotify watches as before /t1/b was made')
    print('# checked: a call whose writes fail before any write untracks what it tracked')


ft.run(test)
