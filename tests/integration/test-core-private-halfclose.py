#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A client of the private socket that shuts its sending side (shutdown(SHUT_WR))
and reads until freezerd closes gets every reply, those of calls that wait too.

Before session 33, sd-bus read the end of the input as soon as it had read the
calls and closed the connection: the reply of a call still waiting for the
kernel (a Freeze), and replies still queued for a client that reads slowly, were
never sent; the client saw EOF alone.  freezerd now holds such a connection
(its input fd pointed at a socket that never ends) until every call it sent is
answered and the replies are written.

  /s1 /s2 /t   a sleeper and a task blocked (state D) on a FUSE mount that
               never answers each: they cannot finish freezing until it is
               released

Checks:
  * Freeze /s1 with a 1 s timeout, then Properties.Get, then SHUT_WR: the
    client reads the Get's reply and, after >= 1 s, the Freeze's Timeout error
    naming /s1, then EOF; freezerd used under 30% of a CPU meanwhile; the
    sockets among freezerd's fds are as many as before.
  * 5,000 Introspect calls (29 MB of replies, more than the socket holds),
    SHUT_WR, 0.5 s without reading, then read: every reply comes, then EOF
    (before, sd-bus read the end while most of them were queued, and closed).
  * Freeze /s2 with a 1 s timeout, SHUT_WR, and 0.3 s later the client closes,
    having read nothing: the connection is gone once the timeout passed (the
    socket count returns), and freezerd idled until then.
  * Freeze /u with a 60 s timeout, SHUT_WR, and once freezerd holds the
    connection (its debug log says so) the client closes, having read nothing:
    the connection is gone well before the timeout (the socket count returns;
    before, freezerd noticed only when it wrote the Freeze's reply), and the
    Freeze goes on: /u ends frozen once the FUSE mount is released (below).
  * Freeze /t with a 60 s timeout, SHUT_WR, and the FUSE mount released 0.5 s
    later: the Freeze succeeds and its reply comes, then EOF.
  * freezerd logged no warning."""

import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402
from jeepney import DBusAddress, HeaderFields, MessageType, Parser, new_method_call  # noqa: E402

SHORT_USEC = 1_000_000
LONG_USEC = 60_000_000
INTROSPECTS = 5_000  # some 29 MB of replies: more than the socket holds (15 MB here)


def sockets(pid):
    """freezerd's sockets (a connection holds two; the cgroup files it opens stay open, by design)."""
    n = 0
    for f in os.listdir(f'/proc/{pid}/fd'):
        try:
            n += os.readlink(f'/proc/{pid}/fd/{f}').startswith('socket:')
        except FileNotFoundError:
            continue
    return n


def message(serial, member, signature, body, iface=ft.MANAGER_IFACE):
    return new_method_call(DBusAddress(ft.MANAGER_PATH, ft.BUS_NAME, iface), member, signature,
                           body).serialise(serial)


def get(serial):
    return message(serial, 'Get', 'ss', (ft.MANAGER_IFACE, 'Version'), iface=ft.PROPERTIES_IFACE)


def introspect(serial):
    return message(serial, 'Introspect', '', (), iface='org.freedesktop.DBus.Introspectable')


def send_and_half_close(path, data, before_read=None):
    """Send data, shut the sending side, (call before_read,) read to EOF: the
    replies by serial, each (type, error name, time since the shutdown)."""
    conn = ft._direct_connection(f'unix:path={path}')
    replies = {}
    try:
        conn.sock.sendall(data)
        conn.sock.shutdown(socket.SHUT_WR)
        t0 = time.monotonic()
        if before_read:
            before_read()
        conn.sock.settimeout(ft.DEFAULT_TIMEOUT)
        parser = Parser()
        while chunk := conn.sock.recv(1 << 16):
            parser.add_data(chunk)
            while (msg := parser.get_next_message()) is not None:
                fields = msg.header.fields
                replies[fields.get(HeaderFields.reply_serial)] = (
                    msg.header.message_type, fields.get(HeaderFields.error_name),
                    msg.body[0] if msg.body else None, time.monotonic() - t0)
    finally:
        conn.close()
    return replies


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('core-private-halfclose') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        for g in ('/s1', '/s2', '/t', '/u'):
            sc.mkdir(g)
            sc.spawn_sleepers(g, 1)
            fuse.spawn_stuck(sc, g)
        with ft.Daemon(bus, sc.root, env={'FREEZERD_LOG_LEVEL': 'debug'}) as daemon:
            path = os.path.join(daemon.runtime_dir, 'private')
            pid = daemon.pid
            before = sockets(pid)

            def fds_back():
                ft.wait_fds_back(sockets, pid, before, 'socket')

            ticks, t0 = ft.proc_cpu_ticks(pid), time.monotonic()
            replies = send_and_half_close(path, message(1, 'Freeze', 'stt', ('/s1', SHORT_USEC, 0)) + get(2))
            busy = (ft.proc_cpu_ticks(pid) - ticks) / os.sysconf('SC_CLK_TCK') / (time.monotonic() - t0)
            ft.check_equal({k: v[:2] for k, v in replies.items()},
                           {1: (MessageType.error, ft.ERROR_TIMEOUT), 2: (MessageType.method_return, None)},
                           'SHUT_WR after a waiting Freeze: its Timeout error and the Get reply came, then EOF')
            ft.check(replies[1][3] >= SHORT_USEC / 1e6 - 0.05 and '/s1' in str(replies[1][2]),
                     'the Timeout came at the timeout and names /s1', replies[1])
            ft.check(busy < 0.3, 'freezerd idled meanwhile', f'{busy:.0%} of a CPU')
            fds_back()

            replies = send_and_half_close(path, b''.join(introspect(i) for i in range(1, INTROSPECTS + 1)),
                                          before_read=lambda: time.sleep(0.5))
            ft.check_equal((len(replies), {v[0] for v in replies.values()}),
                           (INTROSPECTS, {MessageType.method_return}),
                           f'SHUT_WR after {INTROSPECTS} Introspects, reading only 0.5 s later: every reply came, '
                           'then EOF')
            fds_back()

            conn = ft._direct_connection(f'unix:path={path}')
            conn.sock.sendall(message(1, 'Freeze', 'stt', ('/s2', SHORT_USEC, 0)))
            conn.sock.shutdown(socket.SHUT_WR)
            time.sleep(0.3)  # freezerd holds it by now
            ticks = ft.proc_cpu_ticks(pid)
            conn.close()
            time.sleep(SHORT_USEC / 1e6)
            busy = (ft.proc_cpu_ticks(pid) - ticks) / os.sysconf('SC_CLK_TCK') / (SHORT_USEC / 1e6)
            fds_back()
            ft.check(busy < 0.3, 'freezerd idled until then', f'{busy:.0%} of a CPU')
            ft.check(True, 'a client that shut its sending side and then closed: its connection ended '
                     'with its Freeze')

            holds = daemon.log().count('holding it')
            conn = ft._direct_connection(f'unix:path={path}')
            conn.sock.sendall(message(1, 'Freeze', 'stt', ('/u', LONG_USEC, 0)))
            conn.sock.shutdown(socket.SHUT_WR)
            ft.wait_for(lambda: daemon.log().count('holding it') > holds, poll=0.05,
                        what='freezerd holds the half-closed connection')
            conn.close()
            t0 = time.monotonic()
            fds_back()
            ft.check(time.monotonic() - t0 < LONG_USEC / 1e6 / 2,
                     'a held client that closed: its connection ended before its Freeze did')

            replies = send_and_half_close(path, message(1, 'Freeze', 'stt', ('/t', LONG_USEC, 0)),
                                          before_read=lambda: (time.sleep(0.5), fuse.release()))
            ft.check_equal({k: v[:2] for k, v in replies.items()}, {1: (MessageType.method_return, None)},
                           'SHUT_WR after a Freeze that succeeds later: its reply came, then EOF')
            sc.wait_events('/t', frozen=1)
            sc.wait_events('/u', frozen=1)
            ft.check(True, "the closed client's Freeze of /u was carried out")
            fds_back()

            warnings = daemon.warnings()
            ft.check_equal(warnings, [], 'freezerd logged no warning')


if __name__ == '__main__':
    ft.run(test)
