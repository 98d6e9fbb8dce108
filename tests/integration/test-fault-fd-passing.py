#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Clients that pass file descriptors (SCM_RIGHTS) to freezerd, which takes none.

freezerd's calls carry no fds.  A call that carried some would keep them open
in freezerd for as long as freezerd keeps the call: a Freeze that waits for the
kernel holds it until its timeout, whether or not the caller is still there.
Before session 33 freezerd accepted fds on the bus and on the private socket,
and ten such calls of 16 fds each held 160 of its descriptors for a minute: any
client could so use up its RLIMIT_NOFILE, and then freezerd could open no
cgroup file and accept no connection.

  /s   a task blocked on a FUSE mount that never answers: a freeze never completes

Checks:
  * On the bus, a client that negotiated fd passing (jeepney, enable_fds) sends
    ten waiting Freeze of /s (60 s timeout), each with 16 fds attached: each is
    refused with an error reply (dbus-daemon's: freezerd cannot take fds), and
    freezerd's fd count (/proc/PID/fd) is where it was before; /s is not frozen.
  * On the private socket, freezerd answers the authentication's
    NEGOTIATE_UNIX_FD with ERROR (jeepney's FDNegotiationError).  A client that
    sends a Freeze with 16 fds anyway is disconnected, and freezerd's fd count
    returns where it was.
  * freezerd serves on: `freezectl --socket=... freeze /g` and thaw work, and
    it logged no warning."""

import array
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402
from jeepney import DBusAddress, HeaderFields, MessageType, Parser, message_bus, new_method_call  # noqa: E402
from jeepney.auth import FDNegotiationError  # noqa: E402
from jeepney.bus import get_bus  # noqa: E402
from jeepney.io.blocking import prep_socket  # noqa: E402

N_FDS = 16  # dbus-daemon's default limit per message on a session bus is larger
CALLS = 10
TIMEOUT_USEC = 60_000_000


def fd_targets(pid):
    """What freezerd's fds are, for the log where a count moved."""
    out = []
    for fd in sorted(os.listdir(f'/proc/{pid}/fd'), key=int):
        try:
            out.append(f'{fd}:{os.readlink(f"/proc/{pid}/fd/{fd}")}')
        except OSError:
            pass
    return ' '.join(out)


def check_no_fd_kept(pid, before, before_targets, what):
    """No fd of the calls stays in freezerd: its count is not above the start's.  Not
    "equal": once in CI (loaded, werror build) freezerd had one fd more at READY than
    later, closed meanwhile by itself; a kept call's fds would be N_FDS a call."""
    n = ft.fd_count(pid)
    if n != before:
        print(f'# freezerd had {before} fds at the start, {n} now; at the start: {before_targets}; '
              f'now: {fd_targets(pid)}', flush=True)
    ft.check(n <= before, f'{what}: got {n}, at most {before}')


def freeze_with_fds(sock, serial, fd):
    msg = new_method_call(DBusAddress(ft.MANAGER_PATH, ft.BUS_NAME, ft.MANAGER_IFACE), 'Freeze', 'stt',
                          ('/s', TIMEOUT_USEC, 0))
    msg.header.fields[HeaderFields.unix_fds] = N_FDS
    sock.sendmsg([msg.serialise(serial)],
                 [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [fd] * N_FDS))])


def read_replies(sock, parser, want):
    """The replies to serials in want: {serial: message}, until all came or the peer closed
    (None stands for the reset of a peer that closed with our messages unread)."""
    got = {}
    while not want <= got.keys():
        try:
            data = sock.recv(1 << 16)
        except TimeoutError:  # freezerd took the calls and waits for the kernel
            break
        except ConnectionResetError:
            got[None] = None
            break
        if not data:
            break
        parser.add_data(data)
        while (msg := parser.get_next_message()) is not None:
            serial = msg.header.fields.get(HeaderFields.reply_serial)
            if serial in want:
                got[serial] = msg
    return got


def closed_by_peer(sock):
    try:
        while sock.recv(1 << 16):
            pass
    except ConnectionResetError:
        pass
    return True


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl', 'fuse')
    with ft.Scratch('fault-fd-passing') as sc, ft.Bus() as bus, ft.FuseHang() as fuse, \
            open('/dev/null', 'rb') as devnull:
        sc.mkdir('/g')
        sc.spawn_sleepers('/g', 1)
        fuse.spawn_stuck(sc, '/s')
        with ft.Daemon(bus, sc.root) as daemon:
            path = os.path.join(daemon.runtime_dir, 'private')
            pid = daemon.pid
            before = ft.fd_count(pid)
            before_targets = fd_targets(pid)

            sock = prep_socket(get_bus(bus.address), enable_fds=True, timeout=ft.DEFAULT_TIMEOUT)
            try:
                sock.settimeout(ft.DEFAULT_TIMEOUT)  # prep_socket() leaves it blocking
                sock.sendall(message_bus.Hello().serialise(1))
                serials = set(range(2, 2 + CALLS))
                try:
                    for serial in sorted(serials):
                        freeze_with_fds(sock, serial, devnull.fileno())
                except (BrokenPipeError, ConnectionResetError):
                    pass  # dbus-daemon dropped us (see below): read what it answered
                # Hello's reply, then one per call.
                replies = read_replies(sock, Parser(), serials | {1})
                errors = [r for s, r in replies.items() if s in serials and r.header.message_type == MessageType.error]
                check_no_fd_kept(pid, before, before_targets, "freezerd holds none of the calls' fds (its fd count)")
                if None in replies:
                    # On a loaded machine dbus-daemon now and then resets such a
                    # sender's connection instead, with calls of ours unread (seen with
                    # freezerd builds of sessions 33 and 34 alike): none reached freezerd.
                    answered = [r for s, r in replies.items() if s in serials]
                    print(f'# dbus-daemon reset the sender after {len(answered)} replies', flush=True)
                    ft.check_equal(len(errors), len(answered),
                                   'on the bus, each Freeze that carried fds and got a reply got an error')
                else:
                    ft.check_equal(len(errors), CALLS, 'on the bus, each Freeze that carried fds got an error reply')
                if errors:
                    print(f'# the error: {errors[0].header.fields.get(HeaderFields.error_name)}: {errors[0].body}')
            finally:
                sock.close()
            ft.check(not daemon.client.group_property('/s', 'Frozen'), 'nothing was written to /s')

            try:
                s = prep_socket(get_bus(f'unix:path={path}'), enable_fds=True, timeout=ft.DEFAULT_TIMEOUT)
                s.close()
                ft.fail('freezerd agreed to take fds on the private socket')
            except FDNegotiationError:
                ft.check(True, 'the private socket refuses NEGOTIATE_UNIX_FD')

            conn = ft._direct_connection(f'unix:path={path}')
            try:
                freeze_with_fds(conn.sock, 1, devnull.fileno())
                ft.check(closed_by_peer(conn.sock), 'a client that sends fds anyway is disconnected')
            finally:
                conn.close()
            ft.wait_for(lambda: ft.fd_count(pid) <= before, poll=0.05,
                        what=f"freezerd's fd count back to {before} at most (it has {ft.fd_count(pid)})")
            ft.check(not daemon.client.group_property('/s', 'Frozen'), 'nothing was written to /s')

            ft.freezectl('freeze', '/g', socket=path)
            ft.check_equal(sc.read_events('/g').get('frozen'), 1, 'freezectl over the private socket works: /g frozen')
            ft.freezectl('thaw', '/g', socket=path)
            warnings = daemon.warnings()
            ft.check_equal(warnings, [], 'freezerd logged no warning')


if __name__ == '__main__':
    ft.run(test)
