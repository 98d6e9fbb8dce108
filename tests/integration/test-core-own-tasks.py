#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A confirmed freeze of a group with tasks of its own and children waits for
its own tasks, although the kernel can report it frozen before they are.

The kernel marks a group frozen from two directions: when its own tasks enter
the freezer trap (cgroup_update_frozen()), and when its last descendant
freezes (cgroup_propagate_frozen(), which does not look at the group's own
tasks).  A group holding tasks of its own and an empty child therefore reads
"frozen 1" as soon as the child freezes, often while its own tasks still sleep
where they were (README, "Kernel behaviour to know").  cgroup v2 allows such a
group as long as no controller is enabled below it.

  /one        one sleeper of its own, and an empty child /one/sub
  /many       20 sleepers of their own, and an empty child /many/sub
  /top        no tasks; /top/mid holds 5 sleepers and the empty /top/mid/sub
  /busy       2 busy loops of their own, and an empty child /busy/sub
  /stopped    a sleeper stopped with SIGSTOP and a running one, and /stopped/sub
  /stuck      a task asleep on a FUSE mount that never answers, and /stuck/sub
  /oddname    a task asleep on that mount, whose name (prctl(PR_SET_NAME)) is
              not UTF-8 and holds a control character

Checks, ROUNDS times for each of Freeze(/one), Freeze(/many), Freeze(/top)
(ROUNDS / 4 for /busy, and for a RECURSIVE ApplyBatch of /top, which waits on
/top/mid through /top; confirmed, through the bus), then Thaw:
  * at the instant the reply arrives, cgroup.events says frozen 1 and no task
    of the group that holds them is asleep anywhere but in the freezer trap
    (state S or D with another wchan: the kernel has not frozen it yet; a task
    in state R may be on its way into the trap, counted frozen already);
  * every one of them is then in the trap (waited for with a deadline), and
    the kernel still says frozen 1: a reply on the kernel's early "frozen 1"
    would be followed by a "frozen 0" when the first of 20 tasks enters;
  * the thaw's reply finds cgroup.events frozen 0.
And once each:
  * Freeze(/stopped) is confirmed: the kernel counts a stopped task as frozen,
    and so does freezerd (it does not wait for the stopped task to reach the
    trap, which it never does);
  * Freeze(/stuck, 300 ms) fails with Timeout, although the kernel says frozen
    1 (its report from /stuck/sub): the message names /stuck and the stuck
    task, asleep in D; with ROLLBACK_ON_TIMEOUT, cgroup.freeze is back to 0;
  * Freeze(/oddname, 300 ms) fails with Timeout too, naming the task with
    its name escaped (\\xNN): a D-Bus message must be UTF-8, and the build
    before, which put the name in as it was, failed to build its reply
    (org.freedesktop.DBus.Error.Failed, "Invalid argument").
A build that confirms on the kernel's report alone replies success to
Freeze(/stuck), and failed the rounds' checks in 4 of 4 runs here (a few of the 1,050
rounds each)."""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ROUNDS = 300
# 'a' and '日' whole, then the first two bytes of '本' (a name cut in a character), and ^A.
ODD_NAME = b'a\xe6\x97\xa5\xe6\x9c\x01'


def asleep_elsewhere(states):
    """The tasks the kernel has certainly not frozen yet: asleep, not in the trap.  A wchan
    of "0" says nothing: the task was still on its CPU when the wchan was read (as a
    task is for a moment after it enters the trap, before schedule())."""
    return {pid: st for pid, st in states.items()
            if st.state in ('S', 'D') and st.wchan not in ft.FROZEN_WCHANS + ('0', '')}


def rounds(sc, c, call_path, holder, n_rounds=ROUNDS, recursive=False):
    """Freeze and thaw call_path n_rounds times (with recursive, as one RECURSIVE
    ApplyBatch each, which has a request for every group below too)."""
    early = []
    what = f'ApplyBatch(RECURSIVE {call_path})' if recursive else f'Freeze({call_path})'
    for i in range(n_rounds):
        if recursive:
            c.call('ApplyBatch', [(call_path, True)], 'auto', 5_000_000, ft.FLAG_RECURSIVE)
        else:
            c.call('Freeze', call_path, 5_000_000, 0)
        states = sc.proc_states(holder)  # right after the reply, before anything else
        ev = sc.read_events(holder)
        ft.check_equal(ev.get('frozen'), 1, f'round {i}: {holder} frozen 1 when {what} replied')
        bad = asleep_elsewhere(states)
        if bad:
            early.append((i, bad))
        sc.wait_tasks_frozen(holder, timeout=5 * ft.TIMEOUT_MULTIPLIER)
        ft.check_equal(sc.read_events(holder).get('frozen'), 1,
                       f'round {i}: {holder} still frozen 1 once its tasks are in the trap')
        if recursive:
            c.call('ApplyBatch', [(call_path, False)], 'auto', 5_000_000, ft.FLAG_RECURSIVE)
        else:
            c.call('Thaw', call_path, 5_000_000, 0)
        ft.check_equal(sc.read_events(holder).get('frozen'), 0, f'round {i}: {holder} frozen 0 when the thaw replied')
        sc.wait_tasks_frozen(holder, frozen=False, timeout=5 * ft.TIMEOUT_MULTIPLIER)
    ft.check(not early, f'{what} never replied while a task of {holder} was asleep outside the trap '
             f'({n_rounds} rounds)', f'{len(early)} rounds did: {early[:3]}')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('core-own-tasks') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        for p in ('/one', '/one/sub', '/many', '/many/sub', '/top', '/top/mid', '/top/mid/sub', '/busy',
                  '/busy/sub', '/stopped', '/stopped/sub', '/stuck', '/stuck/sub', '/oddname'):
            sc.mkdir(p)
        sc.spawn_sleepers('/one', 1)
        sc.spawn_sleepers('/many', 20)
        sc.spawn_sleepers('/top/mid', 5)
        for _ in range(2):
            sc.spawn('/busy', ['sh', '-c', 'while :; do :; done'])
        stopped, running = sc.spawn_sleepers('/stopped', 2)
        os.kill(stopped.pid, signal.SIGSTOP)
        ft.wait_for(lambda: (ft.proc_state(stopped.pid) or ft.ProcState(0, '', '')).state == 'T',
                    what=f'pid {stopped.pid} to stop')
        stuck = fuse.spawn_stuck(sc, '/stuck')
        # The kernel keeps the first 15 bytes of a name, whatever they are.
        odd = fuse.spawn_stuck(sc, '/oddname', [sys.executable, '-c', f"""if True:
            import ctypes, os
            ctypes.CDLL(None).prctl(15, {ODD_NAME!r}, 0, 0, 0)  # PR_SET_NAME
            os.statvfs({fuse.mountpoint!r})"""])
        for p, n in (('/one', 1), ('/many', 20), ('/top/mid', 5), ('/busy', 2), ('/stopped', 2), ('/stuck', 1),
                     ('/oddname', 1)):
            ft.check_equal(len(sc.pids(p)), n, f'{n} tasks of its own in {p}')

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            t0 = time.monotonic()
            rounds(sc, c, '/one', '/one')
            rounds(sc, c, '/many', '/many')
            rounds(sc, c, '/top', '/top/mid')
            rounds(sc, c, '/busy', '/busy', ROUNDS // 4)
            rounds(sc, c, '/top', '/top/mid', ROUNDS // 4, recursive=True)
            print(f'# {3 * ROUNDS + 2 * (ROUNDS // 4)} freeze/thaw rounds in {time.monotonic() - t0:.1f} s')

            # ---- a stopped task counts as frozen, for the kernel and for freezerd
            c.call('Freeze', '/stopped', 5_000_000, 0)
            ft.check_equal(sc.read_events('/stopped').get('frozen'), 1, 'Freeze(/stopped) confirmed: frozen 1')
            ft.check_equal(ft.proc_state(stopped.pid).state, 'T', 'the stopped task is still stopped')
            ft.wait_for(lambda: ft.task_frozen(ft.proc_state(running.pid)),
                        timeout=5 * ft.TIMEOUT_MULTIPLIER, poll=0.002,
                        what=f'the other sleeper, {running.pid}, in the trap')
            c.call('Thaw', '/stopped', 5_000_000, 0)

            # ---- a task asleep on FUSE: the kernel says frozen 1, freezerd waits, and times out
            ft.check_equal(ft.proc_state(stuck.pid).state, 'D', f'pid {stuck.pid} asleep in D on FUSE')
            wchan = ft.proc_state(stuck.pid).wchan
            t1 = time.monotonic()
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'Freeze', '/stuck', 300_000,
                                     ft.FLAG_ROLLBACK_ON_TIMEOUT)
            dt = time.monotonic() - t1
            ft.check(0.3 <= dt < 0.3 + 5.0 * ft.TIMEOUT_MULTIPLIER, f'Timeout after 300 ms ({dt * 1000:.1f} ms)')
            ft.check('waiting for /stuck (frozen; the kernel reports it frozen, but a group in it that has children '
                     'has tasks of its own that are not)' in e.message, 'the Timeout message says the kernel '
                     'reports /stuck frozen, and why that is not enough', repr(e.message))
            ft.check(f'Not frozen: task {stuck.pid} (stat) of /stuck, in uninterruptible sleep in {wchan}'
                     in e.message, f'the Timeout message names the task asleep in {wchan}', repr(e.message))
            ft.check_equal(sc.read_freeze('/stuck'), 0, 'rollback: cgroup.freeze of /stuck is back to 0')
            ft.check_equal(sc.read_events('/stuck').get('frozen'), 0, 'rollback: the kernel says frozen 0')

            # Without rollback the kernel goes on saying frozen 1: what freezerd did not trust.
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'Freeze', '/stuck', 300_000, 0)
            ft.check_equal(sc.read_events('/stuck').get('frozen'), 1,
                           'no rollback: the kernel says frozen 1 with a task of /stuck asleep in D')
            ft.check_equal(ft.proc_state(stuck.pid).state, 'D', f'and pid {stuck.pid} still in D')
            c.call('Thaw', '/stuck', 5_000_000, 0)
            ft.check_equal(sc.read_events('/stuck').get('frozen'), 0, 'Thaw(/stuck): frozen 0')

            # ---- the same with a task whose name D-Bus cannot carry as it is
            with open(f'/proc/{odd.pid}/comm', 'rb') as f:
                ft.check_equal(f.read().rstrip(b'\n'), ODD_NAME, f'pid {odd.pid} is named {ODD_NAME!r}')
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'Freeze', '/oddname', 300_000,
                                     ft.FLAG_ROLLBACK_ON_TIMEOUT)
            ft.check(f'Not frozen: task {odd.pid} (a\\xe6\\x97\\xa5\\xe6\\x9c\\x01) of /oddname, in uninterruptible '
                     'sleep' in e.message, 'the Timeout message names the task, its name escaped byte by byte',
                     repr(e.message))
            ft.check_equal(sc.read_freeze('/oddname'), 0, 'rollback: cgroup.freeze of /oddname is back to 0')


if __name__ == '__main__':
    ft.run(test)
