#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Pressure triggers under a low RLIMIT_NOFILE: each trigger holds an fd, and
triggers must not take the fds that freezerd needs for its groups.

  /g     the triggers' group
  /new   made once the triggers are in place, with a sleeper (it needs an fd)

Checks, freezerd started under `prlimit --nofile=64:128` (soft 64, hard 128):
  * one client's triggers stop at 16 (a quarter of the limit) with
    LimitsExceeded naming RLIMIT_NOFILE; until session 34 they went on to
    freezerd's last fd (43 here, then System.Error.EMFILE);
  * /new, made then, is followed (GetGroup finds it; it failed with
    LimitsExceeded "freezerd has no file descriptors left"), and a reading of
    /g's pressure still works;
  * with the limit raised to 128 at run time (prlimit --pid), 32 triggers (it
    stayed at 16, read at the start only); lowered back to 64 with 16 held: none
    more;
  * a user but root (nobody) gets at most a quarter of them, 4, with LimitsExceeded
    "one user" (it got all 16), and root still gets one;
  * with the triggers removed and the limit lowered at run time to freezerd's
    lowest free fd, AddPressureTrigger fails with LimitsExceeded "no file
    descriptor left" (it was System.Error.EMFILE "Cannot read ..."); once the
    limit is back, it works;
  * the fds kept for readings follow the limit too (a freezerd started under
    --nofile=128:512, CpuPressure of 40 groups /r*): 32 at 128, 40 once it is
    raised to 256 at run time (until session 36 they stayed at 32, read at the
    start only), none more once it is lowered back to 128, and those beyond 32
    closed at the next reading (until session 36 all 40 stayed open).
No sleeps: every wait is on D-Bus replies."""

import os
import resource
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ERROR_LIMITS_EXCEEDED = 'org.freezerd.Freezer1.Error.LimitsExceeded'
WINDOW = 2_000_000          # usec: a whole multiple of 2 s (freezerd lacks CAP_SYS_RESOURCE)
THRESHOLD = 100_000         # usec
NOFILE = 64


def part_readings(sc, bus):
    """The fds kept for readings: a quarter of the limit as it is when a file
    is opened, as for the triggers."""
    limit = 2 * NOFILE
    readers = [f'/r{i}' for i in range(limit * 5 // 16)]  # more than a quarter, fds to spare at the limit
    later = [f'/s{i}' for i in range(4)]
    for g in readers + later:
        sc.mkdir(g)
    files = {sc.abspath(g, 'cpu.pressure') for g in readers + later}

    with ft.Daemon(bus, sc.root, wrapper=['prlimit', f'--nofile={limit}:{4 * limit}', '--']) as d:
        c = d.client

        def kept():
            n = 0
            for fd in os.listdir(f'/proc/{d.pid}/fd'):
                try:
                    n += os.readlink(f'/proc/{d.pid}/fd/{fd}') in files
                except OSError:
                    pass
            return n

        def read(groups):
            for g in groups:
                if len(c.group_property(g, 'CpuPressure')) != 2:
                    ft.fail(f'{g}\'s pressure does not read')

        read(readers)
        ft.check_equal(kept(), limit // 4, f'RLIMIT_NOFILE {limit}: {limit // 4} reading fds kept')
        old = resource.prlimit(d.pid, resource.RLIMIT_NOFILE)
        try:
            resource.prlimit(d.pid, resource.RLIMIT_NOFILE, (2 * limit, old[1]))
            read(readers)
            ft.check_equal(kept(), len(readers), f'RLIMIT_NOFILE raised to {2 * limit} at run time: all '
                           f'{len(readers)} reading fds kept (they stayed at {limit // 4})')
            resource.prlimit(d.pid, resource.RLIMIT_NOFILE, old)
            read(later)
            ft.check_equal(kept(), limit // 4, f'lowered back to {limit}: none more kept, and those beyond '
                           f'{limit // 4} closed at the next reading (until session 36 all {len(readers)} stayed)')
        finally:
            resource.prlimit(d.pid, resource.RLIMIT_NOFILE, old)
        print(f'# freezerd holds {ft.fd_count(d.pid)} fds', flush=True)


def wait_removed_closed(d):
    """Until the watcher thread has closed the removed triggers' fds, they count against
    freezerd's bound (each close waits for an RCU grace period, which on some machines
    outlasts the calls that follow: "... are still being closed: retry in a moment")."""
    ft.wait_pressure_trigger_fds(d.pid, 0, 'the removed triggers\' fds closed')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'psi')
    with ft.Scratch('pressure-fds') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        sc.require_pressure('/g')
        with ft.Daemon(bus, sc.root, wrapper=['prlimit', f'--nofile={NOFILE}:{2 * NOFILE}', '--']) as d:
            c = d.client
            add = lambda: c.group_call('/g', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]  # noqa: E731

            ids = []
            while len(ids) < NOFILE:
                try:
                    ids.append(add())
                except ft.DBusError as e:
                    error = e
                    break
            ft.check_equal(len(ids), NOFILE // 4, f'RLIMIT_NOFILE {NOFILE}: at most {NOFILE // 4} triggers')
            ft.check_equal(error.name, ERROR_LIMITS_EXCEEDED, '  ... then LimitsExceeded')
            ft.check('RLIMIT_NOFILE' in error.message, '  ... naming RLIMIT_NOFILE', error.message)

            sc.mkdir('/new')
            sc.spawn_sleepers('/new', 1)
            ft.check_equal(c.call('GetGroup', '/new')[0], ft.group_object('/new'),
                           'a group made with the triggers in place is followed')
            ft.check_equal(len(c.group_property('/g', 'CpuPressure')), 2, '/g\'s pressure still reads')

            for tid in ids:
                c.group_call('/g', 'RemovePressureTrigger', tid)
            wait_removed_closed(d)

            # The bound follows the limit as it is when a trigger is added: raised at
            # run time (prlimit --pid), it lets more in; lowered, it lets none more.
            old = resource.prlimit(d.pid, resource.RLIMIT_NOFILE)
            try:
                resource.prlimit(d.pid, resource.RLIMIT_NOFILE, (2 * NOFILE, old[1]))
                ids = []
                while len(ids) < 2 * NOFILE:
                    try:
                        ids.append(add())
                    except ft.DBusError as e:
                        error = e
                        break
                ft.check_equal(len(ids), 2 * NOFILE // 4, f'RLIMIT_NOFILE raised to {2 * NOFILE} at run time: '
                               f'{2 * NOFILE // 4} triggers (it stayed at {NOFILE // 4})')
                ft.check(error.name == ERROR_LIMITS_EXCEEDED and 'RLIMIT_NOFILE' in error.message,
                         '  ... then LimitsExceeded naming RLIMIT_NOFILE', f'{error.name}: {error.message}')
                resource.prlimit(d.pid, resource.RLIMIT_NOFILE, old)
                while ids[NOFILE // 4:]:
                    c.group_call('/g', 'RemovePressureTrigger', ids.pop())
                e = ft.expect_dbus_error(ERROR_LIMITS_EXCEEDED, add)
                ft.check('RLIMIT_NOFILE' in e.message, f'lowered back to {NOFILE}, with {NOFILE // 4} triggers: '
                         'none more', e.message)
            finally:
                resource.prlimit(d.pid, resource.RLIMIT_NOFILE, old)
            for tid in ids:
                c.group_call('/g', 'RemovePressureTrigger', tid)
            wait_removed_closed(d)

            # A user but root gets a quarter of them (4 of 16 here), over all its
            # connections: the others keep the rest.
            u = ft.client_as_nobody(bus)
            if u is None:
                print('# no user "nobody": the check of one user\'s share is skipped', flush=True)
            else:
                with u:
                    u_ids = []
                    while len(u_ids) < NOFILE:
                        try:
                            u_ids.append(u.call('AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0])
                        except ft.DBusError as e:
                            error = e
                            break
                    ft.check_equal(len(u_ids), NOFILE // 16, f'nobody: at most {NOFILE // 16} triggers, a quarter')
                    ft.check(error.name == ERROR_LIMITS_EXCEEDED and 'one user' in error.message,
                             '  ... then LimitsExceeded for one user', f'{error.name}: {error.message}')
                    rid = c.call('AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
                    c.call('RemovePressureTrigger', rid)
                    ft.check(True, '  ... while root still gets one')
                    for tid in u_ids:
                        u.call('RemovePressureTrigger', tid)
            # All closed before the fds are listed below.
            wait_removed_closed(d)
            old = resource.prlimit(d.pid, resource.RLIMIT_NOFILE)
            try:
                # The limit caps fd numbers: set it to the lowest free one (the removed
                # triggers left holes).
                used = {int(fd) for fd in os.listdir(f'/proc/{d.pid}/fd')}
                resource.prlimit(d.pid, resource.RLIMIT_NOFILE, (min(set(range(len(used) + 1)) - used), old[1]))
                e = ft.expect_dbus_error(ERROR_LIMITS_EXCEEDED, add)
                ft.check('no file descriptor left' in e.message and 'RLIMIT_NOFILE' in e.message,
                         'no fd left: LimitsExceeded naming RLIMIT_NOFILE', e.message)
            finally:
                resource.prlimit(d.pid, resource.RLIMIT_NOFILE, old)
            c.group_call('/g', 'RemovePressureTrigger', add())
            ft.check(True, 'with the limit back, AddPressureTrigger works')
        part_readings(sc, bus)


ft.run(test)
