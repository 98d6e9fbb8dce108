#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A call refused before it writes untracks what its lookups tracked, also where an
earlier call's RECURSIVE thaw finishes while it is handled.

  "track": ["/t1"]
  /t1/a          with /t1/a/bad\\xff (not UTF-8: freezerd does not follow it), its flag set
  /t1/s          a task stuck in D (FUSE): /t1/s cannot finish freezing
  /t1/b          removed and made again a moment ago: freezerd has not read it yet
  /t1/c/d        removed a moment ago
  /other/x       outside the tracked subtrees

Call 1, ApplyBatch [(/t1/a, 0), (/t1/s, 1)] RECURSIVE, waits for /t1/s.  Once the kernel
confirms it, its reply clears the flags below /t1/a that freezerd does not follow
(reply_batch_done()), and that accepted the call being handled then as if it wrote: its
lookups' roots were announced and saved.  Call 2, ApplyBatch [(/other/x, 1), (/t1/b, 1),
(/t1/c/d, 1)] top-down, is handled in the same loop turn as /t1/s's confirmation and the
removals: its write of /t1/b finds the group made again (nothing written), the events are
read (call 1 replies there), and call 2, handled again, fails with NoSuchGroup for
/t1/c/d.  /other/x must be left untracked with no trace: no InterfacesAdded or
InterfacesRemoved of it, tracked.json not written.  Call 1's reply accepting call 2
sends InterfacesAdded(/other/x) in the middle of call 2 and writes tracked.json twice.

The order is made certain as in test-batch-remade: freezerd is stopped in epoll_wait(),
the removals made, call 2 queued in its private socket, the stuck task killed (/t1/s
frozen), and freezerd goes on.  A try where freezerd read the removals first (its log
does not say that the call started over) is made again, up to 5 times."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

REMADE_LINE = '/t1/b: removed and made again, its removal not read yet: the call starts over'
TIMEOUT = 60 * 1000000


def file_id(path):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('core-refused-untracks-other-reply') as sc, ft.Bus() as bus, ft.FuseHang() as fuse:
        sc.mkdir('/t1/a')
        sc.mkdir('/t1/s')
        bad = os.fsencode(sc.abspath('/t1/a')) + b'/bad\xff'
        os.mkdir(bad)
        sc.mkdir('/other/x')
        with ft.Daemon(bus, sc.root, config={'track': ['/t1']}, env={'FREEZERD_LOG_LEVEL': 'debug'}) as d, \
                ft.Client(f'unix:path={os.path.join(d.runtime_dir, "private")}', direct=True) as priv:
            c = d.client
            rec = c.record()
            tracked_json = os.path.join(d.state_dir, 'tracked.json')
            for attempt in range(5):
                sc.mkdir('/t1/b')
                sc.mkdir('/t1/c/d')
                for g in ('/t1/b', '/t1/c/d'):
                    c.call('GetGroup', g)  # in the model
                with open(bad + b'/cgroup.freeze', 'w') as f:
                    f.write('1')
                stuck = fuse.spawn_stuck(sc, '/t1/s')
                call1 = c.call_async('ApplyBatch', [('/t1/a', False), ('/t1/s', True)], 'auto', TIMEOUT,
                                     ft.FLAG_RECURSIVE)
                ft.wait_for(lambda: sc.read_freeze('/t1/s') == 1, what='call 1 wrote /t1/s')
                ft.check(not call1.done(), 'call 1 waits for /t1/s')
                published = ft.published_paths(c)
                saved = file_id(tracked_json)
                rec.clear()
                n = d.log().count(REMADE_LINE)
                ft.stop_in_epoll_wait(d.pid)
                try:
                    sc.rmdir('/t1/b')
                    sc.mkdir('/t1/b')
                    sc.rmdir('/t1/c/d')
                    queued = ft.unix_recv_queued(d.pid)
                    call2 = priv.call_async('ApplyBatch', [('/other/x', True), ('/t1/b', True), ('/t1/c/d', True)],
                                            'top-down', 0, 0)
                    ft.wait_for(lambda: ft.unix_recv_queued(d.pid) > queued, poll=0.001,
                                what='call 2 waits in freezerd\'s socket')
                    stuck.kill()
                    sc.wait_events('/t1/s', frozen=1)
                finally:
                    os.kill(d.pid, signal.SIGCONT)
                e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, call2.result)
                call1.result()  # succeeded
                ft.check_equal(open(bad + b'/cgroup.freeze').read().strip(), '0',
                               'call 1 cleared the flag of /t1/a/bad\\xff')
                hit = d.log().count(REMADE_LINE) > n
                what = f'try {attempt + 1}'
                ft.check('/t1/c/d' in e.message, f'{what}: call 2 fails for /t1/c/d', e.message)
                ft.check_equal(sc.read_freeze('/other/x'), 0, f'{what}: /other/x not written')
                ft.check_equal(ft.published_paths(c), [p for p in published if p != '/t1/c/d'],
                               f'{what}: /other/x not published')
                ft.expect_dbus_error(ft.ERROR_NOT_TRACKED, c.call, 'Untrack', '/other/x')
                ft.check_equal(file_id(tracked_json), saved, f'{what}: tracked.json not written')
                objects = [ft.group_object('/other/x')]
                ft.check_equal([o for o, _i in rec.interfaces_added() if o in objects], [],
                               f'{what}: no InterfacesAdded of /other/x')
                ft.check_equal([o for o, _i in rec.interfaces_removed() if o in objects], [],
                               f'{what}: no InterfacesRemoved of /other/x')
                c.call('Thaw', '/t1', 0, ft.FLAG_RECURSIVE)
                for g in ('/t1/b', '/t1/c'):
                    sc.rmdir(g)
                if hit:
                    break
                print('# the removal was read before call 2, again', flush=True)
            else:
                ft.fail('the removal was read before call 2 in 5 tries')
    print('# checked: an earlier call\'s RECURSIVE thaw, done while a call is handled, accepts nothing of it')


ft.run(test)
