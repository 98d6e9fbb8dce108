#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""ApplyBatch with SKIP_MISSING (bit 3): a request whose group does not exist is left out.

  /p (tracked), /p/a, /p/b, /p/c, /p/h (a sleeper each; /p/h is kept running)

FreezeExcept returns the groups it froze so that one ApplyBatch of its reply thaws them
again.  A container manager (or a desktop session) sends that batch later, and by then
one of them may be gone (a container exited).  Without the flag the batch fails with
NoSuchGroup and writes nothing, so nothing is thawed; with it the missing group is left
out, counted in the reply's `skipped`, and the others are thawed:

1. FreezeExcept("/p", ["/p/h"]) freezes /p/a, /p/b, /p/c; /p/b is killed (cgroup.kill)
   and removed, and freezerd reads the removal.  ApplyBatch of the reply (thaw):
   without the flag NoSuchGroup naming /p/b, "nothing was written", /p/a and /p/c still
   frozen; with it (2 writes, 1 skipped), /p/a and /p/c thawed (their cgroup.freeze,
   the kernel's cgroup.events, the bus's FreezerState and Frozen).
2. A path that never existed (inside the tracked subtree and outside it) is skipped,
   counted once however often it repeats; a batch of missing paths alone replies
   (0, N); with RECURSIVE a missing named request is skipped, its subtree's groups
   written; with ROLLBACK_ON_TIMEOUT and NO_WAIT too.
3. Still refused, nothing written, with the flag: a malformed path (InvalidPath), the
   cgroup root "/" (InvalidPath), an empty batch, and unknown flag bits (0x10, named
   with the known ones, 0x8 SKIP_MISSING among them).  Freeze, Thaw (also RECURSIVE)
   and FreezeExcept refuse bit 3 as an unknown flag.
4. busctl, as a script calls it.

The groups removed a moment ago (before freezerd read their IN_DELETE) or while the
batch waits are in test-batch-vanished."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

FLAG_SKIP_MISSING = 1 << 3
GROUPS = ['/p', '/p/a', '/p/b', '/p/c', '/p/h']
COVER = ['/p/a', '/p/b', '/p/c']


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'busctl')
    with ft.Scratch('batch-skip-missing') as sc, ft.Bus() as bus:
        def make():
            for g in GROUPS:
                if not sc.exists(g):
                    sc.mkdir(g)
                    if g != '/p':
                        sc.spawn_sleepers(g, 1)

        make()
        with ft.Daemon(bus, sc.root, config={'track': ['/p']}) as d:
            c = d.client

            def present():
                return [g for g in GROUPS if sc.exists(g)]

            def flags():
                return {g: sc.read_freeze(g) for g in present()}

            def removed(g):
                """g killed and removed, and freezerd read its removal."""
                sc.kill(g)
                sc.wait_events(g, populated=0)
                sc.rmdir(g)

                def gone():
                    try:
                        c.call('GetGroup', g)
                    except ft.DBusError as e:
                        ft.check_equal(e.name, ft.ERROR_NO_SUCH_GROUP, f'GetGroup({g}) once removed')
                        return True
                    return False
                ft.wait_for(gone, what=f'freezerd read the removal of {g}')

            def check_state(g, frozen, what):
                ft.check_equal(sc.read_freeze(g), int(frozen), f'{what}: {g} cgroup.freeze')
                ft.check_equal(sc.read_events(g)['frozen'], int(frozen), f'{what}: {g} frozen (cgroup.events)')
                ft.check_equal(c.group_property(g, 'Frozen'), frozen, f'{what}: {g} Frozen (bus)')
                ft.check_equal(c.group_property(g, 'FreezerState'), 'frozen' if frozen else 'running',
                               f'{what}: {g} FreezerState (bus)')

            def batch(requests, flags_, order='auto'):
                return tuple(c.call('ApplyBatch', requests, order, 0, flags_))

            # 1. FreezeExcept, a group of its reply removed, the reply thawed.
            got = c.call('FreezeExcept', '/p', ['/p/h'], 0, 0)[0]
            ft.check_equal(sorted(got), COVER, 'FreezeExcept(/p, [/p/h]): the cover')
            removed('/p/b')
            thaw = [(g, False) for g in got]
            what = 'ApplyBatch of the reply, /p/b removed, without SKIP_MISSING'
            e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, batch, thaw, 0)
            ft.check('/p/b' in e.message and 'nothing was written' in e.message,
                     f'{what}: the error names /p/b and says nothing was written', e.message)
            for g in ('/p/a', '/p/c'):
                check_state(g, True, what)
            for flag in (FLAG_SKIP_MISSING, FLAG_SKIP_MISSING | ft.FLAG_ROLLBACK_ON_TIMEOUT):
                what = f'ApplyBatch of the reply, /p/b removed, flags {flag:#x}'
                ft.check_equal(batch(thaw, flag), (2, 1), f'{what}: 2 writes, /p/b skipped')
                for g in ('/p/a', '/p/c'):
                    check_state(g, False, what)
                ft.check_equal(sc.frozen('/p/h'), False, f'{what}: /p/h runs')
                c.call('FreezeExcept', '/p', ['/p/h'], 0, 0)
            ft.check_equal(batch(thaw, FLAG_SKIP_MISSING | ft.FLAG_NO_WAIT), (2, 1),
                           'ApplyBatch of the reply, /p/b removed, NO_WAIT: 2 writes, /p/b skipped')
            sc.wait_events('/p/a', frozen=0)
            sc.wait_events('/p/c', frozen=0)

            # 2. Paths that never existed.
            what = 'ApplyBatch([/p/a, /p/never, /elsewhere, /p/never] freeze, SKIP_MISSING)'
            ft.check_equal(batch([('/p/a', True), ('/p/never', True), ('/elsewhere', True), ('/p/never', False)],
                                 FLAG_SKIP_MISSING), (1, 2), f'{what}: /p/a written, 2 paths skipped (once each)')
            check_state('/p/a', True, what)
            what = 'ApplyBatch([/p/a thaw, /p/a/x/y thaw], SKIP_MISSING)'
            ft.check_equal(batch([('/p/a', False), ('/p/a/x/y', False)], FLAG_SKIP_MISSING), (1, 1),
                           f'{what}: /p/a written, /p/a/x/y skipped')
            check_state('/p/a', False, what)
            ft.check_equal(batch([('/p/never', True), ('/p/b', False)], FLAG_SKIP_MISSING), (0, 2),
                           'a batch of missing paths alone: nothing written, each skipped')
            ft.check_equal(batch([('/p/a', False), ('/p/b', True)], FLAG_SKIP_MISSING), (0, 2),
                           'one already as asked, one missing: both skipped')
            what = 'ApplyBatch([/p freeze, /p/b thaw], RECURSIVE|SKIP_MISSING)'
            ft.check_equal(batch([('/p', True), ('/p/b', False)], ft.FLAG_RECURSIVE | FLAG_SKIP_MISSING), (4, 1),
                           f'{what}: /p and its 3 groups written, /p/b skipped')
            ft.check_equal(flags(), {g: 1 for g in present()}, f'{what}: every flag set')
            c.call('Thaw', '/p', 0, ft.FLAG_RECURSIVE)
            ft.check_equal(flags(), {g: 0 for g in present()}, 'Thaw(/p, RECURSIVE): every flag cleared')

            # 3. Still refused, nothing written.
            for requests, name, words in (
                    ([('/p/a', True), ('/p/never', True), ('/p/../p/c', True)], ft.ERROR_INVALID_PATH, 'Request 2'),
                    ([('/p/a', True), ('/', True)], ft.ERROR_INVALID_PATH, 'Request 1'),
                    ([], ft.ERROR_INVALID_ARGS, 'empty')):
                what = f'ApplyBatch({requests}, SKIP_MISSING)'
                e = ft.expect_dbus_error(name, batch, requests, FLAG_SKIP_MISSING)
                ft.check(words in e.message, f'{what}: the error says {words!r}', e.message)
                ft.check_equal(flags(), {g: 0 for g in present()}, f'{what}: nothing written')
            e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, batch, [('/p/a', True)], FLAG_SKIP_MISSING | 0x10)
            ft.check('0x10' in e.message and '0x8 SKIP_MISSING' in e.message,
                     'ApplyBatch with bit 4: unknown, the known flags named', e.message)
            ft.check_equal(flags(), {g: 0 for g in present()}, 'ApplyBatch with bit 4: nothing written')
            for method, args in (('Freeze', ('/p/a', 0, FLAG_SKIP_MISSING)),
                                 ('Thaw', ('/p/a', 0, FLAG_SKIP_MISSING)),
                                 ('Thaw', ('/p', 0, FLAG_SKIP_MISSING | ft.FLAG_RECURSIVE)),
                                 ('FreezeExcept', ('/p', ['/p/h'], 0, FLAG_SKIP_MISSING))):
                e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, c.call, method, *args)
                ft.check('Unknown flags 0x8 ' in e.message and 'SKIP_MISSING' not in e.message,
                         f'{method}{args}: bit 3 unknown there', e.message)
                ft.check_equal(flags(), {g: 0 for g in present()}, f'{method}{args}: nothing written')

            # 4. busctl.
            r = ft.busctl('call', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, 'ApplyBatch', 'a(sb)stt', '2',
                          '/p/a', 'true', '/p/b', 'true', 'auto', '0', str(FLAG_SKIP_MISSING))
            ft.check_equal(r.stdout.strip(), 'uu 1 1', 'busctl ApplyBatch with SKIP_MISSING: 1 written, 1 skipped')
            check_state('/p/a', True, 'busctl ApplyBatch with SKIP_MISSING')

            c.call('Thaw', '/p/a', 0, 0)
            for g in ('/p/a', '/p/c', '/p/h'):
                ft.check_equal(sc.frozen(g), False, f'at the end: {g} runs')

            ft.check_equal(d.warnings(), [], 'no warning in the log')


ft.run(test)
