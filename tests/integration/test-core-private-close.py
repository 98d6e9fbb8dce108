#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A client of the private socket that sends calls and closes its socket at once.

What it sent is still in freezerd's end of the socket, but it can read no
reply.  Before session 33, the first reply freezerd wrote failed (EPIPE),
sd-bus dropped the connection, and the calls behind that one were never read:
a fire-and-forget Freeze (NO_REPLY_EXPECTED) behind a Get was lost, without a
word.  freezerd now points the connection's output at /dev/null once the peer
has hung up, and carries out the rest.

  /a /b /c   one sleeper each

freezerd is stopped (SIGSTOP) while the client writes and closes, so that it
finds the peer gone before it reads anything: the order in which a quick
client's close and freezerd's first reply come is otherwise a race.

Checks:
  * A direct connection sends Properties.Get (a reply wanted), Freeze /a
    without NO_REPLY_EXPECTED, Freeze /b with it, Freeze /c NO_WAIT, and
    closes.  Once freezerd runs again, /a, /b and /c all end frozen (the
    kernel's cgroup.events), and the sockets and /dev/null among
    freezerd's fds (/proc/PID/fd) are as many as before the connection.
  * The same with 100 such connections at once, each freezing its own empty
    group: every group ends frozen, the fd count returns.
  * A client that shuts only its sending side (shutdown(SHUT_WR)) still gets
    every reply, then EOF: the hang-up check does not take a half-closed peer
    for gone.  Thaw of /a, /b and /c that way.
  * A connection whose end falls on the last message of a dispatch (64: sd-bus
    reads the end of its input at one sd_bus_process() call and closes the
    socket at the next): a client sends N Get calls and closes while freezerd
    is stopped, and another connects then; once freezerd accepted it (in the
    loop turn of that dispatch, given the numbers of the fds just closed), it
    authenticates and gets the reply to a Get.  For N from 56 to 67 (62 is the
    one; the others in case sd-bus takes a step more or less).  Before session
    37, with 62, freezerd never read the new connection (libevent did not add
    its socket while the closed one's event was there) and closed it 5 s later
    as one that did not authenticate.
  * freezerd logged no warning."""

import os
import signal
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402
from jeepney import DBusAddress, HeaderFields, MessageType, Parser, new_method_call  # noqa: E402

NO_REPLY_EXPECTED = 1
NO_WAIT = 2
TIMEOUT_USEC = 10_000_000
MANY = 100


def connection_fd_count(pid):
    """freezerd's sockets and /dev/null fds: what a connection holds (the cgroup
    files it opens for the groups it wrote stay open, by design, so ft.fd_count(),
    all of its fds, would not come back)."""
    n = 0
    for f in os.listdir(f'/proc/{pid}/fd'):
        try:
            target = os.readlink(f'/proc/{pid}/fd/{f}')
        except FileNotFoundError:
            continue
        n += target.startswith('socket:') or target == '/dev/null'
    return n


def message(serial, member, signature, body, no_reply=False, iface=ft.MANAGER_IFACE):
    msg = new_method_call(DBusAddress(ft.MANAGER_PATH, ft.BUS_NAME, iface), member, signature, body)
    if no_reply:
        msg.header.flags = NO_REPLY_EXPECTED
    return msg.serialise(serial)


def calls(paths, freeze=True):
    """Get, then a Freeze (or Thaw) of each path: waiting, NO_REPLY_EXPECTED, NO_WAIT in turn."""
    data = message(1, 'Get', 'ss', (ft.MANAGER_IFACE, 'Version'), iface=ft.PROPERTIES_IFACE)
    for i, path in enumerate(paths):
        flags = NO_WAIT if i % 3 == 2 else 0
        data += message(2 + i, 'Freeze' if freeze else 'Thaw', 'stt', (path, TIMEOUT_USEC, flags),
                        no_reply=i % 3 == 1)
    return data


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-private-close') as sc, ft.Bus() as bus:
        for g in ('/a', '/b', '/c'):
            sc.mkdir(g)
            sc.spawn_sleepers(g, 1)
        for i in range(MANY):
            sc.mkdir(f'/m/e{i}')
        with ft.Daemon(bus, sc.root) as daemon:
            path = os.path.join(daemon.runtime_dir, 'private')
            pid = daemon.pid
            before = connection_fd_count(pid)

            conn = ft._direct_connection(f'unix:path={path}')
            os.kill(pid, signal.SIGSTOP)
            try:
                conn.sock.sendall(calls(['/a', '/b', '/c']))
                conn.close()
            finally:
                os.kill(pid, signal.SIGCONT)
            for g in ('/a', '/b', '/c'):
                sc.wait_events(g, frozen=1)
            ft.check(True, 'a client that closed right after sending: each of its freezes was carried out')
            ft.wait_fds_back(connection_fd_count, pid, before)

            conns = [ft._direct_connection(f'unix:path={path}') for _ in range(MANY)]
            os.kill(pid, signal.SIGSTOP)
            try:
                for i, c in enumerate(conns):
                    c.sock.sendall(calls([f'/m/e{i}']))
                    c.close()
            finally:
                os.kill(pid, signal.SIGCONT)
            ft.wait_for(lambda: all(sc.read_events(f'/m/e{i}').get('frozen') == 1 for i in range(MANY)),
                        what=f'the {MANY} groups frozen')
            ft.check(True, f'{MANY} such clients at once: every freeze was carried out')
            ft.wait_fds_back(connection_fd_count, pid, before)

            conn = ft._direct_connection(f'unix:path={path}')
            try:
                conn.sock.sendall(calls(['/a', '/b', '/c'], freeze=False))
                conn.sock.shutdown(socket.SHUT_WR)
                parser, replies = Parser(), {}
                while data := conn.sock.recv(1 << 16):
                    parser.add_data(data)
                    while (msg := parser.get_next_message()) is not None:
                        replies[msg.header.fields.get(HeaderFields.reply_serial)] = msg.header.message_type
            finally:
                conn.close()
            # Serial 3 said NO_REPLY_EXPECTED.
            ft.check_equal(replies, {1: MessageType.method_return, 2: MessageType.method_return,
                                     4: MessageType.method_return},
                           'a client that shut its sending side got every reply, then EOF')
            for g in ('/a', '/b', '/c'):
                sc.wait_events(g, frozen=0)
            ft.wait_fds_back(connection_fd_count, pid, before)
            check_end_on_dispatch_max(daemon, path)
            warnings = daemon.warnings()
            ft.check_equal(warnings, [], 'freezerd logged no warning')


def next_message(sock, parser):
    """The next message freezerd sends on sock, None if it closes it first."""
    while (msg := parser.get_next_message()) is None:
        try:
            data = sock.recv(1 << 16)
        except ConnectionResetError:
            data = b''
        if not data:
            return None
        parser.add_data(data)
    return msg


def check_end_on_dispatch_max(daemon, path):
    pid = daemon.pid
    get = message(1, 'Get', 'ss', (ft.MANAGER_IFACE, 'Version'), iface=ft.PROPERTIES_IFACE)
    outcomes = {}
    for n in range(56, 68):
        conn = ft._direct_connection(f'unix:path={path}')
        conn.sock.sendall(get)
        if next_message(conn.sock, Parser()) is None:  # it runs, and freezerd waits on it
            ft.fail(f'N={n}: freezerd closed a new connection at its first call')
        other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            os.kill(pid, signal.SIGSTOP)
            try:
                ft.wait_for(lambda: ft.proc_state(pid).state == 'T', poll=0.005, what='freezerd to stop')
                conn.sock.sendall(b''.join(message(2 + i, 'Get', 'ss', (ft.MANAGER_IFACE, 'Version'),
                                                   iface=ft.PROPERTIES_IFACE) for i in range(n)))
                conn.close()
                before = ft.socket_fds(pid)
                other.connect(path)
            finally:
                os.kill(pid, signal.SIGCONT)
            # Accepted before it sends a byte: sd-bus reads nothing at the accept then.
            ft.wait_for(lambda: ft.socket_fds(pid) - before, poll=0.005, what='freezerd to accept the connection')
            other.settimeout(ft.DEFAULT_TIMEOUT)
            other.sendall(ft.auth_external())
            line = other.recv(4096)
            if line.startswith(b'OK '):
                other.sendall(b'BEGIN\r\n' + get)
                reply = next_message(other, Parser())
                outcomes[n] = 'reply' if reply is not None else 'closed'
            else:
                outcomes[n] = f'auth answered {line!r}'
        except socket.timeout:
            outcomes[n] = 'timeout'
        except (ConnectionResetError, BrokenPipeError):
            outcomes[n] = 'reset'
        finally:
            other.close()
    ft.check_equal({n: o for n, o in outcomes.items() if o != 'reply'}, {},
                   'a connection accepted in the loop turn where another ended on the 64th message of a dispatch '
                   'is served (authenticates, gets its reply), for each N')


if __name__ == '__main__':
    ft.run(test)
