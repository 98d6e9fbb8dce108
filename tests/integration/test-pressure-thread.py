#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The pressure watcher thread lives only while there are triggers, and it is
the one that closes their fds.

  /busy  CPU hogs, more than there are CPUs (at least 4): its trigger fires
  /idle  empty: a client's 64 triggers, then the client leaves

Checked:
  * freezerd runs one thread before the first trigger, two with one; once it
    is removed, one again (within a deadline: the thread lingers 100 ms).
    Until session 37 the thread, started with the first trigger, stayed for
    good: freezerd was no longer single-threaded at rest (README, "The
    daemon": a second thread makes every fd lookup dearer);
  * a trigger added after that (a new thread) still fires PressureExceeded;
  * a client that leaves with 64 triggers: each of their fds is closed by a
    thread other than the main one (strace -f -e trace=close, attached to
    freezerd).  The kernel's close of a trigger waits for an RCU grace period
    (psi_trigger_destroy()): until session 37 the main loop closed them, and
    held every call and kernel event meanwhile; a structural check, not a
    timed one.  Skipped without strace;
  * the fds all go, and with the last trigger removed the thread too.
No sleeps: every wait is on D-Bus messages or /proc, with a deadline."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

HOG = ['sh', '-c', 'while :; do :; done']
WINDOW = 2_000_000          # usec: a whole multiple of 2 s (freezerd lacks CAP_SYS_RESOURCE)
THRESHOLD = 100_000         # usec
SLACK = 1.0 * ft.TIMEOUT_MULTIPLIER
DEADLINE = 5 * ft.TIMEOUT_MULTIPLIER
N_TRIGGERS = 64             # one client's most


def trigger_fds(pid, path):
    """freezerd's fds open on path (a pressure file: its triggers', no reading was asked of it)."""
    out = set()
    for fd in os.listdir(f'/proc/{pid}/fd'):
        try:
            if os.readlink(f'/proc/{pid}/fd/{fd}') == path:
                out.add(int(fd))
        except OSError:
            pass
    return out


def traced(pid):
    """Whether every thread of pid has a tracer."""
    try:
        for tid in os.listdir(f'/proc/{pid}/task'):
            with open(f'/proc/{pid}/task/{tid}/status') as f:
                if re.search(r'^TracerPid:\s+0$', f.read(), re.M):
                    return False
    except OSError:
        return False
    return True


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'psi')
    ncpu = os.cpu_count() or 1

    with ft.Scratch('pressure-thread') as sc, ft.Bus() as bus:
        sc.mkdir('/busy')
        sc.mkdir('/idle')
        sc.require_pressure('/idle')
        hogs = [sc.spawn('/busy', HOG) for _ in range(max(4, 2 * ncpu))]

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            c.add_match(type='signal', sender=ft.BUS_NAME)
            threads = lambda: ft.thread_count(d.pid)  # noqa: E731
            ft.check_equal(threads(), 1, 'one thread before the first trigger')

            # -- the thread comes with a trigger and goes with it
            tid = c.group_call('/idle', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            ft.check_equal(threads(), 2, 'two threads with a trigger')
            c.group_call('/idle', 'RemovePressureTrigger', tid)
            ft.wait_for(lambda: threads() == 1, timeout=DEADLINE, poll=0.02,
                        what='one thread again once the last trigger is removed (until session 37 the '
                        'watcher thread stayed for good)')
            ft.check(True, 'one thread again once the last trigger is removed')

            # -- a trigger after that still fires (another thread)
            armed = time.monotonic()
            busy_id = c.group_call('/busy', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            ft.check_equal(threads(), 2, 'a new trigger starts the thread again')
            ft.wait_for(lambda: any(s.member == 'PressureExceeded' and s.body[0] == busy_id for s in c.signals),
                        deadline=armed + 2 * WINDOW / 1e6 + SLACK,
                        what='PressureExceeded of the /busy trigger, added after the thread left')
            ft.check(True, 'the trigger added after the thread left fires PressureExceeded')

            # -- a client leaves with 64 triggers: their fds are closed off the main thread
            idle_file = sc.abspath('/idle', 'cpu.pressure')
            greedy = ft.Client(bus.address)
            for _ in range(N_TRIGGERS):
                greedy.group_call('/idle', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)
            fds = trigger_fds(d.pid, idle_file)
            ft.check_equal(len(fds), N_TRIGGERS, f'{N_TRIGGERS} trigger fds on /idle')
            strace = shutil.which('strace')
            tracer = None
            fd, log = tempfile.mkstemp(prefix='freezerd-pressure-thread-strace.')
            os.close(fd)
            if strace:
                tracer = subprocess.Popen([strace, '-f', '-qq', '-e', 'trace=close', '-o', log, '-p', str(d.pid)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                if tracer:
                    ft.wait_for(lambda: traced(d.pid) or tracer.poll() is not None, timeout=DEADLINE, poll=0.02,
                                what='strace attached to every thread of freezerd')
                    if tracer.poll() is not None:
                        print('# strace could not attach: the check of the closing thread is skipped', flush=True)
                        tracer = None
                greedy.close()
                ft.wait_for(lambda: not trigger_fds(d.pid, idle_file), timeout=DEADLINE, poll=0.02,
                            what='the trigger fds of the client that left closed')
                ft.check(True, f'the {N_TRIGGERS} trigger fds of the client that left are closed')
            finally:
                if tracer:
                    tracer.terminate()
                    tracer.wait()
                with open(log) as f:
                    trace = f.read()
                os.unlink(log)
            if tracer:
                first = {}  # fd -> the tid of its first close once traced
                for line in trace.splitlines():
                    # "TID close(FD) = 0", or "TID close(FD <unfinished ...>" when another
                    # thread's call came between its start and its end
                    m = re.match(r'(\d+)\s+close\((\d+)[) ]', line)
                    if m and int(m.group(2)) in fds:
                        first.setdefault(int(m.group(2)), int(m.group(1)))
                ft.check_equal(sorted(first), sorted(fds), 'strace saw each trigger fd closed')
                by_main = sorted(fd for fd, t in first.items() if t == d.pid)
                ft.check_equal(by_main, [], 'no trigger fd was closed by the main thread (until session 37 all '
                               'were: each close waits for an RCU grace period, the main loop held meanwhile)')
            else:
                print('# no strace: the check of the closing thread is skipped', flush=True)

            ft.check_equal(threads(), 2, 'the thread stays while /busy\'s trigger does')
            c.group_call('/busy', 'RemovePressureTrigger', busy_id)
            ft.wait_for(lambda: threads() == 1, timeout=DEADLINE, poll=0.02,
                        what='one thread again once the last trigger is removed')
            ft.check(True, 'one thread again with the last trigger removed')
            ft.check(all(p.poll() is None for p in hogs), 'the /busy hogs ran throughout')


ft.run(test)
