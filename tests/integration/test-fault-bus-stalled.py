#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A new bus caller's uid is asked for without stopping freezerd: while
dbus-daemon does not answer, the private socket and the kernel's events are
served, and the caller's calls wait, in order.

  /a   empty: frozen by the bus caller X, whose uid freezerd does not know yet
  /b   empty: frozen over the private socket meanwhile
  /c   frozen and thawed behind freezerd's back meanwhile

Steps:
  1. freezerd stopped (SIGSTOP), X (a new connection on the bus) sends
     Freeze /a, then Thaw /a, then Freeze /a without waiting, and a round trip
     to dbus-daemon, which has then passed all three on.
  2. dbus-daemon stopped, freezerd continued: it reads X's calls and asks
     dbus-daemon who X is (GetConnectionUnixUser), which cannot answer.
  3. Over the private socket, Freeze /b returns with /b frozen (a freezerd
     that asked synchronously waits for sd-bus's 25 s timeout here: the call
     fails the test's deadline, 5 s, 15 s under ASan), and GetGroup /c follows a write of /c's
     cgroup.freeze behind freezerd's back (its FreezerState says frozen).
  4. /a is untouched: X's calls wait.
  5. dbus-daemon continued: X's three calls are answered in order, and /a
     ends frozen (the last one), its flag 1.
  6. Once more with a new caller Y's Freeze /d waiting, freezerd is stopped
     (SIGTERM): it exits 0 within the test's deadline, and once dbus-daemon
     continues, Y's call is answered Cancelled ("shutting down; nothing was
     done"), /d untouched.
  7. A client subscribed to every group's signals, dbus-daemon stopped, and
     /big (2,000 groups) frozen and thawed 20 times over the private socket,
     each change sent before the next call (a GroupsChanged seen by another
     private connection): more signals than the socket to dbus-daemon holds
     wait in freezerd.
     SIGTERM: freezerd exits 0 within the deadline, saying in its log that it
     left without them (sd_bus_flush() at exit would wait for dbus-daemon for
     ever: session 27's build hangs here).
  8. A client whose calls freezerd has to follow on the bus (until it leaves):
     Z, whose uid freezerd knows (a GetGroup first), sends AddPressureTrigger
     on /e and Subscribe while freezerd is stopped; dbus-daemon stopped,
     freezerd continued: a call over the private socket is answered within the
     deadline (freezerd asked the bus whether Z is still there and waited for
     the answer, sd-bus's 25 s, in sd_bus_track_add_name()); dbus-daemon
     continued: Z's calls succeed, and once Z leaves its trigger goes
     (freezerd's fd count is back).  Then Z2 sends AddPressureTrigger and
     leaves before freezerd reads it: the bus's answer that Z2 is gone ends
     the trigger (the fd count is back).  Left out where the kernel has no
     pressure stall information for cgroups.
"""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LONG_USEC = 60 * 1000000
# s: what freezerd gets for each step, well below the 25 s (sd-bus' timeout) that a freezerd
# that waits for the stopped dbus-daemon takes; longer for a slower build (ASan: 15 s).
DEADLINE = min(5 * ft.TIMEOUT_MULTIPLIER, 15)
WINDOW = 2_000_000          # usec: a whole multiple of 2 s (freezerd lacks CAP_SYS_RESOURCE)
THRESHOLD = 100_000         # usec
BIG = 2000
# 80,000 group changes: four cycles fill the 16 MB socket buffer sd-bus asks for.
CYCLES = 20


def stall(d, bus, caller, send):
    """With freezerd stopped, send(caller)'s calls (a list of PendingCall), and a
    round trip to dbus-daemon, which handles a connection's messages in order:
    once it answered, it has passed the calls on.  Then dbus-daemon is stopped
    and freezerd continued: it reads the calls and asks dbus-daemon who sent
    them.  Returns the calls; dbus-daemon is stopped if bus.stopped."""
    os.kill(d.pid, signal.SIGSTOP)
    try:
        calls = send(caller)
        caller.call_method('/org/freedesktop/DBus', 'org.freedesktop.DBus', 'GetId', destination='org.freedesktop.DBus')
        os.kill(bus.proc.pid, signal.SIGSTOP)
        bus.stopped = True
    finally:
        os.kill(d.pid, signal.SIGCONT)
    return calls


def resume(bus):
    if getattr(bus, 'stopped', False):
        os.kill(bus.proc.pid, signal.SIGCONT)
        bus.stopped = False


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('fault-bus-stalled') as sc, ft.Bus() as bus:
        for p in ('/a', '/b', '/c'):
            sc.mkdir(p)
        with ft.Daemon(bus, sc.root) as d:
            private = os.path.join(d.runtime_dir, 'private')
            ft.wait_for(lambda: os.path.exists(private), what='the private socket')
            with ft.Client(f'unix:path={private}', direct=True) as p, ft.Client(bus.address) as x:
                try:
                    calls = stall(d, bus, x, lambda c: [c.call_async('Freeze', '/a', LONG_USEC, 0),
                                                        c.call_async('Thaw', '/a', LONG_USEC, 0),
                                                        c.call_async('Freeze', '/a', LONG_USEC, 0)])
                    p.call('Freeze', '/b', LONG_USEC, 0, timeout=DEADLINE)
                    ft.check_equal(sc.read_freeze('/b'), 1, 'dbus-daemon stopped: Freeze /b over the private '
                                   'socket returns, flag 1')
                    ft.check_equal(sc.frozen('/b'), True, 'and /b is frozen')

                    sc.write_freeze('/c', 1)
                    ft.wait_for(lambda: p.group_property('/c', 'FreezerState') == 'frozen', timeout=DEADLINE,
                                what='/c frozen behind freezerd\'s back, seen over the private socket')
                    ft.check_equal(p.group_property('/c', 'FreezerState'), 'frozen',
                                   'dbus-daemon stopped: a write of /c behind freezerd\'s back is followed')

                    ft.check(not any(c.done() for c in calls), 'dbus-daemon stopped: none of X\'s calls answered',
                             [c.done() for c in calls])
                    ft.check_equal(sc.read_freeze('/a'), 0, 'dbus-daemon stopped: /a untouched (X\'s calls wait)')
                finally:
                    resume(bus)

                ft.check_equal([tuple(c.result(DEADLINE)) for c in calls], [()] * 3,
                               'dbus-daemon continued: X\'s three calls answered, none failed')
                # Freeze, Thaw, Freeze: the Thaw last (out of order) would leave 0.
                ft.check_equal(sc.read_freeze('/a'), 1, 'and /a ends with its flag 1 (the calls ran in order)')
                ft.check_equal(sc.frozen('/a'), True, '/a frozen')

        sc.mkdir('/d')
        with ft.Daemon(bus, sc.root) as d:
            private = os.path.join(d.runtime_dir, 'private')
            ft.wait_for(lambda: os.path.exists(private), what='the private socket')
            with ft.Client(bus.address) as y:
                try:
                    with ft.Client(f'unix:path={private}', direct=True) as p:
                        call, = stall(d, bus, y, lambda c: [c.call_async('Freeze', '/d', LONG_USEC, 0)])
                        # A round trip on the private socket: freezerd's loop has read
                        # the bus (ready before it) by the time it answers.
                        p.call('ListGroups', timeout=DEADLINE)
                    d.stop(timeout=DEADLINE)
                    ft.check_equal(d.exit_status, 0, 'SIGTERM with a caller waiting for dbus-daemon: exit 0')
                finally:
                    resume(bus)
                ft.expect_dbus_error('org.freezerd.Freezer1.Error.Cancelled', call.result, DEADLINE)
                ft.check_equal(sc.read_freeze('/d'), 0, '/d untouched')

        sc.mkdir('/big')
        for i in range(BIG):
            os.mkdir(sc.abspath(f'/big/g{i}'))
        with ft.Daemon(bus, sc.root) as d:
            private = os.path.join(d.runtime_dir, 'private')
            ft.wait_for(lambda: os.path.exists(private), what='the private socket')
            with ft.Client(bus.address) as s:
                s.subscribe()
                try:
                    os.kill(bus.proc.pid, signal.SIGSTOP)
                    bus.stopped = True
                    with ft.Client(f'unix:path={private}', direct=True) as p, \
                            ft.Client(f'unix:path={private}', direct=True) as w:
                        # Each change sent before the next call: freezerd sends what
                        # changed over a loop turn, so a Thaw read in the Freeze's
                        # turn leaves nothing to send (the deduced groups of /big flip
                        # back in its model); w's GroupsChanged comes in the same turn.
                        w.call('SubscribeGroups')
                        rec = ft.SignalRecorder(w)
                        for _ in range(CYCLES):
                            for method, frozen in (('Freeze', True), ('Thaw', False)):
                                rec.clear()
                                p.call(method, '/big', LONG_USEC, 0, timeout=DEADLINE)
                                rec.wait_for(lambda r: frozen in r.group_values(f'/big/g{BIG - 1}', 'Frozen'),
                                             timeout=DEADLINE, what=f'GroupsChanged of the {method} of /big')
                    d.stop(timeout=DEADLINE)
                    ft.check_equal(d.exit_status, 0, f'SIGTERM with the signals of {2 * CYCLES * BIG} group changes '
                                   'waiting for a stopped dbus-daemon: exit 0 within the deadline')
                    ft.check("The bus did not take freezerd's last messages in time" in d.log(),
                             'the log says it left without them', d.log()[-1000:])
                finally:
                    resume(bus)

        # The freezerd before left while dbus-daemon was stopped: its name is
        # free once dbus-daemon has seen it go.
        with ft.Client(bus.address) as b:
            ft.wait_for(lambda: not b.call_method('/org/freedesktop/DBus', 'org.freedesktop.DBus', 'NameHasOwner', 's',
                                                  (ft.BUS_NAME,), destination='org.freedesktop.DBus')[0],
                        timeout=DEADLINE, poll=0.05, what=f'{ft.BUS_NAME} free again')
        sc.mkdir('/e')
        if not (os.path.exists('/proc/pressure/cpu') and os.path.exists(sc.abspath('/e', 'cpu.pressure'))):
            print('# no pressure stall information for cgroups: step 8 left out', flush=True)
            return
        with ft.Daemon(bus, sc.root) as d:
            private = os.path.join(d.runtime_dir, 'private')
            ft.wait_for(lambda: os.path.exists(private), what='the private socket')
            # The first trigger starts the watcher thread and its fds: before counting.
            d.client.group_call('/e', 'RemovePressureTrigger',
                                d.client.group_call('/e', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0])
            ft.wait_pressure_trigger_fds(d.pid, 0, 'its fd closed (by the watcher thread)', DEADLINE)
            with ft.Client(f'unix:path={private}', direct=True) as p:
                p.call('ListGroups', timeout=DEADLINE)  # freezerd has taken the connection
                fds = ft.fd_count(d.pid)
                z = ft.Client(bus.address)
                try:
                    z.call('GetGroup', '/e')
                    calls = stall(d, bus, z, lambda c: [
                        c.group_call_async('/e', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW),
                        c.send_call(ft.MANAGER_PATH, ft.MANAGER_IFACE, 'Subscribe')])
                    p.call('ListGroups', timeout=DEADLINE)
                    ft.check(True, 'dbus-daemon stopped, a new trigger owner and subscriber: the private socket '
                             'is served')
                finally:
                    resume(bus)
                tid, = calls[0].result(DEADLINE)
                ft.check(tid > 0, 'dbus-daemon continued: Z\'s AddPressureTrigger succeeded', tid)
                ft.check_equal(tuple(calls[1].result(DEADLINE)), (), 'and its Subscribe')
                ft.check_equal(ft.fd_count(d.pid), fds + 1, 'Z\'s trigger holds one fd')
                z.close()
                ft.wait_for(lambda: ft.fd_count(d.pid) == fds, timeout=DEADLINE, poll=0.02,
                            what='Z left: its trigger gone (freezerd\'s fd count back)')

                z2 = ft.Client(bus.address)
                z2.call('GetGroup', '/e')
                os.kill(d.pid, signal.SIGSTOP)
                try:
                    z2.group_call_async('/e', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)
                    z2.call_method('/org/freedesktop/DBus', 'org.freedesktop.DBus', 'GetId',
                                   destination='org.freedesktop.DBus')
                    z2.close()
                finally:
                    os.kill(d.pid, signal.SIGCONT)
                # Round trips: freezerd has read Z2's call, and the bus's answer about Z2.
                p.call('ListGroups', timeout=DEADLINE)
                d.client.call('ListGroups', timeout=DEADLINE)
                ft.wait_for(lambda: ft.fd_count(d.pid) == fds, timeout=DEADLINE, poll=0.02,
                            what='Z2 left before freezerd read its AddPressureTrigger: no trigger left')


ft.run(test)
