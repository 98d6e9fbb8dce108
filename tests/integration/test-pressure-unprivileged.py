#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A pressure trigger of a caller other than root is armed as an unprivileged
process's would be, also when freezerd has CAP_SYS_RESOURCE.  The kernel (6.5
and later) makes a trigger whose file was opened with that capability a
real-time one, polled by a SCHED_FIFO kernel thread ("psimon") that it starts
for the group; freezerd opened every trigger's file with its own privilege, so
any user's 2-s trigger on its own group, or on the Manager, had the kernel
start one (access.h: freezerd's privilege must not lend anyone the kernel's
real-time polling).

  /own  delegated to nobody
  /r    root's

freezerd runs in a user namespace of its own (`unshare --user
--map-root-user`: uid 0 mapped to 0, so it still owns the cgroup files), where
it has every capability, CAP_SYS_RESOURCE among them, which the kernel's look
at a trigger file's credentials counts (the test machine's root may lack it:
a container).  Checked by the psimon threads before and after each
AddPressureTrigger (the kernel starts one in the write that arms the trigger,
before the reply; one that appeared counts as the trigger's if it goes when the
trigger is removed, so that another test's on a busy machine does not):
  * nobody's trigger on /own, and on the Manager: no psimon started;
  * root's trigger on /r: one started (the check can see one);
  * nobody's trigger on /own still fires: CPU hogs in /own, PressureExceeded.
Where a psimon runs already (a real-time trigger elsewhere on the machine),
the system-wide check cannot tell (it would share the root's), and is said
so; skipped where no user namespace can be made.  No sleeps: every wait is on D-Bus
messages or /proc, with a deadline."""

import os
import pwd
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

WINDOW = 2_000_000          # usec: a whole multiple of 2 s, as callers other than root must
THRESHOLD = 100_000         # usec
HOG = ['sh', '-c', 'while :; do :; done']


def psimons():
    """The pids of the kernel's psimon threads."""
    found = set()
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open(f'/proc/{pid}/comm') as f:
                if f.read().strip() == 'psimon':
                    found.add(int(pid))
        except OSError:
            pass
    return found


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'psi')
    try:
        nobody = pwd.getpwnam('nobody').pw_uid
    except KeyError:
        ft.skip('no user "nobody"')
    if not ft.userns_works():
        ft.skip('no user namespace can be made (unshare --user --map-root-user)')
    # A psimon thread of the machine's own (a service's real-time trigger) does not hide the
    # ones the kernel starts for /own and /r, new groups (one per group): only the
    # system-wide check cannot tell one of its own from the system's there.
    system_psimon = bool(psimons())
    # In front of any wrapper (valgrind): unshare execs it, the pid stays freezerd's.
    ft.FREEZERD_WRAPPER = ['unshare', '--user', '--map-root-user', '--'] + ft.FREEZERD_WRAPPER

    with ft.Scratch('pressure-unprivileged') as sc, ft.Bus() as bus:
        sc.mkdir('/own')
        sc.delegate('/own', nobody)
        sc.mkdir('/r')
        sc.require_pressure('/own')
        with ft.Daemon(bus, sc.root, env={'FREEZERD_LOG_LEVEL': 'debug'}) as d:
            if 'Pressure triggers: with CAP_SYS_RESOURCE' not in d.log():
                ft.skip('freezerd has no CAP_SYS_RESOURCE in its user namespace')
            u = ft.client_as_nobody(bus)
            u.add_match(type='signal', sender=ft.BUS_NAME)

            def own_rt_thread(add, remove):
                """Add a trigger; whether the kernel started a psimon thread for it: one that appeared
                with it and goes when it is removed (not another test's, on a busy machine).  Removes it."""
                before = psimons()
                tid = add()
                new = psimons() - before
                remove(tid)
                if not new:
                    return False
                try:
                    # (poll: no event says a kernel thread ended.)  One of them gone is the
                    # trigger's: another that came meanwhile is someone else's.
                    ft.wait_for(lambda: len(new & psimons()) < len(new), timeout=5 * ft.TIMEOUT_MULTIPLIER,
                                poll=0.05, what=f'a psimon of {sorted(new)} gone with its trigger')
                    return True
                except ft.TestFailure:
                    return False

            ft.check(not own_rt_thread(lambda: u.group_call('/own', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD,
                                                             WINDOW)[0],
                                       lambda tid: u.group_call('/own', 'RemovePressureTrigger', tid)),
                     'nobody\'s trigger on /own: the kernel started no real-time psimon thread for it')
            if system_psimon:
                ft.check(True, 'nobody\'s system-wide trigger: not checkable (a psimon of the machine\'s '
                               'own runs already: the root cgroup\'s, which a system-wide trigger shares)')
            else:
                ft.check(not own_rt_thread(lambda: u.call('AddPressureTrigger', 'cpu', 'some', THRESHOLD,
                                                          WINDOW)[0],
                                           lambda tid: u.call('RemovePressureTrigger', tid)),
                         'nobody\'s system-wide trigger: no psimon thread either')

            # -- it works: stall in /own fires it
            tid = u.group_call('/own', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            hogs = [sc.spawn('/own', HOG) for _ in range(3)]
            for h in hogs:
                os.sched_setaffinity(h.pid, {min(os.sched_getaffinity(0))})  # a queue: cpu "some" stall
            ft.wait_for(lambda: any(s.member == 'PressureExceeded' and s.body[0] == tid for s in u.signals),
                        timeout=30 * ft.TIMEOUT_MULTIPLIER, what='PressureExceeded of nobody\'s trigger on /own')
            ft.check(True, 'nobody\'s trigger on /own fires under stall')
            sc.kill('/own')
            for h in hogs:
                h.wait()
            u.group_call('/own', 'RemovePressureTrigger', tid)

            # -- root's is real-time: the check above can see a psimon thread
            ft.check(own_rt_thread(lambda: d.client.group_call('/r', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD,
                                                                WINDOW)[0],
                                   lambda tid: d.client.group_call('/r', 'RemovePressureTrigger', tid)),
                     'root\'s trigger on /r: the kernel started a psimon thread for it')

ft.run(test)
