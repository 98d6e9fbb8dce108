#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A bus caller's calls run in the order it sent them, also when its uid came
while freezerd asked the bus synchronously for another caller's.

freezerd holds the calls of a caller whose uid it does not know yet, asks the
bus for it asynchronously (at most 256 names at a time), and puts the held
calls back in sd-bus's read queue once the answer comes.  The 257th new name
is asked synchronously, and while sd-bus waits for that answer it queues
whatever else it reads: the answer for an earlier name, and that name's next
call, may both be in the queue then.  The held calls, put back at the end of
the queue, came out behind that next call: a Freeze then Thaw ran as Thaw then
Freeze, and the group stayed frozen.

  /a   empty
  /b   empty: frozen by B, whose uid freezerd asks synchronously

Steps (each "sent" is followed by a round trip of that connection to
dbus-daemon, which passes a connection's messages on in order):
  1. freezerd stopped (SIGSTOP).  A sends Freeze /a; D sends PINGS Peer.Ping;
     255 new connections N1..N255 send GetGroup /; B sends Freeze /b.
  2. freezerd continued: it holds A's Freeze and asks who A is; the pings keep
     it busy; N1..N255 fill the 256 names asked at a time, so B's Freeze
     asks synchronously, after the answer about A and A's next call (step 3)
     are in freezerd's socket.  Once D has the reply to its first ping,
     freezerd has asked who A is, and dbus-daemon has queued its answer to
     freezerd (it handles freezerd's messages in order); freezerd is stopped
     again.
  3. A sends Thaw /a (behind the answer about A); freezerd continued.
  4. A's Freeze is answered before its Thaw, and /a ends thawed (flag 0);
     every other call is answered.
  5. A call that needs no uid is not held: with `busctl monitor` watching the
     bus, a new caller W sends RemovePressureTrigger (a trigger is its
     connection's, whoever it is), then GetGroup /.  freezerd asks the bus who W
     is (GetConnectionUnixUser) only after W's GetGroup, not before the answer
     to its RemovePressureTrigger (it did: that call waited for a round trip to
     dbus-daemon it had no use for).  Left out without busctl.
"""

import json
import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LONG_USEC = 60 * 1000000
DEADLINE = 30
PINGS = 20000     # freezerd's work between asking who A is and asking who B is
NAMES = 255       # with A, the 256 names freezerd asks about at a time


def round_trip(c):
    c.call_method('/org/freedesktop/DBus', 'org.freedesktop.DBus', 'GetId', destination='org.freedesktop.DBus',
                  timeout=DEADLINE)


def ping(c):
    return c.send_call('/', 'org.freedesktop.DBus.Peer', 'Ping')


class Monitor:
    """`busctl monitor` of the whole bus: its messages, parsed, as they arrive."""

    def __init__(self, bus):
        self.proc = subprocess.Popen(['busctl', f'--address={bus.address}', '--json=short', 'monitor'],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.messages, self.err = [], ''
        self._buf = b''
        for f in (self.proc.stdout, self.proc.stderr):
            os.set_blocking(f.fileno(), False)
        ft.loop().add_reader(self.proc.stdout, self._read)
        ft.loop().add_reader(self.proc.stderr, self._read_err)
        ft.wait_for(lambda: 'Monitoring' in self.err or self.proc.poll() is not None, timeout=DEADLINE,
                    what='busctl monitor to start')
        ft.check(self.proc.poll() is None, 'busctl monitor runs', self.err)

    def _read(self):
        data = os.read(self.proc.stdout.fileno(), 65536)
        if not data:
            ft.loop().remove_reader(self.proc.stdout)
            return
        *done, self._buf = (self._buf + data).split(b'\n')
        for line in done:
            try:
                self.messages.append(json.loads(line))
            except ValueError:
                pass

    def _read_err(self):
        data = os.read(self.proc.stderr.fileno(), 65536)
        if not data:
            ft.loop().remove_reader(self.proc.stderr)
            return
        self.err += data.decode(errors='replace')

    def index(self, pred):
        """The index of the first message that pred accepts, or None."""
        return next((i for i, m in enumerate(self.messages) if pred(m)), None)

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            ft.loop().remove_reader(f)
            f.close()


def check_remove_trigger_needs_no_uid(bus):
    """Step 5."""
    if shutil.which('busctl') is None:
        print('# no busctl: step 5 left out', flush=True)
        return
    mon = Monitor(bus)
    try:
        with ft.Client(bus.address) as w:
            e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, w.call, 'RemovePressureTrigger', 12345, timeout=DEADLINE)
            ft.check('No pressure trigger 12345' in e.message, 'W: RemovePressureTrigger of an unknown id fails',
                     e.message)
            w.call('GetGroup', '/', timeout=DEADLINE)

            def is_call(m, member):
                return m.get('type') == 'method_call' and m.get('sender') == w.unique_name \
                    and m.get('member') == member

            def asks_who_w(m):
                return m.get('type') == 'method_call' and m.get('member') == 'GetConnectionUnixUser' \
                    and m.get('payload', {}).get('data') == [w.unique_name]

            def replies_to_w(m):  # freezerd's, not dbus-daemon's (Hello's)
                return m.get('type') in ('method_return', 'error') and m.get('destination') == w.unique_name \
                    and m.get('sender') != 'org.freedesktop.DBus'

            ft.wait_for(lambda: mon.index(asks_who_w) is not None
                        and sum(replies_to_w(m) for m in mon.messages) >= 2,
                        timeout=DEADLINE, what='busctl monitor to show freezerd asking who W is, and W\'s replies')
            asked = mon.index(asks_who_w)
            first_reply = mon.index(replies_to_w)
            get_group = mon.index(lambda m: is_call(m, 'GetGroup'))
            ft.check(mon.index(lambda m: is_call(m, 'RemovePressureTrigger')) < first_reply,
                     'busctl monitor shows W\'s RemovePressureTrigger and its answer')
            ft.check(first_reply < asked and get_group < asked,
                     'freezerd asked who W is after W\'s GetGroup, not for its RemovePressureTrigger',
                     f'asked at {asked}, the RemovePressureTrigger answered at {first_reply}, '
                     f'GetGroup sent at {get_group}')
    finally:
        mon.close()


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('fault-uid-order') as sc, ft.Bus() as bus:
        sc.mkdir('/a')
        sc.mkdir('/b')
        with ft.Daemon(bus, sc.root) as d, ft.Client(bus.address) as a, ft.Client(bus.address) as dd, \
                ft.Client(bus.address) as b:
            others = []
            try:
                for _ in range(NAMES):
                    others.append(ft.Client(bus.address))
                stopped = True
                os.kill(d.pid, signal.SIGSTOP)
                try:
                    freeze = a.call_async('Freeze', '/a', LONG_USEC, 1)  # NO_WAIT
                    round_trip(a)
                    pings = [ping(dd) for _ in range(PINGS)]
                    round_trip(dd)
                    lookups = [o.call_async('GetGroup', '/') for o in others]
                    for o in others:
                        round_trip(o)
                    late = b.call_async('Freeze', '/b', LONG_USEC, 1)  # asks who B is
                    round_trip(b)

                    os.kill(d.pid, signal.SIGCONT)
                    stopped = False
                    ft.wait_for(pings[0].done, timeout=DEADLINE, what='the reply to D\'s first ping')
                    os.kill(d.pid, signal.SIGSTOP)
                    stopped = True
                    answered = sum(p.done() for p in pings)
                    ft.check(answered < PINGS and not late.done(),
                             'freezerd stopped again while busy with the pings, before B\'s call',
                             f'{answered} of {PINGS} pings answered, B answered: {late.done()}')
                    thaw = a.call_async('Thaw', '/a', LONG_USEC, 1)
                    round_trip(a)
                finally:
                    if stopped:
                        os.kill(d.pid, signal.SIGCONT)

                ft.wait_for(lambda: freeze.done() and thaw.done(), timeout=DEADLINE, what='A\'s two calls answered')
                # A dict keeps its keys in the order they came: the replies' arrival.
                arrival = [s for s in a.replies if s in (freeze.serial, thaw.serial)]
                ft.check_equal(arrival, [freeze.serial, thaw.serial], 'A\'s Freeze answered before its Thaw')
                ft.check_equal(tuple(freeze.result(DEADLINE)), (), 'Freeze /a succeeded')
                ft.check_equal(tuple(thaw.result(DEADLINE)), (), 'Thaw /a succeeded')
                ft.check_equal(sc.read_freeze('/a'), 0, '/a ends with its flag 0 (Thaw ran last)')
                ft.wait_for(lambda: not sc.frozen('/a'), timeout=DEADLINE, what='/a thawed')
                ft.check_equal(tuple(late.result(DEADLINE)), (), 'B\'s Freeze /b succeeded')
                for c in lookups:
                    c.result(DEADLINE)
                for p in pings:
                    p.result(DEADLINE)
            finally:
                for o in others:
                    o.close()
            check_remove_trigger_needs_no_uid(bus)


ft.run(test)
