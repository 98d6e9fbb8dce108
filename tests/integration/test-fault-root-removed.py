#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezerd's cgroup root removed while it runs (issue 5, "Faults and load").

freezerd runs with --cgroup-root=SCRATCH/x, where /x/y holds a sleeper and a
task blocked on a FUSE mount that never answers, so that a Freeze of /y stays
pending.  Then every task is killed (cgroup.kill) and /x/y and /x are removed.

freezerd must:
  * answer the pending Freeze (success: /y, emptied by the kill, froze before
    it went; NoSuchGroup; or Cancelled, shutting down), never leave it
    unanswered (the root can only go once every group below it went, so no
    call is left waiting when freezerd exits);
  * log that the cgroup root was removed, naming it;
  * exit with status 1 by itself, without a signal (a service manager then
    restarts it: Restart=on-failure).

A second round does the same with freezerd SIGSTOPped while the groups go,
after its inotify queue was made to overflow (more mkdir/rmdir pairs below
/x than fs.inotify.max_queued_events holds): the removal of the root is then
among the events lost, and freezerd must find it in the re-read that follows
an overflow and exit 1 all the same."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LONG_USEC = 120 * 1000000
QUEUE_SYSCTL = '/proc/sys/fs/inotify/max_queued_events'


def one_round(sc, fuse, bus, overflow):
    what = 'overflow' if overflow else 'live'
    sc.mkdir('/x/y')
    sc.spawn_sleepers('/x/y', 1)
    fuse.spawn_stuck(sc, '/x/y')
    d = ft.Daemon(bus, sc.abspath('/x'))
    with d:
        c = d.client
        call = c.call_async('Freeze', '/y', LONG_USEC, 0)
        c.call('ListGroups')  # a round trip after it: the Freeze was read and waits
        ft.check(not call.done(), f'{what}: the Freeze of /y waits (a task cannot freeze)')
        if overflow:
            os.kill(d.pid, signal.SIGSTOP)
            with open(QUEUE_SYSCTL) as f:
                queue = int(f.read())
            # Each pair queues an IN_CREATE and an IN_DELETE with a name of its
            # own (no two alike, so none merged).
            for i in range(queue // 2 + 64):
                os.mkdir(sc.abspath('/x', f'o{i}'))
                os.rmdir(sc.abspath('/x', f'o{i}'))
        sc.kill('/x')
        ft.wait_for(lambda: not sc.populated('/x'), what=f'{what}: the tasks gone')
        sc.rmdir('/x/y')
        sc.rmdir('/x')
        if overflow:
            os.kill(d.pid, signal.SIGCONT)
        ft.wait_for(lambda: d.exit_status is not None, timeout=3 * ft.DEFAULT_TIMEOUT, what=f'{what}: freezerd to exit by itself')
        log = d.log()
        ft.check_equal(d.exit_status, 1, f'{what}: exit status')
        ft.check(f'The cgroup root {sc.abspath("/x")} was removed' in log, f'{what}: the removal logged', log)
        if overflow:
            ft.check('inotify queue overflowed' in log, f'{what}: the queue did overflow', log)
        try:
            call.result(timeout=ft.DEFAULT_TIMEOUT)  # the tasks killed, the empty /y froze before it went
        except ft.DBusError as e:
            ft.check(e.name in (ft.ERROR_CANCELLED, ft.ERROR_NO_SUCH_GROUP),
                     f'{what}: the pending Freeze answered with success, Cancelled or NoSuchGroup',
                     f'{e.name}: {e}')
        d.exit_status = 0  # it exited on purpose, as checked: the context manager wants 0


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('fault-root-removed') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        sc.mkdir('/x')
        one_round(sc, fuse, bus, overflow=False)
        sc.mkdir('/x')
        one_round(sc, fuse, bus, overflow=True)


if __name__ == '__main__':
    ft.run(test)
