#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""SIGTERM with private connections whose peers do not read.

At its exit freezerd flushes each private connection: what is queued goes out
and what the peer sent meanwhile is refused, until nothing is left or the
flush's 100 ms passed.  Each connection had 100 ms of its own, one after the
other: 256 peers that do not read held a stop 25.6 s (before session 37).  Now
the 100 ms are for all of them together.  The first check gives the flush 1 s
(FREEZERD_TEST_FLUSH_TIMEOUT_USEC), so that one flush for all and one each (6 s)
stay apart on a slow machine: with 100 ms (0.1 s against 0.6, the bound 0.4) the
margin is 0.3 s, which a VM's stolen time (not counted as a wait for a CPU) can
eat.

  /g0 ... /g39   empty groups (a GetManagedObjects reply of some 17 KB)

Checks:
  * A reading direct connection, opened first (freezerd flushes it last), and
    6 that send GetManagedObjects and read nothing, in batches of 100 until
    their sockets are full (16 MB: sd-bus's SO_SNDBUFFORCE; 20 of them held
    320 MB of the machine's memory before session 38) and replies wait
    in freezerd (at most a batch's replies each, 1.7 MB: within the bound of
    the heap that queues take, and no connection is closed for it).  Once
    freezerd has read all, it is stopped (SIGSTOP, in epoll_wait()), the reading connection
    sends 3 calls in one write, and SIGTERM and SIGCONT follow:
    - freezerd closes the reading connection, the last one it flushes, within
      3 s of the SIGTERM, less the time freezerd waited for a CPU meanwhile
      (a flush of 1 s each takes 6 x 1 s at the least, however fast the
      machine; 1.0 s here; the exit itself is not timed: under
      AddressSanitizer the leak check runs there), and exits 0;
    - the reading connection still gets each of its 3 calls refused with
      Cancelled "freezerd is shutting down; nothing was done" before freezerd
      closes it (a flush in one pass, the deadline shared, refused only the
      first: the connections before it had used up the time).

  And a connection that reads behind one that does not (before session 38 they
  were waited on one after the other: the first used up the 100 ms), the flush
  given 5 s (FREEZERD_TEST_FLUSH_TIMEOUT_USEC: the reader need not be fast):
  both sockets full and replies queued (as above), freezerd stopped, SIGTERM,
  SIGCONT; once freezerd waits for the sockets to take the rest (in ppoll(),
  every connection had what its socket took at once), the reading one sends a
  Get and reads:
    - it gets every reply it was due and the Get refused with Cancelled,
      before freezerd closes it (before: the rest of its replies went out
      after the deadline, in one go, the Get unread: the connection closed.
      Past what its socket took in that go, replies were lost too: not with
      freezerd as root, whose sockets hold 16 MB, more than was queued, but
      where freezerd lacks CAP_NET_ADMIN, as in units/freezerd.service: then
      they hold twice net.core.wmem_max, 416 KB by default).

  The same without CAP_NET_ADMIN (setpriv), the reader's socket full (8 MB here,
  where net.core.wmem_max is 4 MB) and 3 times what it holds queued for it in
  freezerd behind that (QUEUED_SOCKETS):
    - it gets every reply and the Get refused (before: 1,019 to 1,581 replies of 1,900
      here, the rest lost)."""

import fcntl
import os
import select
import signal
import sys
import termios
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402
from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call  # noqa: E402
from jeepney.low_level import Parser  # noqa: E402

GROUPS = 40
CLIENTS = 6  # each holds a full socket: 16 MB of the machine's memory
BATCH = 100     # calls sent at once
MAX_BATCHES = 40
FLUSH_USEC = 1_000_000  # the flush's time in the first check (BUS_FLUSH_TIMEOUT_USEC is 100 ms)
# s from the SIGTERM to the last connection's close, freezerd's waits for a CPU left
# out: one flush for all, well below one each (CLIENTS x 1 s at the least).
CLOSE_BOUND = CLIENTS * FLUSH_USEC / 1e6 / 2
READER_FLUSH_USEC = 5_000_000  # the flush's time in check_reader_behind()
# check_reader_behind(small=True): the reader's replies that wait in freezerd, in sockets' worth:
# more than one go of the flush writes, the reader reading meanwhile (well within the bound of
# the heap that queues take: 3 x 8 MB here, where net.core.wmem_max is 4 MB).
QUEUED_SOCKETS = 3
REFUSED = 'freezerd is shutting down; nothing was done'
SIOCOUTQ = termios.TIOCOUTQ  # for a socket: what was sent and the peer has not read yet


def unread_by_peer(sock):
    return fcntl.ioctl(sock.fileno(), SIOCOUTQ, b'\0\0\0\0') != b'\0\0\0\0'


def unread_by_us(sock):
    return int.from_bytes(fcntl.ioctl(sock.fileno(), termios.FIONREAD, b'\0\0\0\0'), sys.byteorder)


def replies_until_closed(sock, timeout):
    """The messages freezerd sends on sock until it closes it."""
    parser = Parser()
    parser.add_data(bytes_until_closed(sock, timeout))
    messages = []
    while (msg := parser.get_next_message()) is not None:
        messages.append(msg)
    return messages


def fill(sock, batch, what):
    """Batches of calls on sock until its socket is full and replies wait in freezerd: returns
    how many calls were sent and the size of a reply."""
    reply_size = None
    for n in range(MAX_BATCHES):
        before = unread_by_us(sock)
        sock.sendall(batch)
        # sd-bus reads a message at a time and answers it before the next: once the socket holds
        # nothing freezerd did not read, it has answered all but the last (at most).
        ft.wait_for(lambda: not unread_by_peer(sock), poll=0.01, what=f'freezerd to read the calls of {what}')
        grown = unread_by_us(sock) - before
        if reply_size is None:
            reply_size = grown // BATCH
        if grown < (BATCH - 1) * reply_size:
            return (n + 1) * BATCH, reply_size
    ft.fail(f'the socket of {what} took {MAX_BATCHES} x {BATCH} replies of {reply_size} bytes: freezerd '
            'queued nothing')


def in_ppoll(pid):
    """Whether pid's main thread waits in ppoll() (freezerd's loop waits in epoll_wait())."""
    try:
        return open(f'/proc/{pid}/syscall').read().split()[0] in ft.ppolls()
    except (OSError, IndexError):
        return False


def cap_net_admin(pid):
    """Whether pid has CAP_NET_ADMIN (12) in its effective set."""
    with open(f'/proc/{pid}/status') as f:
        eff = next(int(line.split()[1], 16) for line in f if line.startswith('CapEff:'))
    return bool(eff & (1 << 12))


def check_reader_behind(sc, bus, small=False):
    """A connection that reads, flushed after one that does not.  small: freezerd without
    CAP_NET_ADMIN (as units/freezerd.service), whose sockets hold no more than twice
    net.core.wmem_max, and the reader's replies queued in freezerd QUEUED_SOCKETS times what
    its socket holds."""
    ft.ppolls()  # (probed before freezerd is stopped)
    wrapper = ['setpriv', '--inh-caps=-net_admin', '--bounding-set=-net_admin', '--'] if small else []
    # The reader must read 12 MB before freezerd can write to it again (a Unix socket is writable
    # once 3/4 of what it holds is read): in 100 ms on a loaded machine it may not.
    with ft.Daemon(bus, sc.root, env={'FREEZERD_TEST_FLUSH_TIMEOUT_USEC': str(READER_FLUSH_USEC)},
                   wrapper=wrapper) as daemon:
        if small:
            ft.check(not cap_net_admin(daemon.pid), 'freezerd runs without CAP_NET_ADMIN')
        address = f'unix:path={os.path.join(daemon.runtime_dir, "private")}'
        manager = DBusAddress(ft.MANAGER_PATH, ft.BUS_NAME, ft.OBJECT_MANAGER_IFACE)
        # The newest connection is flushed first: the reader connects before.
        reader = ft._direct_connection(address)
        other = ft._direct_connection(address)
        try:
            batch = b''.join(new_method_call(manager, 'GetManagedObjects').serialise(i + 1) for i in range(BATCH))
            fill(other.sock, batch, 'the connection that does not read')
            sent, reply_size = fill(reader.sock, batch, 'the connection that reads later')
            if small:
                held = unread_by_us(reader.sock)
                target = QUEUED_SOCKETS * held
                for _ in range(-(-target // (BATCH * reply_size))):
                    reader.sock.sendall(batch)
                    sent += BATCH
                    ft.wait_for(lambda: not unread_by_peer(reader.sock), poll=0.01,
                                what='freezerd to read the calls of the connection that reads later')
                print(f'# the reader\'s socket holds {held} bytes; {target} bytes or more of replies wait '
                      'in freezerd', flush=True)
            ft.check_equal(daemon.warnings(), [], 'no connection was closed for its queue (nor other warning)')
            os.kill(daemon.pid, signal.SIGSTOP)
            try:
                os.kill(daemon.pid, signal.SIGTERM)
            finally:
                os.kill(daemon.pid, signal.SIGCONT)
            ft.wait_for(lambda: in_ppoll(daemon.pid) or daemon.exit_status is not None, poll=0.001,
                        what='freezerd to wait for the sockets to take the rest')
            get = new_method_call(DBusAddress(ft.MANAGER_PATH, ft.BUS_NAME, ft.PROPERTIES_IFACE), 'Get', 'ss',
                                  (ft.MANAGER_IFACE, 'Version'))
            reader.sock.sendall(get.serialise(BATCH + 1))
            t0 = time.monotonic()
            data = bytes_until_closed(reader.sock, ft.DEFAULT_TIMEOUT)
            print(f'# the reader read {len(data)} bytes in {time.monotonic() - t0:.3f} s', flush=True)
            parser = Parser()
            parser.add_data(data)
            messages = []
            while (msg := parser.get_next_message()) is not None:
                messages.append(msg)
            ft.check_equal(sum(1 for m in messages if m.header.message_type == MessageType.method_return), sent,
                           f'the reading connection, flushed after one that does not read, has its {sent} replies')
            got = next((m for m in messages if m.header.fields.get(HeaderFields.reply_serial) == BATCH + 1), None)
            ft.check_equal(got and (got.header.message_type, got.header.fields.get(HeaderFields.error_name), got.body),
                           (MessageType.error, ft.ERROR_CANCELLED, (REFUSED,)),
                           'and the Get it sent during the flush refused')
            ft.wait_for(lambda: daemon.exit_status is not None, what='freezerd to exit')
            ft.check_equal(daemon.exit_status, 0, 'freezerd exits 0')
        finally:
            reader.close()
            other.close()


def bytes_until_closed(sock, timeout):
    """What freezerd sends on sock until it closes it, read as fast as it comes (parsed after:
    jeepney's parser is slower than freezerd's flush)."""
    data = bytearray()
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            ft.fail('freezerd did not close the reading connection on its way out')
        if not select.select([sock], [], [], left)[0]:
            continue
        try:
            chunk = sock.recv(1 << 20)
        except ConnectionResetError:
            chunk = b''
        if not chunk:
            return bytes(data)
        data += chunk


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('fault-private-shutdown') as sc, ft.Bus() as bus:
        for i in range(GROUPS):
            sc.mkdir(f'/g{i}')
        socks = []
        try:
            with ft.Daemon(bus, sc.root, env={'FREEZERD_TEST_FLUSH_TIMEOUT_USEC': str(FLUSH_USEC)}) as daemon:
                address = f'unix:path={os.path.join(daemon.runtime_dir, "private")}'
                reader = ft._direct_connection(address)
                version = ft.Client(address, direct=True)
                ft.check(version.manager_property('Version'), 'a direct connection is served')
                version.close()
                manager = DBusAddress(ft.MANAGER_PATH, ft.BUS_NAME, ft.OBJECT_MANAGER_IFACE)
                batch = b''.join(new_method_call(manager, 'GetManagedObjects').serialise(i + 1)
                                 for i in range(BATCH))
                for _ in range(CLIENTS):
                    socks.append(ft._direct_connection(address).sock)
                reply_size = None
                for n, sock in enumerate(socks):
                    # Batches until the socket is full: freezerd's sd-bus makes it hold some
                    # 16 MB (SO_SNDBUFFORCE), and only then queues what is left, which is
                    # what the flush waits on.  Little more than that: the heap that the
                    # queues of all take together is bounded (64 MiB), past which freezerd
                    # closes the connections (test-fault-private-noread).
                    for _ in range(MAX_BATCHES):
                        before = unread_by_us(sock)
                        sock.sendall(batch)
                        # sd-bus reads a message at a time and answers it before the next:
                        # once the socket holds nothing freezerd did not read, it has answered
                        # all but the last (at most).
                        ft.wait_for(lambda: not unread_by_peer(sock), poll=0.01,
                                    what='freezerd to read the calls of a connection that does not read')
                        grown = unread_by_us(sock) - before
                        if reply_size is None:
                            reply_size = grown // BATCH
                        if grown < (BATCH - 1) * reply_size:
                            break
                    else:
                        ft.fail(f'the socket of connection {n} took {MAX_BATCHES} x {BATCH} replies of '
                                f'{reply_size} bytes: freezerd queued nothing')
                print(f'# replies of {reply_size} bytes; in the non-readers\' sockets: '
                      f'{min(map(unread_by_us, socks))} to {max(map(unread_by_us, socks))} bytes', flush=True)
                ft.check_equal(daemon.warnings(), [], 'no connection was closed for its queue (nor other warning)')

                # Stopped while it waits for its next loop turn, not in the middle of one
                # (SIGSTOP takes effect when it does): stopped there, it went on after SIGCONT
                # with that turn's events, and could read and answer the calls sent meanwhile
                # before the loop looked at the signal.
                ft.stop_in_epoll_wait(daemon.pid)
                try:
                    specs = [(ft.MANAGER_PATH, ft.MANAGER_IFACE, 'ListGroups', None, ()),
                             (ft.MANAGER_PATH, ft.PROPERTIES_IFACE, 'Get', 'ss', (ft.MANAGER_IFACE, 'Version')),
                             (ft.MANAGER_PATH, ft.MANAGER_IFACE, 'ListGroups', None, ())]
                    reader.sock.sendall(b''.join(
                        new_method_call(DBusAddress(path, ft.BUS_NAME, iface), member, sig, body).serialise(i + 1)
                        for i, (path, iface, member, sig, body) in enumerate(specs)))
                    waited = ft.run_queue_wait(daemon.pid)
                    t0 = time.monotonic()
                    os.kill(daemon.pid, signal.SIGTERM)
                finally:
                    os.kill(daemon.pid, signal.SIGCONT)
                # Not reaped meanwhile (nothing runs the loop): its schedstat is still there.
                replies = {m.header.fields.get(HeaderFields.reply_serial):
                           (m.header.message_type, m.header.fields.get(HeaderFields.error_name), m.body)
                           for m in replies_until_closed(reader.sock, ft.DEFAULT_TIMEOUT)}
                took = time.monotonic() - t0
                waited = ft.run_queue_wait(daemon.pid) - waited
                print(f'# freezerd closed the last connection {took:.3f} s after SIGTERM '
                      f'(it waited {waited:.3f} s for a CPU meanwhile)', flush=True)
                ft.check(took - waited <= CLOSE_BOUND,
                         f'with {CLIENTS} connections that do not read, freezerd closes the last within '
                         f'{CLOSE_BOUND:.1f} s of SIGTERM (one flush of {FLUSH_USEC / 1e6:.0f} s for all, not one each)',
                         f'{took:.3f} s, {waited:.3f} s of it waiting for a CPU')
                ft.wait_for(lambda: daemon.exit_status is not None, what='freezerd to exit')
                ft.check_equal(daemon.exit_status, 0, 'freezerd exits 0')
                ft.check_equal([replies.get(i + 1) for i in range(len(specs))],
                               [(MessageType.error, ft.ERROR_CANCELLED, (REFUSED,))] * len(specs),
                               'the reading connection, flushed last, has each of its 3 calls refused')
                reader.close()
        finally:
            for s in socks:
                s.close()
        check_reader_behind(sc, bus)
        check_reader_behind(sc, bus, small=True)


if __name__ == '__main__':
    ft.run(test)
