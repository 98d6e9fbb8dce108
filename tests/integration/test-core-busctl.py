#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezerd through busctl, and its live introspection against the documented
interface (dbus/org.freezerd.Freezer1.xml).

  /g     (no process; see test-core-libfreezer.py for why)
  /g/h   two sleepers

Checks:
  * org.freedesktop.DBus.Introspectable.Introspect of the manager object and of
    a group object: the org.freezerd.* interfaces are exactly Manager (plus the
    ObjectManager) and Group, and each one equals its documented counterpart:
    the same methods with the same args (name, type, direction, in order), the
    same signals and args, the same properties (type, access, annotations; an
    absent EmitsChangedSignal annotation means "true", which is how sd-bus
    writes it), the same method/interface annotations; nothing missing or extra
    either way.  Every difference is listed.
  * `busctl introspect` of both objects lists every documented member with the
    documented signatures and property flags (const / emits-change / -).
  * `busctl get-property` of CgroupRoot, Groups, DefaultTimeoutUSec and of a
    group's FreezerState / Path.
  * `busctl call ... Freeze stt /g 0 0` freezes /g (kernel frozen 1 when busctl
    returns), Group.Thaw through busctl thaws it; a failed call exits non-zero
    with the daemon's message.
  * `busctl tree` shows the manager and every group object.
  * `busctl monitor --match "type='signal',member='GroupStatesChanged'"` (as the
    README shows) prints the GroupStatesChanged of a freeze done through busctl,
    with /g (by its Id) frozen in it (bits 1 Freeze and 4 Frozen), while a
    `freezectl watch` runs: freezerd sends it only while someone subscribed
    (freezectl watch, through libfreezer; the test's own client has
    unsubscribed by then).
  * `busctl --json=short call ... ListGroups` parses as JSON and lists every
    group with its object and a state that matches the kernel."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

INTROSPECTABLE = 'org.freedesktop.DBus.Introspectable'
ECS = 'org.freedesktop.DBus.Property.EmitsChangedSignal'
STANDARD = {'org.freedesktop.DBus.Peer', INTROSPECTABLE, ft.PROPERTIES_IFACE}


def annotations(el):
    return {a.get('name'): a.get('value') for a in el.findall('annotation')}


def describe_interface(iface):
    """A comparable description: {('method'|'signal'|'property'|'annotation', name): details}."""
    out = {}
    for a, v in annotations(iface).items():
        out[('annotation', a)] = v
    for m in iface.findall('method'):
        out[('method', m.get('name'))] = (
            tuple((a.get('name'), a.get('type'), a.get('direction', 'in')) for a in m.findall('arg')),
            tuple(sorted(annotations(m).items())))
    for s in iface.findall('signal'):
        out[('signal', s.get('name'))] = (
            tuple((a.get('name'), a.get('type')) for a in s.findall('arg')),
            tuple(sorted(annotations(s).items())))
    for p in iface.findall('property'):
        ann = annotations(p)
        if ann.get(ECS, 'true') == 'true':
            ann.pop(ECS, None)  # sd-bus omits the annotation for emits-change properties
        out[('property', p.get('name'))] = (p.get('type'), p.get('access'), tuple(sorted(ann.items())))
    return out


def parse_interfaces(xml_text):
    root = ET.fromstring(xml_text)
    return {i.get('name'): i for i in root.findall('interface')}, root


def compare(live_iface, spec_iface, name):
    live, spec = describe_interface(live_iface), describe_interface(spec_iface)
    missing = sorted(k for k in spec if k not in live)
    extra = sorted(k for k in live if k not in spec)
    differ = sorted(k for k in spec if k in live and spec[k] != live[k])
    problems = [f'missing {k[0]} {k[1]}' for k in missing] + [f'undocumented {k[0]} {k[1]}' for k in extra] + \
               [f'{k[0]} {k[1]}: live {live[k]!r}, documented {spec[k]!r}' for k in differ]
    ft.check(not problems, f'{name}: live introspection equals {os.path.basename(ft.INTERFACE_XML)} '
             f'({len(spec)} members)', '; '.join(problems))


def busctl_members(text):
    """`busctl introspect` rows: {(interface, kind, member): (signature, result, flags)}; a group has
    both a method and a property named Freeze."""
    rows, iface = {}, None
    for line in text.splitlines():
        cols = line.split()
        if len(cols) < 5 or cols[0] == 'NAME':
            continue
        if cols[1] == 'interface':
            iface = cols[0]
            continue
        # The value column of a property can contain spaces: flags is the last column.
        rows[(iface, cols[1], cols[0].lstrip('.'))] = (cols[2], cols[3] if cols[1] != 'property' else None,
                                                       cols[-1])
    return rows


def check_busctl_introspect(text, spec_iface, name):
    rows = busctl_members(text)
    iname = spec_iface.get('name')
    problems = []
    for m in spec_iface.findall('method'):
        ins = ''.join(a.get('type') for a in m.findall('arg') if a.get('direction', 'in') == 'in') or '-'
        outs = ''.join(a.get('type') for a in m.findall('arg') if a.get('direction') == 'out') or '-'
        want = (ins, outs)
        got = rows.get((iname, 'method', m.get('name')))
        if got is None or got[:2] != want:
            problems.append(f'method {m.get("name")}: {got} != {want}')
    for s in spec_iface.findall('signal'):
        want = ''.join(a.get('type') for a in s.findall('arg')) or '-'
        got = rows.get((iname, 'signal', s.get('name')))
        if got is None or got[0] != want:
            problems.append(f'signal {s.get("name")}: {got} != {want}')
    for p in spec_iface.findall('property'):
        ecs = annotations(p).get(ECS, 'true')
        flags = {'true': 'emits-change', 'const': 'const', 'invalidates': 'emits-invalidation', 'false': '-'}[ecs]
        got = rows.get((iname, 'property', p.get('name')))
        if got is None or got[0] != p.get('type') or got[2] != flags:
            problems.append(f'property {p.get("name")}: {got} != (property, {p.get("type")}, {flags})')
    n_spec = len(spec_iface.findall('method')) + len(spec_iface.findall('signal')) + len(spec_iface.findall('property'))
    n_live = sum(1 for k in rows if k[0] == iname)
    if n_live != n_spec:
        problems.append(f'{n_live} members listed, {n_spec} documented')
    ft.check(not problems, f'busctl introspect {name} lists every {iname} member as documented', '; '.join(problems))


class Lines:
    """Lines of a pipe, read as the loop sees them arrive."""

    def __init__(self, f):
        self.f, self.buf, self.lines = f, b'', []
        os.set_blocking(f.fileno(), False)
        ft.loop().add_reader(f, self._read)

    def _read(self):
        data = os.read(self.f.fileno(), 65536)
        if not data:
            ft.loop().remove_reader(self.f)
            return
        self.buf += data
        *done, self.buf = self.buf.split(b'\n')
        self.lines += [x.decode(errors='replace') for x in done]


def check_monitor(sc, bus, g_id):
    """The README's busctl monitor line shows the GroupStatesChanged of a freeze while the
    README's `freezectl watch` runs."""
    watch = subprocess.Popen([ft.FREEZECTL_BIN, f'--address={bus.address}', 'watch'], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wl = Lines(watch.stdout)
        ft.wait_for(lambda: wl.lines or watch.poll() is not None, what='freezectl watch to start')
        ft.check(watch.poll() is None and 'watching' in wl.lines[0], 'freezectl watch runs', wl.lines)
        monitor(bus, g_id)

        # The root is in the same GroupStatesChanged for its counts (frozen descendants) alone:
        # watch prints the groups whose state changed, and nothing for the root.
        def states():  # "DATE TIME state PATH STATE"
            return [ln.split()[3:] for ln in wl.lines if ln.split()[2:3] == ['state']]
        ft.wait_for(lambda: ['/g', 'frozen'] in states() and ['/g/h', 'frozen-by-parent'] in states(),
                    what=f'freezectl watch to print /g frozen and /g/h frozen-by-parent (it printed {wl.lines})')
        ft.check(not any(s[0] == '/' for s in states()), 'freezectl watch prints no state line for the root, '
                 'whose state did not change', wl.lines)
    finally:
        watch.terminate()
        watch.wait()
        ft.loop().remove_reader(watch.stdout)


def monitor(bus, g_id):
    mon = subprocess.Popen(['busctl', f'--address={bus.address}', '--json=short', 'monitor', '--match',
                            "type='signal',member='GroupStatesChanged'"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        out, err = Lines(mon.stdout), Lines(mon.stderr)
        ft.wait_for(lambda: any('Monitoring' in x for x in err.lines) or mon.poll() is not None,
                    what='busctl monitor to start')
        ft.check(mon.poll() is None, 'busctl monitor runs', err.lines)

        def frozen_g():  # (at ids, au states, au descendants, au frozen_descendants)
            for x in out.lines:
                try:
                    m = json.loads(x)
                except ValueError:
                    continue
                if m.get('member') != 'GroupStatesChanged':
                    continue
                ids, states = m['payload']['data'][0], m['payload']['data'][1]
                for i, st in zip(ids, states):
                    if i == g_id and st & 5 == 5:
                        return True
            return False

        ft.busctl('call', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, 'Thaw', 'stt', '/g', '0', '0')
        ft.busctl('call', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, 'Freeze', 'stt', '/g', '0', '0')
        ft.wait_for(frozen_g, what=f'busctl monitor printing GroupStatesChanged with /g (Id {g_id}) frozen')
        ft.check(True, 'busctl monitor --match GroupStatesChanged shows /g frozen')
        ft.check(all(json.loads(x).get('member') == 'GroupStatesChanged' for x in out.lines if x.startswith('{')),
                 'the match shows GroupStatesChanged only')
    finally:
        mon.terminate()
        mon.wait()
        for f in (mon.stdout, mon.stderr):
            ft.loop().remove_reader(f)
            f.close()


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'busctl')
    spec_ifaces, _ = parse_interfaces(open(ft.INTERFACE_XML).read())
    ft.check_equal(sorted(spec_ifaces), [ft.GROUP_IFACE, ft.MANAGER_IFACE], 'the documented interfaces')
    with ft.Scratch('core-busctl') as sc, ft.Bus() as bus:
        sc.mkdir('/g/h')
        sc.spawn_sleepers('/g/h', 2)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            gobj = ft.group_object('/g')

            # ---- live introspection vs. the XML
            live_m, root_m = parse_interfaces(c.call_method(ft.MANAGER_PATH, INTROSPECTABLE, 'Introspect')[0])
            ft.check_equal(sorted(set(live_m) - STANDARD), sorted([ft.MANAGER_IFACE, ft.OBJECT_MANAGER_IFACE]),
                           'manager object: interfaces besides Peer/Introspectable/Properties')
            compare(live_m[ft.MANAGER_IFACE], spec_ifaces[ft.MANAGER_IFACE], 'Manager')
            live_g, _ = parse_interfaces(c.call_method(gobj, INTROSPECTABLE, 'Introspect')[0])
            ft.check_equal(sorted(set(live_g) - STANDARD), [ft.GROUP_IFACE],
                           'group object: interfaces besides Peer/Introspectable/Properties')
            compare(live_g[ft.GROUP_IFACE], spec_ifaces[ft.GROUP_IFACE], 'Group')
            ft.check('group' in [n.get('name') for n in root_m.findall('node')],
                     'the manager object introspects a "group" child node')

            # ---- busctl introspect
            r = ft.busctl('--no-pager', 'introspect', ft.BUS_NAME, ft.MANAGER_PATH)
            check_busctl_introspect(r.stdout, spec_ifaces[ft.MANAGER_IFACE], ft.MANAGER_PATH)
            ft.check((ft.OBJECT_MANAGER_IFACE, 'method', 'GetManagedObjects') in busctl_members(r.stdout),
                     'busctl introspect shows the ObjectManager on the manager')
            r = ft.busctl('--no-pager', 'introspect', ft.BUS_NAME, gobj)
            check_busctl_introspect(r.stdout, spec_ifaces[ft.GROUP_IFACE], gobj)

            # ---- busctl get-property
            r = ft.busctl('get-property', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE,
                          'CgroupRoot', 'Groups', 'DefaultTimeoutUSec')
            groups = c.call('ListGroups')[0]
            ft.check_equal(r.stdout.splitlines(), [f's "{sc.root}"', f'u {len(groups)}', 't 10000000'],
                           'busctl get-property CgroupRoot Groups DefaultTimeoutUSec')
            r = ft.busctl('get-property', ft.BUS_NAME, gobj, ft.GROUP_IFACE, 'Path', 'FreezerState', 'Frozen')
            ft.check_equal(r.stdout.splitlines(), ['s "/g"', 's "running"', 'b false'],
                           'busctl get-property of /g: Path FreezerState Frozen')
            r = ft.busctl('call', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, 'GetGroup', 's', '/g/h')
            ft.check_equal(r.stdout.strip(), f'o "{ft.group_object("/g/h")}"', 'busctl call GetGroup')

            # ---- busctl call Freeze / Thaw
            rec = c.record()
            r = ft.busctl('call', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, 'Freeze', 'stt', '/g', '0', '0')
            ft.check_equal(sc.read_events('/g').get('frozen'), 1, 'busctl call Freeze stt /g 0 0: frozen 1 at return')
            ft.check_equal(r.stdout.strip(), '', 'busctl call Freeze prints nothing')
            r = ft.busctl('get-property', ft.BUS_NAME, gobj, ft.GROUP_IFACE, 'FreezerState')
            ft.check_equal(r.stdout.strip(), 's "frozen"', 'busctl get-property FreezerState: frozen')
            rec.wait_property(ft.group_object('/g/h'), 'FreezerState', 'frozen-by-parent')
            r = ft.busctl('get-property', ft.BUS_NAME, ft.group_object('/g/h'), ft.GROUP_IFACE, 'FreezerState')
            ft.check_equal(r.stdout.strip(), 's "frozen-by-parent"', '/g/h is frozen-by-parent')

            # ---- busctl --json=short call ListGroups
            r = ft.busctl('--json=short', 'call', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, 'ListGroups')
            try:
                j = json.loads(r.stdout)
            except ValueError as e:
                ft.fail(f'busctl --json=short output is not JSON: {e}: {r.stdout!r}')
            ft.check_equal(j.get('type'), 'a(sos)', 'busctl --json: type a(sos)')
            listed = {p: (o, s) for p, o, s in j['data'][0]}
            ft.check_equal(sorted(listed), ['/', '/g', '/g/h'], 'ListGroups lists /, /g, /g/h')
            ft.check(all(o == ft.group_object(p) for p, (o, _s) in listed.items()),
                     'each listed object is the encoded path', listed)
            ft.check_equal({p: s for p, (_o, s) in listed.items()},
                           {'/': 'running', '/g': 'frozen', '/g/h': 'frozen-by-parent'},
                           'ListGroups states match the kernel')

            # ---- busctl tree
            r = ft.busctl('--no-pager', '--list', 'tree', ft.BUS_NAME)
            objs = set(r.stdout.split())
            want = {ft.MANAGER_PATH} | {ft.group_object(p) for p in listed}
            ft.check(want <= objs, 'busctl tree shows the manager and every group object', sorted(want - objs))

            # ---- busctl monitor of GroupStatesChanged, with freezectl watch the only subscriber
            c.call('Unsubscribe')
            check_monitor(sc, bus, c.group_property('/g', 'Id'))

            # ---- Group.Thaw through busctl, and a failing call
            ft.busctl('call', ft.BUS_NAME, gobj, ft.GROUP_IFACE, 'Thaw', 'tt', '0', '0')
            ft.check_equal(sc.read_events('/g').get('frozen'), 0, 'busctl call Group.Thaw tt 0 0: frozen 0 at return')
            r = ft.busctl('call', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, 'Freeze', 'stt', '/nope', '0', '0',
                          check=False)
            ft.check(r.returncode != 0 and '/nope' in r.stderr,
                     'busctl call Freeze of a missing group fails with the daemon\'s message', (r.returncode, r.stderr))
    print('# checked: live Introspect of manager and group objects == the XML (both directions), busctl '
          'introspect / get-property / call (Freeze, Thaw, GetGroup, error) / tree / --json=short ListGroups')


ft.run(test)
