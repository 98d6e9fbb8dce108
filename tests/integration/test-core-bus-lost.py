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
    reset by peer", which does not say that freezerd is leaving, nor why;
  * a batch with ROLLBACK_ON_TIMEOUT waiting (for /s, a task blocked on a FUSE
    mount) on the private socket fails with Cancelled, its flags restored, as
    at SIGTERM, and leaves no journal; /a, frozen by a call that finished,
    stays frozen.
The Bus's cleanup copes with a dbus-daemon that is gone already."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LOST = 'The connection to the bus was lost'


class PrivateClient(ft.Client):
    """A private connection that freezerd closes on its way out: its replies are kept."""

    fail_when_closed = False


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('core-bus-lost') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        sc.mkdir('/a')
        sc.spawn_sleepers('/b', 1)
        sc.spawn_sleepers('/s', 1)
        fuse.spawn_stuck(sc, '/s')
        with ft.Daemon(bus, sc.root) as d:
            d.client.call('Freeze', '/a', 0, 0)  # freezerd is up and serves the bus
            d.client.close()
            d.client = None
            priv = PrivateClient(f'unix:path={os.path.join(d.runtime_dir, "private")}', direct=True)
            pending = priv.call_async('ApplyBatch', [('/b', True), ('/s', True)], 'auto', 120 * 1000000,
                                      ft.FLAG_ROLLBACK_ON_TIMEOUT)
            ft.wait_for(lambda: sc.read_freeze('/b') == 1 and sc.read_freeze('/s') == 1,
                        what='the batch of /b and /s to write both flags (it then waits for /s)')
            os.kill(bus.proc.pid, signal.SIGKILL)
            ft.check_equal(bus.proc.wait(), -signal.SIGKILL, 'dbus-daemon killed')
            ft.wait_for(lambda: d.exit_status is not None, what='freezerd to exit once its bus is gone')
            ft.wait_for(lambda: priv.closed, what='freezerd to close the private connection')
            e = ft.expect_dbus_error(ft.ERROR_CANCELLED, pending.result, timeout=1)
            ft.check('shutting down' in e.message and 'restored' in e.message,
                     'the batch waiting on the private socket fails with Cancelled, its flags restored', e.message)
            ft.check_equal((sc.read_freeze('/b'), sc.read_freeze('/s')), (0, 0),
                           'ROLLBACK_ON_TIMEOUT: cgroup.freeze of /b and /s are 0 again, as at SIGTERM')
            ft.check_equal(ft.live_journals(d.runtime_dir), [], 'no batch journal is left for the next start')
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
    print('# checked: a lost bus is logged once, clearly, a waiting batch is rolled back, and freezerd exits 1')


if __name__ == '__main__':
    ft.run(test)
