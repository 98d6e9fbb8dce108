#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Settling after a write: freezerd brings the model of the written subtree to
what the kernel did inside the write without waiting for notifications, and
partly without reading (kernel/cgroup/freezer.c: a thawed group is thawed
inside the write; an empty freezing subtree is frozen).  The model must still
be exactly the kernel's, also when a write behind freezerd's back races with
its own.

  /t {/t/e1 {/t/e1/x}, /t/e2, /t/p (2 sleepers)}

  * ApplyBatch freeze [/t] (waiting): at the reply, Frozen of every group (and
    Populated) equals the kernel's cgroup.events; the empty groups /t/e1,
    /t/e1/x, /t/e2 appear in GroupsChanged once, already frozen-by-parent (no
    transient freezing-by-parent): their final state came in the write's turn.
  * ApplyBatch thaw [/t]: the same, every group running.  A task then comes
    into /t/e1/x (vouched for by the empty /t/e1 since the start) and leaves:
    GroupsChanged says /t/e1/x populated, then empty.
  * /v {/v/c0 .. /v/c4}, all empty: after ApplyBatch freeze [/v], freezerd
    answers the notifications below /v by reading /v alone (it vouches that
    its subtree is empty).  A process then moves into /v/c3: GroupsChanged says
    /v/c3 and /v populated, and the model of every group matches the kernel;
    the thaw replies with /v/c3 thawed.  The process then moves out again:
    GroupsChanged says /v/c3 empty (no longer vouched for, /v/c3's own
    notifications are followed again).
  * /r {/r/a {/r/a/x}}, empty and frozen, then a batch thawing /r and freezing
    /stuck (a process blocked on a FUSE mount that never answers) with
    ROLLBACK_ON_TIMEOUT: it times out and writes /r back to 1 without settling;
    /r/a and /r/a/x must be reported frozen-by-parent again, as the kernel
    has them (they were vouched for by /r, which stays empty).  At the
    Timeout reply, before any signal, the model of /r, /r/a and /r/a/x is
    the kernel's (freezerd read /r in the turn of the write back, as it read
    the groups below), and /r is reported frozen no later than /r/a
    frozen-by-parent (a GroupsChanged is one loop turn's changes: no luck of
    timing passes this).
  * A write behind freezerd's back that lands between its write and its
    settling: freezerd runs with FREEZERD_TEST_WRITE_DELAY_USEC=300000 (a
    300 ms pause after each of its writes); while it pauses after thawing /t,
    the test writes 1 to /t/e1/cgroup.freeze.  /t/e1 stays frozen (now by its
    own flag) and the model never says otherwise: no GroupsChanged entry shows
    /t/e1 or /t/e1/x running, and at the reply their Frozen is the kernel's.
  * The same race on the written group itself: while freezerd pauses after
    thawing /t, the test writes 1 back: the ApplyBatch fails with Cancelled,
    and the model says /t frozen, as the kernel does.
  * A batch failing halfway without ROLLBACK_ON_TIMEOUT: [/y/a, /z] bottom-up,
    /z removed while freezerd pauses after writing /y/a.  The call fails with
    NoSuchGroup, and GroupsChanged says /y/a frozen and /y/a/x (vouched for by
    the empty /y) frozen-by-parent, as the kernel has them.  The same over
    /w/a {/w/a/x {/w/a/x/y}} with /w/a polled and vouching for the groups
    below: at the reply the model of all three is the kernel's, and /w/a is
    reported frozen no later than /w/a/x frozen-by-parent.
  * freezerd over /outer/in {/a {/a/x}}, all empty, and /outer frozen behind
    its back: a flag above its root, which its model does not hold.
    GroupsChanged says /a and /a/x frozen, then thawed once /outer is.  Then
    freezerd thaws /a (NO_WAIT) while /outer is frozen again: the model must
    not deduce /a and /a/x thawed, the kernel keeps them frozen."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ['/t', '/t/e1', '/t/e1/x', '/t/e2', '/t/p']
EMPTY = ['/t/e1', '/t/e1/x', '/t/e2']
DELAY_USEC = 300000


def check_model(c, sc, what, paths=GROUPS):
    objs = c.managed_objects()
    for p in paths:
        props = objs[ft.group_object(p)][ft.GROUP_IFACE]
        ev = sc.read_events(p)
        ft.check_equal(props['Frozen'], bool(ev['frozen']), f'{what}: Frozen of {p} is the kernel\'s')
        ft.check_equal(props['Populated'], bool(ev['populated']), f'{what}: Populated of {p} is the kernel\'s')


def states(rec, path):
    return rec.group_values(path, 'FreezerState')


def check_top_reported_first(rec, top, below, what):
    """The GroupsChanged that last reported `below` becoming frozen-by-parent
    carries `top` Frozen, or an earlier one did: freezerd read `top` in the
    turn of its unsettled write, as it read the groups below.  A model with
    `below` frozen by `top` while `top` is not frozen (left to `top`'s own
    notification, a later turn) is what a client reads at the reply.
    Deterministic: each message is one loop turn's changes."""
    top_frozen, prev, at = None, None, None
    for batch in rec.groups_changed():
        entries = dict(batch)
        if top in entries:
            top_frozen = entries[top]['Frozen']
        if below in entries:
            state = entries[below]['FreezerState']
            if state == 'frozen-by-parent' and prev != state:
                at = top_frozen
            prev = state
    ft.check_equal(at, True, f'{what}: {top} was reported frozen by the GroupsChanged that said {below} '
                   'frozen-by-parent, or an earlier one')


def fail_batch_halfway(c, sc, rec, groups, cover, written, removed):
    """A batch that fails halfway, without ROLLBACK_ON_TIMEOUT: groups made (removed last),
    cover frozen and thawed (it vouches for its empty subtree from then on), rec cleared,
    then ApplyBatch [written, removed] freeze, bottom-up, removed rmdir'ed once freezerd
    wrote written's flag: the batch fails with NoSuchGroup, written's flag stays 1."""
    for p in (*groups, removed):
        sc.mkdir(p)
    rec.wait_for(lambda r: any(o == ft.group_object(removed) for o, _ in r.interfaces_added()),
                 what=f'{removed} announced')
    c.call('ApplyBatch', [(cover, True)], 'auto', 0, 0)
    c.call('ApplyBatch', [(cover, False)], 'auto', 0, 0)
    rec.clear()
    pending = c.call_async('ApplyBatch', [(written, True), (removed, True)], 'bottom-up', 0, 0)
    ft.wait_for(lambda: sc.read_freeze(written) == 1, what=f'freezerd wrote 1 to {written}/cgroup.freeze')
    os.rmdir(sc.abspath(removed))
    ft.expect_dbus_error('org.freezerd.Freezer1.Error.NoSuchGroup', pending.result)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('settle') as sc, ft.Bus() as bus:
        for p in GROUPS:
            sc.mkdir(p)
        sc.spawn_sleepers('/t/p', 2)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            rec = c.record(subscribe='groups')

            c.call('ApplyBatch', [('/t', True)], 'auto', 0, 0)
            check_model(c, sc, 'after the freeze')
            rec.wait_for(lambda r: all(states(r, p)[-1:] == ['frozen-by-parent'] for p in EMPTY),
                         what='GroupsChanged of the empty groups')
            for p in EMPTY:
                ft.check_equal(states(rec, p), ['frozen-by-parent'],
                               f'{p} is reported once, frozen-by-parent at once')

            rec.clear()
            c.call('ApplyBatch', [('/t', False)], 'auto', 0, 0)
            check_model(c, sc, 'after the thaw')
            rec.wait_for(lambda r: all(states(r, p)[-1:] == ['running'] for p in EMPTY + ['/t/p']),
                         what='GroupsChanged of the thawed groups')
            for p in EMPTY + ['/t/p']:
                ft.check_equal(states(rec, p), ['running'], f'{p} is reported once, running at once')

            # /t/e1/x was vouched for by the empty /t/e1 from the start (not
            # followed through its own file): a task coming in and going out
            # again is still seen, in /t/e1/x itself.
            rec.clear()
            visitor = sc.spawn_sleepers('/t/p', 1)[0]
            with open(sc.abspath('/t/e1/x', 'cgroup.procs'), 'w') as f:
                f.write(str(visitor.pid))
            rec.wait_for(lambda r: r.group_values('/t/e1/x', 'Populated')[-1:] == [True],
                         what='GroupsChanged saying /t/e1/x populated')
            with open(sc.abspath('/t/p', 'cgroup.procs'), 'w') as f:
                f.write(str(visitor.pid))
            rec.wait_for(lambda r: r.group_values('/t/e1/x', 'Populated')[-1:] == [False] and
                         r.group_values('/t/e1', 'Populated')[-1:] == [False],
                         what='GroupsChanged saying /t/e1/x and /t/e1 empty again')
            check_model(c, sc, 'after a task came into /t/e1/x and left')

            # ---- an empty subtree vouched for by its top, then a task comes in
            sc.mkdir('/v')
            for i in range(5):
                sc.mkdir(f'/v/c{i}')
            rec.wait_for(lambda r: any(o == ft.group_object('/v/c4') for o, _ in r.interfaces_added()),
                         what='/v/c4 announced')
            rec.clear()
            c.call('ApplyBatch', [('/v', True)], 'auto', 0, 0)
            rec.wait_for(lambda r: all(states(r, f'/v/c{i}')[-1:] == ['frozen-by-parent'] for i in range(5)),
                         what='GroupsChanged of /v/c0../v/c4 frozen-by-parent')
            rec.clear()
            # A sleeper started in a running group moves into the frozen /v/c3
            # (a process cannot be started inside a frozen group: it would
            # freeze before exec) and freezes there.
            mover = sc.spawn_sleepers('/t/p', 1)[0]
            with open(sc.abspath('/v/c3', 'cgroup.procs'), 'w') as f:
                f.write(str(mover.pid))
            rec.wait_for(lambda r: True in r.group_values('/v/c3', 'Populated'),
                         what='GroupsChanged saying /v/c3 populated')
            rec.wait_for(lambda r: True in r.group_values('/v', 'Populated'), what='GroupsChanged saying /v populated')
            ft.wait_for(lambda: sc.frozen('/v/c3'), what='the kernel has /v/c3 frozen again')
            rec.wait_for(lambda r: states(r, '/v/c3')[-1:] == ['frozen-by-parent'],
                         what='GroupsChanged saying /v/c3 frozen-by-parent again')
            # /v's own notification of frozen again may come after /v/c3's: the
            # kernel holds each file's back for up to 10 ms after its last one,
            # with a timer per file.
            rec.wait_for(lambda r: r.group_values('/v', 'Frozen')[-1:] == [True],
                         what='GroupsChanged saying /v frozen again')
            check_model(c, sc, 'with a task in /v/c3', ['/v'] + [f'/v/c{i}' for i in range(5)])
            c.call('ApplyBatch', [('/v', False)], 'auto', 0, 0)
            ft.check_equal(c.group_property('/v/c3', 'Frozen'), False, '/v/c3 thawed at the reply')
            ft.check_equal(sc.frozen('/v/c3'), False, 'the kernel has /v/c3 thawed')
            # /v/c3 is no longer vouched for: its own notifications are followed
            # again (its cgroup.events back in freezerd's epoll set), so the
            # mover leaving it is seen there, not only in /v.
            rec.clear()
            with open(sc.abspath('/t/p', 'cgroup.procs'), 'w') as f:
                f.write(str(mover.pid))
            rec.wait_for(lambda r: r.group_values('/v/c3', 'Populated')[-1:] == [False],
                         what='GroupsChanged saying /v/c3 empty again')
            ft.check_equal(c.group_property('/v/c3', 'Populated'), False, 'the model has /v/c3 empty again')

        # ---- a rollback over a vouched-empty subtree
        with ft.FuseHang() as fuse:
            for p in ('/r', '/r/a', '/r/a/x'):
                sc.mkdir(p)
            fuse.spawn_stuck(sc, '/stuck')
            with ft.Daemon(bus, sc.root) as d:
                c = d.client
                c.call('ApplyBatch', [('/r', True)], 'auto', 0, 0)
                rec = c.record(subscribe='groups')
                try:
                    c.call('ApplyBatch', [('/r', False), ('/stuck', True)], 'auto', 300000,
                           ft.FLAG_ROLLBACK_ON_TIMEOUT)
                    ft.fail('the batch over /stuck succeeded, expected Timeout')
                except ft.DBusError as e:
                    ft.check_equal(e.name, 'org.freezerd.Freezer1.Error.Timeout', 'the batch over /stuck times out')
                ft.check_equal(sc.read_freeze('/r'), 1, 'the rollback wrote /r back to 1')
                # No wait for a signal: the reply went out in the turn of the
                # write back, after freezerd read /r and the groups below.
                check_model(c, sc, 'at the Timeout reply', ('/r', '/r/a', '/r/a/x'))
                rec.wait_for(lambda r: all(states(r, p)[-1:] == ['frozen-by-parent'] for p in ('/r/a', '/r/a/x')),
                             what='GroupsChanged saying /r/a and /r/a/x frozen-by-parent again')
                check_top_reported_first(rec, '/r', '/r/a', 'after the rollback')
                check_model(c, sc, 'after the rollback', ('/r', '/r/a', '/r/a/x'))
                c.call('Thaw', '/stuck', 0, 0)

        # ---- writes behind freezerd's back racing with its own
        ft.loop().watch(sc.abspath('/t'))
        with ft.Daemon(bus, sc.root, env={'FREEZERD_TEST_WRITE_DELAY_USEC': str(DELAY_USEC)}) as d:
            c = d.client
            c.call('ApplyBatch', [('/t', True)], 'auto', 0, 0)
            rec = c.record(subscribe='groups')

            pending = c.call_async('ApplyBatch', [('/t', False)], 'auto', 0, 0)
            ft.wait_for(lambda: sc.read_freeze('/t') == 0, what='freezerd wrote 0 to /t/cgroup.freeze')
            sc.write_freeze('/t/e1', 1)
            pending.result()
            check_model(c, sc, 'after the raced thaw')
            ft.check_equal(sc.frozen('/t/e1'), True, 'the kernel has /t/e1 frozen (its own flag)')
            rec.wait_for(lambda r: states(r, '/t/e1')[-1:] == ['frozen'], what='GroupsChanged /t/e1 frozen')
            for p in ('/t/e1', '/t/e1/x'):
                ft.check('running' not in states(rec, p),
                         f'{p} was never reported running (the write behind our back was applied before anything was signalled)',
                         states(rec, p))

            # The written group itself reversed while freezerd pauses.
            sc.write_freeze('/t/e1', 0)
            c.call('ApplyBatch', [('/t', True)], 'auto', 0, 0)
            rec.clear()
            pending = c.call_async('ApplyBatch', [('/t', False)], 'auto', 0, 0)
            ft.wait_for(lambda: sc.read_freeze('/t') == 0, what='freezerd wrote 0 to /t/cgroup.freeze')
            sc.write_freeze('/t', 1)
            ft.expect_dbus_error('org.freezerd.Freezer1.Error.Cancelled', pending.result)
            rec.wait_for(lambda r: states(r, '/t')[-1:] == ['frozen'], what='GroupsChanged /t frozen')
            check_model(c, sc, 'after the reversed thaw')

            # A batch that fails halfway, without ROLLBACK_ON_TIMEOUT: /y/a is
            # written, then /z is removed while freezerd pauses, and its write
            # fails.  /y/a stays frozen, and /y/a/x (vouched for by the empty
            # /y, and so not followed through its own file) frozen-by-parent:
            # freezerd must say so, though it settled nothing.
            fail_batch_halfway(c, sc, rec, ('/y', '/y/a', '/y/a/x'), cover='/y', written='/y/a', removed='/z')
            ft.check_equal((sc.frozen('/y/a'), sc.frozen('/y/a/x')), (True, True),
                           'the kernel has /y/a and /y/a/x frozen (the requests before /z stay applied)')
            rec.wait_for(lambda r: states(r, '/y/a')[-1:] == ['frozen'] and
                         states(r, '/y/a/x')[-1:] == ['frozen-by-parent'],
                         what='GroupsChanged saying /y/a frozen and /y/a/x frozen-by-parent')
            check_model(c, sc, 'after the failed batch', ('/y', '/y/a', '/y/a/x'))

            # The same with the written group polled and vouching for the
            # empty /w/a/x and /w/a/x/y itself (freezerd settled a write of
            # it): /w/a's own state is read in the turn of the failure, not
            # left to its notification.  (Two levels below: the read of a
            # group that leaves its parent's descendants all frozen reads
            # the parent, and /w/a/x is read before /w/a/x/y.)
            fail_batch_halfway(c, sc, rec, ('/w', '/w/a', '/w/a/x', '/w/a/x/y'), cover='/w/a', written='/w/a',
                               removed='/q')
            check_model(c, sc, 'at the reply of the batch that failed halfway', ('/w/a', '/w/a/x', '/w/a/x/y'))
            rec.wait_for(lambda r: states(r, '/w/a')[-1:] == ['frozen'] and
                         all(states(r, p)[-1:] == ['frozen-by-parent'] for p in ('/w/a/x', '/w/a/x/y')),
                         what='GroupsChanged saying /w/a frozen, /w/a/x and /w/a/x/y frozen-by-parent')
            check_top_reported_first(rec, '/w/a', '/w/a/x', 'after the batch that failed halfway')


        # ---- a freeze above freezerd's root, which the model does not hold
        for p in ('/outer', '/outer/in', '/outer/in/a', '/outer/in/a/x'):
            sc.mkdir(p)
        with ft.Daemon(bus, sc.abspath('/outer/in')) as d:
            c = d.client
            rec = c.record(subscribe='groups')
            # /a and /a/x are empty below the empty root: vouched for by it,
            # not followed through their own files.
            sc.write_freeze('/outer', 1)
            ft.wait_for(lambda: sc.frozen('/outer/in/a/x'), what='the kernel has /outer/in/a/x frozen')
            rec.wait_for(lambda r: r.group_values('/a', 'Frozen')[-1:] == [True] and
                         r.group_values('/a/x', 'Frozen')[-1:] == [True],
                         what='GroupsChanged saying /a and /a/x frozen (by the freeze above the root)')
            sc.write_freeze('/outer', 0)
            rec.wait_for(lambda r: r.group_values('/a', 'Frozen')[-1:] == [False] and
                         r.group_values('/a/x', 'Frozen')[-1:] == [False],
                         what='GroupsChanged saying /a and /a/x thawed again')
            for p in ('/a', '/a/x'):
                ft.check_equal(c.group_property(p, 'Frozen'), sc.frozen('/outer/in' + p),
                               f'after the freeze above the root, Frozen of {p} is the kernel\'s')

            # freezerd's own thaw under the freeze above: the kernel keeps /a
            # and /a/x frozen, and the model must not deduce them thawed.
            c.call('ApplyBatch', [('/a', True)], 'auto', 0, 0)
            sc.write_freeze('/outer', 1)
            ft.wait_for(lambda: sc.frozen('/outer/in'), what='the kernel has /outer/in frozen')
            c.call('ApplyBatch', [('/a', False)], 'auto', 0, ft.FLAG_NO_WAIT)
            c.call('ListGroups')  # a round trip after the settle
            for p in ('/a', '/a/x'):
                ft.check_equal(c.group_property(p, 'Frozen'), True,
                               f'{p} thawed by freezerd under the freeze above the root: the model says frozen, '
                               'as the kernel has it')
                ft.check_equal(sc.frozen('/outer/in' + p), True, f'the kernel has {p} frozen')
            sc.write_freeze('/outer', 0)
            rec.wait_for(lambda r: r.group_values('/a/x', 'Frozen')[-1:] == [False],
                         what='GroupsChanged saying /a/x thawed once /outer is')


ft.run(test)
