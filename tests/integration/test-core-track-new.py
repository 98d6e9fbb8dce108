#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A call about a group just made in a tracked subtree, read before freezerd read the
mkdir's inotify event, does not make that group a track root of its own.

  /t (the "track" setting), /t/nI made during the test

A container manager makes a group and freezes it at once.  Until session 33, when the
Freeze came before freezerd had read the IN_CREATE, the lookup took the group for one
outside the tracked subtrees and tracked it as a root of its own (found by test-soak):
it went into tracked.json for good, an Untrack of /t left it published, and, removed,
it stayed a root waiting to be made again.

The order is made certain: freezerd is stopped (SIGSTOP), the Freeze of /t/nI is
written into its private socket (a direct connection: no dbus-daemon in between), then
/t/nI is made, then freezerd goes on (SIGCONT).  Its epoll reports the socket first,
ready first, and the inotify instance after it, so the call is read first.

  * each Freeze succeeds and /t/nI is frozen and published;
  * tracked.json lists none of them, and Untrack("/t/nI") fails with NotTracked
    (it is not a tracked root);
  * Untrack("/t") unpublishes every /t/nI with /t (InterfacesRemoved), as the groups
    freezerd found by their mkdir; Track("/t") brings them back.

The same race with a caller other than root (nobody, connected to the private socket,
opened to it for this check; the decision follows the peer's credentials there, as on
the bus), about /t/mI (root's) and /t/oI (chowned to nobody as it is made):

  * GetGroup of /t/mI answers its object: a read, open to everyone, as a moment later
    (until session 34 it was refused with AccessDenied "lies outside the tracked
    subtrees": the lookup was taken for a Track);
  * Freeze of /t/mI is refused as a freeze (AccessDenied, "Not allowed to freeze"),
    nothing written and /t/mI not tracked as a root of its own; Freeze of /t/oI is
    done."""

import json
import os
import pwd
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

N = 4
ERROR_ACCESS_DENIED = 'org.freedesktop.DBus.Error.AccessDenied'


def tracked_json(d):
    try:
        with open(os.path.join(d.state_dir, 'tracked.json')) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def raced(d, sc, conn, method, path, *args, owner=None):
    """conn's call of method(path, *args), read by freezerd before the IN_CREATE of the
    mkdir of path made after it (see the docstring)."""
    os.kill(d.pid, signal.SIGSTOP)
    try:
        call = conn.call_async(method, path, *args)
        sc.mkdir(path)
        if owner is not None:
            sc.delegate(path, owner)
    finally:
        os.kill(d.pid, signal.SIGCONT)
    return call


def check_other_uid(d, sc, private):
    try:
        nobody = pwd.getpwnam('nobody')
    except KeyError:
        print('# no user "nobody": the check as another uid is skipped', flush=True)
        return
    dirs = [d.runtime_dir, os.path.dirname(d.runtime_dir)]
    modes = [os.stat(x).st_mode & 0o7777 for x in dirs]
    for x in dirs:
        os.chmod(x, 0o711)
    os.chmod(private, 0o666)
    try:
        # Connected with nobody's effective uid: SO_PEERCRED and the EXTERNAL
        # authentication give it, the rest of the test stays root.
        os.seteuid(nobody.pw_uid)
        try:
            u = ft.Client(f'unix:path={private}', direct=True)
        finally:
            os.seteuid(0)
    finally:
        os.chmod(private, 0o600)
        for x, mode in zip(dirs, modes):
            os.chmod(x, mode)
    with u:
        for i in range(N):
            p = f'/t/m{i}'
            obj = raced(d, sc, u, 'GetGroup', p).result()[0]
            ft.check_equal(obj, ft.group_object(p), f'nobody\'s GetGroup of {p}, made as it came')
        for i in range(N):
            p = f'/t/r{i}'
            e = ft.expect_dbus_error(ERROR_ACCESS_DENIED, raced(d, sc, u, 'Freeze', p, 0, 0).result)
            ft.check('Not allowed to freeze' in e.message and p in e.message,
                     f'nobody\'s Freeze of root\'s {p}, made as it came: refused as a freeze', e.message)
            ft.check_equal(sc.read_freeze(p), 0, f'{p}: nothing written')
            ft.expect_dbus_error(ft.ERROR_NOT_TRACKED, d.client.call, 'Untrack', p)
        for i in range(N):
            p = f'/t/o{i}'
            raced(d, sc, u, 'Freeze', p, 0, 0, owner=nobody.pw_uid).result()
            ft.check_equal(sc.read_events(p).get('frozen'), 1, f'nobody\'s Freeze of its {p}, made as it came')
            u.call('Thaw', p, 0, 0)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-track-new') as sc, ft.Bus() as bus:
        sc.mkdir('/t')
        sc.mkdir('/u')
        with ft.Daemon(bus, sc.root, config={'track': ['/t']}) as d:
            c = d.client
            new = [f'/t/n{i}' for i in range(N)]
            with ft.Client(f'unix:path={os.path.join(d.runtime_dir, "private")}', direct=True) as priv:
                for p in new:
                    os.kill(d.pid, signal.SIGSTOP)
                    try:
                        call = priv.call_async('Freeze', p, 0, 0)
                        sc.mkdir(p)
                    finally:
                        os.kill(d.pid, signal.SIGCONT)
                    call.result()
                    ft.check_equal(sc.read_events(p).get('frozen'), 1, f'Freeze of {p}, made as it came: frozen')
            listed = {p for p, _o, _s in c.call('ListGroups')[0]}
            ft.check(set(new) <= listed, 'every /t/nI is published', sorted(listed))
            roots = tracked_json(d)
            ft.check(not roots or not any(p in json.dumps(roots) for p in new),
                     'tracked.json lists none of the /t/nI', roots)
            for p in new:
                ft.expect_dbus_error(ft.ERROR_NOT_TRACKED, c.call, 'Untrack', p)

            rec = c.record(subscribe=False)
            c.call('Untrack', '/t')
            listed = {p for p, _o, _s in c.call('ListGroups')[0]}
            ft.check_equal(sorted(listed), ['/'], 'after Untrack("/t") only "/" is published')
            gone = {ft.path_decode(ft.GROUP_PREFIX, o) for o, _i in rec.interfaces_removed()}
            ft.check_equal(sorted(gone & set(new + ['/t'])), sorted(new + ['/t']),
                           'InterfacesRemoved of /t and every /t/nI')
            c.call('Track', '/t')
            listed = {p for p, _o, _s in c.call('ListGroups')[0]}
            ft.check(set(new) | {'/t'} <= listed, 'Track("/t") publishes them again', sorted(listed))
            for p in new:
                c.call('Thaw', p, 0, 0)
            check_other_uid(d, sc, os.path.join(d.runtime_dir, 'private'))


ft.run(test)
