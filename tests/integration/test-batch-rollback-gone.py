#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A batch with ROLLBACK_ON_TIMEOUT whose write fails, and whose rollback cannot
write every flag back.

  /r/a, /r/b, /r/c   empty groups (a freeze of one completes at once)

freezerd runs with FREEZERD_TEST_WRITE_DELAY_USEC (each cgroup.freeze write
followed by a 0.3 s pause, times the harness's multiplier: the test acts within
it).  An ApplyBatch with ROLLBACK freezes /r/a, /r/b and /r/c, in that order;
as soon as /r/b's flag reads 1 the test removes /r/b and /r/c.  /r/c's write
fails (NoSuchGroup naming it), and the rollback writes /r/a back (flag 0) but
cannot write /r/b's (removed: the kernel answers ENODEV).  The error must say
so, as a timeout's rollback does: "Restoring the flag of /r/b failed (...): the
group no longer exists. The other flags this call changed were restored", and
not that the batch was rolled back: until session 45 the batch ignored what its
writes back returned and said "the batch was rolled back" whatever they did.
freezerd logs the failed write back ("Rollback of /r/b failed"), and no journal
is left once the call replied (as after a timeout's rollback: the caller was
told what stays).

Then the same with /r/b alone removed before its write (/r/a written back
fine): "the batch was rolled back", nothing about a failed restore."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LONG_USEC = 60 * 1000000
ROLLBACK = 1


def batch(sc, c, remove_after, remove, what):
    """ApplyBatch (ROLLBACK) freezing /r/a, /r/b, /r/c; once remove_after's flag reads 1,
    the groups of remove are removed.  Returns the error."""
    for g in ('/r/a', '/r/b', '/r/c'):
        sc.mkdir(g)
        c.call('GetGroup', g)  # known to freezerd before the batch names it
        ft.loop().watch(sc.abspath(g, 'cgroup.freeze'))
    call = c.call_async('ApplyBatch', [('/r/a', True), ('/r/b', True), ('/r/c', True)], 'top-down', LONG_USEC,
                        ROLLBACK)
    ft.wait_for(lambda: sc.read_freeze(remove_after) == 1 or call.done(), what=f'{what}: {remove_after} written')
    ft.check(not call.done(), f'{what}: the batch still writing when {remove_after} reads 1')
    for g in remove:
        sc.rmdir(g)
    return ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, call.result, timeout=3 * ft.DEFAULT_TIMEOUT)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    env = {'FREEZERD_TEST_WRITE_DELAY_USEC': str(int(300000 * ft.TIMEOUT_MULTIPLIER))}
    with ft.Scratch('batch-rollback-gone') as sc, ft.Bus() as bus:
        sc.mkdir('/r')
        with ft.Daemon(bus, sc.root, env=env) as d:
            c = d.client

            what = 'write back failed'
            e = batch(sc, c, '/r/b', ('/r/b', '/r/c'), what)
            ft.check(e.message.startswith('Cannot freeze /r/c: it no longer exists.'),
                     f'{what}: the error names /r/c', e.message)
            ft.check('Restoring the flag of /r/b failed (' in e.message and
                     '): the group no longer exists' in e.message,
                     f'{what}: the error says /r/b could not be written back, being gone', e.message)
            ft.check(e.message.endswith('. The other flags this call changed were restored'),
                     f'{what}: the error says the other flags were restored', e.message)
            ft.check('rolled back' not in e.message, f'{what}: the error does not say the batch was rolled back',
                     e.message)
            ft.check_equal(sc.read_freeze('/r/a'), 0, f'{what}: /r/a written back')
            sc.wait_events('/r/a', frozen=0)
            ft.check('Rollback of /r/b failed' in d.log(), f'{what}: the failed write back logged', d.log())
            ft.check_equal(ft.live_journals(d.runtime_dir), [], f'{what}: no journal left after the reply')
            sc.rmdir('/r/a')

            what = 'written back'
            e = batch(sc, c, '/r/a', ('/r/b',), what)
            ft.check_equal(e.message, 'Cannot freeze /r/b: it no longer exists; the batch was rolled back',
                           f'{what}: the error')
            ft.check_equal(sc.read_freeze('/r/a'), 0, f'{what}: /r/a written back')
            sc.wait_events('/r/a', frozen=0)
            ft.check_equal(sc.read_freeze('/r/c'), 0, f'{what}: /r/c not written')
            ft.check_equal(ft.live_journals(d.runtime_dir), [], f'{what}: no journal left after the reply')


if __name__ == '__main__':
    ft.run(test)
