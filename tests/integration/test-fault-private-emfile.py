#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The private socket when freezerd runs out of file descriptors.

accept4() then fails with EMFILE while the listening socket stays readable:
listening on would spin.  freezerd logs it, stops listening for a second, and
accepts again after that.

  /g   one sleeper

Checks:
  * With freezerd's RLIMIT_NOFILE lowered (prlimit) to two above the fds it has
    open, six connections to its private socket: freezerd logs "Cannot accept a
    connection ... Too many open files".
  * It does not spin meanwhile: over the next half second its CPU time grows by
    at most one tick (utime+stime of /proc/PID/stat) and its voluntary context
    switches by at most two (a retry a second).
  * Once the limit is back and those connections are closed, `freezectl
    --socket=... freeze /g` works again within the deadline (the retry timer;
    no event of ours tells when, hence the retries), and the bus served all along
    (a Ping during the pause)."""

import os
import resource
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def voluntary_switches(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('voluntary_ctxt_switches:'):
                return int(line.split()[1])
    return 0


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    with ft.Scratch('fault-private-emfile') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        sc.spawn_sleepers('/g', 1)
        with ft.Daemon(bus, sc.root) as daemon:
            path = os.path.join(daemon.runtime_dir, 'private')
            pid = daemon.pid
            old = resource.prlimit(pid, resource.RLIMIT_NOFILE)
            socks = []
            try:
                n_fds = len(os.listdir(f'/proc/{pid}/fd'))
                resource.prlimit(pid, resource.RLIMIT_NOFILE, (n_fds + 2, old[1]))
                for _ in range(6):
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.connect(path)  # completes in the backlog whether or not freezerd accepts
                    socks.append(s)
                ft.wait_for(lambda: 'Cannot accept a connection' in daemon.log(), poll=0.05,
                            what='freezerd logs that accept failed')
                ft.check('Too many open files' in daemon.log(), 'the log line says why', daemon.log()[-1000:])

                daemon.client.call_method('/org/freezerd/Freezer1', 'org.freedesktop.DBus.Peer', 'Ping')
                ft.check(True, 'the bus is served during the pause (Peer.Ping)')
                # The window starts after the Ping, whose handling (slower under a sanitizer,
                # and charged with a VM's stolen time while it runs) could take a tick of its own.
                t0, v0 = ft.proc_cpu_ticks(pid), voluntary_switches(pid)
                time.sleep(0.5)  # a window to measure idleness in, not a wait for an event
                dt, dv = ft.proc_cpu_ticks(pid) - t0, voluntary_switches(pid) - v0
                ft.check(dt <= 1 and dv <= 6, 'freezerd does not spin on the readable socket',
                         f'+{dt} ticks, +{dv} voluntary switches in 0.5 s')
            finally:
                resource.prlimit(pid, resource.RLIMIT_NOFILE, old)
                for s in socks:
                    s.close()
            ft.wait_for(lambda: ft.freezectl('freeze', '/g', socket=path, check=False).returncode == 0, poll=0.1,
                        what='freezectl over the socket works again once fds are free')
            ft.check_equal(sc.read_events('/g').get('frozen'), 1, 'the freeze went through: frozen 1')
            ft.freezectl('thaw', '/g', socket=path)


if __name__ == '__main__':
    ft.run(test)
