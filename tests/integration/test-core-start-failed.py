#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A start that fails after freezerd took its bus name answers the calls that
came meanwhile with an error that says why, at once, instead of leaving them to
dbus-daemon's NoReply when freezerd goes.

freezerd asks for its name before it locks its directories (manager_start()),
and the calls dbus-daemon passes on from then wait in its socket for the start.
Here the state directory's lock is held (by the test, playing another freezerd
on another bus), and FREEZERD_TEST_START_DELAY_USEC holds the start once the
name is taken, so that the calls surely come before the failure.

Checks:
  * freezerd exits 1, with the one error line of the lock held ("Another
    freezerd (PID <the test>) is running with state directory DIR").
  * Two calls sent once the name was taken (a Manager method and a property
    Get) are answered org.freedesktop.DBus.Error.Failed "freezerd failed to
    start: Another freezerd (PID <the test>) is running with state directory
    DIR", before freezerd's exit: before, they got NoReply ("Message recipient
    disconnected from message bus without replying").
  * The name ends with no owner (NameOwnerChanged) and no runtime directory
    was made.  dbus-daemon says the same at freezerd's release of the name as
    at its exit, so this does not tell that freezerd released it, nor does any
    check here reach the second refusing flush (the calls routed between the
    first flush and the release): that window is too narrow to aim a call at."""

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

DELAY_USEC = 2 * 1000000
DBUS = ('/org/freedesktop/DBus', 'org.freedesktop.DBus')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    tmp = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}daemon-{os.getpid()}-start-failed-')
    proc = None
    try:
        run, state = os.path.join(tmp, 'run'), os.path.join(tmp, 'state')
        os.mkdir(state)
        config = os.path.join(tmp, 'freezerd.json')
        with open(config, 'w') as f:
            f.write('{}')
        # The state directory's lock, held as another freezerd holds it: its PID in the file.
        lock = os.open(os.path.join(state, 'lock'), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        os.write(lock, f'{os.getpid()}\n'.encode())
        fcntl.flock(lock, fcntl.LOCK_EX)
        reason = f'Another freezerd (PID {os.getpid()}) is running with state directory {state}'

        with ft.Scratch('core-start-failed') as sc, ft.Bus() as bus, ft.Client(bus.address) as c:
            c.add_match(type='signal', sender='org.freedesktop.DBus', interface='org.freedesktop.DBus',
                        member='NameOwnerChanged')

            def owners():
                return [s.body[2] for s in c.signals if s.member == 'NameOwnerChanged' and s.body[0] == ft.BUS_NAME]

            log_path = os.path.join(tmp, 'freezerd.log')
            argv = ft.FREEZERD_WRAPPER + [ft.FREEZERD_BIN, f'--address={bus.address}', f'--cgroup-root={sc.root}',
                                          f'--config={config}', f'--runtime-dir={run}', f'--state-dir={state}']
            env = dict(os.environ, FREEZERD_TEST_START_DELAY_USEC=str(DELAY_USEC))
            env.pop('NOTIFY_SOCKET', None)
            print('# starting ' + ' '.join(argv), flush=True)
            with open(log_path, 'w') as log:
                proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                        preexec_fn=ft._child_setup(pdeathsig=signal.SIGKILL))
            pidfd = os.pidfd_open(proc.pid)
            exited = []
            ft.loop().add_reader(pidfd, lambda: exited.append(time.monotonic()) or ft.loop().remove_reader(pidfd))

            ft.wait_for(lambda: owners() or exited, what='freezerd to take its bus name')
            ft.check(owners() and owners()[0] != '', 'freezerd took its bus name', (owners(), exited))
            # The start waits DELAY_USEC from here: these come before its failure.
            calls = [c.call_async('GetGroup', '/'),
                     c.send_call(ft.MANAGER_PATH, ft.PROPERTIES_IFACE, 'Get', 'ss', (ft.MANAGER_IFACE, 'Version'))]
            ft.wait_for(lambda: exited and all(p.done() for p in calls), timeout=ft.DEFAULT_TIMEOUT + DELAY_USEC / 1e6,
                        what='freezerd to exit and both calls to be answered')
            status = proc.wait()
            with open(log_path, errors='replace') as f:
                lines = [x for x in f.read().splitlines() if not x.startswith('==')]
            print('# freezerd exited ' + str(status) + ', log:\n' + ''.join(f'#   {x}\n' for x in lines), flush=True)

            ft.check_equal(status, 1, 'freezerd exits 1')
            errors = [x for x in lines if 'TEST_START_DELAY' not in x]
            ft.check(len(errors) == 1 and reason in errors[0], f'one log line: "{reason}"', lines)
            want = ('org.freedesktop.DBus.Error.Failed', f'freezerd failed to start: {reason}')
            for p in calls:
                try:
                    p.result(timeout=0)
                    got = ('a method return', '')
                except ft.DBusError as e:
                    got = (e.name, e.message)
                ft.check_equal(got, want, f'{p.what} during the start: Failed, naming the reason')
            ft.wait_for(lambda: owners()[-1] == '', what='NameOwnerChanged: the name has no owner')
            ft.check(not os.path.exists(run), 'no runtime directory was made')
            os.close(pidfd)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    ft.run(test)
