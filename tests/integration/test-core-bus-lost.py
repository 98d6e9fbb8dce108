#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezerd loses its bus: the test's own dbus-daemon is killed (SIGKILL) while
freezerd runs.

Checks:
  * freezerd exits, with status 1;
  * its log says once, in one line at error level, that it exits because the
    connection to the bus was lost, with that status ("The connection to the
    bus was lost (...): freezerd exits with status 1."), and that is its last
    line.  Before, its last line was "Processing the bus failed: Connection
    reset by peer", which does not say that freezerd is leaving, nor why.
The Bus's cleanup copes with a dbus-daemon that is gone already."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LOST = 'The connection to the bus was lost'


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-bus-lost') as sc, ft.Bus() as bus:
        sc.mkdir('/a')
        with ft.Daemon(bus, sc.root) as d:
            d.client.call('Freeze', '/a', 0, 0)  # freezerd is up and serves the bus
            d.client.close()
            d.client = None
            os.kill(bus.proc.pid, signal.SIGKILL)
            ft.check_equal(bus.proc.wait(), -signal.SIGKILL, 'dbus-daemon killed')
            ft.wait_for(lambda: d.exit_status is not None, what='freezerd to exit once its bus is gone')
            status = d.exit_status
            ft.check_equal(status, 1, 'freezerd exits with status 1 when its bus connection is lost')
            lines = [line for line in d.log().splitlines() if line.strip()]
            lost = [line for line in lines if LOST in line]
            ft.check(len(lost) == 1, 'the log says once that the connection to the bus was lost', d.log())
            ft.check(lost and lost[0].startswith('<3>') and 'freezerd exits with status 1' in lost[0],
                     '  ... at error level, with the exit status', repr(lost))
            ft.check(lines and lines[-1] == lost[0], '  ... as its last line', repr(lines[-3:]))
            ft.check(not any('Processing the bus failed' in line for line in lines),
                     '  ... and no other error about processing the bus', d.log())
            d.exit_status = 0  # exited on purpose: Daemon's exit expects 0
        ft.check_equal(sc.read_freeze('/a'), 1, 'cgroup.freeze of /a stays 1, as the kernel has it')
        sc.write_freeze('/a', 0)
    print('# checked: a lost bus is logged once, clearly, and freezerd exits 1')


if __name__ == '__main__':
    ft.run(test)
