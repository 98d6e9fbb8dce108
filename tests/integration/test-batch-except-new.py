#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""FreezeExcept over a group that once had a child freezerd does not follow, and
now a child made a moment ago, read before freezerd read the mkdir's inotify event.

  /t (tracked), /t/a, /t/a/x (excluded), /t/a/b, /t/a/bad\\xff (not UTF-8: not
  followed) made before freezerd starts, then removed; /t/a/nI made during the test

/t/a keeps its hint (GroupData.unfollowed_children) once its odd child is gone, and
FreezeExcept lists /t/a for a child the model lacks.  Until session 34 it took /t/a/nI,
an ordinary name whose IN_CREATE freezerd had not read yet, for one it could not
watch, and refused the call with LimitsExceeded ("or it was made a moment ago").
A group made a moment ago is now added as its event would add it, and frozen with the
cover.

The order is made certain as in test-core-track-new: freezerd is stopped (SIGSTOP),
the call is written into its private socket, /t/a/nI is made, freezerd goes on.

  * with /t/a/bad\\xff there, FreezeExcept("/t", ["/t/a/x"]) fails with NotSupported
    (as test-fault-names); once it is removed, it replies [/t/a/b];
  * FreezeExcept("/t", ["/t/a/x"]) racing the mkdir of /t/a/nI replies /t/a/b and
    /t/a/nI, and both are frozen, /t/a/x not."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

N = 3


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('batch-except-new') as sc, ft.Bus() as bus:
        for g in ('/t/a/x', '/t/a/b'):
            sc.mkdir(g)
        bad = os.fsencode(sc.abspath('/t/a')) + b'/bad\xff'
        os.mkdir(bad)
        with ft.Daemon(bus, sc.root, config={'track': ['/t']}) as d:
            c = d.client
            ft.expect_dbus_error('org.freezerd.Freezer1.Error.NotSupported', c.call, 'FreezeExcept', '/t',
                                 ['/t/a/x'], 0, 0)
            os.rmdir(bad)
            ft.check_equal(c.call('FreezeExcept', '/t', ['/t/a/x'], 0, 0)[0], ['/t/a/b'],
                           'FreezeExcept(/t, [/t/a/x]) once /t/a/bad\\xff is gone')
            c.call('Thaw', '/t/a/b', 0, 0)
            with ft.Client(f'unix:path={os.path.join(d.runtime_dir, "private")}', direct=True) as priv:
                for i in range(N):
                    p = f'/t/a/n{i}'
                    os.kill(d.pid, signal.SIGSTOP)
                    try:
                        call = priv.call_async('FreezeExcept', '/t', ['/t/a/x'], 0, 0)
                        sc.mkdir(p)
                    finally:
                        os.kill(d.pid, signal.SIGCONT)
                    got = call.result()[0]
                    ft.check(p in got and '/t/a/b' in got, f'FreezeExcept(/t, [/t/a/x]) as {p} was made: '
                             f'it is frozen with /t/a/b', got)
                    for g in ('/t/a/b', p):
                        ft.check_equal(sc.read_events(g).get('frozen'), 1, f'{g} frozen')
                        c.call('Thaw', g, 0, 0)
                    ft.check_equal(sc.read_events('/t/a/x').get('frozen'), 0, '/t/a/x runs')


ft.run(test)
