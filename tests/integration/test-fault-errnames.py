#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezerd's own failures answer with org.freedesktop.DBus.Error.Failed, naming
what failed with the errno's text, and libfreezer and freezectl say so as
freezerd's failure, not as the caller's permission.

Before, about 26 sites answered with sd_bus_error_set_errno()'s names: EPERM and
EACCES from freezerd's runtime directory or from a cgroup file as
org.freedesktop.DBus.Error.AccessDenied (which README keeps for "the caller may
not"), the rest as System.Error.E*, which no document lists.  And libfreezer
took Failed for -EACCES (sd-bus' own map), freezectl printed "AccessDenied: ...".

  1. freezerd as root; its runtime directory made immutable (chattr +i, where the
     file system has it): Freeze /a with ROLLBACK_ON_TIMEOUT cannot record its
     batch journal (EPERM).  Failed "Cannot record the batch journal in RUNDIR:
     Operation not permitted; nothing was written" (was AccessDenied); /a's
     cgroup.freeze still 0.  freezer_freeze() gives -EIO (was -EACCES) and the
     name Failed; `freezectl freeze --rollback /a` exits 1 with "freezerd
     failed: Cannot record ..." (was "AccessDenied: ...").
  2. freezerd as nobody over a delegated subtree (as test-core-delegated); root
     made /rootgrp and /priv/sub there, and took the read permissions of some of
     their files from others:
       - root's Freeze of /rootgrp: root may, but the kernel refuses freezerd's
         write of root's cgroup.freeze (EACCES).  Failed "Cannot freeze /rootgrp:
         Permission denied" (was AccessDenied); freezer_freeze() -EIO; freezectl
         "freezerd failed".  nobody's own Freeze of /rootgrp stays AccessDenied:
         that is the caller's permission (access.c).
       - MemoryPressure of /rootgrp, whose memory.pressure is mode 0600: Failed
         "Cannot read memory.pressure of /rootgrp: Permission denied" (was
         AccessDenied).
       - FrozenUSec of /rootgrp, whose cgroup.stat.local is mode 0600: Failed
         "Cannot read cgroup.stat.local of /rootgrp: Permission denied" (was
         AccessDenied).
       - root's Track of /priv/sub, /priv being mode 0700: Failed "Cannot open
         /priv/sub: Permission denied" (was AccessDenied).
   The sites no test reaches for real (an epoll_ctl() of a pressure trigger, the
   listing of groups below a RECURSIVE thaw, an fstat() of cgroup.freeze, an
   internal EINVAL) go through the same bus_error_set_failed() (daemon/bus-errors.h)."""

import ctypes
import errno
import os
import pwd
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

base = ft.load_test_module('test-core-libfreezer')

ERROR_FAILED = 'org.freedesktop.DBus.Error.Failed'
ERROR_ACCESS_DENIED = 'org.freedesktop.DBus.Error.AccessDenied'
DELEGATE_FILES = ('cgroup.procs', 'cgroup.subtree_control', 'cgroup.threads')
CALL_USEC = 5 * 1000000


def open_lib(lib, address):
    f = ctypes.c_void_p()
    ft.check_equal(lib.freezer_open_address(ctypes.byref(f), address.encode()), 0, 'freezer_open_address')
    return f


def check_lib_failed(lib, f, path, flags, message):
    """freezer_freeze(path) fails as freezerd's failure: -EIO, Failed, message."""
    r = lib.freezer_freeze(f, path.encode(), CALL_USEC, flags)
    name = (lib.freezer_last_error_name(f) or b'').decode()
    text = (lib.freezer_last_error_message(f) or b'').decode()
    ft.check(r == -errno.EIO and name == ERROR_FAILED and message in text,
             f'freezer_freeze({path}): -EIO (not -EACCES) with Failed, "{message}"', (r, name, text))


def check_freezectl_failed(r, message, what):
    ft.check(r.returncode == 1 and f'freezerd failed: {message}' in r.stderr and 'AccessDenied' not in r.stderr,
             f'{what}: exit 1, "freezerd failed: {message}"', f'exit {r.returncode}: {r.stderr.strip()}')


def check_journal(lib, sc, bus):
    sc.mkdir('/a')
    with ft.Daemon(bus, sc.root) as d:
        c = d.client
        c.call('Track', '/a')
        if subprocess.run(['chattr', '+i', d.runtime_dir], stderr=subprocess.DEVNULL).returncode != 0:
            print(f'# chattr +i {d.runtime_dir} failed (no FS_IMMUTABLE_FL here): part 1 skipped', flush=True)
            return False
        f = None
        try:
            message = f'Cannot record the batch journal in {d.runtime_dir}: Operation not permitted; ' \
                      'nothing was written'
            e = ft.expect_dbus_error(ERROR_FAILED, c.call, 'Freeze', '/a', CALL_USEC, ft.FLAG_ROLLBACK_ON_TIMEOUT)
            ft.check_equal(e.message, message, 'the journal that cannot be recorded: its message')
            ft.check_equal(sc.read_freeze('/a'), 0, '/a: nothing was written')

            f = open_lib(lib, bus.address)
            check_lib_failed(lib, f, '/a', ft.FLAG_ROLLBACK_ON_TIMEOUT, message)

            r = ft.freezectl('freeze', '--rollback', '/a', address=bus.address, check=False)
            check_freezectl_failed(r, message, 'freezectl freeze --rollback /a')
            ft.check_equal(sc.read_freeze('/a'), 0, '/a: still nothing was written')
        finally:
            if f is not None:
                lib.freezer_close(f)
            subprocess.run(['chattr', '-i', d.runtime_dir])
        # Written again once the directory is: the failure was the directory's.
        c.call('Freeze', '/a', CALL_USEC, ft.FLAG_ROLLBACK_ON_TIMEOUT)
        c.call('Thaw', '/a', CALL_USEC, 0)


def check_delegated(lib, sc, bus):
    try:
        nobody = pwd.getpwnam('nobody')
    except KeyError:
        print('# no user "nobody" to run freezerd as: part 2 skipped', flush=True)
        return False
    uid, gid = nobody.pw_uid, nobody.pw_gid
    top = sc.mkdir('/d')
    for p in [top] + [os.path.join(top, f) for f in DELEGATE_FILES]:
        os.chown(p, uid, gid)
    sc.mkdir('/d/rootgrp')
    sc.mkdir('/d/priv')
    sc.mkdir('/d/priv/sub')
    for name in ('memory.pressure', 'cgroup.stat.local'):
        path = sc.abspath('/d/rootgrp', name)
        if os.path.exists(path):
            os.chmod(path, 0o600)
    os.chmod(sc.abspath('/d/priv'), 0o700)
    bus.open_to_other_uids()

    with ft.Daemon(bus, top, user=uid) as d:
        c = d.client

        # The caller's permission: AccessDenied, as before.
        env = {k: v for k, v in os.environ.items() if k not in ('DBUS_SESSION_BUS_ADDRESS', 'DBUS_SYSTEM_BUS_ADDRESS')}
        r = subprocess.run(['setpriv', f'--reuid={uid}', f'--regid={gid}', '--clear-groups', '--',
                            ft.FREEZECTL_BIN, f'--address={bus.address}', 'freeze', '/rootgrp'],
                           capture_output=True, text=True, timeout=ft.DEFAULT_TIMEOUT, env=env)
        ft.check(r.returncode == 1 and 'AccessDenied' in r.stderr and 'freezerd failed' not in r.stderr,
                 "nobody's freeze of root's /rootgrp: AccessDenied (the caller may not)",
                 f'exit {r.returncode}: {r.stderr.strip()}')

        # Root may; the kernel refuses freezerd's write.
        message = 'Cannot freeze /rootgrp: Permission denied'
        e = ft.expect_dbus_error(ERROR_FAILED, c.call, 'Freeze', '/rootgrp', CALL_USEC, 0)
        ft.check_equal(e.message, message, "root's freeze of /rootgrp: its message")
        ft.check_equal(sc.read_freeze('/d/rootgrp'), 0, '/rootgrp: nothing was written')
        f = open_lib(lib, bus.address)
        try:
            check_lib_failed(lib, f, '/rootgrp', 0, message)
        finally:
            lib.freezer_close(f)
        r = ft.freezectl('freeze', '/rootgrp', address=bus.address, check=False)
        check_freezectl_failed(r, message, 'freezectl freeze /rootgrp as root')

        # Files of root's that freezerd may not read.
        obj = ft.group_object('/rootgrp')
        if os.path.exists(sc.abspath('/d/rootgrp', 'memory.pressure')):
            e = ft.expect_dbus_error(ERROR_FAILED, c.get_property, obj, ft.GROUP_IFACE, 'MemoryPressure')
            ft.check_equal(e.message, 'Cannot read memory.pressure of /rootgrp: Permission denied',
                           'MemoryPressure of /rootgrp (memory.pressure mode 0600): its message')
        if os.path.exists(sc.abspath('/d/rootgrp', 'cgroup.stat.local')):
            e = ft.expect_dbus_error(ERROR_FAILED, c.get_property, obj, ft.GROUP_IFACE, 'FrozenUSec')
            ft.check_equal(e.message, 'Cannot read cgroup.stat.local of /rootgrp: Permission denied',
                           'FrozenUSec of /rootgrp (cgroup.stat.local mode 0600): its message')

        # A directory freezerd may not open.
        e = ft.expect_dbus_error(ERROR_FAILED, c.call, 'Track', '/priv/sub')
        ft.check_equal(e.message, 'Cannot open /priv/sub: Permission denied',
                       "root's Track of /priv/sub (/priv mode 0700): its message")


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    base.reexec_for_asan(base.libfreezer_path())
    lib = base.load()
    with ft.Scratch('fault-errnames') as sc, ft.Bus() as bus:
        ran = [check_journal(lib, sc, bus) is not False, check_delegated(lib, sc, bus) is not False]
    if not any(ran):
        ft.skip('neither part could run here (no chattr +i on the runtime directory, no user "nobody")')


if __name__ == '__main__':
    ft.run(test)
