#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A client on the private socket that sends calls with big replies and never reads them.

freezerd bounded what it queues for a connection by the count of messages
alone (65,536, whatever their size): 3,000 GetManagedObjects over 200 groups
took its RSS from 4 MB to 248 MB (before session 35).  Now the memory those
queues take is bounded in bytes too: past PRIVATE_BUS_QUEUED_HEAP_MAX (64 MiB)
of heap above what freezerd held when its queues began to grow, freezerd closes
the connection with the most messages queued, with the same log line as for
the count ("does not read its replies or signals").

  /g0 ... /g199   empty groups

Checks:
  * One direct connection sends 4,000 GetManagedObjects (each reply about
    130 KB of heap) without reading: freezerd logs that it "does not read its
    replies or signals" and closes it.
  * Four connections send 1,000 each, taking turns (fewer than a bound of the
    count per connection would let through, more than 64 MiB for each): each
    is closed, with that line.
  * freezerd's peak RSS (VmHWM) stayed within 96 MiB of its RSS before (64 MiB
    of queued replies, the rest for what the heap holds besides; not compared
    under AddressSanitizer, whose quarantine keeps freed memory resident).
    Before session 35 it passed that bound within the first connection's calls
    (some 300 MB).
  * freezerd serves on: a Get on the bus and one on another private
    connection, and it logged no other warning."""

import os
import select
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402
from jeepney import DBusAddress, new_method_call  # noqa: E402

GROUPS = 200
CALLS = 4000
MANY = 4
MANY_CALLS = 1000
CLOSED = 'does not read its replies or signals'
HWM_SLACK_KIB = 96 * 1024


def hwm_kib(pid):
    """VmHWM (the peak of VmRSS) of a process, in KiB."""
    with open(f'/proc/{pid}/status') as f:
        return next(int(line.split()[1]) for line in f if line.startswith('VmHWM:'))


def send_all(socks, data):
    """Send data on each socket, taking turns, until all of it went or freezerd closed the socket."""
    left = {sock: memoryview(data) for sock in socks}
    for sock in socks:
        sock.setblocking(False)
    deadline = time.monotonic() + 6 * ft.DEFAULT_TIMEOUT
    while left:
        if time.monotonic() >= deadline:
            ft.fail(f'freezerd did not read what was sent: {len(left)} sockets still full')
        for sock in select.select([], list(left), [], 1)[1]:
            try:
                left[sock] = left[sock][sock.send(left[sock]):]
            except BlockingIOError:
                continue
            except OSError as e:  # freezerd closed it
                print(f'# the sending ended: {e}', flush=True)
                left[sock] = b''
            if not left[sock]:
                del left[sock]


def eof_within(sock):
    """Read what sock holds until freezerd closes it (True), for at most ft.DEFAULT_TIMEOUT."""
    sock.settimeout(ft.DEFAULT_TIMEOUT)
    try:
        while sock.recv(1 << 20):
            pass
        return True
    except ConnectionResetError:
        return True
    except OSError:
        return False


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('fault-private-noread') as sc, ft.Bus() as bus:
        for i in range(GROUPS):
            sc.mkdir(f'/g{i}')
        with ft.Daemon(bus, sc.root) as daemon:
            path = os.path.join(daemon.runtime_dir, 'private')
            other = ft.Client(f'unix:path={path}', direct=True)
            version = other.manager_property('Version')
            asan = ft.under_asan(daemon.pid)
            rss = ft.rss_kib(daemon.pid)
            bound = max(rss, hwm_kib(daemon.pid)) + HWM_SLACK_KIB

            call = new_method_call(DBusAddress(ft.MANAGER_PATH, ft.BUS_NAME, ft.OBJECT_MANAGER_IFACE),
                                   'GetManagedObjects')
            for conns, calls in ((1, CALLS), (MANY, MANY_CALLS)):
                what = f'{conns} connection{"s" if conns > 1 else ""} sending {calls} calls each'
                closed_before = daemon.log().count(CLOSED)
                socks = [ft._direct_connection(f'unix:path={path}').sock for _ in range(conns)]
                send_all(socks, b''.join(call.serialise(i + 1) for i in range(calls)))
                # Until freezerd closed them all, or (before session 35) its RSS went past the bound.
                ft.wait_for(lambda: daemon.log().count(CLOSED) >= closed_before + conns or
                            (not asan and hwm_kib(daemon.pid) > bound),
                            timeout=6 * ft.DEFAULT_TIMEOUT, poll=0.05,
                            what=f'freezerd to log that each client "{CLOSED}" ({what})')
                peak = hwm_kib(daemon.pid)
                print(f'# {what}: RSS before {rss} KiB, peak {peak} KiB', flush=True)
                if asan:
                    print('# the peak not compared under AddressSanitizer', flush=True)
                else:
                    ft.check(peak <= bound, f"freezerd's peak RSS within {HWM_SLACK_KIB} KiB of {rss} KiB ({what})",
                             f'it reached {peak} KiB')
                ft.check_equal(daemon.log().count(CLOSED) - closed_before, conns,
                               f'freezerd logged that each client "{CLOSED}" ({what})')
                ft.check(all(eof_within(sock) for sock in socks),
                         f'freezerd closed the connections that do not read ({what})')
                for sock in socks:
                    sock.close()

            ft.check_equal((daemon.client.manager_property('Version'), other.manager_property('Version')),
                           (version, version), 'freezerd serves on, on the bus and on the private socket')
            other.close()
            warnings = daemon.warnings(besides=CLOSED)
            ft.check_equal(warnings, [], 'freezerd logged no other warning')


if __name__ == '__main__':
    ft.run(test)
