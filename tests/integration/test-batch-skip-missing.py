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
   and FreezeExcept refuse bit 3 saying "0x8 SKIP_MISSING applies to ApplyBatch only",
   not "Unknown flags 0x8", which read as if freezerd were older than the flag; with
   bit 4 too, both are named.  FreezeExcept refuses RECURSIVE the same way.
4. busctl, as a script calls it; libfreezer's freezer_apply_batch() with
   FREEZER_SKIP_MISSING (freezer.h's bit 3; -ENOENT without it, -EINVAL from
   freezer_freeze()); and `freezectl batch --skip-missing FILE|-` (text and --json), and
   without --skip-missing the failure as before.
5. A freezerd older than the flag refuses bit 3 (InvalidArgs "Unknown flags 0x8"):
   `freezectl batch --skip-missing` prints that and a note saying the option is not
   known there and nothing was written.

The groups removed a moment ago (before freezerd read their IN_DELETE) or while the
batch waits are in test-batch-vanished."""

import ctypes
import errno
import json
import os
import re
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402
from jeepney import MessageType, new_error  # noqa: E402
from jeepney.bus_messages import message_bus  # noqa: E402
from jeepney.io.blocking import open_dbus_connection  # noqa: E402

base = ft.load_test_module('test-core-libfreezer')


class Request(ctypes.Structure):
    _fields_ = [('path', ctypes.c_char_p), ('freeze', ctypes.c_bool)]


FLAG_SKIP_MISSING = 1 << 3
GROUPS = ['/p', '/p/a', '/p/b', '/p/c', '/p/h']
COVER = ['/p/a', '/p/b', '/p/c']
# What freezerd answered to bit 3 before it knew it (daemon/manager-bus.c, check_flags()).
OLD_UNKNOWN = 'Unknown flags 0x8 (known: 0x1 ROLLBACK_ON_TIMEOUT, 0x2 NO_WAIT, 0x4 RECURSIVE)'


def header_flag(name):
    with open(os.path.join(ft.SRCDIR, 'client', 'freezer.h')) as f:
        m = re.search(rf'^#define {name} \(UINT64_C\(1\) << (\d+)\)$', f.read(), re.M)
    ft.check(m, f'freezer.h defines {name}')
    return 1 << int(m.group(1))


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl', 'busctl')
    base.reexec_for_asan(base.libfreezer_path())
    with ft.Scratch('batch-skip-missing') as sc, ft.Bus() as bus, \
            tempfile.TemporaryDirectory(prefix=f'{ft.TMP_PREFIX}skipmissing-') as tmp:
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
                ft.check('0x8 SKIP_MISSING applies to ApplyBatch only' in e.message and 'Unknown' not in e.message,
                         f'{method}{args}: bit 3 refused as ApplyBatch\'s, not as unknown', e.message)
                ft.check_equal(flags(), {g: 0 for g in present()}, f'{method}{args}: nothing written')
            e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, c.call, 'Freeze', '/p/a', 0, FLAG_SKIP_MISSING | 0x10)
            ft.check(e.message.startswith('Unknown flags 0x10 (known: 0x1 ROLLBACK_ON_TIMEOUT, 0x2 NO_WAIT, '
                                          '0x4 RECURSIVE)') and '0x8 SKIP_MISSING applies to ApplyBatch only'
                     in e.message, 'Freeze with bits 3 and 4: 0x10 unknown, 0x8 ApplyBatch\'s', e.message)
            e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, c.call, 'FreezeExcept', '/p', ['/p/h'], 0,
                                     ft.FLAG_RECURSIVE)
            ft.check('0x4 RECURSIVE applies to Freeze, Thaw and ApplyBatch only' in e.message
                     and 'Unknown' not in e.message, 'FreezeExcept with RECURSIVE: refused as another method\'s',
                     e.message)
            ft.check_equal(flags(), {g: 0 for g in present()}, 'nothing written')

            # 4. busctl, and freezectl batch --skip-missing.
            r = ft.busctl('call', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, 'ApplyBatch', 'a(sb)stt', '2',
                          '/p/a', 'true', '/p/b', 'true', 'auto', '0', str(FLAG_SKIP_MISSING))
            ft.check_equal(r.stdout.strip(), 'uu 1 1', 'busctl ApplyBatch with SKIP_MISSING: 1 written, 1 skipped')
            check_state('/p/a', True, 'busctl ApplyBatch with SKIP_MISSING')

            # libfreezer: FREEZER_SKIP_MISSING is the daemon's bit 3.
            ft.check_equal(header_flag('FREEZER_SKIP_MISSING'), FLAG_SKIP_MISSING, 'FREEZER_SKIP_MISSING is bit 3')
            lib = base.load()
            lib.freezer_apply_batch.restype = ctypes.c_int
            lib.freezer_apply_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(Request), ctypes.c_size_t,
                                                ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64,
                                                ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32)]
            f = ctypes.c_void_p()
            ft.check_equal(lib.freezer_open_address(ctypes.byref(f), bus.address.encode()), 0, 'freezer_open_address')
            try:
                req = (Request * 2)(Request(b'/p/a', False), Request(b'/p/b', False))
                writes, skipped = ctypes.c_uint32(), ctypes.c_uint32()
                r = lib.freezer_apply_batch(f, req, 2, 0, 0, 0, ctypes.byref(writes), ctypes.byref(skipped))
                ft.check_equal((r, lib.freezer_last_error_name(f)), (-errno.ENOENT, ft.ERROR_NO_SUCH_GROUP.encode()),
                               'freezer_apply_batch([/p/a, /p/b gone]): -ENOENT')
                check_state('/p/a', True, 'freezer_apply_batch([/p/a, /p/b gone])')
                r = lib.freezer_apply_batch(f, req, 2, 0, 0, FLAG_SKIP_MISSING, ctypes.byref(writes),
                                            ctypes.byref(skipped))
                ft.check_equal((r, writes.value, skipped.value), (0, 1, 1),
                               'freezer_apply_batch([/p/a, /p/b gone], FREEZER_SKIP_MISSING): 1 written, 1 skipped')
                check_state('/p/a', False, 'freezer_apply_batch(FREEZER_SKIP_MISSING)')
                r = lib.freezer_freeze(f, b'/p/a', 0, FLAG_SKIP_MISSING)
                ft.check_equal(r, -errno.EINVAL, 'freezer_freeze(FREEZER_SKIP_MISSING): -EINVAL')
            finally:
                lib.freezer_close(f)
            c.call('Freeze', '/p/a', 0, 0)

            path = os.path.join(tmp, 'thaw.json')
            with open(path, 'w') as f:
                json.dump([{'path': g, 'freeze': False} for g in COVER], f)
            r = ft.freezectl('batch', path, check=False)
            ft.check(r.returncode == 1 and '/p/b' in r.stderr, 'freezectl batch FILE (/p/b gone): fails naming /p/b',
                     r)
            check_state('/p/a', True, 'freezectl batch FILE (/p/b gone)')
            r = ft.freezectl('batch', path, '--skip-missing')
            ft.check_equal(r.stdout, '1 write, 2 skipped\n', 'freezectl batch FILE --skip-missing: the counts')
            check_state('/p/a', False, 'freezectl batch FILE --skip-missing')
            c.call('Freeze', '/p/c', 0, 0)
            r = ft.freezectl('--json', 'batch', '-', '--skip-missing', input=open(path).read())
            ft.check_equal(json.loads(r.stdout), {'writes': 1, 'skipped': 2},
                           'freezectl --json batch - --skip-missing: the counts')
            check_state('/p/c', False, 'freezectl --json batch - --skip-missing')
            for g in ('/p/a', '/p/c', '/p/h'):
                ft.check_equal(sc.frozen(g), False, f'at the end: {g} runs')

            ft.check_equal(d.warnings(), [], 'no warning in the log')

        # 5. A freezerd older than SKIP_MISSING, which refuses bit 3 as it refuses any
        # unknown bit: a stand-in on a bus of its own answers as freezerd did before.
        with ft.Bus() as old_bus:
            conn = open_dbus_connection(old_bus.address)
            conn.send_and_get_reply(message_bus.RequestName(ft.BUS_NAME), timeout=ft.DEFAULT_TIMEOUT)
            calls = []

            def serve():
                while True:
                    try:
                        msg = conn.receive(timeout=ft.DEFAULT_TIMEOUT + 5)
                    except (TimeoutError, OSError):
                        return
                    if msg.header.message_type != MessageType.method_call:
                        continue
                    calls.append(msg.body)
                    conn.send(new_error(msg, ft.ERROR_INVALID_ARGS, 's', (OLD_UNKNOWN,)))
                    return

            t = threading.Thread(target=serve, daemon=True)
            t.start()
            r = ft.freezectl('batch', '-', '--skip-missing', address=old_bus.address, check=False,
                             input=json.dumps([{'path': '/p/a', 'freeze': False}]))
            t.join(ft.DEFAULT_TIMEOUT)
            conn.close()
            what = 'freezectl batch --skip-missing against a freezerd older than it'
            ft.check_equal([b[3] for b in calls], [FLAG_SKIP_MISSING], f'{what}: the call had bit 3')
            ft.check(r.returncode == 1 and OLD_UNKNOWN in r.stderr and
                     'does not know --skip-missing' in r.stderr and 'nothing was written' in r.stderr,
                     f'{what}: exit 1, its error and a note that it does not know the option', r)


ft.run(test)
