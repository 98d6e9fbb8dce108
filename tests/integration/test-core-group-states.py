#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Manager.GroupStatesChanged: the entries of GroupsChanged as arrays of numbers, groups
named by their Id, sent only while a client called SubscribeGroupStates().

  /a  {/a/b (2 sleepers), /a/c (empty)},  /d

  * Ids: ListGroupIds() lists the same groups as ListGroups(), each with the Id
    its object's Id property says, no Id twice; busctl says the same.  Each Id
    is the kernel's cgroup id: the inode number of the group's directory.
  * SubscribeGroups() alone: a freeze sends GroupsChanged and no
    GroupStatesChanged.
  * SubscribeGroupStates() alone: a freeze of /a sends GroupStatesChanged (and
    no GroupsChanged, no PropertiesChanged of a group) whose arrays are of one
    length, each Id at most once per message, naming /a, /a/b, /a/c and "/";
    each group's last entry agrees with Get: the bits 1 Freeze, 2 an ancestor
    freezes it, 4 Frozen, 8 Populated, and Descendants, FrozenDescendants; /d
    is not in them.  A thaw likewise.
  * A group that freezes itself (/a/b): a freeze and a thaw of /a send its entry with
    bit 2 set and cleared, though its properties did not change (no GroupsChanged entry
    or PropertiesChanged of it).
  * A new group: its InterfacesAdded carries an Id not seen before, the one Get
    and ListGroupIds() say and its directory's inode number; removed and made
    again, it gets another (the kernel's new cgroup's).
  * A restart of freezerd keeps every Id.
  * Subscriptions count: SubscribeGroupStates twice, UnsubscribeGroupStates twice,
    a third fails with NotSubscribed; after them no GroupStatesChanged.
  * The private socket: a direct connection that called SubscribeGroupStates()
    gets GroupStatesChanged (with no match rule); one that called
    SubscribeGroups() gets none.

Signals are waited for with a deadline: freezerd sends a turn's signals after the
turn's replies, and a call that reaches it before the turn ends is answered first, so
a round trip is no barrier by itself.  "None arrived" is checked behind a signal that
must come from the same emission (GroupsChanged and GroupStatesChanged of one turn go
out together), then a round trip: no sleeping."""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ['/a', '/a/b', '/a/c', '/d']
FREEZE, ANCESTOR_FREEZES, FROZEN, POPULATED = 1, 2, 4, 8
NOT_SUBSCRIBED = 'org.freezerd.Freezer1.Error.NotSubscribed'


def states_changed(rec):
    """Every GroupStatesChanged of rec: [[(id, states, descendants, frozen_descendants), ...], ...]."""
    out = []
    for s in rec.signals:
        if s.interface == ft.MANAGER_IFACE and s.member == 'GroupStatesChanged' and s.path == ft.MANAGER_PATH:
            ids, states, desc, fdesc = s.body
            if not len(ids) == len(states) == len(desc) == len(fdesc):
                ft.fail(f'a GroupStatesChanged whose arrays differ in length: {s.body!r}')
            if len(ids) != len(set(ids)):
                ft.fail(f'a GroupStatesChanged that names an Id twice: {ids!r}')
            out.append(list(zip(ids, states, desc, fdesc)))
    return out


def check_messages(rec, what):
    """The checks of states_changed(), said once."""
    n = len(states_changed(rec))
    ft.check(n > 0, f'{what}: {n} GroupStatesChanged, their four arrays of one length, no Id twice in one')


def last_states(rec):
    """{id: (states, descendants, frozen_descendants)} of the last entry of each Id."""
    out = {}
    for batch in states_changed(rec):
        for i, st, d, f in batch:
            out[i] = (st, d, f)
    return out


def ancestors(path):
    """The API paths above path, nearest first, "/" last."""
    out = []
    while path != '/':
        path = path.rsplit('/', 1)[0] or '/'
        out.append(path)
    return out


def expected_bits(c, path):
    """(state bits, Descendants, FrozenDescendants) as Get says them for the group at path."""
    props = c.get_all(ft.group_object(path), ft.GROUP_IFACE)
    ancestor = any(c.group_property(a, 'Freeze') for a in ancestors(path))
    bits = (FREEZE if props['Freeze'] else 0) | (ANCESTOR_FREEZES if ancestor else 0) | \
        (FROZEN if props['Frozen'] else 0) | (POPULATED if props['Populated'] else 0)
    return bits, props['Descendants'], props['FrozenDescendants']


def settled(c):
    c.call('ListGroups')


def group_signals(rec):
    return [s.member for s in rec.signals if s.member in ('GroupsChanged', 'GroupStatesChanged') or
            (s.member == 'PropertiesChanged' and s.path.startswith(ft.GROUP_PREFIX))]


def wait_entries(c, rec, ids, paths, what):
    """Waits until GroupStatesChanged has brought, for each group of paths, the state Get
    says now (after the call's reply), then checks the entries."""
    want = {p: expected_bits(c, p) for p in paths}
    rec.wait_for(lambda r: all(last_states(r).get(ids[p]) == want[p] for p in paths), timeout=ft.DEFAULT_TIMEOUT,
                 what=f'{what}: GroupStatesChanged saying {want}')
    check_entries(c, rec, ids, paths, what)


def wait_member(rec, member, what):
    rec.wait_for(lambda r: member in group_signals(r), timeout=ft.DEFAULT_TIMEOUT, what=f'{what}: {member}')


def check_entries(c, rec, ids, paths, what):
    check_messages(rec, what)
    last = last_states(rec)
    for p in paths:
        ft.check(ids[p] in last, f'{what}: GroupStatesChanged names {p} (Id {ids[p]})', sorted(last))
        if ids[p] in last:
            ft.check_equal(last[ids[p]], expected_bits(c, p),
                           f'{what}: the last entry of {p} (bits, Descendants, FrozenDescendants) agrees with Get')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    run = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}group-states-{os.getpid()}-')
    try:
        with ft.Scratch('group-states') as sc, ft.Bus() as bus:
            for p in GROUPS:
                sc.mkdir(p)
            sc.spawn_sleepers('/a/b', 2)
            with ft.Daemon(bus, sc.root, runtime_dir=run) as d:
                c = d.client
                check_ids(sc, c)
                ids = dict(c.call('ListGroupIds')[0])
                check_bus(sc, c, ids)
                check_private(sc, c, ids, os.path.join(run, 'private'))
            with ft.Daemon(bus, sc.root) as d:
                ft.check_equal(dict(d.client.call('ListGroupIds')[0]), ids, 'a restart of freezerd keeps every Id')
    finally:
        shutil.rmtree(run, ignore_errors=True)


def check_ids(sc, c):
    listed = c.call('ListGroupIds')[0]
    paths = [p for p, _ in listed]
    ft.check_equal(paths, [p for p, _o, _s in c.call('ListGroups')[0]],
                   'ListGroupIds lists the groups of ListGroups, in its order')
    ft.check_equal(len({i for _, i in listed}), len(listed), 'no Id twice in ListGroupIds')
    kernel = {p: os.stat(sc.abspath(p)).st_ino for p, _ in listed}
    ft.check_equal(dict(listed), kernel, "each Id is the kernel's: the inode number of the group's directory")
    for p, i in listed:
        ft.check_equal(c.group_property(p, 'Id'), i, f'the Id property of {p} is the one ListGroupIds says')
    # As an operator would ask.
    r = ft.busctl('call', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, 'ListGroupIds')
    want = f'a(st) {len(listed)} ' + ' '.join(f'"{p}" {i}' for p, i in listed)
    ft.check_equal(r.stdout.strip(), want, 'busctl call ListGroupIds')
    r = ft.busctl('get-property', ft.BUS_NAME, ft.group_object('/a/b'), ft.GROUP_IFACE, 'Id')
    ft.check_equal(r.stdout.strip(), f't {dict(listed)["/a/b"]}', 'busctl get-property of /a/b: Id')


def check_bus(sc, c, ids):
    frozen_paths = ['/', '/a', '/a/b', '/a/c']

    # ---- SubscribeGroups alone: no GroupStatesChanged
    rec = c.record(subscribe='groups')
    c.call('Freeze', '/a', 0, 0)
    wait_member(rec, 'GroupsChanged', 'SubscribeGroups')
    settled(c)
    ft.check('GroupsChanged' in group_signals(rec), 'SubscribeGroups: GroupsChanged comes', group_signals(rec))
    ft.check('GroupStatesChanged' not in group_signals(rec), 'SubscribeGroups: no GroupStatesChanged',
             group_signals(rec))
    c.call('Thaw', '/a', 0, 0)
    c.call('UnsubscribeGroups')

    # ---- SubscribeGroupStates alone
    c.call('SubscribeGroupStates')
    rec.clear()
    c.call('Freeze', '/a', 0, 0)
    ft.check_equal(sc.read_events('/a/b').get('frozen'), 1, 'the kernel says /a/b frozen')
    wait_entries(c, rec, ids, frozen_paths, 'freeze of /a')
    settled(c)
    ft.check_equal(sorted(set(group_signals(rec))), ['GroupStatesChanged'],
                   'SubscribeGroupStates alone: GroupStatesChanged and no other signal of groups')
    ft.check_equal(last_states(rec).get(ids['/a']), (FREEZE | FROZEN | POPULATED, 2, 2),
                   '/a: Freeze, Frozen, Populated; 2 descendants, both frozen')
    ft.check_equal(last_states(rec).get(ids['/a/b']), (ANCESTOR_FREEZES | FROZEN | POPULATED, 0, 0),
                   '/a/b: frozen by its ancestor, populated')
    ft.check_equal(last_states(rec).get(ids['/a/c']), (ANCESTOR_FREEZES | FROZEN, 0, 0),
                   '/a/c: frozen by its ancestor, empty')
    ft.check(ids['/d'] not in last_states(rec), '/d did not change: not in GroupStatesChanged')

    rec.clear()
    c.call('Thaw', '/a', 0, 0)
    wait_entries(c, rec, ids, frozen_paths, 'thaw of /a')
    ft.check_equal(last_states(rec).get(ids['/a/b']), (POPULATED, 0, 0), '/a/b after the thaw: populated only')

    check_parent_freezes(c, rec, ids)

    # ---- a new group's Id comes with its InterfacesAdded; never given twice
    rec.clear()
    sc.mkdir('/a/e')
    obj = ft.group_object('/a/e')
    rec.wait_for(lambda r: any(o == obj for o, _ in r.interfaces_added()), what='InterfacesAdded of /a/e')
    added = [ifaces for o, ifaces in rec.interfaces_added() if o == obj][0]
    new_id = added.get(ft.GROUP_IFACE, {}).get('Id')
    ft.check(new_id is not None and new_id not in ids.values(), 'InterfacesAdded of /a/e carries a new Id',
             (new_id, sorted(ids.values())))
    ft.check_equal(new_id, os.stat(sc.abspath('/a/e')).st_ino, "... the kernel's id of /a/e")
    ft.check_equal(c.group_property('/a/e', 'Id'), new_id, 'Get says the Id of InterfacesAdded')
    ft.check_equal(dict(c.call('ListGroupIds')[0]).get('/a/e'), new_id, 'ListGroupIds says it too')
    rec.clear()
    sc.rmdir('/a/e')
    rec.wait_for(lambda r: any(o == obj for o, _ in r.interfaces_removed()), what='InterfacesRemoved of /a/e')
    sc.mkdir('/a/e')
    rec.wait_for(lambda r: any(o == obj for o, _ in r.interfaces_added()), what='InterfacesAdded of /a/e again')
    again = [ifaces for o, ifaces in rec.interfaces_added() if o == obj][-1][ft.GROUP_IFACE]['Id']
    ft.check(again != new_id, '/a/e made again gets another Id', (new_id, again))
    ft.check_equal(again, os.stat(sc.abspath('/a/e')).st_ino, "... the kernel's id of the new /a/e")
    sc.rmdir('/a/e')
    rec.wait_for(lambda r: sum(o == obj for o, _ in r.interfaces_removed()) == 2, what='/a/e removed again')

    # ---- subscriptions count
    c.call('SubscribeGroupStates')  # now twice
    c.call('UnsubscribeGroupStates')
    rec.clear()
    c.call('Freeze', '/d', 0, 0)
    wait_entries(c, rec, ids, ['/d'], 'after two SubscribeGroupStates and one Unsubscribe, they still come')
    c.call('UnsubscribeGroupStates')
    c.subscribe_groups()  # the anchor: its GroupsChanged goes out with any GroupStatesChanged
    rec.clear()
    c.call('Thaw', '/d', 0, 0)
    wait_member(rec, 'GroupsChanged', 'the thaw of /d')
    settled(c)
    ft.check('GroupStatesChanged' not in group_signals(rec),
             'after as many UnsubscribeGroupStates as SubscribeGroupStates, none', group_signals(rec))
    c.call('UnsubscribeGroups')
    ft.expect_dbus_error(NOT_SUBSCRIBED, c.call, 'UnsubscribeGroupStates')


def check_parent_freezes(c, rec, ids):
    """Bit 2 of a group that freezes itself follows its ancestor's flag, though none of its
    properties (FreezerState stays "frozen") changes: until session 33 its entry did not
    come, and a client of GroupStatesChanged kept the old bit 2 (the soak found it)."""
    with ft.Client(c.address) as full:
        frec = full.record()  # Subscribe(): GroupsChanged and PropertiesChanged
        c.call('Freeze', '/a/b', 0, 0)
        wait_entries(c, rec, ids, ['/a/b'], 'freeze of /a/b')
        for what, method, want in (('freeze', 'Freeze', FREEZE | ANCESTOR_FREEZES | FROZEN | POPULATED),
                                   ('thaw', 'Thaw', FREEZE | FROZEN | POPULATED)):
            rec.clear()
            frec.clear()
            c.call(method, '/a', 0, 0)
            # /a's entry comes in the turn's message, with /a/b's if it comes at all.
            rec.wait_for(lambda r: ids['/a'] in last_states(r), timeout=ft.DEFAULT_TIMEOUT, what=f'{what} of /a: its entry')
            frec.wait_for(lambda r: '/a' in [p for b in r.groups_changed() for p, _ in b], timeout=ft.DEFAULT_TIMEOUT,
                          what=f'{what} of /a: GroupsChanged naming /a')
            ft.check_equal(last_states(rec).get(ids['/a/b']), (want, 0, 0),
                           f'{what} of /a: GroupStatesChanged brings /a/b (own flag set) with bit 2 as /a says')
            ft.check_equal(expected_bits(c, '/a/b'), (want, 0, 0), '... as Get and the flags above say')
            settled(full)
            ft.check('/a/b' not in [p for b in frec.groups_changed() for p, _ in b],
                     f'{what} of /a: no GroupsChanged entry of /a/b (no property of it changed)',
                     frec.groups_changed())
            ft.check_equal(frec.properties_changed(ft.group_object('/a/b')), [],
                           f'{what} of /a: no PropertiesChanged of /a/b')
        c.call('Thaw', '/a/b', 0, 0)
        full.call('Unsubscribe')


def check_private(sc, c, ids, path):
    with ft.Client(f'unix:path={path}', direct=True) as states, \
            ft.Client(f'unix:path={path}', direct=True) as groups:
        states.call('SubscribeGroupStates')
        groups.call('SubscribeGroups')
        rs, rg = ft.SignalRecorder(states), ft.SignalRecorder(groups)
        c.call('Freeze', '/a', 0, 0)
        wait_entries(c, rs, ids, ['/', '/a', '/a/b', '/a/c'], 'private socket')
        wait_member(rg, 'GroupsChanged', 'a direct connection that called SubscribeGroups')
        settled(groups)
        ft.check('GroupStatesChanged' not in group_signals(rg),
                 'a direct connection that called SubscribeGroups gets no GroupStatesChanged', group_signals(rg))
        ft.check('GroupsChanged' in group_signals(rg), '... and gets GroupsChanged', group_signals(rg))
        c.call('Thaw', '/a', 0, 0)
        states.call('UnsubscribeGroupStates')
        ft.expect_dbus_error(NOT_SUBSCRIBED, states.call, 'UnsubscribeGroupStates')


ft.run(test)
