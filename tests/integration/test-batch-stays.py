#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A batch that fails on one group, its flag reversed (Cancelled) or the group removed
while the call waits (NoSuchGroup), leaves the flags it wrote to the others, but with
ROLLBACK_ON_TIMEOUT: its message names them, as a Timeout's says that the flags stay.

  /s   a task blocked on a FUSE mount: never finishes freezing, so the call waits
  /a   a sleeper
  /b   a sleeper
  /c   empty (removed while a call waits for it)

Checks, each call through busctl (what an operator sees) or the test's client:
  * ApplyBatch [/s, /a, /b] freeze, no flags; /a and /b frozen, then a Thaw of /s
    (busctl): the batch fails with Cancelled, its message ends "Without
    ROLLBACK_ON_TIMEOUT the flags it wrote stay as asked: " naming /a and /b, not
    /s, and the kernel has /a and /b frozen.
  * ApplyBatch [/s, /c, /a] freeze, no flags; /c frozen, then rmdir /c: NoSuchGroup
    "/c was removed while waiting for it to freeze", naming /s and /a as staying,
    not /c.
  * The same through `freezectl batch -`: its error line says "Without --rollback the
    flags it wrote stay as asked: ", its option's name, not freezerd's bus flag.
  * The same Cancelled with ROLLBACK_ON_TIMEOUT: "Every flag this call changed was
    restored", nothing said to stay, /a and /b running.
  * A single Freeze of /s reversed by a Thaw: nothing said to stay (its one flag was
    reversed).
  * Names that read as the list's words, "/x and 3 more" and one holding the sentence
    ("/zz. Without ROLLBACK_ON_TIMEOUT ...: q"): a Cancelled batch through `freezectl
    batch -` names them in double quotes, and freezectl says the real sentence of
    --rollback, not the one in the name; a NoSuchGroup of a removed group named with
    the sentence ("/c. Without ...: y") puts it in double quotes, and the list after
    it names /s and "/x and 3 more"."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

STAYS = '. Without ROLLBACK_ON_TIMEOUT the flags it wrote stay as asked: '
STAYS_CTL = '. Without --rollback the flags it wrote stay as asked: '
MORE, TRAP, GONE = '/x and 3 more', '/zz' + STAYS + 'q', '/c' + STAYS + 'y'


def batch_cancelled(bus, sc, x, y):
    """`freezectl batch` freezing /s (whose task never freezes), x and y, Cancelled by a
    busctl Thaw of /s once x and y are frozen: its exit status and stderr."""
    with ft.FreezectlRun('batch', '-', address=bus.address,
                         input=json.dumps([{'path': g, 'freeze': True} for g in ('/s', x, y)])) as batch:
        ft.wait_for(lambda: sc.frozen(x) and sc.frozen(y) and sc.read_freeze('/s') == 1,
                    what=f'freezectl batch: {x} and {y} frozen, /s freezing')
        ft.busctl('call', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, 'Thaw', 'stt', '/s', '0', '0')
        return batch.finish()


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse', 'busctl')
    long_usec = int(ft.DEFAULT_TIMEOUT * 1e6)
    with ft.Scratch('batch-stays') as sc, ft.Bus() as bus, ft.FuseHang() as fuse:
        for g in ('/a', '/b'):
            sc.spawn_sleepers(g, 1)
        fuse.spawn_stuck(sc, '/s')
        with ft.Daemon(bus, sc.root) as d:
            c = d.client

            def thaw_all():
                c.call('ApplyBatch', [(g, False) for g in ('/s', '/a', '/b')], 'auto', long_usec, 0)

            def reversed_batch(flags):
                pending = c.call_async('ApplyBatch', [('/s', True), ('/a', True), ('/b', True)], 'auto',
                                       long_usec, flags)
                ft.wait_for(lambda: sc.frozen('/a') and sc.frozen('/b') and sc.read_freeze('/s') == 1,
                            what='/a and /b frozen, /s freezing')
                ft.busctl('call', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, 'Thaw', 'stt', '/s', '0', '0')
                return ft.expect_dbus_error(ft.ERROR_CANCELLED, pending.result)

            # ---- Cancelled, without ROLLBACK_ON_TIMEOUT
            e = reversed_batch(0)
            ft.check(STAYS in e.message, 'Cancelled batch: the message says which flags stay', e.message)
            stays = e.message.split(STAYS, 1)[-1].split(', ')
            ft.check_equal(sorted(stays), ['/a', '/b'], 'Cancelled batch: the flags named as staying')
            ft.check_equal((sc.read_freeze('/a'), sc.read_freeze('/b'), sc.read_freeze('/s')), (1, 1, 0),
                           'Cancelled batch: /a and /b stay frozen, /s thawed')
            thaw_all()

            # ---- the same through freezectl batch: said of its option, --rollback
            code, err = batch_cancelled(bus, sc, '/a', '/b')
            ft.check(code == 1 and 'Without --rollback the flags it wrote stay as asked: ' in err and
                     'ROLLBACK_ON_TIMEOUT' not in err, 'freezectl batch, Cancelled: the flags that stay, said of '
                     '--rollback', (code, err))
            thaw_all()

            # ---- NoSuchGroup: a named group removed while the call waits
            sc.mkdir('/c')
            c.call('GetGroup', '/c')
            pending = c.call_async('ApplyBatch', [('/s', True), ('/c', True), ('/a', True)], 'auto', long_usec, 0)
            ft.wait_for(lambda: sc.frozen('/a') and sc.frozen('/c') and sc.read_freeze('/s') == 1,
                        what='/a and /c frozen, /s freezing')
            sc.rmdir('/c')
            e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, pending.result)
            ft.check(e.message.startswith('/c was removed while waiting for it to freeze' + STAYS),
                     'removed group: the message says so, then which flags stay', e.message)
            stays = e.message.split(STAYS, 1)[-1].split(', ')
            ft.check_equal(sorted(stays), ['/a', '/s'], 'removed group: the flags named as staying')
            thaw_all()

            # ---- Cancelled with ROLLBACK_ON_TIMEOUT: restored, nothing stays
            e = reversed_batch(1)
            ft.check(STAYS not in e.message and 'Every flag this call changed was restored' in e.message,
                     'Cancelled batch with ROLLBACK_ON_TIMEOUT: restored, nothing said to stay', e.message)
            ft.check_equal((sc.read_freeze('/a'), sc.read_freeze('/b')), (0, 0),
                           'Cancelled batch with ROLLBACK_ON_TIMEOUT: /a and /b thawed')
            thaw_all()

            # ---- a single Freeze reversed: its only flag is the reversed one
            pending = c.call_async('Freeze', '/s', long_usec, 0)
            # No cgroup.events changes (/s cannot freeze): its flag is looked at, briefly.
            ft.wait_for(lambda: sc.read_freeze('/s') == 1, what='/s freezing', poll=0.005)
            r = ft.busctl('call', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, 'Thaw', 'stt', '/s', '0', '0',
                          check=False)
            ft.check(r.returncode == 0, 'busctl Thaw of /s', (r.returncode, r.stderr))
            e = ft.expect_dbus_error(ft.ERROR_CANCELLED, pending.result)
            ft.check('stay' not in e.message, 'a single Freeze reversed: nothing said to stay', e.message)

            # ---- names that read as the list's words: in double quotes, freezectl not fooled
            for g in (MORE, TRAP, GONE):
                sc.mkdir(g)
                c.call('GetGroup', g)
            code, err = batch_cancelled(bus, sc, MORE, TRAP)
            line = err.split('\n')[0]
            ft.check(code == 1 and '"/x and 3 more"' in line and f'"{TRAP}"' in line and
                     line.count(STAYS_CTL) == 1, 'freezectl batch, Cancelled: the names in double quotes, the real '
                     'sentence said of --rollback', (code, err))
            paths, more = ft.stays_list(line, STAYS_CTL)
            ft.check_equal((sorted(paths or []), more), (sorted([MORE, TRAP]), 0),
                           'freezectl batch, Cancelled: the list names both, whole')
            c.call('ApplyBatch', [(g, False) for g in ('/s', MORE, TRAP)], 'auto', long_usec, 0)

            pending = c.call_async('ApplyBatch', [('/s', True), (GONE, True), (MORE, True)], 'auto', long_usec, 0)
            ft.wait_for(lambda: sc.frozen(MORE) and sc.frozen(GONE) and sc.read_freeze('/s') == 1,
                        what='MORE and GONE frozen, /s freezing')
            sc.rmdir(GONE)
            e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, pending.result)
            ft.check(e.message.startswith(f'"{GONE}" was removed while waiting for it to freeze' + STAYS),
                     'removed group named with the sentence: in double quotes', e.message)
            paths, more = ft.stays_list(e.message, STAYS)
            ft.check_equal((sorted(paths or []), more), (sorted(['/s', MORE]), 0),
                           'removed group named with the sentence: the flags named as staying')
            thaw_all()
            c.call('Thaw', MORE, long_usec, 0)
    print('# checked: Cancelled and NoSuchGroup of a batch name the flags that stay, not with ROLLBACK_ON_TIMEOUT '
          'nor for a single Freeze')


ft.run(test)
