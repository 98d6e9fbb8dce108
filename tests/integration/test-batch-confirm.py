#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A waiting batch is confirmed when the kernel freezes the last task, not when the
kernel's rate-limited notification of a group above it finally comes.

The kernel notifies a cgroup.events at most once per CGROUP_FILE_NOTIFY_MIN_INTV
(10 ms rounded up to jiffies: 12 ms at HZ=250) and sends a later change from a
timer.  A cgroup.freeze write that changes nothing (a group already frozen by its
parent) notifies at once.  So in ApplyBatch [/p: freeze, /p/c: freeze], order auto:
  1. freezerd writes /p: the sleeper in /p/c/x freezes, the task blocked on FUSE
     cannot, so nothing reads frozen yet;
  2. it writes /p/c, which changes nothing: /p/c is notified now;
  3. the test sees that notification and kills the blocked task: /p/c/x is frozen,
     and so, in the same kernel step, are /p/c and /p.  /p/c's notification of it
     is held back until 12 ms after step 2.
freezerd must answer from /p/c/x's own notification (it reads the parent whose
descendants are now all frozen) and not wait for /p/c's.

Asserted, in every round where the kernel did hold /p/c's notification back (it
came 5 ms or more after the kill; a round where the test was too slow to kill
within the kernel's interval proves nothing and is counted as such): the reply came
before that notification.  At least one of the rounds must be of that kind.  Each
round also checks the kernel's state of the three groups and freezerd's Frozen of
/p/c, and thaws with a second batch."""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ROUNDS = 5
HELD_BACK = 0.005  # s after the kill: the kernel sent /p/c's change from its timer
TIMEOUT_USEC = 10_000_000


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('batch-confirm') as sc, ft.Bus() as bus, ft.FuseHang() as fuse:
        sc.mkdir('/p/c/x')
        sc.spawn_sleepers('/p/c/x', 1)
        with ft.Daemon(bus, sc.root) as d:
            ino = ft.Inotify()
            seen = []  # (time, frozen) of each notification of /p/c's cgroup.events

            def on_c():
                now = time.monotonic()
                for _ in ino.read():
                    seen.append((now, sc.read_events('/p/c')['frozen']))
            ino.add_watch(sc.abspath('/p/c', 'cgroup.events'), ft.Inotify.IN_MODIFY)
            ft.loop().add_reader(ino.fd, on_c)
            conclusive = 0
            try:
                for rnd in range(ROUNDS):
                    stuck = fuse.spawn_stuck(sc, '/p/c/x')
                    seen.clear()
                    call = d.client.call_async('ApplyBatch', [('/p', True), ('/p/c', True)], 'auto',
                                               TIMEOUT_USEC, 0)
                    # Step 2: freezerd's write of /p/c (its flag reads 1 by then).
                    ft.wait_for(lambda: seen and sc.read_freeze('/p/c') == 1,
                                what="the notification of freezerd's write of /p/c")
                    ft.check(not call.done(), 'the batch waits while a task of /p/c/x cannot freeze')
                    t_kill = time.monotonic()
                    os.kill(stuck.pid, signal.SIGKILL)
                    t_reply = None

                    def replied_and_notified():
                        nonlocal t_reply
                        if t_reply is None and call.done():
                            t_reply = time.monotonic()
                        return t_reply is not None and any(f == 1 and t >= t_kill for t, f in seen)
                    ft.wait_for(replied_and_notified, what='the reply and the notification of /p/c frozen')
                    stuck.wait()
                    ft.check_equal(call.result(), (2, 0), 'ApplyBatch (writes, skipped)')
                    t_c = min(t for t, f in seen if f == 1 and t >= t_kill)
                    for g in ('/p', '/p/c', '/p/c/x'):
                        ft.check_equal(sc.read_events(g)['frozen'], 1, f'kernel: {g} frozen')
                    ft.check_equal(d.client.group_property('/p/c', 'Frozen'), True, 'Frozen of /p/c')
                    held = t_c - t_kill
                    print(f'# round {rnd}: reply {1e3 * (t_reply - t_kill):.1f} ms after the kill, '
                          f"/p/c's notification {1e3 * held:.1f} ms after it", flush=True)
                    if held >= HELD_BACK:
                        conclusive += 1
                        ft.check(t_reply < t_c, "the reply came before the kernel's held-back notification of /p/c",
                                 f'reply {1e3 * (t_reply - t_kill):.1f} ms, notification {1e3 * held:.1f} ms '
                                 'after the kill')
                    d.client.call('ApplyBatch', [('/p', False), ('/p/c', False)], 'auto', TIMEOUT_USEC, 0)
                    for g in ('/p', '/p/c', '/p/c/x'):
                        sc.wait_events(g, frozen=0)
            finally:
                ft.loop().remove_reader(ino.fd)
                ino.close()
            ft.check(conclusive > 0, 'in at least one round the kernel held back the notification of /p/c',
                     f'none of {ROUNDS} rounds killed the blocked task within its notification interval')


ft.run(test)
