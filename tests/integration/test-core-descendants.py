#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Descendants and FrozenDescendants while parts of a 3-level tree are frozen.

  /t
   ├─a
   │ ├─a1   two sleepers
   │ └─a2   one sleeper
   └─b
     └─b1   one sleeper

After each step every group's Descendants and FrozenDescendants are compared
with a brute-force count over the kernel's cgroup tree (cgroup.events "frozen"
of every live descendant).  freezerd's values are followed through
GetManagedObjects plus the PropertiesChanged / InterfacesAdded / InterfacesRemoved
signals (so the changes must be signalled), then confirmed with GetAll.

Steps: freeze /t/a; freeze /t; thaw /t (a stays frozen); thaw /t/a; freeze
/t/b/b1; freeze /t; mkdir /t/b/b2 and /t/c under frozen /t (frozen-by-parent
descendants appear); rmdir /t/c while frozen; thaw /t; rmdir /t/b/b2; thaw
/t/b/b1.  It also checks that
PropertiesChanged carrying FrozenDescendants arrived for /t, /t/a and the
scratch root "/"."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def kernel_groups(sc):
    """Every group below the scratch root ("/" included), from the cgroup file system."""
    out = []
    for dirpath, dirs, _files in os.walk(sc.root):
        dirs.sort()
        rel = os.path.relpath(dirpath, sc.root)
        out.append('/' if rel == '.' else '/' + rel)
    return out


def brute_force(sc):
    """{path: (Descendants, FrozenDescendants)} from the kernel."""
    groups = kernel_groups(sc)
    frozen = {p: sc.frozen(p) for p in groups}
    out = {}
    for p in groups:
        pre = '/' if p == '/' else p + '/'
        ds = [q for q in groups if q != p and q.startswith(pre)]
        out[p] = (len(ds), sum(1 for q in ds if frozen[q]))
    return out


def unvariant(v):
    """jeepney gives a variant as (signature, value)."""
    return v[1] if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) else v


class Mirror:
    """freezerd's Descendants/FrozenDescendants per group, from GetManagedObjects and signals."""

    def __init__(self, c):
        self.rec = c.record()
        self.props = {}
        for obj, ifaces in c.managed_objects().items():
            if ft.GROUP_IFACE in ifaces:
                self.props[obj] = dict(ifaces[ft.GROUP_IFACE])
        self.seen = 0

    def update(self):
        sigs = self.rec.signals
        for s in sigs[self.seen:]:
            if s.interface == ft.PROPERTIES_IFACE and s.member == 'PropertiesChanged' and s.body[0] == ft.GROUP_IFACE:
                self.props.setdefault(s.path, {}).update({k: unvariant(v) for k, v in s.body[1].items()})
            elif s.interface == ft.OBJECT_MANAGER_IFACE and s.member == 'InterfacesAdded':
                if ft.GROUP_IFACE in s.body[1]:
                    self.props[s.body[0]] = {k: unvariant(v) for k, v in s.body[1][ft.GROUP_IFACE].items()}
            elif s.interface == ft.OBJECT_MANAGER_IFACE and s.member == 'InterfacesRemoved':
                if ft.GROUP_IFACE in s.body[1]:
                    self.props.pop(s.body[0], None)
        self.seen = len(sigs)

    def counts(self):
        self.update()
        return {p['Path']: (p.get('Descendants'), p.get('FrozenDescendants')) for p in self.props.values()}


def settle(sc, c, mirror, what, expect=None):
    """Wait until the signalled counts equal the kernel's; check them with GetAll too."""
    def ok():
        return mirror.counts() == brute_force(sc)
    try:
        ft.wait_for(ok, what=f'{what}: counts to settle')
    except ft.TestFailure:
        k, m = brute_force(sc), mirror.counts()
        diff = {p: (m.get(p), k.get(p)) for p in set(k) | set(m) if m.get(p) != k.get(p)}
        ft.fail(f'{what}: signalled (Descendants, FrozenDescendants) differ from the kernel: '
                f'{{path: (freezerd, kernel)}} = {diff}')
    k = brute_force(sc)
    got = {}
    for p in k:
        props = c.get_all(ft.group_object(p), ft.GROUP_IFACE)
        got[p] = (props['Descendants'], props['FrozenDescendants'])
    ft.check_equal(got, k, f'{what}: Descendants/FrozenDescendants (GetAll) of all {len(k)} groups match the kernel')
    if expect:
        ft.check_equal({p: k[p] for p in expect}, expect, f'{what}: the expected counts')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-descendants') as sc, ft.Bus() as bus:
        for p in ('/t/a/a1', '/t/a/a2', '/t/b/b1'):
            sc.mkdir(p)
        sc.spawn_sleepers('/t/a/a1', 2)
        sc.spawn_sleepers('/t/a/a2', 1)
        sc.spawn_sleepers('/t/b/b1', 1)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            mirror = Mirror(c)
            settle(sc, c, mirror, 'start', {'/': (6, 0), '/t': (5, 0), '/t/a': (2, 0)})

            def step(method, path, what, expect=None):
                c.call(method, path, 0, 0)
                want = 1 if method == 'Freeze' else 0
                if method == 'Freeze' or not any(sc.read_freeze(a) for a in ancestors(path)):
                    ft.check_equal(sc.read_events(path).get('frozen'), want,
                                   f'{method}({path}) replied with frozen {want}')
                settle(sc, c, mirror, what, expect)

            step('Freeze', '/t/a', 'froze /t/a', {'/': (6, 3), '/t': (5, 3), '/t/a': (2, 2), '/t/b': (1, 0)})
            step('Freeze', '/t', 'froze /t', {'/': (6, 6), '/t': (5, 5), '/t/a': (2, 2), '/t/b': (1, 1)})
            step('Thaw', '/t', 'thawed /t', {'/': (6, 3), '/t': (5, 3), '/t/b': (1, 0)})
            step('Thaw', '/t/a', 'thawed /t/a', {'/': (6, 0), '/t': (5, 0), '/t/a': (2, 0)})
            step('Freeze', '/t/b/b1', 'froze /t/b/b1', {'/': (6, 1), '/t': (5, 1), '/t/b': (1, 1)})
            step('Freeze', '/t', 'froze /t again', {'/': (6, 6), '/t': (5, 5)})

            sc.mkdir('/t/b/b2')
            sc.mkdir('/t/c')
            settle(sc, c, mirror, 'made /t/b/b2 and /t/c under frozen /t',
                   {'/': (8, 8), '/t': (7, 7), '/t/b': (2, 2), '/t/c': (0, 0)})
            sc.rmdir('/t/c')
            settle(sc, c, mirror, 'removed frozen /t/c', {'/': (7, 7), '/t': (6, 6), '/t/b': (2, 2)})
            step('Thaw', '/t', 'thawed /t with /t/b/b2', {'/': (7, 1), '/t': (6, 1), '/t/b': (2, 1)})
            sc.rmdir('/t/b/b2')
            settle(sc, c, mirror, 'removed /t/b/b2', {'/': (6, 1), '/t': (5, 1), '/t/b': (1, 1)})
            step('Thaw', '/t/b/b1', 'thawed /t/b/b1', {'/': (6, 0), '/t': (5, 0), '/t/b': (1, 0)})

            for p in ('/', '/t', '/t/a'):
                vals = mirror.rec.property_values(ft.group_object(p), 'FrozenDescendants')
                ft.check(len(vals) >= 2 and 0 in vals and max(vals) > 0,
                         f'PropertiesChanged carried FrozenDescendants for {p}', vals)
    print('# checked: Descendants/FrozenDescendants of every group vs. a brute-force kernel count after 10 steps '
          '(freeze/thaw at two levels, mkdir/rmdir under a frozen group), via signals and GetAll')


def ancestors(path):
    parts = [p for p in path.split('/') if p]
    return ['/' + '/'.join(parts[:i]) for i in range(1, len(parts))]


ft.run(test)
