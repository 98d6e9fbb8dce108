#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezerd never freezes itself, even once moved into a group after it started:
it reads /proc/self/cgroup again for each call that freezes.

  /p     no process of its own
  /p/d   empty until freezerd is moved there
  /p/x   one sleeper

Checks, with freezerd's PID written to /p/d/cgroup.procs (after READY=1):
  * Freeze(/p/d), Freeze(/p), ApplyBatch([/p/x, /p] frozen) and
    FreezeExcept(/p, [/p/x]) each fail with InvalidArgs, "Refusing to freeze
    X: it contains freezerd itself (/p/d)"; no cgroup.freeze was written (the
    batch's /p/x neither: every path is checked first).
  * Freeze(/p/x), beside it, works (and Thaw).
  * Moved back to its own cgroup, Freeze(/p/d) works: frozen 1."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ('/p', '/p/d', '/p/x')


def own_cgroup(pid):
    """The cgroup2 directory of pid, from /proc/PID/cgroup's "0::" line."""
    with open(f'/proc/{pid}/cgroup') as f:
        for line in f:
            if line.startswith('0::'):
                return os.path.join(ft.cgroup2_mount(), line[3:].strip().lstrip('/')).rstrip('/')
    ft.fail(f'/proc/{pid}/cgroup has no cgroup2 line')


def move(pid, directory):
    with open(os.path.join(directory, 'cgroup.procs'), 'w') as f:
        f.write(str(pid))


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-self') as sc, ft.Bus() as bus:
        sc.mkdir('/p/d')
        sc.spawn_sleepers('/p/x', 1)
        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            home = own_cgroup(d.pid)
            ft.check(not home.startswith(sc.root + '/'), f'freezerd starts outside the scratch tree ({home})')
            try:
                move(d.pid, sc.abspath('/p/d'))
                ft.check_equal(own_cgroup(d.pid), sc.abspath('/p/d'), 'freezerd moved into /p/d after its start')

                for what, method, args, group in (
                        ('Freeze(/p/d)', 'Freeze', ('/p/d', 0, 0), '/p/d'),
                        ('Freeze(/p), its parent', 'Freeze', ('/p', 0, 0), '/p'),
                        ('ApplyBatch freezing /p/x and /p', 'ApplyBatch',
                         ([('/p/x', True), ('/p', True)], 'auto', 0, 0), '/p'),
                        ('FreezeExcept(/p, [/p/x])', 'FreezeExcept', ('/p', ['/p/x'], 0, 0), '/p/d')):
                    e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, c.call, method, *args)
                    want = f'Refusing to freeze {group}: it contains freezerd itself (/p/d)'
                    ft.check(e.message.startswith(want), f'{what}: refused, "{want}"', e.message)
                    ft.check_equal({g: sc.read_freeze(g) for g in GROUPS}, {g: 0 for g in GROUPS},
                                   f'{what}: no cgroup.freeze written')
                ft.check_equal(own_cgroup(d.pid), sc.abspath('/p/d'), 'freezerd still runs in /p/d')

                c.call('Freeze', '/p/x', 0, 0)
                ft.check(sc.frozen('/p/x'), 'Freeze(/p/x) beside it works: frozen 1')
                c.call('Thaw', '/p/x', 0, 0)
                ft.check(not sc.frozen('/p/x'), 'Thaw(/p/x): frozen 0')
            finally:
                # Were freezerd frozen (the bug), this frees it before the cleanup.
                for g in ('/p', '/p/d'):
                    if sc.read_freeze(g):
                        sc.write_freeze(g, 0)
                if d.exit_status is None:
                    move(d.pid, home)
            ft.check_equal(own_cgroup(d.pid), home, f'freezerd back in {home}')

            c.call('Freeze', '/p/d', 0, 0)
            ft.check(sc.frozen('/p/d'), 'back home, Freeze(/p/d) works: frozen 1')
            c.call('Thaw', '/p/d', 0, 0)
            ft.check(not sc.frozen('/p/d'), 'Thaw(/p/d): frozen 0')


if __name__ == '__main__':
    ft.run(test)
