#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezectl's default as root: /run/freezerd/private, the socket of a freezerd with its
default runtime directory.

The machine's /run is not touched: the test moves itself into a mount namespace of
its own (unshare(CLONE_NEWNS), every mount made private) and mounts a tmpfs on /run
there; freezerd, dbus-daemon and freezectl are its children and see the same.  The
namespace and its mounts end with the test's process.

  /g   two sleepers

Checks:
  * freezerd with --runtime-dir=/run/freezerd (its default) listens on
    /run/freezerd/private.
  * `freezectl freeze /g` and `thaw /g` as root with no bus option and the system
    bus pointing nowhere (DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent): exit 0,
    the kernel at frozen 1, then 0: they went over the private socket, the only
    way to freezerd left.
  * `freezectl --system status /g` with that system bus fails (exit 1, one line
    naming the bus): --system means the bus, never the socket.
  * `freezectl status /g` (the default) reads /g over the socket: running.
  * The private socket given as a bus (`--address=unix:path=/run/freezerd/private`):
    `status /g` (libsystemd, which waits for Hello's answer) fails with exit 1 and
    one line that asks whether it is a bus and names --socket.  `freeze /g` and
    `thaw /g` (by the wire, which sends the call with Hello) say what was done:
    freezerd refuses Hello but serves the call, so they exit 0 with /g at frozen
    1, then 0."""

import ctypes
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

CLONE_NEWNS = 0x00020000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
NOWHERE = 'unix:path=/nonexistent/system_bus_socket'


def private_run():
    """This process into a mount namespace of its own, with a tmpfs on /run."""
    libc = ctypes.CDLL(None, use_errno=True)
    for ret, what in ((lambda: libc.unshare(CLONE_NEWNS), 'unshare(CLONE_NEWNS)'),
                      (lambda: libc.mount(b'none', b'/', None, MS_REC | MS_PRIVATE, None), 'mount --make-rprivate /'),
                      (lambda: libc.mount(b'tmpfs', b'/run', b'tmpfs', 0, b'mode=0755'), 'mount tmpfs /run')):
        if ret() < 0:
            e = ctypes.get_errno()
            ft.skip(f'{what} failed: {os.strerror(e)}')


def freezectl(*args, check=True):
    r = subprocess.run([ft.FREEZECTL_BIN, *args], capture_output=True, text=True, timeout=ft.DEFAULT_TIMEOUT,
                       env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=NOWHERE))
    if check and r.returncode != 0:
        ft.fail(f'freezectl {" ".join(args)} exited {r.returncode}: {r.stderr}')
    return r


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    private_run()
    with ft.Scratch('core-private-default') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        sc.spawn_sleepers('/g', 2)
        with ft.Daemon(bus, sc.root, runtime_dir='/run/freezerd'):
            ft.check(os.path.exists('/run/freezerd/private'), 'freezerd listens on /run/freezerd/private')

            freezectl('freeze', '/g')
            ft.check_equal(sc.read_events('/g').get('frozen'), 1,
                           'freezectl freeze /g with no bus option and no system bus: frozen 1 when it exits 0')
            freezectl('thaw', '/g')
            ft.check_equal(sc.read_events('/g').get('frozen'), 0, 'freezectl thaw /g likewise: frozen 0')

            r = freezectl('--system', 'status', '/g', check=False)
            ft.check(r.returncode == 1 and len(r.stderr.splitlines()) == 1 and 'bus' in r.stderr,
                     '--system status with no system bus: exit 1, one line about the bus', (r.returncode, r.stderr))

            j = json.loads(freezectl('--json', 'status', '/g').stdout)
            ft.check_equal((j['path'], j['state']), ('/g', 'running'), 'freezectl status /g over the default socket')

            as_bus = '--address=unix:path=/run/freezerd/private'
            r = freezectl(as_bus, 'status', '/g', check=False)
            lines = r.stderr.splitlines()
            ft.check(r.returncode == 1 and len(lines) == 1 and 'is it a bus?' in lines[0] and '--socket' in lines[0],
                     'status with the private socket given as a bus: exit 1, one line: is it a bus? --socket',
                     (r.returncode, r.stderr))
            freezectl(as_bus, 'freeze', '/g')
            ft.check_equal(sc.read_events('/g').get('frozen'), 1,
                           'freeze with the private socket given as a bus: served, exit 0 with frozen 1')
            freezectl(as_bus, 'thaw', '/g')
            ft.check_equal(sc.read_events('/g').get('frozen'), 0, 'thaw likewise: frozen 0')


if __name__ == '__main__':
    ft.run(test)
