#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""cgroup.freeze written behind freezerd's back updates its model and signals.

  /g     (no process)      /g/h   one sleeper      /g/k   two sleepers
  /s     a task blocked on a FUSE mount that never answers

Checks (every change must arrive as PropertiesChanged; then Get confirms it):
  * echo 1 > /g/cgroup.freeze: /g gets Freeze=true and FreezerState "frozen"
    (once the kernel says frozen 1), Frozen=true; /g/h becomes "frozen-by-parent".
  * echo 1 > /g/h/cgroup.freeze while /g is frozen: /g/h Freeze=true, "frozen".
  * echo 0 > /g/cgroup.freeze: /g "running", /g/h stays "frozen" (own flag).
  * echo 0 > /g/h/cgroup.freeze: /g/h "running".
  * echo 1 > /s/cgroup.freeze (cannot finish): "freezing"; echo 0: "running".
  * A Freeze through freezerd after all that behaves normally.

Processes live in leaf groups only (see test-core-libfreezer.py)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('core-external') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        ft.make_core_groups(sc, fuse)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            g, h, s = (c.call('GetGroup', p)[0] for p in ('/g', '/g/h', '/s'))
            rec = c.record()

            def expect(obj, path, **props):
                for k, v in props.items():
                    rec.wait_property(obj, k, v)
                got = c.get_all(obj, ft.GROUP_IFACE)
                ft.check_equal({k: got[k] for k in props}, props, f'{path}: signalled and read back {props}')

            sc.write_freeze('/g', 1)
            sc.wait_events('/g', frozen=1)
            expect(g, '/g', Freeze=True, FreezerState='frozen', Frozen=True)
            expect(h, '/g/h', FreezerState='frozen-by-parent', Frozen=True)

            rec.clear()
            sc.write_freeze('/g/h', 1)
            expect(h, '/g/h', Freeze=True, FreezerState='frozen')

            rec.clear()
            sc.write_freeze('/g', 0)
            sc.wait_events('/g', frozen=0)
            expect(g, '/g', Freeze=False, FreezerState='running', Frozen=False)
            ft.check_equal(c.get_property(h, ft.GROUP_IFACE, 'FreezerState'), 'frozen', '/g/h stays frozen (own flag)')
            ft.check_equal(sc.frozen('/g/h'), True, 'the kernel agrees: /g/h frozen 1')

            rec.clear()
            sc.write_freeze('/g/h', 0)
            sc.wait_events('/g/h', frozen=0)
            expect(h, '/g/h', Freeze=False, FreezerState='running', Frozen=False)

            rec.clear()
            sc.write_freeze('/s', 1)
            expect(s, '/s', Freeze=True, FreezerState='freezing')
            ft.check_equal(c.get_property(s, ft.GROUP_IFACE, 'Frozen'), False, '/s is not frozen')
            rec.clear()
            sc.write_freeze('/s', 0)
            expect(s, '/s', Freeze=False, FreezerState='running')

            c.call('Freeze', '/g', 0, 0)
            ft.check_equal(sc.read_events('/g').get('frozen'), 1, 'a Freeze through freezerd still works')
            c.call('Thaw', '/g', 0, 0)
            ft.check_equal(sc.read_events('/g').get('frozen'), 0, 'and Thaw')
    print('# checked: external cgroup.freeze writes (freeze, nested, thaw, a group that cannot finish) update '
          'Freeze/Frozen/FreezerState with PropertiesChanged')


ft.run(test)
