#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A Freeze right after a Thaw is answered when the group's tasks freeze, not when
the kernel's rate-limited notification of it finally comes.

The kernel notifies a cgroup.events at most once per CGROUP_FILE_NOTIFY_MIN_INTV
(10 ms rounded up to jiffies: 12 ms at HZ=250; 11-16 ms measured here) and sends a
change within that interval from a timer at its end.  Thaw /g (tasks in it) is
notified; a Freeze of /g sent at once freezes the tasks within a millisecond,
and the kernel says so only at the end of the interval.  (The tasks in /g are `cat`s
that echo a line only when they run: the test waits for their echoes after the
thaw, for a task that has not left the freezer yet when the freeze comes stays
frozen, and the group then reads frozen at once.)  freezerd re-reads /g while
the call waits (operation_watch_holdback() in daemon/manager.c), at most 2 ms apart.

Each round: Freeze /g, let the interval of that freeze's notification pass (30 ms:
no event marks its end), Thaw /g, wait for the test's own notification of the thaw
(EPOLLPRI on cgroup.events, as freezerd: ft.EventsLog) and for an echo from each of
the 20 tasks, then send Freeze /g.  A round is conclusive when the kernel sent
"frozen 1" 5 ms or more after the Freeze was sent (it did hold it back), and
freezerd's first signal after the call (Freeze=true) did not say Frozen=true too:
a freezerd that waits for the notification answers first only when its own read
just after its write finds the tasks frozen already (a build without the wait did so
in 2-6 rounds of 9, more on a loaded machine), and then says so in that signal.
Not conclusive either, on a loaded machine: a round where the test found the reply
and the notification waiting at once, where the reply was late by no more than
freezerd and dbus-daemon (the call and its reply pass through it) waited for a CPU,
or by no more than a task of /g did (it froze that late,
and freezerd reads /g 2 ms apart: HeldBackRounds).  Rounds go on until 6 are
conclusive (27 at most).  Asserted: there are conclusive rounds, and in all of them
(all but one of three or more: HeldBackRounds.won_enough(), one spared for a reply
late by the host's scheduling on this kind of VM) the reply came first.  Each round
checks the kernel's state and freezerd's Frozen too."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ROUNDS = 27  # at most
CONCLUSIVE = 6  # rounds that are enough
ECHOES = 20  # tasks that run when thawed: the more, the longer the group takes to freeze
HELD_BACK = 0.005  # s after the call: the kernel sent the change from its timer
INTERVAL_PASSED = 0.03  # s: longer than any CGROUP_FILE_NOTIFY_MIN_INTV
TIMEOUT_USEC = 10_000_000


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('freeze-after-thaw') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        echoes = [sc.spawn_echo('/g') for _ in range(ECHOES)]
        with ft.Daemon(bus, sc.root) as d:
            obj = d.client.call('GetGroup', '/g')[0]
            rec = d.client.record()

            def cpu_wait():
                # The call and its reply pass through dbus-daemon: a wait of either for a CPU delays it.
                return ft.run_queue_wait(d.pid) + ft.run_queue_wait(bus.proc.pid)

            rounds = ft.HeldBackRounds(HELD_BACK)
            with ft.EventsLog(sc, '/g') as notes:
                for rnd in range(ROUNDS):
                    if rounds.conclusive >= CONCLUSIVE:
                        break
                    d.client.call('Freeze', '/g', TIMEOUT_USEC, 0)
                    time.sleep(INTERVAL_PASSED)  # not a wait for an event: the kernel's interval
                    notes.discard_queued()  # what the kernel sent before: not this round's
                    notes.seen.clear()
                    d.client.call('Thaw', '/g', TIMEOUT_USEC, 0)
                    ft.wait_for(lambda: any(f == 0 for _, f in notes.seen), what="the notification of /g's thaw")
                    # The task runs again.  Had it not yet left the freezer when the
                    # freeze comes, it would stay frozen and /g read frozen at once.
                    tokens = [(e, e.send()) for e in echoes]
                    ft.wait_for(lambda: all(t in e.buf for e, t in tokens), what='an echo from every task of /g')
                    rec.clear()
                    tasks = [ft.run_queue_wait(e.pid) for e in echoes]
                    waited = cpu_wait()
                    t_call = time.monotonic()
                    call = d.client.call_async('Freeze', '/g', TIMEOUT_USEC, 0)
                    t_reply, t_note = notes.wait_reply_and_frozen(call, t_call)
                    waited = cpu_wait() - waited
                    tasks = max(ft.run_queue_wait(e.pid) - w for e, w in zip(echoes, tasks))
                    call.result()  # raises if the call failed
                    ft.check_equal(sc.read_events('/g')['frozen'], 1, 'kernel: /g frozen')
                    ft.check_equal(d.client.group_property('/g', 'Frozen'), True, 'Frozen of /g')
                    # The first signal after the call (Freeze=true) says what freezerd's first
                    # look at /g after its write found: frozen already, it had nothing to wait for.
                    rec.wait_property(obj, 'Frozen', True)
                    first = next((ch for _o, _i, ch, _inv in rec.properties_changed(obj) if 'Freeze' in ch), {})
                    rounds.add(f'round {rnd}', t_call, t_reply, t_note, together=notes.together, cpu_wait=waited,
                               waiter='freezerd with dbus-daemon', first_look=first.get('Frozen') is True,
                               tasks_wait=tasks)
            d.client.call('Thaw', '/g', TIMEOUT_USEC, 0)
            ft.check(rounds.conclusive > 0, 'in at least one round the kernel held back the notification of /g',
                     f'none of {rnd + 1} rounds')
            ft.check(rounds.won_enough(), "the reply came before the kernel's held-back notification in every "
                     'round where it was held back (one late round spared of three or more)',
                     f'in {rounds.first} of {rounds.conclusive}')


ft.run(test)
