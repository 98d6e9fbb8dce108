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
    is still in the model.
  * A Cancelled by Untrack names the group the call waited on and says what
    stays, as a Timeout's and a shutdown's do: the Freeze's message ends
    "Without ROLLBACK_ON_TIMEOUT the flags it wrote stay as asked: /u/s"; through
    freezectl (`batch -` of [/u/b, /u/s] with /u/b, empty, frozen at once,
    `freeze /u/s`, `freeze /u --except=/u/b`), each cancelled by `freezectl
    untrack /u`, the error line names /u/s, not /u/b, and ends "Without
    --rollback the flags it wrote stay as asked: " and the flags written.
    (Session 46's build named /u/b, the first group of the subtree that had a
    call's entry, done or not, and said nothing of the flags that stay.)"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402
from jeepney import DBusAddress, new_method_call  # noqa: E402

LONG = 60 * 1000000
STAYS = '. Without ROLLBACK_ON_TIMEOUT the flags it wrote stay as asked: '
STAYS_CTL = '. Without --rollback the flags it wrote stay as asked: '


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
    ft.check(msg.endswith(STAYS + '/u/s'), 'the Cancelled message says the flag written stays', repr(msg))
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
    ft.check(STAYS not in e.message, '  ... and nothing is said to stay', repr(e.message))
    c.call('Track', '/u')


def freezectl_untracked(bus, sc, c, args, stdin, written):
    """freezectl ARGS (with stdin) waits on /u/s, the groups in written frozen but /u/s;
    `freezectl untrack /u` cancels it: its exit status and stderr.  /u tracked again
    and everything thawed after."""
    try:
        with ft.FreezectlRun(*args, address=bus.address, input=stdin) as run:
            # freezerd writes /u/s's flag while it handles the call, which then
            # waits: /u/s never finishes freezing.
            for g in written:
                ft.loop().watch(sc.abspath(g, 'cgroup.freeze'))
                ft.loop().watch(sc.abspath(g, 'cgroup.events'))
            ft.wait_for(lambda: all(sc.read_freeze(g) == 1 for g in written) and
                        all(sc.frozen(g) for g in written if g != '/u/s'),
                        what=f'freezectl {" ".join(args)}: {", ".join(written)} written, the others but /u/s frozen')
            ft.freezectl('untrack', '/u', address=bus.address)
            code, err = run.finish()
    finally:
        for g in ('/u/s', '/u/b'):
            sc.write_freeze(g, 0)
    c.call('Track', '/u')
    return code, err


def check_untrack_names_waited(bus, sc, c):
    """An Untrack's Cancelled names the group waited on and the flags that stay."""
    # Made now, while /u is tracked: the model puts it before /u/s, as a
    # walk of /u's subtree meets it (a scan's order is the kernel's).
    sc.mkdir('/u/b')
    for args, stdin, written in (
            (['batch', '-'], json.dumps([{'path': '/u/b', 'freeze': True}, {'path': '/u/s', 'freeze': True}]),
             ['/u/b', '/u/s']),
            (['freeze', '/u/s'], None, ['/u/s']),
            (['freeze', '/u', '--except=/u/b'], None, ['/u/s'])):
        code, err = freezectl_untracked(bus, sc, c, args, stdin, written)
        what = f'freezectl {" ".join(args)} cancelled by freezectl untrack /u'
        head = 'Cancelled: /u/s is no longer tracked (Untrack of /u) while waiting for it to freeze' + STAYS_CTL
        ft.check(code == 1 and head in err and err.endswith('\n'),
                 f'{what}: exit 1, names /u/s (the group it waited on) and says what stays, of --rollback',
                 (code, err))
        ft.check_equal(sorted(err.split(STAYS_CTL, 1)[-1].rstrip('\n').split(', ')), written,
                       '  ... the flags named as staying')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl', 'fuse')
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
            check_untrack_names_waited(bus, sc, d.client)


if __name__ == '__main__':
    ft.run(test)
