#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Clients that disconnect while their calls wait (issue 5, "Faults and load").

  /s   a sleeper and a task blocked (D) on a FUSE mount that never answers
       (a new one each time the last was killed): a freeze of /s waits
  /t   a sleeper: the other group of the batches

45 clients, each on a connection of its own: it sends calls that wait on /s,
checks with a property read that freezerd took them (same connection, so in
order), and closes its socket.  Then the calls end, one way per client in turn:
  timeout   Freeze(/s, 500 ms, ROLLBACK), ApplyBatch([/s, /t], 500 ms, ROLLBACK),
            Freeze(/s, 500 ms): they time out; the rollback writes /t back to
            0 (seen through inotify on its cgroup.freeze) and leaves /s at 1,
            which the last Freeze, without ROLLBACK, asked for (a timeout
            leaves its flag as requested); another client thaws /s;
  complete  Freeze(/s) twice (manager, group object), ApplyBatch([/s, /t]): the
            blocked task is killed, /s freezes, they succeed;
  cancel    Freeze(/s) three times: another client's Thaw(/s) cancels them.
Each reply goes to a client that is gone.  Throughout, freezerd must stay alive
and keep answering (another client checks the groups' states after every
round); at the end its fd count must equal the count before the first client
(after one warm-up round of each kind), it logs no error-level line, and it
exits 0 on SIGTERM.
Last, a client sends 50 Freeze(/t, NO_WAIT) while freezerd is stopped and leaves
before freezerd reads them: they are refused (its credentials cannot be had any
more), /t keeps running, and the log warns once for that client, not per call."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

CLIENTS = 45
SHORT_USEC = 500 * 1000
LONG_USEC = 120 * 1000000
KINDS = ('timeout', 'complete', 'cancel')
GONE_CALLS = 50


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    fig = ft.Figures('test-fault-disconnect')
    with ft.Scratch('fault-disconnect') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        sc.spawn_sleepers('/s', 1)
        sc.spawn_sleepers('/t', 1)
        stuck = [fuse.spawn_stuck(sc, '/s')]
        # Wake the loop when freezerd (or its rollback) writes a flag.
        for g in ('/s', '/t'):
            ft.loop().watch(sc.abspath(g, 'cgroup.freeze'), ft.Inotify.IN_MODIFY)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            rec = c.record()

            def call(method, *args):
                return fig.call(c, method, *args)

            def state(path):
                fig.reply('Get')
                return c.group_property(path, 'FreezerState')

            def wait_running(what):
                """Until freezerd reports /s and /t "running" (re-asked after each of its signals)."""
                deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
                while True:
                    n = len(c.signals)
                    got = (state('/s'), state('/t'))
                    if got == ('running', 'running'):
                        ft.check(True, f'{what}: freezerd answers: /s and /t "running"')
                        return
                    if time.monotonic() >= deadline:
                        ft.fail(f'{what}: freezerd reports {got}, expected both "running"')
                    if len(c.signals) == n:
                        ft.loop().run_once(deadline - time.monotonic())

            def one_client(i, kind):
                what = f'client {i} ({kind})'
                cl = ft.Client(bus.address)
                if kind == 'timeout':
                    sent = [cl.call_async('Freeze', '/s', SHORT_USEC, ft.FLAG_ROLLBACK_ON_TIMEOUT),
                            cl.call_async('ApplyBatch', [('/s', True), ('/t', True)], 'auto', SHORT_USEC,
                                          ft.FLAG_ROLLBACK_ON_TIMEOUT),
                            cl.call_async('Freeze', '/s', SHORT_USEC, 0)]
                else:
                    sent = [cl.call_async('Freeze', '/s', LONG_USEC, 0),
                            cl.group_call_async('/s', 'Freeze', LONG_USEC, 0),
                            cl.call_async('ApplyBatch', [('/s', True), ('/t', True)], 'auto', LONG_USEC, 0)
                            if kind == 'complete' else cl.call_async('Freeze', '/s', LONG_USEC, 0)]
                # Answered after the three: freezerd has them all.
                st = cl.group_property('/s', 'FreezerState')
                ft.check(st == 'freezing' and not any(p.done() for p in sent),
                         f'{what}: three calls wait on /s', st)
                for _ in sent:
                    fig.calls['calls left waiting by a client that went'] += 1
                cl.close()
                fig.faults['client disconnected with calls waiting'] += 1

                if kind == 'timeout':
                    ft.wait_for(lambda: sc.read_freeze('/t') == 0,
                                timeout=SHORT_USEC / 1e6 + ft.DEFAULT_TIMEOUT,
                                what=f'{what}: the rollback of /t')
                    # No rollback takes /s back: the last Freeze, without ROLLBACK, asked
                    # for it as the first one had set it.
                    ft.check_equal(sc.read_freeze('/s'), 1, f'{what}: the calls timed out, /t rolled back, /s kept '
                                                            'at 1 for the Freeze without ROLLBACK')
                    call('Thaw', '/s', LONG_USEC, 0)
                elif kind == 'complete':
                    rec.clear()
                    stuck[0].kill()
                    stuck[0].wait()
                    sc.wait_events('/s', frozen=1)
                    fig.faults['blocked task killed'] += 1
                    rec.wait_property(ft.group_object('/s'), 'FreezerState', 'frozen')
                    ft.check(True, f'{what}: /s froze, the calls completed')
                    call('ApplyBatch', [('/s', False), ('/t', False)], 'auto', LONG_USEC, 0)
                    stuck[0] = fuse.spawn_stuck(sc, '/s')
                else:
                    call('Thaw', '/s', LONG_USEC, 0)
                    ft.check(True, f'{what}: Thaw(/s) from another client cancelled them')
                # freezerd still answers, and has what the kernel has.
                ft.check_equal(d.exit_status, None, f'{what}: freezerd is alive')
                for g in ('/s', '/t'):
                    sc.wait_events(g, frozen=0)
                wait_running(what)
                ft.check_equal((sc.read_freeze('/s'), sc.read_freeze('/t')), (0, 0), f'{what}: both flags are 0')
                fig.checked['groups checked after a client went'] += 2

            # Warm-up: one of each, so that what freezerd keeps open for good is open.
            for i, kind in enumerate(KINDS):
                one_client(-1 - i, kind)
            fds0, rss0 = ft.fd_count(d.pid), ft.rss_kib(d.pid)
            print(f'# after the warm-up: {fds0} fds, RSS {rss0} KiB', flush=True)
            for i in range(CLIENTS):
                one_client(i, KINDS[i % len(KINDS)])
            fds1, rss1 = ft.fd_count(d.pid), ft.rss_kib(d.pid)
            print(f'# after {CLIENTS} clients: {fds1} fds, RSS {rss1} KiB', flush=True)
            ft.check_equal(fds1, fds0, f'freezerd\'s fd count is back to {fds0}')
            errors = [line for line in d.log().splitlines() if line.startswith(('<0>', '<1>', '<2>', '<3>'))]
            ft.check_equal(errors, [], 'freezerd logged no error')

            # Gone before freezerd read its calls: their sender's credentials can no
            # longer be had, so they are refused, with one warning and one round trip
            # to dbus-daemon for the client, not one per call.
            os.kill(d.pid, ft.signal.SIGSTOP)
            try:
                cl = ft.Client(bus.address)
                name = cl.unique_name
                for _ in range(GONE_CALLS):
                    cl.call_async('Freeze', '/t', LONG_USEC, ft.FLAG_NO_WAIT)
                cl.close()
                # Until dbus-daemon has seen it go (it reads the close in its own time).
                ft.wait_for(lambda: not c.call_method('/org/freedesktop/DBus', 'org.freedesktop.DBus', 'NameHasOwner',
                                                      's', (name,), destination='org.freedesktop.DBus')[0],
                            what=f'{name} to leave the bus')
            finally:
                os.kill(d.pid, ft.signal.SIGCONT)
            # freezerd asks the bus who sent them without waiting for the answer
            # (other callers go on meanwhile): the warning says it has it.
            ft.wait_for(lambda: f'credentials of {name}' in d.log(), poll=0.01,
                        what=f'freezerd to learn that {name} left')
            ft.check_equal(state('/t'), 'running', f'{GONE_CALLS} calls of a client gone before they were read: '
                           '/t still running')
            ft.check_equal(sc.read_freeze('/t'), 0, 'and its cgroup.freeze is 0')
            lines = [ln for ln in d.log().splitlines() if f'credentials of {name}' in ln]
            ft.check(len(lines) == 1, f'one warning for {name}, not one per call', f'{len(lines)}: ' + '\n'.join(lines[:3]))
            ft.check('left the bus' in (lines or [''])[0], 'it says the client left the bus', lines)
            fig.lines.append(f'fds:             {fds0} after the warm-up, {fds1} at the end')
            fig.lines.append(f'RSS:             {rss0} KiB after the warm-up, {rss1} KiB at the end')
    fig.print()


ft.run(test)
