#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The start's scan opens, watches and reads the groups of a big listing below an
empty group from two threads (daemon/scan-helper.h), and puts them in the model from
one: the model is the same as one thread's, every watch works, and freezerd is
single-threaded again once the scan is done.

  /P     (no process) with /P/c0 .. /P/c39 (more than SCAN_PARALLEL_MIN), of which
         /P/c5 and /P/c8 have cgroup.freeze 1, /P/c7/x and /P/c8/y below them, and a
         child whose name D-Bus cannot carry ("bad\\x01")
  /Q     (no process) with /Q/c0 .. /Q/c19
  /R/s   one sleeper: /R is populated, so its children /R/k0 .. /R/k19 are read one
         by one, as before

Checks:
  * freezerd logs (at debug level) that it used the second thread, and has one
    thread once READY.
  * ListGroups holds every group and not the odd one, which is logged as not
    followed; every group's Freeze, Frozen and FreezerState match the kernel
    (c5 and c8 frozen, c8/y frozen-by-parent).
  * Each kind of watch the two threads armed works: a write of /P/c20/cgroup.freeze
    behind freezerd's back is reported (frozen, then running again); a mkdir of
    /P/c30/new is announced; an rmdir of /P/c31 removes its object.
  * Freeze /P: all of its subtree frozen-by-parent (c5 and c8 frozen), and Thaw."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

P_CHILDREN = [f'/P/c{i}' for i in range(40)]
Q_CHILDREN = [f'/Q/c{i}' for i in range(20)]
R_CHILDREN = [f'/R/k{i}' for i in range(20)]
GROUPS = ['/P', '/Q', '/R', '/R/s', '/P/c7/x', '/P/c8/y'] + P_CHILDREN + Q_CHILDREN + R_CHILDREN
ODD = 'bad\x01'


def check_model(c, sc, groups, what):
    def ok():
        k = ft.kernel_states(sc, groups)
        return all(c.group_property(p, 'FreezerState') == k[p] for p in groups)
    ft.wait_for(ok, what=f'{what}: every FreezerState to match the kernel')
    k = ft.kernel_states(sc, groups)
    got = {p: (c.group_property(p, 'Freeze'), c.group_property(p, 'Frozen'), c.group_property(p, 'FreezerState'))
           for p in groups}
    want = {p: (bool(sc.read_freeze(p)), sc.frozen(p), k[p]) for p in groups}
    ft.check_equal(got, want, f'{what}: Freeze, Frozen and FreezerState of all {len(groups)} groups')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-scan-parallel') as sc, ft.Bus() as bus:
        for p in ['/P', '/Q', '/R', '/R/s'] + P_CHILDREN + Q_CHILDREN + R_CHILDREN + ['/P/c7/x', '/P/c8/y']:
            sc.mkdir(p)
        os.mkdir(os.path.join(sc.root, 'P', ODD))
        sc.write_freeze('/P/c5', 1)
        sc.write_freeze('/P/c8', 1)
        sc.spawn_sleepers('/R/s', 1)
        with ft.Daemon(bus, sc.root, env={'FREEZERD_LOG_LEVEL': 'debug'}) as d:
            c = d.client
            ft.check("with a second thread" in d.log(), 'freezerd scanned a big listing from two threads',
                     d.log()[-2000:])
            ft.check_equal(ft.thread_count(d.pid), 1, 'freezerd has one thread once READY')

            listed = {p for p, _o, _s in c.call('ListGroups')[0]}
            ft.check(set(GROUPS) <= listed, 'ListGroups holds every group',
                     sorted(set(GROUPS) - listed))
            ft.check(not any('bad' in p for p in listed), 'the odd name is not listed')
            ft.check('Not following /P/bad' in d.log(), 'the odd name is logged as not followed')
            check_model(c, sc, GROUPS, 'start')
            ft.check_equal([c.group_property(p, 'FreezerState') for p in ('/P/c5', '/P/c8', '/P/c8/y')],
                           ['frozen', 'frozen', 'frozen-by-parent'], 'the flags set before the start')

            # Watches armed by either thread.
            sc.write_freeze('/P/c20', 1)
            ft.wait_for(lambda: c.group_property('/P/c20', 'FreezerState') == 'frozen',
                        what='/P/c20 frozen behind freezerd\'s back to be reported')
            sc.write_freeze('/P/c20', 0)
            ft.wait_for(lambda: c.group_property('/P/c20', 'FreezerState') == 'running',
                        what='/P/c20 thawed behind freezerd\'s back to be reported')
            ft.check_equal(sc.frozen('/P/c20'), False, 'the kernel says /P/c20 runs again')

            sc.mkdir('/P/c30/new')
            ft.wait_for(lambda: '/P/c30/new' in {p for p, _o, _s in c.call('ListGroups')[0]},
                        what='/P/c30/new to be tracked')
            sc.rmdir('/P/c31')
            ft.wait_for(lambda: '/P/c31' not in {p for p, _o, _s in c.call('ListGroups')[0]},
                        what='/P/c31 to be gone')
            ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, c.call, 'GetGroup', '/P/c31')

            groups = [p for p in GROUPS if p != '/P/c31'] + ['/P/c30/new']
            c.call('Freeze', '/P', 0, 0)
            check_model(c, sc, groups, 'Freeze /P')
            ft.check_equal(c.group_property('/P/c30/new', 'FreezerState'), 'frozen-by-parent',
                           '/P/c30/new frozen-by-parent')
            c.call('Thaw', '/P', 0, 0)
            check_model(c, sc, groups, 'Thaw /P')
    print('# checked: a start scanning listings of 20 and 40 groups from two threads: the model as the kernel '
          'has it, the odd name left out, directory and cgroup.freeze watches working, one thread at READY')


ft.run(test)
