#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Calls over a group removed and made again under its name a moment ago, before
freezerd read the removal (a container restarted, then frozen at once by its manager).

  /t (tracked), /t/b (a sleeper); /t/a made, looked up (GetGroup: in the model),
  removed and made again during the test (with a sleeper in the new one, or empty)

The model still holds the old /t/a.  Until session 38 a call over it either wrote the
old group's cgroup.freeze, kept open since an earlier write of freezerd's (-ENODEV:
NoSuchGroup, "it no longer exists", for a group that exists), or wrote the new group
by its path and waited on the old one of the model (NoSuchGroup "removed while
waiting" for a freeze that happened; or, reached without being named, left out, the
new group not written).  freezerd now tells the new directory from the model's group
(its inode, the cgroup id), reads the pending events, and handles the call again, on
the new group: the call succeeds, and the new group's object says what the kernel does.

Each call is sent with freezerd stopped in epoll_wait() (as in test-batch-vanished),
after the rmdir and the mkdir: Freeze(/t/a), ApplyBatch([/t/a freeze]),
ApplyBatch([/t freeze], RECURSIVE), Thaw(/t, RECURSIVE) (the new /t/a's flag set by
someone else, behind freezerd's back), FreezeExcept with /t/a in the cover or excluded,
and the Freeze method of /t/a's object, each with /t/a's cgroup.freeze written by
freezerd before (kept open) and never written.  freezerd may read the removal first
(an event of its own on the way when it was stopped): the answer must be the same, but
the race was not tested, so the call is tried again (up to 5 times) until freezerd's
debug log says that it handled the call again.

Last, a path made during a call: ApplyBatch([/t/n, /t/m0 ... /t/m19999, /t/n],
SKIP_MISSING), /t/n made while freezerd looks up the /t/m* that do not exist (stopped
there: the system call's argument read off /proc/PID/mem).  /t/n was counted twice,
skipped at its first request and written at its last: (1, 20001) for 20,001 paths.
It is the group written now, (1, 20000)."""

import os
import pwd
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

FLAG_SKIP_MISSING = 1 << 3
REMADE_LINE = '/t/a: removed and made again, its removal not read yet: the call starts over'


def read_string(pid, addr):
    """The NUL-terminated string at addr in pid's memory (root reads any), or None."""
    try:
        with open(f'/proc/{pid}/mem', 'rb') as f:
            f.seek(addr)
            b = f.read(64)
    except (OSError, ValueError, OverflowError):
        return None
    return b.split(b'\0', 1)[0].decode(errors='replace') if b'\0' in b else None


def stop_in_lookup_of(pid, pattern):
    """SIGSTOP pid, again and again, until it is stopped in a system call one of whose
    arguments is a string that matches pattern (freezerd looking up a path); True then
    (the caller sends SIGCONT), False if the call is over (None from done())."""
    def stopped_there():
        os.kill(pid, signal.SIGSTOP)
        ft.wait_for(lambda: open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0] == 'T',
                    poll=0.001, what='freezerd stopped')
        f = open(f'/proc/{pid}/syscall').read().split()
        if len(f) >= 7 and f[0] not in ('running', '-1'):
            for a in f[1:7]:
                v = read_string(pid, int(a, 16))
                if v and pattern.fullmatch(v):
                    return True
        os.kill(pid, signal.SIGCONT)
        return False
    return stopped_there


MADE_MISSING = 20000  # missing requests between the two of /t/n: freezerd is caught among them


def made_during_call(sc, d, priv):
    """ApplyBatch([/t/n, /t/m0..., /t/n], SKIP_MISSING): /t/n is made while freezerd looks
    up the /t/m* (stopped in the lookup of one of them: /proc/PID/syscall, its argument
    read off /proc/PID/mem).  /t/n is missing at its first request and exists at its last:
    one group, written, not counted as skipped too (writes + skipped was one more than the
    distinct paths).  Tried again (up to 5 times) if freezerd was not caught in time."""
    import re
    what = f'ApplyBatch([/t/n, {MADE_MISSING} missing, /t/n], SKIP_MISSING) with /t/n made during the call'
    reqs = [('/t/n', True)] + [(f'/t/m{i}', True) for i in range(MADE_MISSING)] + [('/t/n', True)]
    for attempt in range(5):
        if sc.exists('/t/n'):
            d.client.call('Thaw', '/t/n', 0, 0)
            sc.rmdir('/t/n')
        call = priv.call_async('ApplyBatch', reqs, 'auto', 0, FLAG_SKIP_MISSING)
        stop = stop_in_lookup_of(d.pid, re.compile(r'(.*/)?m\d+'))
        caught = False
        try:
            caught = ft.wait_for(lambda: stop() or call.done(), poll=0.001,
                                 what='freezerd stopped looking up a /t/m*') is True and not call.done()
            if caught:
                sc.mkdir('/t/n')
        finally:
            os.kill(d.pid, signal.SIGCONT)
        got = tuple(call.result())
        if caught:
            ft.check_equal(got, (1, MADE_MISSING), f'{what}: /t/n written once, the others skipped')
            ft.check_equal(sc.read_freeze('/t/n'), 1, f'{what}: /t/n frozen')
            d.client.call('Thaw', '/t/n', 0, 0)
            return
        print(f'# freezerd was not caught in the lookups ({got}), again', flush=True)
    ft.fail(f'{what}: freezerd not caught in the lookups in 5 tries')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('batch-remade') as sc, ft.Bus() as bus:
        sc.mkdir('/t')
        sc.spawn_sleepers('/t/b', 1)
        with ft.Daemon(bus, sc.root, config={'track': ['/t']}, env={'FREEZERD_LOG_LEVEL': 'debug'}) as d, \
                ft.Client(f'unix:path={os.path.join(d.runtime_dir, "private")}', direct=True) as priv:
            c = d.client

            def made(written):
                if sc.exists('/t/a'):
                    sc.kill('/t/a')
                    sc.wait_events('/t/a', populated=0)
                else:
                    sc.mkdir('/t/a')
                c.call('GetGroup', '/t/a')  # in the model
                if written:  # freezerd keeps its cgroup.freeze open
                    c.call('Freeze', '/t/a', 0, 0)
                    c.call('Thaw', '/t/a', 0, 0)

            def raced(sleeper, frozen, method, *args, client=priv, owner=None):
                """method(*args) sent by client while freezerd is stopped, after /t/a's rmdir
                and mkdir (the new /t/a delegated to owner, a uid, if given)."""
                ft.stop_in_epoll_wait(d.pid)
                try:
                    sc.rmdir('/t/a')
                    sc.mkdir('/t/a')
                    if owner is not None:
                        sc.delegate('/t/a', owner)
                    if sleeper:
                        sc.spawn_sleepers('/t/a', 1)
                    if frozen:  # someone else's write
                        sc.write_freeze('/t/a', 1)
                    queued = ft.unix_recv_queued(d.pid)
                    if method == 'group Freeze':  # the method of /t/a's object
                        call = client.group_call_async('/t/a', 'Freeze', *args)
                    else:
                        call = client.call_async(method, *args)
                    # Through the bus, dbus-daemon relays the call when it gets to it: woken
                    # before, freezerd reads the removal first (every try, on a slow machine).
                    ft.wait_for(lambda: ft.unix_recv_queued(d.pid) > queued, poll=0.001,
                                what='the call waits in freezerd\'s socket')
                finally:
                    os.kill(d.pid, signal.SIGCONT)
                return call

            def object_as_kernel(what):
                """The object of /t/a is the new group, its flags as the kernel has them."""
                ino = os.stat(sc.abspath('/t/a')).st_ino

                def same():
                    return (c.group_property('/t/a', 'Id'), c.group_property('/t/a', 'Freeze'),
                            c.group_property('/t/a', 'Frozen')) == \
                        (ino, bool(sc.read_freeze('/t/a')), sc.frozen('/t/a'))
                ft.wait_for(same, what=f'{what}: the object of /t/a is the new group, as the kernel has it')

            def retried(what, once):
                """once(): one try (the set-up, the raced call, the checks), tried again (up
                to 5 times) until freezerd's log says that it handled the call again."""
                for attempt in range(5):
                    n = d.log().count(REMADE_LINE)
                    once()
                    hit = d.log().count(REMADE_LINE) > n
                    c.call('Thaw', '/t', 0, ft.FLAG_RECURSIVE)
                    if hit:
                        return
                    print('# the removal was read before the call, again', flush=True)
                ft.fail(f'{what}: the removal was read before the call in 5 tries')

            def answered(what, call, reply):
                try:
                    got = tuple(call.result())
                except ft.DBusError as e:
                    ft.fail(f'{what}: failed: {e.name}: {e.message}')
                ft.check_equal(got, reply, f'{what}: the reply')

            cases = (
                ('Freeze(/t/a)', True, False, ('Freeze', '/t/a', 0, 0), ()),
                ('ApplyBatch([/t/a freeze])', True, False, ('ApplyBatch', [('/t/a', True)], 'auto', 0, 0),
                 (1, 0)),
                ('ApplyBatch([/t freeze], RECURSIVE)', True, False,
                 ('ApplyBatch', [('/t', True)], 'auto', 0, ft.FLAG_RECURSIVE), (3, 0)),
                ('Thaw(/t, RECURSIVE) (/t/a frozen by someone else)', False, True,
                 ('Thaw', '/t', 0, ft.FLAG_RECURSIVE), ()),
                ('FreezeExcept(/t, [/t/b])', True, False, ('FreezeExcept', '/t', ['/t/b'], 0, 0), (['/t/a'],)),
                ('FreezeExcept(/t, [/t/a])', False, False, ('FreezeExcept', '/t', ['/t/a'], 0, 0), (['/t/b'],)),
                ("Freeze of /t/a's object", True, False, ('group Freeze', 0, 0), ()),
            )
            for written in (False, True):
                how = 'written before' if written else 'never written'
                for sleeper in (True, False):
                    for name, freeze, frozen, call, reply in cases:
                        what = f'{name} with /t/a ({how}) removed and made again ({"a sleeper" if sleeper else "empty"})'

                        def once():
                            made(written)
                            answered(what, raced(sleeper, frozen, *call), reply)
                            ft.check_equal(sc.read_freeze('/t/a'), int(freeze), f'{what}: the new /t/a flag')
                            if freeze:
                                sc.wait_events('/t/a', frozen=1)
                            ft.check_equal(sc.frozen('/t/a'), freeze, f'{what}: the new /t/a frozen as asked')
                            object_as_kernel(what)
                        retried(what, once)

            # The old /t/a frozen by its own flag, excluded: the checks of the excluded
            # groups' flags (InvalidArgs, "its own cgroup.freeze is 1") came before the
            # look at whether it was made again, and refused the call for the group that
            # is gone.
            for sleeper in (True, False):
                what = f'FreezeExcept(/t, [/t/a]) with /t/a frozen by its flag, removed and made again ' \
                    f'({"a sleeper" if sleeper else "empty"})'

                def once():
                    made(False)
                    c.call('Freeze', '/t/a', 0, 0)
                    answered(what, raced(sleeper, False, 'FreezeExcept', '/t', ['/t/a'], 0, 0), (['/t/b'],))
                    ft.check_equal(sc.read_freeze('/t/a'), 0, f'{what}: the new /t/a flag')
                    ft.check_equal(sc.frozen('/t/a'), False, f'{what}: the new /t/a runs')
                    object_as_kernel(what)
                retried(what, once)

            # A caller who may freeze the new /t/a (delegated to it) but not the old one
            # (root's), whose owner freezerd read through the file kept open: refused
            # (AccessDenied) for the group that is gone.
            u = ft.client_as_nobody(bus)
            if u is None:
                print('# no user "nobody": the check of a caller owning the new group is skipped', flush=True)
            else:
                with u:
                    uid = pwd.getpwnam('nobody').pw_uid
                    what = 'Freeze(/t/a) by the owner of the new /t/a (the old one root\'s, written before)'

                    def once():
                        if sc.exists('/t/a'):  # (the new one of a try before: the caller's)
                            sc.delegate('/t/a', 0)
                        made(True)
                        answered(what, raced(True, False, 'Freeze', '/t/a', 0, 0, client=u, owner=uid), ())
                        ft.check_equal(sc.read_freeze('/t/a'), 1, f'{what}: the new /t/a flag')
                        sc.wait_events('/t/a', frozen=1)
                        object_as_kernel(what)
                    retried(what, once)

            # SKIP_MISSING: /t/n missing at the first request naming it, made before the
            # last one (a mkdir during the call): counted once, in writes.
            made_during_call(sc, d, priv)

            ft.check('removed while waiting' not in d.log(), 'no call waited on the old /t/a')
            ft.check_equal(d.warnings(), [], 'no warning in the log')


ft.run(test)
