#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A subscriber on the private socket that stops reading is closed, not fed forever.

On the bus, dbus-daemon bounds what waits for a slow client.  On the private
socket nothing would: freezerd itself queues what a subscribed connection has
not read.  Past PRIVATE_BUS_QUEUE_MAX (65,536) messages queued for one
connection, or once they took 64 MiB of its heap (whichever comes first;
test-fault-private-noread), freezerd logs why and closes it.

  /big  with 2,000 empty children

Checks:
  * A direct connection calls Subscribe() (a PropertiesChanged per changed group
    object) and then never reads.  Freeze / Thaw of /big from the bus, over and
    over: freezerd logs "does not read its replies or signals" within at most 60 rounds
    (at least 4,000 messages each), and closes that connection (EOF once its socket
    buffer is read).  Each call waits until the subscriber that reads has seen
    /big's new state: freezerd sends the signals of a loop turn once, for all the
    changes of that turn, and it answers up to 64 calls in one turn (bus-event.c,
    DISPATCH_MAX).  A Freeze of empty groups is answered at once, so without that
    wait a busy machine let dozens of Freeze / Thaw rounds go by in one turn, each
    child reported once for all of them, and 60 rounds sent the slow connection
    too little to fill its queue.
  * Meanwhile a direct connection subscribed with SubscribeGroups() that reads
    as it goes is kept: after the slow one was closed, it still gets
    GroupsChanged for the next freeze, and freezerd serves the bus as before
    (the kernel and Get agree on /big).
  * freezerd logged no other warning and exits 0."""

import os
import select
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

CHILDREN = 2000
MAX_ROUNDS = 60
CLOSED = 'does not read its replies or signals'


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-private-slow-reader') as sc, ft.Bus() as bus:
        sc.mkdir('/big')
        for i in range(CHILDREN):
            os.mkdir(sc.abspath(f'/big/c{i}'))
        with ft.Daemon(bus, sc.root) as daemon:
            path = os.path.join(daemon.runtime_dir, 'private')
            with ft.Client(f'unix:path={path}', direct=True) as slow, \
                    ft.Client(f'unix:path={path}', direct=True) as reader:
                rec = reader.record(subscribe='groups')
                slow.subscribe()
                # From here on nobody reads slow's socket.
                ft.loop().remove_reader(slow.conn.sock)

                rounds = 0
                while CLOSED not in daemon.log() and rounds < MAX_ROUNDS:
                    # After each call, the loop turn that sent its signals (a PropertiesChanged
                    # per child to the slow connection, GroupsChanged to the reader) is over
                    # before the next call: every round queues at least 2 x 2,001 messages.
                    for method, state in (('Freeze', 'frozen'), ('Thaw', 'running')):
                        rec.clear()
                        daemon.client.call(method, '/big', 0, 0)
                        rec.wait_for(lambda x: state in x.group_values('/big', 'FreezerState'),
                                     what=f'GroupsChanged on the connection that reads: /big {state} '
                                          f'(round {rounds + 1})')
                    rounds += 1
                if CLOSED not in daemon.log():
                    # Say what the slow connection's socket holds, for the next time.
                    pending = []
                    eof = eof_within(slow.conn.sock, 1, pending)
                    ft.fail(f'freezerd did not say why it closed the connection after {rounds} rounds; the slow '
                            f'connection {"was closed" if eof else "is open"}, {sum(pending)} bytes were waiting '
                            f'in its socket:\n{daemon.log()[-2000:]}')
                ft.check(True, f'freezerd said why it closed the connection ({rounds} rounds)')
                ft.check(eof_within(slow.conn.sock, ft.DEFAULT_TIMEOUT),
                         'the connection that did not read was closed by freezerd')
                slow.closed = True  # its socket is done; close() must not touch the loop again

                rec.clear()
                daemon.client.call('Freeze', '/big', 0, 0)
                rec.wait_for(lambda x: 'frozen' in x.group_values('/big', 'FreezerState'),
                             what='GroupsChanged on the connection that reads: /big frozen')
                ft.check(True, 'the subscriber that reads was kept and still gets its signals')
                ft.check_equal((sc.read_events('/big').get('frozen'), daemon.client.group_property('/big', 'Frozen')),
                               (1, True), 'freezerd serves on: the kernel and Get agree on /big')
                daemon.client.call('Thaw', '/big', 0, 0)
            warnings = daemon.warnings(besides=CLOSED)
            ft.check_equal(warnings, [], 'no other warning from freezerd')


def eof_within(sock, timeout, sizes=None):
    """Read what sock holds until EOF (True) or timeout (False); the size of each read
    goes to sizes if given."""
    sock.setblocking(False)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not select.select([sock], [], [], max(0, deadline - time.monotonic()))[0]:
            continue
        try:
            data = sock.recv(1 << 20)
            if sizes is not None:
                sizes.append(len(data))
            if data == b'':
                return True
        except ConnectionResetError:
            return True
        except BlockingIOError:
            pass
    return False


if __name__ == '__main__':
    ft.run(test)
