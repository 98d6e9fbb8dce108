#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The outcome of a call names groups of freezerd's model, whose paths may be 4 kB
long: each is quoted as a caller's string is (its first 96 and last 160 bytes, each
cut on a character, then " (N bytes)"), and a message that names several stays small
as a whole.  (Until session 35 they came whole: a Timeout of six such groups was 35 kB;
then only their first 256 bytes, the same for siblings: the message no longer said
which groups had timed out.)

  L = 14 levels of 250-byte names (3,514 bytes)
  L/a ... L/f   each a task blocked (state D) on a FUSE mount that never answers

Checks (each message under 4 kB, every path in it quoted, none whole, each named
child told apart by its leaf name):
  * ApplyBatch freezing L/a ... L/f, 300 ms, ROLLBACK_ON_TIMEOUT: Timeout naming
    L/a and three more, then "and 2 more", and up to four tasks.
  * Freeze(L), 300 ms, ROLLBACK_ON_TIMEOUT: Timeout naming L and four of its
    children that are not frozen, "and 2 more".
  * With L frozen by its flag (NO_WAIT) and L/a's flag set, Thaw(L/a):
    FrozenByParent naming L/a and L.
  * A Freeze(L/a) waiting, reversed by a Thaw(L/a): Cancelled naming L/a."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

L = ''.join('/' + 'n' * 250 for _ in range(14))
CHILDREN = [L + '/' + k for k in 'abcdef']
MESSAGE_MAX = 4096


def check_message(e, name, what, names):
    ft.check_equal(e.name, name, f'{what}: fails with {name.rsplit(".", 1)[1]}')
    size = len(e.message.encode())
    ft.check(size < MESSAGE_MAX, f'{what}: the message is {size} bytes, under {MESSAGE_MAX}',
             f'{e.message[:300]!r} ... {e.message[-300:]!r}')
    for p in names:
        if p != L:
            ft.check(f'/{p[-1]} ({len(p.encode())} bytes)' in e.message,
                     f'{what}: the message names L/{p[-1]} by its leaf', f'{e.message[:300]!r} ... {e.message[-300:]!r}')
        ft.check(ft.quoted(p) in e.message, f'{what}: the message quotes {"L" if p == L else "L/" + p[-1]} ({len(p)} bytes)',
                 f'{e.message[:300]!r} ... {e.message[-300:]!r}')
    ft.check(L not in e.message, f'{what}: no path comes whole', f'{e.message[:300]!r}')


def expect_error(fn, *args):
    try:  # (not expect_dbus_error(), whose check would print the paths)
        fn(*args)
    except ft.DBusError as e:
        return e
    ft.fail('the call succeeded')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('core-long-paths') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        for p in CHILDREN:
            sc.mkdir(p)
            fuse.spawn_stuck(sc, p)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client

            e = expect_error(c.call, 'ApplyBatch', [(p, True) for p in CHILDREN], 'auto', 300000,
                             ft.FLAG_ROLLBACK_ON_TIMEOUT)
            check_message(e, ft.ERROR_TIMEOUT, 'a batch of six', CHILDREN[:4])
            ft.check(' and 2 more' in e.message and 'Not frozen: task' in e.message,
                     'a batch of six: four groups named, "and 2 more", and their tasks', repr(e.message))
            ft.check_equal([sc.read_freeze(p) for p in CHILDREN], [0] * 6, 'a batch of six: rolled back')

            e = expect_error(c.call, 'Freeze', L, 300000, ft.FLAG_ROLLBACK_ON_TIMEOUT)
            named = [p for p in CHILDREN if f'/{p[-1]} ({len(p.encode())} bytes)' in e.message]
            ft.check_equal(len(named), 4, 'Freeze of their parent: four distinct children named')
            check_message(e, ft.ERROR_TIMEOUT, 'Freeze of their parent', [L] + named)
            ft.check('not frozen below it: ' in e.message and ' and 2 more' in e.message,
                     'Freeze of their parent: four children named, "and 2 more"', repr(e.message))
            ft.check_equal(sc.read_freeze(L), 0, 'Freeze of their parent: rolled back')

            c.call('Freeze', L, 0, ft.FLAG_NO_WAIT)
            c.call('Freeze', CHILDREN[0], 0, ft.FLAG_NO_WAIT)
            e = expect_error(c.call, 'Thaw', CHILDREN[0], 0, 0)
            check_message(e, ft.ERROR_FROZEN_BY_PARENT, 'Thaw of a child of a frozen group', [CHILDREN[0], L])
            c.call('Thaw', L, 0, 0)

            pending = c.call_async('Freeze', CHILDREN[0], 60000000, 0)
            ft.wait_for(lambda: sc.read_freeze(CHILDREN[0]) == 1, what='the flag of L/a written')
            c.call('Thaw', CHILDREN[0], 0, 0)
            e = expect_error(pending.result)
            check_message(e, ft.ERROR_CANCELLED, 'a Freeze reversed by a Thaw', [CHILDREN[0]])
            ft.check_equal([sc.read_freeze(p) for p in [L] + CHILDREN], [0] * 7, 'every flag is 0 again')
    print('# checked: Timeout (a batch, a parent), FrozenByParent and Cancelled messages quote 3.5 kB group paths')


ft.run(test)
