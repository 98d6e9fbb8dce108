#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A storm's writes followed as they are done: a batch whose writes change
1,024 groups or more goes out from freezerd's real-time writer thread, and when
the groups it writes are disjoint subtrees, each subtree is put in the model,
settled and reported in GroupsChanged as soon as its write is done, while the
next writes go on.

  /s0 .. /s3, each with 300 empty children /sK/c0 .. /sK/c299 (1,204 groups
  with the root); freezerd runs with FREEZERD_TEST_WRITE_DELAY_USEC=150000 (a
  pause after each of its cgroup.freeze writes, in the writer thread too).

  * ApplyBatch freeze [/s0 .. /s3] (waiting): GroupsChanged reports /s0
    frozen and its 300 children frozen-by-parent while /s3/cgroup.freeze still
    reads 0 (its write is still to come) and before the reply.  By the reply
    the kernel has every group frozen; every group below the root is reported
    exactly once during the batch, in its final state, and the root (whose
    counts change with every subtree) once, with FrozenDescendants 1,203.
    The model equals the kernel.
  * The same thaw: every group reported once, running.
  * A batch over nested groups ([/s0, /s0/c0, /s1, /s2, /s3], a write inside
    another written subtree): not followed.  /s0's children are first reported
    once every write is done (/s3 reads 1 by then), each once.
  * The disjoint freeze again with "realtime_writes": false: written from the
    main loop, nothing is reported before the last write; the 1,205 entries
    of that turn go out in messages of at most 512 entries (the client reads
    one while freezerd builds the next).
GroupStatesChanged (the client subscribed to it too) follows the storm the same way:
/s0's subtree in it before the reply, each group once, with the state bits of its
final state.
A freezerd that reports a storm only after its last write fails the first two
checks; one that follows nested writes (reporting a group twice) fails the
third."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

TOPS = [f'/s{i}' for i in range(4)]
CHILDREN = 300
DELAY_USEC = 150000
GROUPS_CHANGED_MAX = 512  # entries per GroupsChanged message (daemon/manager-bus.c)
# Groups below the root: the tops and their children.
BELOW = TOPS + [f'{t}/c{j}' for t in TOPS for j in range(CHILDREN)]


def entries_per_path(rec):
    """{path: [its GroupsChanged entries' properties, in order]} since the recorder's start."""
    out = {}
    for batch in rec.groups_changed():
        for path, props in batch:
            out.setdefault(path, []).append(props)
    return out


def states_per_id(rec):
    """{id: [(state bits, frozen descendants) of its GroupStatesChanged entries, in order]}."""
    out = {}
    for s in rec.signals:
        if s.member == 'GroupStatesChanged' and s.path == ft.MANAGER_PATH:
            ids, states, _desc, fdesc = s.body
            for i, st, f in zip(ids, states, fdesc):
                out.setdefault(i, []).append((st, f))
    return out


def states_subtree_reported(rec, ids, top):
    per = states_per_id(rec)
    return ids[top] in per and all(ids[f'{top}/c{j}'] in per for j in range(CHILDREN))


def check_states_once(rec, ids, freeze, frozen_descendants, what):
    """Each group below the root once in GroupStatesChanged, with the bits of its final state
    (1 Freeze, 2 an ancestor freezes it, 4 Frozen), the root once with its final count."""
    per = states_per_id(rec)
    for p in BELOW:
        want = [0] if not freeze else [1 | 4] if p in TOPS else [2 | 4]
        got = [st for st, _f in per.get(ids[p], [])]
        if got != want:
            ft.fail(f'{what}: {p} (Id {ids[p]}) was in GroupStatesChanged with {got}, expected exactly {want}')
    ft.check(True, f'{what}: each of the {len(BELOW)} groups below the root in GroupStatesChanged once')
    ft.check_equal([f for _st, f in per.get(ids['/'], [])], [frozen_descendants],
                   f'{what}: the root in GroupStatesChanged once, with its final count')


def subtree_reported(rec, top):
    """Whether every group of top's subtree has a GroupsChanged entry."""
    per = entries_per_path(rec)
    return top in per and all(f'{top}/c{j}' in per for j in range(CHILDREN))


def report_while(rec, sc, pending, done, what):
    """Waits until done(rec); returns what /s3/cgroup.freeze read and whether the call had
    been answered when the test saw it."""
    seen = {}

    def reported(r):
        if done(r):
            seen['s3'] = sc.read_freeze('/s3')
            seen['answered'] = pending.done()
            return True
        return False

    rec.wait_for(reported, timeout=3 * ft.DEFAULT_TIMEOUT, what=what)
    return seen['s3'], seen['answered']


def check_once(rec, c, state, frozen_descendants, what):
    """After the batch: a round trip (signals go out in order with replies), then each group
    below the root reported exactly once, in `state` (a top's own state for the tops), and
    the root once with frozen_descendants."""
    c.manager_property('Groups')
    per = entries_per_path(rec)
    for p in BELOW:
        got = [e['FreezerState'] for e in per.get(p, [])]
        want = [state if p in TOPS or state == 'running' else 'frozen-by-parent']
        if got != want:
            ft.fail(f'{what}: {p} was reported {got}, expected exactly {want}')
    ft.check(True, f'{what}: each of the {len(BELOW)} groups below the root reported once, {state}')
    root = per.get('/', [])
    ft.check_equal(len(root), 1, f'{what}: the root is reported once')
    ft.check_equal(root[0]['FrozenDescendants'], frozen_descendants,
                   f'{what}: the root is reported with its final count of frozen descendants')


def check_kernel(sc, frozen, what):
    for p in BELOW:
        if sc.frozen(p) != frozen:
            ft.fail(f'{what}: the kernel has {p} {"thawed" if frozen else "frozen"}')


def followed_storm(c, rec, sc, freeze, ids):
    """ApplyBatch of every top to freeze, followed: /s0's subtree reported (in GroupsChanged
    and GroupStatesChanged) before /s3 is written and before the reply, then every group once."""
    what = 'freeze' if freeze else 'thaw'
    rec.clear()
    pending = c.call_async('ApplyBatch', [(t, freeze) for t in TOPS], 'auto', 0, 0)
    s3, answered = report_while(rec, sc, pending,
                                lambda r: subtree_reported(r, '/s0') and states_subtree_reported(r, ids, '/s0'),
                                f"GroupsChanged and GroupStatesChanged of /s0's subtree during the {what}")
    ft.check_equal(s3, int(not freeze), f"/s3/cgroup.freeze once /s0's subtree was reported ({what}: its write still to come)")
    ft.check(not answered, f"/s0's subtree is reported before the reply ({what})")
    ft.check_equal(tuple(pending.result(timeout=3 * ft.DEFAULT_TIMEOUT)), (4, 0), f'ApplyBatch {what}: 4 writes, none skipped')
    check_kernel(sc, freeze, f'at the reply of the {what}')
    count = len(BELOW) if freeze else 0
    rec.wait_for(lambda r: r.group_values('/', 'FrozenDescendants')[-1:] == [count], timeout=3 * ft.DEFAULT_TIMEOUT,
                 what=f'GroupsChanged of the root after the {what}')
    check_once(rec, c, 'frozen' if freeze else 'running', count, f'the followed {what}')
    rec.wait_for(lambda r: [f for _st, f in states_per_id(r).get(ids['/'], [])][-1:] == [count], timeout=3 * ft.DEFAULT_TIMEOUT,
                 what=f'GroupStatesChanged of the root after the {what}')
    check_states_once(rec, ids, freeze, count, f'the followed {what}')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('storm') as sc, ft.Bus() as bus:
        for t in TOPS:
            sc.mkdir(t)
            for j in range(CHILDREN):
                sc.mkdir(f'{t}/c{j}')

        env = {'FREEZERD_TEST_WRITE_DELAY_USEC': str(DELAY_USEC)}
        with ft.Daemon(bus, sc.root, env=env) as d:
            c = d.client
            rec = c.record(subscribe='groups')
            c.call('SubscribeGroupStates')
            ids = dict(c.call('ListGroupIds')[0])

            # ---- disjoint subtrees: followed write by write
            followed_storm(c, rec, sc, True, ids)
            objs = c.managed_objects()
            thawed = [p for p in BELOW if objs[ft.group_object(p)][ft.GROUP_IFACE]['Frozen'] is not True]
            ft.check_equal(thawed, [], 'groups the model has not frozen after the followed freeze')
            followed_storm(c, rec, sc, False, ids)

            # ---- nested writes: not followed
            rec.clear()
            pending = c.call_async('ApplyBatch', [(t, True) for t in TOPS] + [('/s0/c0', True)], 'auto', 0, 0)
            s3, _answered = report_while(rec, sc, pending, lambda r: '/s0/c1' in entries_per_path(r),
                                         'GroupsChanged of /s0/c1 (nested batch)')
            ft.check_equal(s3, 1, 'a batch over nested groups is first reported once every write is done')
            ft.check_equal(tuple(pending.result(timeout=3 * ft.DEFAULT_TIMEOUT)), (5, 0), 'the nested ApplyBatch: 5 writes')
            rec.wait_for(lambda r: r.group_values('/', 'FrozenDescendants')[-1:] == [len(BELOW)], timeout=3 * ft.DEFAULT_TIMEOUT,
                         what='GroupsChanged of the root after the nested batch')
            c.manager_property('Groups')
            per = entries_per_path(rec)
            ft.check_equal([e['FreezerState'] for e in per.get('/s0/c0', [])], ['frozen'],
                           '/s0/c0 (written in the nested batch) is reported once')
            ft.check_equal([e['FreezerState'] for e in per.get('/s0/c1', [])], ['frozen-by-parent'],
                           '/s0/c1 is reported once')
            c.call('ApplyBatch', [(t, False) for t in TOPS] + [('/s0/c0', False)], 'auto', 0, 0)

        # ---- without the real-time writer: nothing to follow
        with ft.Daemon(bus, sc.root, env=env, config={'realtime_writes': False}) as d:
            c = d.client
            rec = c.record(subscribe='groups')
            pending = c.call_async('ApplyBatch', [(t, True) for t in TOPS], 'auto', 0, 0)
            s3, _answered = report_while(rec, sc, pending, lambda r: '/s0/c0' in entries_per_path(r),
                                         'GroupsChanged of /s0/c0 (main loop)')
            ft.check_equal(s3, 1, 'written from the main loop, the storm is first reported once every write is done')
            ft.check_equal(tuple(pending.result(timeout=3 * ft.DEFAULT_TIMEOUT)), (4, 0), 'ApplyBatch freeze from the main loop: 4 writes')
            check_kernel(sc, True, 'at the reply of the freeze from the main loop')
            rec.wait_for(lambda r: r.group_values('/', 'FrozenDescendants')[-1:] == [len(BELOW)], timeout=3 * ft.DEFAULT_TIMEOUT,
                         what='GroupsChanged of the root, main loop')
            check_once(rec, c, 'frozen', len(BELOW), 'the freeze from the main loop')
            sizes = [len(batch) for batch in rec.groups_changed()]
            ft.check(len(sizes) >= 3 and max(sizes) <= GROUPS_CHANGED_MAX,
                     f'the {sum(sizes)} entries of the turn in GroupsChanged messages of at most '
                     f'{GROUPS_CHANGED_MAX} entries', sizes)
            c.call('ApplyBatch', [(t, False) for t in TOPS], 'auto', 0, 0)


if __name__ == '__main__':
    ft.run(test)
