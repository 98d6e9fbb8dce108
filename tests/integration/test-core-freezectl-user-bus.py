#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezectl run by a user (nobody) that does not reach freezerd on the system bus says how
to reach one run as a user: --user (its session bus, where there is one), --socket= (its
private socket, $XDG_RUNTIME_DIR/freezerd/private where XDG_RUNTIME_DIR is set, else
DIR/private of --runtime-dir=DIR), --address= (another bus).
It said only why the connection failed, and a user whose freezerd runs on the session
bus was left to guess.

The system bus is DBUS_SYSTEM_BUS_ADDRESS, as sd-bus and freezectl's wire read it:

  * a socket that does not exist: "No such file or directory (is dbus-daemon running?)"
    and the hint, for status / (libfreezer) and freeze /g (the wire): without
    XDG_RUNTIME_DIR or DBUS_SESSION_BUS_ADDRESS (no user bus) "--socket=DIR/private (its
    private socket, for one started with --runtime-dir=DIR)" and no --user (it said
    --user, and RUNTIME_DIR, which --help never defines); with DBUS_SESSION_BUS_ADDRESS
    only, --user and DIR/private; with XDG_RUNTIME_DIR=/run/user/UID, --user and
    /run/user/UID/freezerd/private;
  * the socket of a bus with freezerd on it, in a directory of mode 0700 (root's):
    "Permission denied (the socket, or a directory on its path, is not open to uid ...)"
    and the hint;
  * once that bus is open to other uids, nobody's status / works (exit 0, no hint);
  * a bus open to nobody with no freezerd on it: "freezerd is not running (nobody owns
    org.freezerd.Freezer1 on the bus)" and the hint;
  * root (freezectl --system) with the missing socket: no hint (root reaches a user's
    freezerd by its private socket, which it knows; --user is not root's).
  * --user as nobody with a session bus that does not exist: no hint (the user chose
    the bus)."""

import os
import pwd
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

# Without XDG_RUNTIME_DIR nor DBUS_SESSION_BUS_ADDRESS there is no user bus: no --user.
HINT = ('a freezerd run as a user is reached with --socket=DIR/private (its private socket, for one started '
        'with --runtime-dir=DIR), one on another bus with --address=ADDR')
HINT_SESSION = ('a freezerd run as a user is reached with --user (its session bus) or --socket=DIR/private (its '
                'private socket, for one started with --runtime-dir=DIR), one on another bus with --address=ADDR')


def run_as(uid, gid, args, env):
    argv = [ft.FREEZECTL_BIN, *args]
    if uid != 0:
        argv = ['setpriv', f'--reuid={uid}', f'--regid={gid}', '--clear-groups', '--', *argv]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(('DBUS_', 'XDG_'))}
    return subprocess.run(argv, env={**clean, **env}, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=ft.DEFAULT_TIMEOUT)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    try:
        nobody = pwd.getpwnam('nobody')
    except KeyError:
        ft.skip('no user "nobody"')
    uid, gid = nobody.pw_uid, nobody.pw_gid
    if subprocess.run(['setpriv', '--help'], capture_output=True).returncode != 0:
        ft.skip('no setpriv')

    with ft.Scratch('core-freezectl-user-bus') as sc, ft.Bus() as bus, ft.Bus() as empty_bus:
        sc.mkdir('/g')
        missing = os.path.join(bus.tmpdir, 'no-such-socket')
        with ft.Daemon(bus, sc.root, config={'track': ['/g']}):
            for args in (['status', '/'], ['freeze', '/g']):
                what = ' '.join(args)
                env = {'DBUS_SYSTEM_BUS_ADDRESS': f'unix:path={missing}'}
                # bus.tmpdir is 0700: nobody gets EACCES on the way to the missing socket; make the
                # directory searchable for this case only.
                os.chmod(bus.tmpdir, 0o711)
                r = run_as(uid, gid, args, env)
                ft.check_equal((r.returncode, r.stdout), (1, ''), f'nobody {what}, no system bus socket: exit 1')
                ft.check(r.stderr == f'freezectl: cannot connect to the system bus (unix:path={missing}): No such '
                                     f'file or directory (is dbus-daemon running?); {HINT}\n',
                         f'nobody {what}, no system bus socket: the line says how to reach a user\'s freezerd',
                         repr(r.stderr))
                r = run_as(uid, gid, args, {**env, 'XDG_RUNTIME_DIR': f'/run/user/{uid}'})
                ft.check(r.returncode == 1 and
                         f'--socket=/run/user/{uid}/freezerd/private (its private socket)' in r.stderr,
                         f'nobody {what} with XDG_RUNTIME_DIR: the hint names its private socket', repr(r.stderr))
                r = run_as(uid, gid, args, {**env, 'DBUS_SESSION_BUS_ADDRESS': f'unix:path={missing}-session'})
                ft.check(r.returncode == 1 and r.stderr.endswith(f'; {HINT_SESSION}\n'),
                         f'nobody {what} with DBUS_SESSION_BUS_ADDRESS only: the hint names --user and DIR/private',
                         repr(r.stderr))
                r = run_as(0, 0, ['--system', *args], env)
                ft.check(r.returncode == 1 and 'No such file or directory' in r.stderr and '--user' not in r.stderr,
                         f'root {what} --system, no system bus socket: no hint', repr(r.stderr))
                r = run_as(uid, gid, ['--user', *args], {'DBUS_SESSION_BUS_ADDRESS': f'unix:path={missing}'})
                ft.check(r.returncode == 1 and 'No such file or directory' in r.stderr and '--socket' not in r.stderr,
                         f'nobody --user {what}, no session bus socket: no hint', repr(r.stderr))
                os.chmod(bus.tmpdir, 0o700)

                # A bus with freezerd on it, whose directory nobody may not enter.
                env = {'DBUS_SYSTEM_BUS_ADDRESS': bus.address}
                r = run_as(uid, gid, args, env)
                ft.check(r.returncode == 1 and r.stderr.startswith('freezectl: cannot connect to the system bus') and
                         f'Permission denied (the socket, or a directory on its path, is not open to uid {uid}); '
                         f'{HINT}\n' in r.stderr,
                         f'nobody {what}, a system bus not open to it: the line says how to reach a user\'s freezerd',
                         repr(r.stderr))

            bus.open_to_other_uids()
            r = run_as(uid, gid, ['status', '/'], {'DBUS_SYSTEM_BUS_ADDRESS': bus.address})
            ft.check_equal((r.returncode, r.stderr), (0, ''), 'nobody status /, the bus open to it: exit 0, no hint')

        empty_bus.open_to_other_uids()
        for args in (['status', '/'], ['freeze', '/g']):
            what = ' '.join(args)
            r = run_as(uid, gid, args, {'DBUS_SYSTEM_BUS_ADDRESS': empty_bus.address})
            ft.check(r.returncode == 1 and r.stderr.endswith(
                         f': freezerd is not running (nobody owns org.freezerd.Freezer1 on the bus); {HINT}\n'),
                     f'nobody {what}, a system bus without freezerd: the line says how to reach a user\'s freezerd',
                     repr(r.stderr))

    print('# checked: nobody not reaching freezerd on the system bus (no socket, a socket not open to it, no '
          'freezerd on it) is told of --user, --socket= and --address=; root and --user are not')


if __name__ == '__main__':
    ft.run(test)
