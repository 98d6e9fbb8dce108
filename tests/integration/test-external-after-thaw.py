#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A freeze written behind freezerd's back right after a thaw is signalled when the
group's tasks freeze, not when the kernel's rate-limited notification of it comes.

The kernel notifies a cgroup.events at most once per CGROUP_FILE_NOTIFY_MIN_INTV
(10 ms rounded up to jiffies: 12 ms at HZ=250, 11-16 ms measured here) and sends a
change within that interval from a timer at its end.  Someone thaws /g (tasks in
it) with `echo 0 > cgroup.freeze`: notified.  Then `echo 1`: the tasks freeze
within a millisecond, the kernel says so only at the end of the interval, and
until session 23 so did freezerd's PropertiesChanged Frozen=true: freezerd read
/g when the write's IN_MODIFY came, before the tasks froze, and then waited for
the notification (11-16 ms, where the same freeze through freezerd's Freeze call
took under 1 ms).  freezerd now re-reads such a group after a write behind its
back as it does for a waiting call (holdback_watch_external() in
daemon/manager.c).  The tasks in /g are `cat`s that echo a line only when they run
(see test-freeze-after-thaw.py, the same race for a call).

Each round, every write the test's own, /g frozen from the round before: let the
interval of that freeze's notification pass (30 ms: no event marks its end), thaw
/g, wait for the test's own notification of the thaw (EPOLLPRI on cgroup.events, as
freezerd: ft.EventsLog), for freezerd's Frozen=false and for an echo from each of
the 20 tasks, then write 1.  A round is conclusive when the kernel sent "frozen 1" 5
ms or more after the write (it did hold it back), and freezerd's first signal after
the write (Freeze=true) did not say Frozen=true too: its first look at /g, at the
write, found the tasks still freezing.  Where it found them frozen (a loaded machine
wakes it late), it had nothing to wait for, and a freezerd that waits for the
notification wins such rounds too.  Rounds go on until 6 are conclusive (27 at
most).  Asserted: there are conclusive rounds, and in all of them (all but one of
three or more: HeldBackRounds.won_enough()) freezerd's Frozen=true came first.  Not
conclusive either, on a loaded machine: a round where the test found the signal and
the notification waiting at once (it cannot tell which came first) after it waited 1
ms or more for a CPU, or where the signal was late by no more than freezerd and
dbus-daemon waited for a CPU, or by no more than a task of /g did (as
test-freeze-after-thaw.py).  Each round checks that freezerd's Freeze, Frozen and
FreezerState are the kernel's."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ROUNDS = 27  # at most
CONCLUSIVE = 6  # rounds that are enough
ECHOES = 20  # tasks that run when thawed: the more, the longer the group takes to freeze
HELD_BACK = 0.005  # s after the write: the kernel sent the change from its timer
INTERVAL_PASSED = 0.03  # s: longer than any CGROUP_FILE_NOTIFY_MIN_INTV
# s the test itself waited for a CPU in a round where it found the signal and the
# notification at once: the signal may have come first.  A freezerd that waits for
# the notification signals some 0.5 ms after it: the test, busy with the
# notification, often finds both at once without waiting for a CPU at all.
OWN_WAIT = 0.001


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('external-after-thaw') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        echoes = [sc.spawn_echo('/g') for _ in range(ECHOES)]
        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            obj = c.call('GetGroup', '/g')[0]
            rec = c.record()

            def cpu_wait():
                # The signal comes through dbus-daemon: a wait of either for a CPU delays it.
                return ft.run_queue_wait(d.pid) + ft.run_queue_wait(bus.proc.pid)

            rounds = ft.HeldBackRounds(HELD_BACK)
            with ft.EventsLog(sc, '/g') as notes:
                sc.write_freeze('/g', 1)  # each round starts frozen, as the one before ends
                rec.wait_property(obj, 'Frozen', True)
                for rnd in range(ROUNDS):
                    if rounds.conclusive >= CONCLUSIVE:
                        break
                    time.sleep(INTERVAL_PASSED)  # not a wait for an event: the kernel's interval
                    notes.discard_queued()  # what the kernel sent before: not this round's
                    notes.seen.clear()
                    rec.clear()
                    sc.write_freeze('/g', 0)
                    ft.wait_for(lambda: any(f == 0 for _, f in notes.seen), what="the notification of /g's thaw")
                    rec.wait_property(obj, 'Frozen', False)
                    # The tasks run again.  Had one not yet left the freezer when the
                    # freeze comes, it would stay frozen and /g read frozen at once.
                    tokens = [(e, e.send()) for e in echoes]
                    ft.wait_for(lambda: all(t in e.buf for e, t in tokens), what='an echo from every task of /g')
                    rec.clear()
                    tasks = [ft.run_queue_wait(e.pid) for e in echoes]
                    waited, own = cpu_wait(), ft.run_queue_wait(os.getpid())
                    t_write = time.monotonic()
                    sc.write_freeze('/g', 1)
                    t_signal, t_note = notes.wait_reply_and_frozen(
                        lambda: True in rec.property_values(obj, 'Frozen'), t_write)
                    waited, own = cpu_wait() - waited, ft.run_queue_wait(os.getpid()) - own
                    tasks = max(ft.run_queue_wait(e.pid) - w for e, w in zip(echoes, tasks))
                    ft.check_equal(sc.read_events('/g')['frozen'], 1, 'kernel: /g frozen')
                    # The first signal after the write (Freeze=true) says what freezerd's first
                    # look at /g found: frozen already, it had nothing to wait for.
                    first = next((ch for _o, _i, ch, _inv in rec.properties_changed(obj) if 'Freeze' in ch), {})
                    got = c.get_all(obj, ft.GROUP_IFACE)
                    ft.check_equal((got['Freeze'], got['Frozen'], got['FreezerState']), (True, True, 'frozen'),
                                   f'round {rnd}: Freeze, Frozen and FreezerState of /g')
                    rounds.add(f'round {rnd}', t_write, t_signal, t_note, start='the write', reply='Frozen=true',
                               together=notes.together and own >= OWN_WAIT, cpu_wait=waited,
                               waiter='freezerd with dbus-daemon', first_look=first.get('Frozen') is True,
                               tasks_wait=tasks)
            sc.write_freeze('/g', 0)
            ft.check(rounds.conclusive > 0, 'in at least one round the kernel held back the notification of /g',
                     f'none of {rnd + 1} rounds')
            ft.check(rounds.won_enough(), "freezerd's Frozen=true came before the kernel's held-back notification "
                     'in every round where it was held back (one late round spared of three or more)',
                     f'in {rounds.first} of {rounds.conclusive}')


ft.run(test)
