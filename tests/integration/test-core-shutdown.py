#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""SIGTERM while a call waits on the private socket and more calls are queued
behind it.

  /s   a sleeper and a task blocked on a FUSE mount that never answers, so a
       Freeze of /s stays pending
  /t   a sleeper

Each round (a fresh freezerd each): a private connection starts Freeze(/s),
which waits; freezerd is stopped (SIGSTOP) for 1.5 s; the connection sends
Freeze(/t) (timeout 1 s), GetAll of /t and ListGroups in one write; then, in
the first round, SIGCONT alone, and in the ROUNDS others SIGTERM and SIGCONT.

Without SIGTERM (the first round) every call is carried out, and Freeze(/t)
gets its whole timeout: libevent counted a timer added from a callback from the
time it cached when the loop woke up, so when the SIGSTOP came between that
wake-up and the read (right after the reply to the round trip that shows
Freeze(/s) waiting), Freeze(/t) timed out at once.

With SIGTERM, the stop comes first, every time: freezerd reads the signals
from a signalfd ahead of everything else, and a dispatch of messages looks for
a stop request once a millisecond (freezerd is stopped right after a reply, in
the middle of one).  So the calls that were waiting are refused, never carried
out.  Before, which came first depended on where the SIGSTOP caught freezerd.

On its way out freezerd fails the pending call and flushes the private
connections; the flush also dispatches what they sent meanwhile, and it used to
do so after the manager was freed (the objects and filters of the connection
have it as userdata): a use after free, which AddressSanitizer reports.  And it
used to stop once its output was written, leaving what came meanwhile
unanswered.

Checks, in the SIGTERM rounds:
  * Freeze(/s) fails with Cancelled "freezerd is shutting down; the
    cgroup.freeze of /s stays 1 (written, not yet confirmed)": the flag stays,
    and the group freezing (before, the message said only "freezerd is
    shutting down", which reads as if the call were undone);
  * Freeze(/t), GetAll(/t) and ListGroups each fail with Cancelled "freezerd is
    shutting down; nothing was done";
  * cgroup.freeze of /t is still 0;
  * freezerd exits 0 (under AddressSanitizer: no report).
In the first round: Freeze(/t) succeeds (no Timeout), /t is frozen, and GetAll
and ListGroups are answered.

The same once on the bus: Freeze(/t) and ListGroups sent while freezerd is
stopped, a wait until dbus-daemon has passed them on into freezerd's socket (their
bytes there, and a round trip to dbus-daemon), SIGTERM,
SIGCONT: both are refused by freezerd (before, dbus-daemon answered NoReply
once freezerd left, which does not say that nothing was done).

Then a batch of /t and /s with ROLLBACK_ON_TIMEOUT waits (for /s) at SIGTERM:
it fails with Cancelled, shutting down, having restored both flags (0), as a
call that asked for all or nothing does on any failure.  The same batch
without it fails with Cancelled naming /s, whose flag stays 1 (written, not
yet confirmed), and leaves both flags at 1."""

import os
import select
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402
from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call  # noqa: E402

ROUNDS = 5
STOPPED_SEC = 1.5           # how long freezerd is held stopped, longer than:
T_TIMEOUT_USEC = 1000000    # Freeze(/t)'s timeout
LONG = 60 * 1000000
SHUTTING_DOWN = 'freezerd is shutting down'  # a call that was waiting, all or nothing
S_STAYS = 'freezerd is shutting down; the cgroup.freeze of /s stays 1 (written, not yet confirmed)'  # one that was not
REFUSED = 'freezerd is shutting down; nothing was done'  # a call read during the shutdown


def serialise(c, path, iface, member, sig, body, destination=None):
    msg = new_method_call(DBusAddress(path, destination or c.destination, iface), member, sig, body)
    serial = next(c.conn.outgoing_serial)
    raw, _fds = c.conn._serialise(msg, serial)
    return serial, raw


def read_until_closed(c, timeout):
    """Everything freezerd sends until it closes the connection (the loop no longer reads it)."""
    ft.loop().remove_reader(c.conn.sock)
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        ft.check(left > 0, 'freezerd closed the private connection on its way out')
        if not select.select([c.conn.sock], [], [], left)[0]:
            continue
        try:
            data = c.conn.sock.recv(1 << 16)
        except ConnectionResetError:
            data = b''
        if not data:
            return
        c.conn.parser.add_data(data)
        c._drain()


FREEZE_T = ('Freeze(/t)', (ft.MANAGER_PATH, ft.MANAGER_IFACE, 'Freeze', 'stt', ('/t', T_TIMEOUT_USEC, 0)))
GETALL_T = ('GetAll(/t)', (ft.group_object('/t'), ft.PROPERTIES_IFACE, 'GetAll', 's', (ft.GROUP_IFACE,)))
LIST_GROUPS = ('ListGroups', (ft.MANAGER_PATH, ft.MANAGER_IFACE, 'ListGroups', None, ()))


def send_while_stopped(d, c, specs, stopped_sec=0, relayed=False):
    """Stops freezerd (SIGSTOP), waits stopped_sec, sends the calls of specs in one write;
    returns {what: serial}.  relayed (c on the bus): then waits until they are in
    freezerd's socket (dbus-daemon relays them when it gets to them)."""
    os.kill(d.pid, signal.SIGSTOP)
    wait_stopped(d.pid)
    time.sleep(stopped_sec)
    calls, data = {}, b''
    for what, args in specs:
        serial, raw = serialise(c, *args)
        calls[what] = serial
        data += raw
    queued = ft.unix_recv_queued(d.pid) if relayed else 0
    c.conn.sock.sendall(data)
    if relayed:
        # Each as relayed is what was sent and a sender field: all are there once that much came.
        ft.wait_for(lambda: ft.unix_recv_queued(d.pid) >= queued + len(data), poll=0.001,
                    what='the calls in freezerd\'s socket')
    return calls


def outcomes(c, calls, seen, prefix=''):
    """{what: outcome} of the calls, counted in seen."""
    got = {what: outcome(c.replies.get(serial)) for what, serial in calls.items()}
    for what, o in got.items():
        seen[(prefix + what, o)] = seen.get((prefix + what, o), 0) + 1
    return got


def read_until_replies(c, serials, timeout):
    """Reads what freezerd sends until every call of serials is answered."""
    ft.loop().remove_reader(c.conn.sock)
    deadline = time.monotonic() + timeout
    while not all(s in c.replies for s in serials):
        left = deadline - time.monotonic()
        ft.check(left > 0, 'every call sent while freezerd was stopped is answered once it continues')
        if not select.select([c.conn.sock], [], [], left)[0]:
            continue
        data = c.conn.sock.recv(1 << 16)
        ft.check(data, 'the private connection stays open')
        c.conn.parser.add_data(data)
        c._drain()


def outcome(msg):
    if msg is None:
        return 'no reply'
    if msg.header.message_type == MessageType.error:
        name = msg.header.fields.get(HeaderFields.error_name, '?')
        text = msg.body[0] if msg.body else ''
        if name == ft.ERROR_CANCELLED and text in (SHUTTING_DOWN, S_STAYS, REFUSED):
            return {SHUTTING_DOWN: 'shutting down', S_STAYS: 'shutting down, /s stays 1'}.get(text, 'refused')
        return f'{name}: {text}'
    return 'ok'


def wait_stopped(pid):
    def stopped():
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] == 'T'
    ft.wait_for(stopped, what='freezerd to stop (SIGSTOP)', poll=0.002)


def one_round(sc, bus, n, seen, term=True):
    try:
        stopped_round(sc, bus, n, seen, term)
    finally:
        sc.write_freeze('/t', 0)
        sc.write_freeze('/s', 0)  # the Cancelled Freeze(/s) left its flag


def stopped_round(sc, bus, n, seen, term):
    with ft.Daemon(bus, sc.root) as d:
        c = ft.Client(f'unix:path={os.path.join(d.runtime_dir, "private")}', direct=True)
        pending = c.call_async('Freeze', '/s', LONG, 0)
        ft.check_equal(c.group_property('/s', 'FreezerState'), 'freezing', f'round {n}: Freeze(/s) waits')

        # The state under test is "stopped for longer than the calls' timeout".
        calls = send_while_stopped(d, c, (FREEZE_T, GETALL_T, LIST_GROUPS), STOPPED_SEC)
        if not term:
            os.kill(d.pid, signal.SIGCONT)
            read_until_replies(c, list(calls.values()), ft.DEFAULT_TIMEOUT)
            ft.check_equal(outcomes(c, calls, seen), {what: 'ok' for what in calls},
                           f'round {n}, no SIGTERM: every call sent while freezerd was stopped is carried out '
                           '(Freeze(/t) gets its whole timeout: no Timeout)')
            ft.check(sc.frozen('/t'), f'round {n}: /t is frozen')
            c.close()
            return
        os.kill(d.pid, signal.SIGTERM)
        os.kill(d.pid, signal.SIGCONT)
        read_until_closed(c, ft.DEFAULT_TIMEOUT)
        c.closed = True
        c.conn.close()

        ft.check_equal(outcome(c.replies.get(pending.serial)), 'shutting down, /s stays 1',
                       f'round {n}: the pending Freeze(/s) fails with Cancelled "{S_STAYS}"')
        ft.check_equal(sc.read_freeze('/s'), 1, f'round {n}: cgroup.freeze of /s stays 1, as the reply says')
        ft.check_equal(outcomes(c, calls, seen), {what: 'refused' for what in calls},
                       f'round {n}: the stop comes first: every call sent while freezerd was stopped is refused '
                       f'with Cancelled "{REFUSED}"')
        ft.check_equal(sc.read_freeze('/t'), 0, f'round {n}: Freeze(/t), refused, wrote nothing')
        # Exiting already: a second SIGTERM (Daemon.stop()) could come after its handler is gone.
        ft.wait_for(lambda: d.exit_status is not None, what='freezerd to exit')
        ft.check_equal(d.exit_status, 0, f'round {n}: freezerd exits 0')


def check_bus_at_shutdown(sc, bus, seen):
    """The same on the bus: the calls dbus-daemon passed on while freezerd was stopped are
    refused by freezerd itself, not left to dbus-daemon's NoReply once it leaves."""
    try:
        with ft.Daemon(bus, sc.root) as d, ft.Client(bus.address) as c:
            pending = c.call_async('Freeze', '/s', LONG, 0)
            ft.check_equal(c.group_property('/s', 'FreezerState'), 'freezing', 'bus: Freeze(/s) waits')
            calls = send_while_stopped(d, c, (FREEZE_T, LIST_GROUPS), relayed=True)
            # And a round trip to dbus-daemon itself, sent after them, comes back once it has
            # routed them (had other messages for freezerd come meanwhile).
            serial, raw = serialise(c, '/org/freedesktop/DBus', 'org.freedesktop.DBus', 'GetId', None, (),
                                    destination='org.freedesktop.DBus')
            c.conn.sock.sendall(raw)
            read_until_replies(c, [serial], ft.DEFAULT_TIMEOUT)
            os.kill(d.pid, signal.SIGTERM)
            os.kill(d.pid, signal.SIGCONT)
            read_until_replies(c, [pending.serial] + list(calls.values()), ft.DEFAULT_TIMEOUT)
            ft.check_equal(outcome(c.replies.get(pending.serial)), 'shutting down, /s stays 1',
                           f'bus: the pending Freeze(/s) fails with Cancelled "{S_STAYS}"')
            ft.check_equal(outcomes(c, calls, seen, 'bus '), {what: 'refused' for what in calls},
                           f'bus: every call dbus-daemon passed on while freezerd was stopped is refused by '
                           f'freezerd with Cancelled "{REFUSED}" (not dbus-daemon\'s NoReply)')
            ft.check_equal(sc.read_freeze('/t'), 0, 'bus: Freeze(/t), refused, wrote nothing')
            ft.wait_for(lambda: d.exit_status is not None, what='freezerd to exit')
            ft.check_equal(d.exit_status, 0, 'bus: freezerd exits 0')
    finally:
        sc.write_freeze('/t', 0)
        sc.write_freeze('/s', 0)


def check_rollback_at_shutdown(sc, bus):
    with ft.Daemon(bus, sc.root) as d, ft.Client(bus.address) as c:  # d.stop() closes d.client
        pending = c.call_async('ApplyBatch', [('/t', True), ('/s', True)], 'auto', LONG, ft.FLAG_ROLLBACK_ON_TIMEOUT)
        ft.check_equal(c.group_property('/s', 'FreezerState'), 'freezing', 'a batch of /t and /s with '
                       'ROLLBACK_ON_TIMEOUT waits for /s')
        ft.check_equal((sc.read_freeze('/t'), sc.read_freeze('/s')), (1, 1), 'it wrote both flags (from 0)')
        ft.check_equal(d.stop(), 0, 'SIGTERM: freezerd exits 0')
        e = ft.expect_dbus_error(ft.ERROR_CANCELLED, pending.result)
        ft.check(SHUTTING_DOWN in e.message and 'restored' in e.message,
                 'the batch fails with Cancelled, shutting down, its flags restored', repr(e.message))
        ft.check_equal((sc.read_freeze('/t'), sc.read_freeze('/s')), (0, 0),
                       'all or nothing: cgroup.freeze of /t and /s are 0 again')

    try:
        with ft.Daemon(bus, sc.root) as d, ft.Client(bus.address) as c:
            pending = c.call_async('ApplyBatch', [('/t', True), ('/s', True)], 'auto', LONG, 0)
            ft.check_equal(c.group_property('/s', 'FreezerState'), 'freezing', 'a batch of /t and /s without '
                           'ROLLBACK_ON_TIMEOUT waits for /s')
            ft.check_equal(d.stop(), 0, 'SIGTERM: freezerd exits 0')
            e = ft.expect_dbus_error(ft.ERROR_CANCELLED, pending.result)
            ft.check_equal(e.message, S_STAYS, 'the batch fails with Cancelled, saying the flag of /s stays 1')
            ft.check_equal((sc.read_freeze('/t'), sc.read_freeze('/s')), (1, 1), 'cgroup.freeze of /t and /s stay 1')
    finally:
        sc.write_freeze('/t', 0)
        sc.write_freeze('/s', 0)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    seen = {}
    with ft.Scratch('core-shutdown') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        sc.mkdir('/s')
        sc.spawn_sleepers('/s', 1)
        sc.mkdir('/t')
        sc.spawn_sleepers('/t', 1)
        fuse.spawn_stuck(sc, '/s')
        one_round(sc, bus, 0, seen, term=False)
        for n in range(1, ROUNDS + 1):
            one_round(sc, bus, n, seen)
        check_bus_at_shutdown(sc, bus, seen)
        check_rollback_at_shutdown(sc, bus)
    print('# outcomes over the rounds: ' + ', '.join(f'{w} {o}: {k}' for (w, o), k in sorted(seen.items())),
          flush=True)


if __name__ == '__main__':
    ft.run(test)
