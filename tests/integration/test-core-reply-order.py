#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The order of freezerd's replies is the order of the writes they vouch for,
failures included; a call waiting on a group that Untrack() drops fails with
Cancelled, not NoSuchGroup.

  /p/c     a sleeper
  /u/s     a sleeper and a task blocked on a FUSE mount that never answers,
           so a Freeze of /u/s stays pending

Checks, over the private socket (one connection, so freezerd handles the calls
of one write in one loop turn) and over the bus:
  * /p frozen, /p/c frozen by its own flag too; Thaw(/p/c) and Freeze(/p/c)
    sent in one write: the Thaw clears the flag and fails with FrozenByParent,
    the Freeze sets it again and succeeds at once (/p/c is frozen already).
    The Thaw's reply comes first: before, freezerd answered failures at the
    end of its loop turn, after the Freeze's reply, although the Freeze wrote
    last.  cgroup.freeze of /p/c is 1, as the last reply says.
  * The same with a Cancelled call: Freeze(/u/s) waits; Thaw(/u/s) reverses it,
    and the pending Freeze's Cancelled reply comes before the Thaw's.
  * A = ApplyBatch([/u/s, /y], ROLLBACK_ON_TIMEOUT) waits (for /u/s); C =
    ApplyBatch([thaw /u/s, freeze /y]) cancels A and skips /y (1 already), and
    is done at once: A's Cancelled comes first, and its rollback leaves /y at 1,
    which C asked for (A's message says so), so C succeeds (1 write, 1 skipped)
    with /y frozen; the same with C NO_WAIT.  (Session 29's build told C its
    batch was done with /y at 0; session 30's failed C with Cancelled.)
  * With /u the only tracked subtree, Untrack("/u") while Freeze(/u/s) waits: the Freeze fails with Cancelled
    (the cgroup still exists: "no longer tracked", naming the Untrack), the
    Untrack replies after it, and cgroup.freeze of /u/s stays 1 as written;
    with ROLLBACK_ON_TIMEOUT the flag is restored first (0), while the group
    is still in the model."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402
from jeepney import DBusAddress, new_method_call  # noqa: E402

LONG = 60 * 1000000


def send_together(c, calls):
    """Send (member, signature, body) Manager calls in one write; their PendingCalls."""
    data, pending = b'', []
    for member, sig, body in calls:
        msg = new_method_call(DBusAddress(ft.MANAGER_PATH, c.destination, ft.MANAGER_IFACE), member, sig, body)
        serial = next(c.conn.outgoing_serial)
        raw, _fds = c.conn._serialise(msg, serial)
        data += raw
        pending.append(ft.PendingCall(c, serial, f'{member}{body!r}'))
    c.conn.sock.sendall(data)
    return pending


def outcome(msg):
    """'ok' or the error name of a reply Message."""
    from jeepney import HeaderFields, MessageType
    if msg.header.message_type == MessageType.error:
        return msg.header.fields.get(HeaderFields.error_name, '?')
    return 'ok'


def check_failure_first(sc, c, how):
    c.call('Freeze', '/p', 0, 0)
    c.call('Freeze', '/p/c', 0, 0)
    thaw, freeze = send_together(c, [('Thaw', 'stt', ('/p/c', 0, 0)), ('Freeze', 'stt', ('/p/c', 0, 0))])
    rt, rf = thaw.wait(), freeze.wait()
    ft.check_equal((outcome(rt), outcome(rf)), (ft.ERROR_FROZEN_BY_PARENT, 'ok'),
                   f'{how}: Thaw(/p/c) fails with FrozenByParent, the Freeze after it succeeds')
    ft.check(rt.header.serial < rf.header.serial,
             f'{how}: the failed Thaw is answered before the Freeze that wrote after it',
             f'reply serials: Thaw {rt.header.serial}, Freeze {rf.header.serial}')
    ft.check_equal(sc.read_freeze('/p/c'), 1, f'{how}: cgroup.freeze of /p/c is 1, as the last reply says')
    c.call('Thaw', '/p', 0, ft.FLAG_RECURSIVE)
    ft.check_equal((sc.read_freeze('/p'), sc.read_freeze('/p/c')), (0, 0), f'{how}: /p thawed again')


def check_cancelled_first(sc, c, how):
    pending = c.call_async('Freeze', '/u/s', LONG, 0)
    ft.check_equal(c.group_property('/u/s', 'FreezerState'), 'freezing', f'{how}: /u/s is freezing')
    thaw = c.call_async('Thaw', '/u/s', 0, 0)
    rp, rt = pending.wait(), thaw.wait()
    ft.check_equal((outcome(rp), outcome(rt)), (ft.ERROR_CANCELLED, 'ok'),
                   f'{how}: the pending Freeze is Cancelled by the Thaw, which succeeds')
    ft.check(rp.header.serial < rt.header.serial, f'{how}: the Cancelled Freeze is answered before the Thaw',
             f'reply serials: Freeze {rp.header.serial}, Thaw {rt.header.serial}')


def check_rollback_adopted(sc, c):
    """A rollback leaves a flag a later call asked for too (and skipped): that call, told its
    batch is done, keeps its flag."""
    for flags, how in ((0, 'waiting'), (ft.FLAG_NO_WAIT, 'NO_WAIT')):
        a = c.call_async('ApplyBatch', [('/u/s', True), ('/y', True)], 'auto', LONG, ft.FLAG_ROLLBACK_ON_TIMEOUT)
        ft.check_equal(c.group_property('/u/s', 'FreezerState'), 'freezing',
                       f'{how}: A = ApplyBatch([/u/s, /y], ROLLBACK_ON_TIMEOUT) waits for /u/s')
        cc = c.call_async('ApplyBatch', [('/u/s', False), ('/y', True)], 'auto', 0, flags)
        ft.wait_for(lambda: a.done() and cc.done(), what=f'{how}: A and C answered')
        arrival = [s for s in c.replies if s in (a.serial, cc.serial)]
        ft.check_equal(arrival, [a.serial, cc.serial], f'{how}: A\'s Cancelled is answered before C')
        e = ft.expect_dbus_error(ft.ERROR_CANCELLED, a.result)
        ft.check('/u/s' in e.message and '/y was kept: a later call asked for it too' in e.message,
                 f'{how}: A fails with Cancelled (C thawed /u/s) and keeps /y for C', repr(e.message))
        ft.check_equal(tuple(cc.result()), (1, 1), f'{how}: C = ApplyBatch([thaw /u/s, freeze /y]) succeeds, '
                       '1 write and 1 skipped')
        ft.check_equal((sc.read_freeze('/u/s'), sc.read_freeze('/y')), (0, 1), f'{how}: /u/s 0, /y 1 as C asked')
        c.call('Thaw', '/y', LONG, 0)


def check_untrack_while_waiting(sc, d, c):
    c.call('Track', '/u')
    c.call('Untrack', '/')  # /u alone is tracked now
    pending = c.call_async('Freeze', '/u/s', LONG, 0)
    ft.check_equal(c.group_property('/u/s', 'FreezerState'), 'freezing', '/u/s is freezing')
    untrack = c.call_async('Untrack', '/u')
    rp, ru = pending.wait(), untrack.wait()
    ft.check_equal((outcome(rp), outcome(ru)), (ft.ERROR_CANCELLED, 'ok'),
                   'Untrack(/u) while Freeze(/u/s) waits: the Freeze fails with Cancelled, the Untrack succeeds')
    msg = rp.body[0] if rp.body else ''
    ft.check('/u/s' in msg and 'no longer tracked' in msg and 'Untrack of /u' in msg,
             'the Cancelled message names the group and the Untrack', repr(msg))
    ft.check(rp.header.serial < ru.header.serial, 'the Freeze is answered before the Untrack',
             f'reply serials: Freeze {rp.header.serial}, Untrack {ru.header.serial}')
    ft.check_equal(sc.read_freeze('/u/s'), 1, 'cgroup.freeze of /u/s stays 1, as written')
    sc.write_freeze('/u/s', 0)

    # All or nothing holds across Untrack: the group is still there to restore.
    c.call('Track', '/u')
    pending = c.call_async('Freeze', '/u/s', LONG, ft.FLAG_ROLLBACK_ON_TIMEOUT)
    ft.check_equal(c.group_property('/u/s', 'FreezerState'), 'freezing', 'Freeze(/u/s, ROLLBACK_ON_TIMEOUT) waits')
    c.call('Untrack', '/u')
    e = ft.expect_dbus_error(ft.ERROR_CANCELLED, pending.result)
    ft.check('no longer tracked' in e.message and 'restored' in e.message,
             'Untrack(/u): the Freeze fails with Cancelled, its flag restored', repr(e.message))
    ft.check_equal(sc.read_freeze('/u/s'), 0, 'cgroup.freeze of /u/s is 0 again')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('core-reply-order') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        sc.mkdir('/p/c')
        sc.spawn_sleepers('/p/c', 1)
        sc.mkdir('/u/s')
        sc.spawn_sleepers('/u/s', 1)
        sc.mkdir('/y')
        sc.spawn_sleepers('/y', 1)
        with ft.Daemon(bus, sc.root) as d:
            fuse.spawn_stuck(sc, '/u/s')
            with ft.Client(f'unix:path={os.path.join(d.runtime_dir, "private")}', direct=True) as p:
                check_failure_first(sc, p, 'private socket')
                check_cancelled_first(sc, p, 'private socket')
            check_failure_first(sc, d.client, 'bus')
            check_cancelled_first(sc, d.client, 'bus')
            check_rollback_adopted(sc, d.client)
            check_untrack_while_waiting(sc, d, d.client)


if __name__ == '__main__':
    ft.run(test)
