#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""One client that sends calls on the private socket as fast as freezerd answers them.

freezerd dispatched a connection until nothing was left to read on it.  A
client that kept its socket full (calls sent in batches of 1,000, its replies
read by a second process) kept freezerd there for as long as it went on: the
bus, the other connections and the kernel's events waited, and another
client's Get timed out (before session 33).  freezerd now gives way to the
loop after 64 messages of one connection (bus-event.c, DISPATCH_MAX).

  /g   one sleeper

Checks, while the flooder runs (a separate process, so that its writes do not
take turns with the test's own calls):
  * 20 rounds of: Get on the bus, Get on another private connection, and
    `freezectl --socket=... freeze /g` then `thaw /g` (each waits for the
    kernel's cgroup.events, handled in freezerd's loop between the flooder's
    messages): every call answered within its deadline (DEFAULT_TIMEOUT, scaled
    for sanitizer and valgrind runs).  The slowest round is printed (0.2 s here,
    1.8 s with the test held to 6% of a CPU), not bounded: it is the machine's
    load; a freezerd that does not give way answers no call at all while the
    flood goes on (before session 33: the first Get timed out).
  * The flooder is served meanwhile too: it read replies.
  * freezerd serves on once the flooder is killed.
  * A second flooder never reads its replies: once 65,536 wait for it (or they
    take 64 MiB of freezerd's heap: some 62,000 of these), freezerd
    logs that it "does not read its replies or signals" (it said "a subscriber
    ... does not read its signals" before session 33) and closes it, and its
    RSS returns to within 16 MiB of what it was before (it kept some 70 MB of
    freed replies before session 33; not compared under AddressSanitizer, whose
    quarantine keeps freed memory resident).
  * freezerd logged no other warning."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ROUNDS = 20
CLOSED = 'does not read its replies or signals'
RSS_SLACK_KIB = 16 * 1024

# argv: the tests directory, the socket, a file, "read" or "noread".  Prints
# "ready", then sends Get calls for ever; with "read", a forked child reads the
# replies and keeps the count of their bytes in the file.
FLOODER = r'''
import os, sys
sys.path.insert(0, sys.argv[1])
import freezertest as ft
from jeepney import DBusAddress, new_method_call
conn = ft._direct_connection(f'unix:path={sys.argv[2]}')
conn.sock.settimeout(None)
msg = new_method_call(DBusAddress(ft.MANAGER_PATH, ft.BUS_NAME, ft.PROPERTIES_IFACE), 'Get', 'ss',
                      (ft.MANAGER_IFACE, 'Version'))
chunk = b''.join(msg.serialise(i + 1) for i in range(1000))
if sys.argv[4] == 'read' and os.fork() == 0:
    n, fd = 0, os.open(sys.argv[3], os.O_WRONLY | os.O_CREAT, 0o600)
    while data := conn.sock.recv(1 << 20):
        n += len(data)
        os.pwrite(fd, b'%20d' % n, 0)  # in place: a reader never sees it empty
    os._exit(0)
print('ready', flush=True)
try:
    while True:
        conn.sock.sendall(chunk)
except OSError:  # freezerd closed it
    pass
'''


def start_flooder(path, count, how):
    return subprocess.Popen([sys.executable, '-c', FLOODER, os.path.dirname(ft.__file__), path, count, how],
                            stdout=subprocess.PIPE, start_new_session=True)


def stop_flooder(flooder):
    os.killpg(flooder.pid, 9)
    flooder.wait()
    flooder.stdout.close()


def replied(count):
    with open(count) as f:
        return int(f.read() or 0)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    with ft.Scratch('fault-private-flood') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        sc.spawn_sleepers('/g', 1)
        with ft.Daemon(bus, sc.root) as daemon:
            path = os.path.join(daemon.runtime_dir, 'private')
            count = os.path.join(daemon.tmpdir, 'flooder-read')
            other = ft.Client(f'unix:path={path}', direct=True)
            flooder = start_flooder(path, count, 'read')
            try:
                ft.check_equal(flooder.stdout.readline(), b'ready\n', 'the flooder connected')
                ft.wait_for(lambda: os.path.exists(count) and replied(count) > 0, poll=0.1,
                            what='the flooder to get its first replies')
                worst = 0
                for _ in range(ROUNDS):
                    t0 = time.monotonic()
                    daemon.client.manager_property('Version')
                    other.manager_property('Version')
                    ft.freezectl('freeze', '/g', socket=path)
                    ft.freezectl('thaw', '/g', socket=path)
                    worst = max(worst, time.monotonic() - t0)
                # A freezerd that keeps to the flooder answers none of them: each
                # wait above fails at its deadline, which scales; the time a round
                # takes is the machine's load's.
                ft.check(True, f'every call of {ROUNDS} rounds answered during the flood')
                print(f'# the slowest round: {worst * 1000:.1f} ms', flush=True)
                before = replied(count)
                ft.wait_for(lambda: replied(count) > before, poll=0.1,
                            what='the flooder to go on getting replies')
                ft.check(True, 'the flooder is served too')
            finally:
                stop_flooder(flooder)
            ft.check_equal(daemon.client.manager_property('Version'), other.manager_property('Version'),
                           'freezerd serves on once the flooder is gone')

            rss = ft.rss_kib(daemon.pid)
            flooder = start_flooder(path, count, 'noread')
            try:
                ft.check_equal(flooder.stdout.readline(), b'ready\n', 'a flooder that never reads connected')
                ft.wait_for(lambda: CLOSED in daemon.log(), timeout=6 * ft.DEFAULT_TIMEOUT, poll=0.1,
                            what=f'freezerd to log that the flooder "{CLOSED}"')
                ft.check(True, 'freezerd closed the flooder that does not read, and said why')
            finally:
                stop_flooder(flooder)
            if ft.under_asan(daemon.pid):
                # ASan's quarantine keeps freed memory resident by design: RSS says
                # nothing there (LeakSanitizer checks for leaks at exit).
                print(f'# RSS not compared under AddressSanitizer: {rss} -> {ft.rss_kib(daemon.pid)} KiB',
                      flush=True)
            else:
                ft.wait_for(lambda: ft.rss_kib(daemon.pid) <= rss + RSS_SLACK_KIB, poll=0.1,
                            what=f"freezerd's RSS back within {RSS_SLACK_KIB} KiB of {rss} KiB "
                                 f"(it has {ft.rss_kib(daemon.pid)} KiB)")
                ft.check(True, 'freezerd gave the memory of its queued replies back')
            ft.check_equal(other.manager_property('Version'), daemon.client.manager_property('Version'),
                           'freezerd serves on')
            other.close()
            warnings = daemon.warnings(besides=CLOSED)
            ft.check_equal(warnings, [], 'freezerd logged no other warning')


if __name__ == '__main__':
    ft.run(test)
