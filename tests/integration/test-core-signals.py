#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Signals are sent only while a client asked for them (as systemd's Manager does):
Manager.SubscribeGroups() for GroupsChanged, Manager.Subscribe() for GroupsChanged
and one PropertiesChanged per changed group object.

  /a  {/a/b (3 sleepers), /a/c (empty)}

  * Nobody subscribed (to them): freezing /a sends neither GroupsChanged nor any
    PropertiesChanged of a group object.
  * SubscribeGroups(): a thaw sends GroupsChanged whose entries say /a, /a/b
    and /a/c running (each entry the group's whole state, each group at most
    once per message), and no PropertiesChanged; the last entry of each group
    agrees with Get, property by property.
  * Subscribe(): a freeze sends, besides GroupsChanged, one PropertiesChanged
    per changed object with the same values as its GroupsChanged entry, and at
    most one per object per GroupsChanged message (one loop turn).
  * Subscriptions count: Subscribe twice, Unsubscribe twice (a third fails with
    NotSubscribed); the same for SubscribeGroups/UnsubscribeGroups.
  * A subscription ends when its client leaves the bus: a second client
    subscribes (both ways) and disconnects; once freezerd was told
    (NameOwnerChanged, seen by us first), a freeze sends no signal.

"None arrived" is checked without sleeping, behind a witness: a second client holds
SubscribeGroupStates() throughout, so that every turn's changes end with a
GroupStatesChanged, which freezerd sends after that turn's PropertiesChanged and
GroupsChanged, and which our match receives too (signals on the bus go to every
match; one sender's messages keep their order).  Once it says the new state, every
signal of the turn that got there has arrived.  (A round trip alone is no such
barrier: a call read in the same turn is answered before the turn's signals.)"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ['/a', '/a/b', '/a/c']


def group_pcs(rec):
    """PropertiesChanged of group objects: [(api path, {name: value})]."""
    return [(ft.path_decode(ft.GROUP_PREFIX, o), ch) for o, i, ch, _inv in rec.properties_changed()
            if i == ft.GROUP_IFACE]


def last_entries(rec):
    """{path: merged properties} over every GroupsChanged received."""
    out = {}
    for batch in rec.groups_changed():
        for p, props in batch:
            out.setdefault(p, {}).update(props)
    return out


def wait_states(rec, want, what):
    rec.wait_for(lambda r: all(last_entries(r).get(p, {}).get('FreezerState') == s for p, s in want.items()),
                 what=what)


def check_batches(rec, what):
    for batch in rec.groups_changed():
        paths = [p for p, _ in batch]
        ft.check(len(paths) == len(set(paths)), f'{what}: each group at most once per GroupsChanged', paths)
        for p, props in batch:
            ft.check(len(props) == 6 and 'FreezerState' in props and 'Frozen' in props,
                     f'{what}: the entry of {p} carries the six state properties', props)


# FreezerState as GroupStatesChanged's bits say it (1 Freeze, 2 an ancestor freezes it, 4 Frozen).
STATE_OF_BITS = {0: 'running', 5: 'frozen', 7: 'frozen', 6: 'frozen-by-parent'}


def wait_model(c, rec, want):
    """Until freezerd's Get says each group's FreezerState in want, and the witness's
    GroupStatesChanged, in rec, has said the same of each: behind it every signal of the
    turn that got there has arrived."""
    ft.wait_for(lambda: all(c.group_property(p, 'FreezerState') == st for p, st in want.items()),
                what=f'freezerd saying {want}')
    ids = dict(c.call('ListGroupIds')[0])

    def said(r):
        last = {}
        for sig in r.signals:
            if sig.member == 'GroupStatesChanged' and sig.path == ft.MANAGER_PATH:
                last.update((i, STATE_OF_BITS.get(st & 7)) for i, st in zip(sig.body[0], sig.body[1]))
        return all(last.get(ids[p]) == st for p, st in want.items())
    rec.wait_for(said, what=f'the witness\'s GroupStatesChanged saying {want}')


def check_silent(rec, what):
    ft.check_equal([s.member for s in rec.signals if s.member in ('GroupsChanged', 'PropertiesChanged')
                    and (s.member == 'GroupsChanged' or s.path.startswith(ft.GROUP_PREFIX))], [], what)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('signals') as sc, ft.Bus() as bus:
        for p in GROUPS:
            sc.mkdir(p)
        sc.spawn_sleepers('/a/b', 3)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            frozen = {'/a': 'frozen', '/a/b': 'frozen-by-parent', '/a/c': 'frozen-by-parent'}
            running = {p: 'running' for p in GROUPS}

            # The witness: GroupStatesChanged ends every turn's signals (see above).
            witness = ft.Client(bus.address)
            witness.call('SubscribeGroupStates')

            # ---- nobody subscribed: nothing
            rec = c.record(subscribe=False)
            c.call('Freeze', '/a', 0, 0)
            wait_model(c, rec, frozen)
            check_silent(rec, 'nobody subscribed: no GroupsChanged, no PropertiesChanged of a group')

            # ---- SubscribeGroups: GroupsChanged alone
            c.subscribe_groups()
            rec.clear()
            c.call('Thaw', '/a', 0, 0)
            wait_states(rec, running, 'GroupsChanged saying all running')
            ft.check(True, 'SubscribeGroups: GroupsChanged reports the thaw')
            check_batches(rec, 'thaw')
            ft.check_equal(group_pcs(rec), [], 'SubscribeGroups: no PropertiesChanged of group objects')
            entries = last_entries(rec)
            for p in GROUPS:
                obj = ft.group_object(p)
                for name in ft.SignalRecorder.GROUPS_CHANGED_FIELDS:
                    ft.check_equal(entries[p][name], c.get_property(obj, ft.GROUP_IFACE, name),
                                   f'the last GroupsChanged {name} of {p} equals Get')
            ft.check_equal(entries['/a'].get('Freeze'), False, 'the entry of /a says Freeze false')
            ft.check_equal(entries['/a'].get('FrozenDescendants'), 0, 'the entry of /a says FrozenDescendants 0')
            c.call('UnsubscribeGroups')
            ft.expect_dbus_error('org.freezerd.Freezer1.Error.NotSubscribed', c.call, 'UnsubscribeGroups')

            # ---- Subscribe: PropertiesChanged too, with the same values
            c.subscribe()
            rec.clear()
            c.call('Freeze', '/a', 0, 0)
            wait_states(rec, frozen, 'GroupsChanged saying /a frozen, /a/b and /a/c frozen-by-parent')
            check_batches(rec, 'freeze')
            pcs = group_pcs(rec)
            ft.check(set(GROUPS) <= {p for p, _ in pcs}, 'a subscriber gets PropertiesChanged of each group',
                     sorted({p for p, _ in pcs}))
            batches = rec.groups_changed()
            merged_pc = {}
            for p, ch in pcs:
                merged_pc.setdefault(p, {}).update(ch)
            entries = last_entries(rec)
            for p in GROUPS:
                ft.check_equal(merged_pc[p].get('FreezerState'), entries[p]['FreezerState'],
                               f'PropertiesChanged and GroupsChanged agree on FreezerState of {p}')
            ft.check_equal(entries['/a'].get('FrozenDescendants'), 2, 'the entry of /a says FrozenDescendants 2')
            # Per loop turn (one GroupsChanged), at most one PropertiesChanged per object.
            turn, counts, ok = 0, {}, True
            for s in rec.signals:
                if s.member == 'GroupsChanged':
                    turn += 1
                elif s.member == 'PropertiesChanged' and s.path.startswith(ft.GROUP_PREFIX):
                    key = (turn, s.path)
                    counts[key] = counts.get(key, 0) + 1
                    ok = ok and counts[key] == 1
            ft.check(ok, f'at most one PropertiesChanged per object per loop turn ({len(batches)} turns)', counts)

            c.call('Thaw', '/a', 0, 0)
            wait_states(rec, running, 'GroupsChanged saying all running again')

            # ---- subscriptions count; NotSubscribed
            c.subscribe()  # now twice
            c.call('Unsubscribe')
            rec.clear()
            c.call('Freeze', '/a/c', 0, 0)
            wait_states(rec, {'/a/c': 'frozen'}, 'GroupsChanged /a/c frozen')
            ft.check(any(p == '/a/c' for p, _ in group_pcs(rec)),
                     'after two Subscribe and one Unsubscribe, PropertiesChanged still come')
            c.call('Unsubscribe')
            rec.clear()
            c.call('Thaw', '/a/c', 0, 0)
            wait_model(c, rec, {'/a/c': 'running'})
            check_silent(rec, 'after as many Unsubscribe as Subscribe, no signal')
            ft.expect_dbus_error('org.freezerd.Freezer1.Error.NotSubscribed', c.call, 'Unsubscribe')
            c.subscribe_groups()
            c.subscribe_groups()
            c.call('UnsubscribeGroups')
            rec.clear()
            c.call('Freeze', '/a/c', 0, 0)
            wait_states(rec, {'/a/c': 'frozen'}, 'GroupsChanged /a/c frozen after two SubscribeGroups, one '
                                                 'UnsubscribeGroups')
            c.call('UnsubscribeGroups')

            # ---- a subscription ends with its client
            c.add_match(type='signal', sender='org.freedesktop.DBus', interface='org.freedesktop.DBus',
                        member='NameOwnerChanged')
            other = ft.Client(bus.address)
            name = other.unique_name
            other.subscribe()
            other.subscribe_groups()
            other.close()
            rec.wait_for(lambda r: any(s.member == 'NameOwnerChanged' and s.body[0] == name and s.body[2] == ''
                                       for s in r.signals),
                         what=f'NameOwnerChanged: {name} left the bus')
            rec.clear()
            c.call('Thaw', '/a/c', 0, 0)
            wait_model(c, rec, {'/a/c': 'running'})
            check_silent(rec, 'the subscriptions of a client that left ended with it: no signal')
            witness.close()


ft.run(test)
