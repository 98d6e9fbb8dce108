#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Pressure stall information: readings and triggers against the real kernel.

  /busy    CPU hogs, more than there are CPUs (at least 4): cpu "some" pressure
  /sleepy  one `sleep`, started before the hogs: no new stall, ever
  /idle    empty: zeros
  /hidden  cgroup.pressure set to 0 while freezerd runs
  /doomed  a hog and a trigger; killed and removed
  /veiled  a trigger, then cgroup.pressure 0
  /hist    a history of stall, then light activity: the kernel's spurious events

Checked:
  * readings: /busy has non-zero cpu some avg10 and a growing total; /idle reads
    zeros; /sleepy's total stays constant; every reading equals a direct read of
    the file taken around it (within one 2-s update); the Manager's equal
    /proc/pressure/*;
  * a cpu trigger (some, 100 ms, 2 s) on /busy fires PressureExceeded within two
    windows; one on /sleepy does not fire in three; a system-wide one on the
    Manager fires; the signals go to the trigger's owner only;
  * removing /doomed (cgroup.kill, rmdir) ends its trigger with
    PressureTriggerRemoved "group-removed" before InterfacesRemoved; hiding
    /veiled's pressure ends its trigger with "pressure-hidden", also when
    cgroup.pressure is set to 0 and back to 1 while freezerd is stopped (the file
    is back, the trigger is not: it said "error"), and a new trigger there works;
  * RemovePressureTrigger of an unknown id, of another client's trigger, or on
    the wrong object fails with InvalidArgs;
  * 64 triggers per client, the 65th fails with LimitsExceeded; a client that
    disconnects leaves none behind (freezerd's fd count returns to where it was);
  * each invalid trigger argument gets its own InvalidArgs message;
  * /hidden: Get fails with NotSupported naming cgroup.pressure, GetAll and
    GetManagedObjects still work;
  * the kernel's spurious first event(s) on a fresh unprivileged trigger (raw
    trigger armed by the test next to freezerd's): freezerd delivers none;
  * freezerd runs one thread until the first trigger (its watcher thread starts
    then: a second thread makes every system call on an fd dearer), two after.
No sleeps: every wait is on D-Bus messages, inotify, pidfds or the test's own
epoll set of raw triggers, with a deadline."""

import os
import signal
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ERROR_NOT_SUPPORTED = 'org.freezerd.Freezer1.Error.NotSupported'
ERROR_LIMITS_EXCEEDED = 'org.freezerd.Freezer1.Error.LimitsExceeded'
HOG = ['sh', '-c', 'while :; do :; done']
WINDOW = 2_000_000          # usec: a whole multiple of 2 s (freezerd lacks CAP_SYS_RESOURCE)
THRESHOLD = 100_000         # usec
SLACK = 1.0 * ft.TIMEOUT_MULTIPLIER   # seconds, for freezerd and the bus on top of the kernel's timing
PRESSURE_PROPS = ('CpuPressure', 'MemoryPressure', 'IoPressure')


# ---- helpers ----------------------------------------------------------------------------------------------------

def parse_pressure_file(text):
    """{'some': (avg10, avg60, avg300, total), 'full': (...)} of a *.pressure file."""
    out = {}
    for line in text.splitlines():
        kind, *fields = line.split()
        vals = dict(f.split('=') for f in fields)
        out[kind] = (float(vals['avg10']), float(vals['avg60']), float(vals['avg300']), int(vals['total']))
    return out


def read_pressure_file(path):
    with open(path) as f:
        return parse_pressure_file(f.read())


def as_kinds(value):
    """A ((dddt)(dddt)) D-Bus value as {'some': ..., 'full': ...}."""
    return {'some': tuple(value[0]), 'full': tuple(value[1])}


def same_avgs(a, b):
    return all(round(x, 2) == round(y, 2) for x, y in zip(a[:3], b[:3]))


def within_one_update(before, got, after, kinds=('some', 'full')):
    """got (from freezerd) was read between the direct reads before and after: each total
    lies between theirs, and the averages (updated every 2 s) equal one of theirs."""
    for k in kinds:
        b, g, a = before[k], got[k], after[k]
        if not b[3] <= g[3] <= a[3]:
            return False
        if not (same_avgs(g, b) or same_avgs(g, a)):
            return False
    return True


def run_until(deadline, stop=lambda: False):
    """Dispatch events until the deadline (or until stop() is true): waiting for nothing to happen."""
    while not stop():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        ft.loop().run_once(remaining)


def daemon_has_cap_sys_resource(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('CapEff:'):
                return bool(int(line.split()[1], 16) & (1 << 24))
    return False


def pressure_signals(client, member, trigger_id=None):
    return [s for s in client.signals
            if s.member == member and s.interface in (ft.GROUP_IFACE, ft.MANAGER_IFACE)
            and (trigger_id is None or s.body[0] == trigger_id)]


def introspect_members(xml_text, iface_name):
    """{(kind, name): (signature, sorted annotations)} of the pressure members of an interface."""
    root = ET.fromstring(xml_text)
    out = {}
    for iface in root.iter('interface'):
        if iface.get('name') != iface_name:
            continue
        for el in iface:
            name = el.get('name') or ''
            if 'Pressure' not in name:
                continue
            if el.tag == 'property':
                sig = el.get('type')
            else:
                sig = tuple((a.get('type'), a.get('name'), a.get('direction', 'out' if el.tag == 'method' else None))
                            for a in el.iter('arg'))
            ann = tuple(sorted((a.get('name'), a.get('value')) for a in el.iter('annotation')))
            out[(el.tag, name)] = (sig, ann)
    return out


# ---- the test ---------------------------------------------------------------------------------------------------

def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'psi')
    ncpu = os.cpu_count() or 1

    with ft.Scratch('pressure') as sc, ft.Bus() as bus:
        for g in ('/busy', '/sleepy', '/idle', '/hidden', '/doomed', '/veiled', '/hist'):
            sc.mkdir(g)
        sc.require_pressure('/idle')
        sc.spawn_sleepers('/sleepy', 1)
        hogs = [sc.spawn('/busy', HOG) for _ in range(max(4, 2 * ncpu))]
        sc.spawn('/doomed', HOG)

        with ft.Daemon(bus, sc.root, env={'FREEZERD_LOG_LEVEL': 'debug'}) as d:
            c = d.client
            grp = lambda p, m, *a: c.group_call(p, m, *a)  # noqa: E731

            # -- the interface as published matches dbus/org.freezerd.Freezer1.xml
            with open(ft.INTERFACE_XML) as f:
                contract = f.read()
            live_mgr = c.call_method(ft.MANAGER_PATH, 'org.freedesktop.DBus.Introspectable', 'Introspect')[0]
            live_grp = c.call_method(ft.group_object('/busy'), 'org.freedesktop.DBus.Introspectable',
                                     'Introspect')[0]
            for iface, live in ((ft.MANAGER_IFACE, live_mgr), (ft.GROUP_IFACE, live_grp)):
                want = introspect_members(contract, iface)
                ft.check(len(want) >= 5, f'the XML documents the pressure members of {iface}', sorted(want))
                ft.check_equal(introspect_members(live, iface), want,
                               f'live introspection of the pressure members of {iface} matches the XML')

            # -- validation: each rule its own InvalidArgs message
            bad = [
                (('disk', 'some', THRESHOLD, WINDOW), 'Unknown resource'),
                (('irq', 'full', THRESHOLD, WINDOW), 'system-wide only'),
                (('cpu', 'most', THRESHOLD, WINDOW), 'Unknown kind'),
                (('cpu', 'some', 0, WINDOW), 'must not be 0'),
                # Durations as people give them, the usec after (they said "The window (12000000
                # usec)" only).
                (('cpu', 'some', 3_000_000, WINDOW), f'The threshold, 3s (3000000 usec), is above the window, '
                                                     f'{WINDOW // 1_000_000}s ({WINDOW} usec)'),
                (('cpu', 'some', THRESHOLD, 12_000_000), "The window, 12s (12000000 usec), is above the kernel's "
                                                         "maximum of 10s"),
                (('cpu', 'some', THRESHOLD, 400_000), "The window, 400ms (400000 usec), is below the kernel's "
                                                      "minimum of 500ms"),
            ]
            if not daemon_has_cap_sys_resource(d.pid):
                bad += [(('cpu', 'some', THRESHOLD, 3_000_000), 'whole multiple of 2s'),
                        (('cpu', 'some', THRESHOLD, 1_000_000), 'CAP_SYS_RESOURCE')]
            messages = []
            for args, needle in bad:
                e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, grp, '/busy', 'AddPressureTrigger', *args)
                ft.check(needle in e.message, f'AddPressureTrigger{args} says "{needle}"', e.message)
                messages.append(e.message)
            e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, c.call, 'AddPressureTrigger', 'irq', 'some',
                                     THRESHOLD, WINDOW)
            ft.check('no "some"' in e.message, 'Manager: irq has no "some"', e.message)
            messages.append(e.message)
            # the first two (unknown resource) share their start; the rest differ from each other
            ft.check_equal(len(set(messages)), len(messages), 'every rule has its own message')

            # -- /hidden: NotSupported for Get, GetAll and GetManagedObjects still work
            first = as_kinds(c.group_property('/hidden', 'CpuPressure'))  # opens and keeps the fd
            ft.check_equal(first['some'][3], 0, '/hidden read before hiding')
            with open(sc.abspath('/hidden', 'cgroup.pressure'), 'w') as f:
                f.write('0')
            for prop in PRESSURE_PROPS:
                e = ft.expect_dbus_error(ERROR_NOT_SUPPORTED, c.group_property, '/hidden', prop)
                ft.check('cgroup.pressure is 0' in e.message, f'{prop} of /hidden names cgroup.pressure',
                         e.message)
            props = c.get_all(ft.group_object('/hidden'), ft.GROUP_IFACE)
            ft.check(props.get('Path') == '/hidden' and not any(p in props for p in PRESSURE_PROPS),
                     'GetAll of /hidden returns the other properties, without the pressure ones', props)
            props = c.get_all(ft.group_object('/busy'), ft.GROUP_IFACE)
            ft.check(all(p in props for p in PRESSURE_PROPS), 'GetAll of /busy has the pressure properties',
                     sorted(props))
            objs = c.managed_objects()
            ft.check(ft.group_object('/hidden') in objs, 'GetManagedObjects works with /hidden hidden')
            ft.check(not any(p in objs[ft.group_object('/busy')][ft.GROUP_IFACE] for p in PRESSURE_PROPS),
                     'GetManagedObjects leaves the (Explicit) pressure properties out')
            e = ft.expect_dbus_error(ERROR_NOT_SUPPORTED, grp, '/hidden', 'AddPressureTrigger', 'cpu', 'some',
                                     THRESHOLD, WINDOW)

            # -- the Manager: /proc/pressure, IrqPressure where the kernel has it
            mprops = c.get_all(ft.MANAGER_PATH, ft.MANAGER_IFACE)
            ft.check(all(p in mprops for p in PRESSURE_PROPS) and 'Version' in mprops,
                     'GetAll of the Manager has the pressure properties', sorted(mprops))
            if os.path.exists('/proc/pressure/irq'):
                irq = c.manager_property('IrqPressure')
                ft.check(len(irq) == 4 and 'IrqPressure' in mprops, 'IrqPressure is published', irq)
            else:
                e = ft.expect_dbus_error(ERROR_NOT_SUPPORTED, c.manager_property, 'IrqPressure')
                ft.check('/proc/pressure/irq' in e.message, 'IrqPressure: the message names the file', e.message)
                ft.check('IrqPressure' not in mprops, 'GetAll of the Manager leaves IrqPressure out')
            for res in ('cpu', 'memory', 'io'):
                path = f'/proc/pressure/{res}'
                before = read_pressure_file(path)
                got = as_kinds(c.manager_property(res.capitalize() + 'Pressure'))
                after = read_pressure_file(path)
                ft.check(within_one_update(before, got, after), f'Manager {res} equals {path}',
                         f'{before} / {got} / {after}')

            # -- idle groups
            for res in ('cpu', 'memory', 'io'):
                got = as_kinds(c.group_property('/idle', res.capitalize() + 'Pressure'))
                ft.check_equal(got, read_pressure_file(sc.abspath('/idle', f'{res}.pressure')),
                               f'/idle {res} equals the file')
                ft.check(all(v == 0 for k in got for v in got[k]), f'/idle {res} reads zeros', got)
            sleepy0 = as_kinds(c.group_property('/sleepy', 'CpuPressure'))

            threads = lambda: ft.thread_count(d.pid)  # noqa: E731
            ft.check_equal(threads(), 1, 'freezerd runs one thread while no trigger was ever added')

            # -- triggers: /busy fires within two windows, /sleepy not in three, the Manager's fires
            observer = ft.Client(bus.address)
            observer.record()  # every signal from freezerd that a match rule can get
            rec = c.record()
            armed = time.monotonic()
            busy_id = grp('/busy', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            sleepy_id = grp('/sleepy', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            sys_id = c.call('AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            doomed_id = grp('/doomed', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            veiled_id = grp('/veiled', 'AddPressureTrigger', 'memory', 'full', THRESHOLD, WINDOW)[0]
            ids = [busy_id, sleepy_id, sys_id, doomed_id, veiled_id]
            ft.check_equal(threads(), 2, 'the watcher thread runs once a trigger was added')
            ft.check_equal(len(set(ids)), len(ids), 'trigger ids are distinct')

            fired = ft.wait_for(lambda: pressure_signals(c, 'PressureExceeded', busy_id),
                                deadline=armed + 2 * WINDOW / 1e6 + SLACK,
                                what='PressureExceeded of the /busy trigger within two windows')
            s = fired[0]
            ft.check(s.path == ft.group_object('/busy') and s.interface == ft.GROUP_IFACE,
                     'PressureExceeded comes from the /busy group object', s)
            ft.check(s.body[1:3] == ('cpu', 'some') and s.body[3][3] > 0, 'it carries cpu some and a total',
                     s.body)
            print(f'# /busy fired after {time.monotonic() - armed:.2f} s: {s.body}', flush=True)

            before = read_pressure_file(sc.abspath('/busy', 'cpu.pressure'))
            busy1 = as_kinds(c.group_property('/busy', 'CpuPressure'))
            after = read_pressure_file(sc.abspath('/busy', 'cpu.pressure'))
            ft.check(busy1['some'][0] > 0, '/busy cpu some avg10 is not zero', busy1)
            ft.check(within_one_update(before, busy1, after), '/busy cpu equals a direct read of the file',
                     f'{before} / {busy1} / {after}')

            ft.wait_for(lambda: pressure_signals(c, 'PressureExceeded', sys_id),
                        deadline=armed + 2 * WINDOW / 1e6 + SLACK,
                        what='PressureExceeded of the system-wide trigger')
            s = pressure_signals(c, 'PressureExceeded', sys_id)[0]
            ft.check(s.path == ft.MANAGER_PATH and s.interface == ft.MANAGER_IFACE,
                     'the system-wide trigger signals from the Manager object', s)

            # three windows without a PressureExceeded of /sleepy (see test-level doc on spurious events)
            run_until(armed + 3 * WINDOW / 1e6 + SLACK,
                      stop=lambda: pressure_signals(c, 'PressureExceeded', sleepy_id))
            ft.check_equal(pressure_signals(c, 'PressureExceeded', sleepy_id), [],
                           'the /sleepy trigger did not fire in three windows')
            sleepy1 = as_kinds(c.group_property('/sleepy', 'CpuPressure'))
            ft.check_equal(sleepy1['some'][3], sleepy0['some'][3], "/sleepy's total stayed constant")
            busy2 = as_kinds(c.group_property('/busy', 'CpuPressure'))
            ft.check(busy2['some'][3] > busy1['some'][3], "/busy's total grows",
                     f"{busy1['some'][3]} -> {busy2['some'][3]}")
            theirs = [x for x in observer.signals if x.member in ('PressureExceeded', 'PressureTriggerRemoved')]
            ft.check_equal(theirs, [], 'another client does not get the owner\'s pressure signals')
            observer.close()

            # -- removal of the group ends its trigger, before InterfacesRemoved
            sc.kill('/doomed')
            sc.wait_events('/doomed', populated=0)
            sc.rmdir('/doomed')
            ft.wait_for(lambda: pressure_signals(c, 'PressureTriggerRemoved', doomed_id),
                        timeout=5 * ft.TIMEOUT_MULTIPLIER, what='PressureTriggerRemoved of the /doomed trigger')
            ft.wait_for(lambda: any(o == ft.group_object('/doomed') for o, _ in rec.interfaces_removed()),
                        what='InterfacesRemoved of /doomed')
            s = pressure_signals(c, 'PressureTriggerRemoved', doomed_id)[0]
            ft.check_equal(s.body, (doomed_id, 'group-removed'), 'PressureTriggerRemoved says group-removed')
            order = [x.member for x in rec.signals
                     if (x.member == 'PressureTriggerRemoved' and x.body[0] == doomed_id)
                     or (x.member == 'InterfacesRemoved' and x.body[0] == ft.group_object('/doomed'))]
            ft.check_equal(order, ['PressureTriggerRemoved', 'InterfacesRemoved'],
                           'the trigger ends before the object goes')
            e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, c.call, 'RemovePressureTrigger', doomed_id)

            # -- hiding the pressure files ends a trigger too
            with open(sc.abspath('/veiled', 'cgroup.pressure'), 'w') as f:
                f.write('0')
            ft.wait_for(lambda: pressure_signals(c, 'PressureTriggerRemoved', veiled_id),
                        timeout=5 * ft.TIMEOUT_MULTIPLIER, what='PressureTriggerRemoved of the /veiled trigger')
            ft.check_equal(pressure_signals(c, 'PressureTriggerRemoved', veiled_id)[0].body,
                           (veiled_id, 'pressure-hidden'), 'PressureTriggerRemoved says pressure-hidden')

            # ... also hidden and shown again before freezerd looks (stopped meanwhile): the
            # file is back, its trigger is not (it said "error")
            with open(sc.abspath('/veiled', 'cgroup.pressure'), 'w') as f:
                f.write('1')
            flicker_id = grp('/veiled', 'AddPressureTrigger', 'memory', 'full', THRESHOLD, WINDOW)[0]
            os.kill(d.pid, signal.SIGSTOP)
            try:
                for v in ('0', '1'):
                    with open(sc.abspath('/veiled', 'cgroup.pressure'), 'w') as f:
                        f.write(v)
            finally:
                os.kill(d.pid, signal.SIGCONT)
            ft.wait_for(lambda: pressure_signals(c, 'PressureTriggerRemoved', flicker_id),
                        timeout=5 * ft.TIMEOUT_MULTIPLIER, what='PressureTriggerRemoved of the second /veiled trigger')
            ft.check_equal(pressure_signals(c, 'PressureTriggerRemoved', flicker_id)[0].body,
                           (flicker_id, 'pressure-hidden'), 'cgroup.pressure 0, then 1 at once: PressureTriggerRemoved '
                           'says pressure-hidden')
            grp('/veiled', 'RemovePressureTrigger',
                grp('/veiled', 'AddPressureTrigger', 'memory', 'full', THRESHOLD, WINDOW)[0])

            # -- removal: own only, on its object only
            other = ft.Client(bus.address)
            other_id = other.group_call('/busy', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, grp, '/busy', 'RemovePressureTrigger', other_id)
            ft.check('of this client' in e.message, 'another client\'s trigger cannot be removed', e.message)
            e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, other.group_call, '/idle', 'RemovePressureTrigger',
                                     other_id)
            e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, grp, '/busy', 'RemovePressureTrigger', 999_999)
            other.group_call('/busy', 'RemovePressureTrigger', other_id)
            ft.check(True, 'the owner removes its trigger')
            e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, other.group_call, '/busy', 'RemovePressureTrigger',
                                     other_id)
            for i in (busy_id, sleepy_id):
                grp('/busy' if i == busy_id else '/sleepy', 'RemovePressureTrigger', i)
            c.call('RemovePressureTrigger', sys_id)
            other.close()

            # -- limits, and a client that disconnects leaves nothing behind
            c.add_match(type='signal', sender='org.freedesktop.DBus', interface='org.freedesktop.DBus',
                        member='NameOwnerChanged')
            c.manager_property('Version')  # a round trip: freezerd has handled everything before
            # ... and its watcher thread closed the removed triggers' fds
            ft.wait_pressure_trigger_fds(d.pid, 0, 'the removed triggers\' fds closed')
            fds_before = ft.fd_count(d.pid)
            greedy = ft.Client(bus.address)
            for i in range(64):
                greedy.group_call('/sleepy', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)
            ft.check_equal(ft.fd_count(d.pid), fds_before + 64, 'each trigger holds one fd')
            e = ft.expect_dbus_error(ERROR_LIMITS_EXCEEDED, greedy.group_call, '/busy', 'AddPressureTrigger',
                                     'cpu', 'some', THRESHOLD, WINDOW)
            e = ft.expect_dbus_error(ERROR_LIMITS_EXCEEDED, greedy.call, 'AddPressureTrigger',
                                     'cpu', 'some', THRESHOLD, WINDOW)
            name = greedy.unique_name
            greedy.close()
            ft.wait_for(lambda: any(x.member == 'NameOwnerChanged' and x.body[0] == name and not x.body[2]
                                    for x in c.signals), what=f'NameOwnerChanged of {name}')
            c.manager_property('Version')  # freezerd got the same NameOwnerChanged before this call
            # The watcher thread closes the fds, after the main loop dropped the triggers.
            ft.wait_for(lambda: ft.fd_count(d.pid) == fds_before, timeout=5 * ft.TIMEOUT_MULTIPLIER, poll=0.02,
                        what=f"freezerd's fd count back to {fds_before}")
            ft.check(True, 'the disconnected client left no trigger behind')
            ft.check(f'Bus client {name} disconnected: dropping its 64 pressure trigger(s)' in d.log(),
                     'freezerd dropped the 64 triggers of the disconnected client')

            # -- the kernel's spurious events on a fresh unprivileged trigger
            hist_hogs = [sc.spawn('/hist', HOG) for _ in range(max(4, 2 * ncpu))]
            grow_id = grp('/hist', 'AddPressureTrigger', 'cpu', 'some', 1_000_000, WINDOW)[0]
            ft.wait_for(lambda: read_pressure_file(sc.abspath('/hist', 'cpu.pressure'))['some'][3] >= 2_500_000
                        and pressure_signals(c, 'PressureExceeded', grow_id),
                        timeout=20 * ft.TIMEOUT_MULTIPLIER, what='/hist to accumulate 2.5 s of cpu stall')
            grp('/hist', 'RemovePressureTrigger', grow_id)
            for p in hist_hogs:
                p.send_signal(signal.SIGKILL)
            for p in hist_hogs:
                p.wait()
            sc.spawn('/hist', ['sh', '-c', 'while :; do sleep 0.05; done'])  # light, intermittent stall
            raw = ft.RawPsiTrigger(sc.abspath('/hist', 'cpu.pressure'), f'some 1000000 {WINDOW}')
            try:
                hist_id = grp('/hist', 'AddPressureTrigger', 'cpu', 'some', 1_000_000, WINDOW)[0]
                run_until(raw.t0 + 4 * WINDOW / 1e6)  # freezerd's settling span: 3 windows + 2 s
                start = parse_pressure_file(raw.start_text)['some'][3]
                readings = [(t, parse_pressure_file(text)) for t, text in raw.events]
                print(f'# raw trigger next to freezerd\'s: {len(raw.events)} kernel event(s) in '
                      f'{4 * WINDOW / 1e6:.0f} s, growth since arming at each: '
                      f'{[(round(t, 2), r["some"][3] - start) for t, r in readings]} us', flush=True)
                seen = [line.split('(')[0].strip() for line in d.log().splitlines()
                        if f'Pressure trigger {hist_id}: ' in line]
                print(f'# freezerd\'s trigger: {seen}', flush=True)
                # Informational only: whether this "light" load stays below the
                # threshold depends on what else the machine runs (a parallel
                # build or benchmark adds real stall).  The dropping rule itself
                # is asserted by tests/test-psi.c.
                print(f'# PressureExceeded for the light stall (expected none on an idle machine): '
                      f'{pressure_signals(c, "PressureExceeded", hist_id)}', flush=True)
                # events that had less than the threshold of new stall since the previous one (or arming)
                totals = [start] + [r['some'][3] for _t, r in readings]
                spurious = [i for i in range(1, len(totals)) if totals[i] - totals[i - 1] < 1_000_000]
                if spurious:
                    ft.check(f'Pressure trigger {hist_id}: dropping a spurious event' in d.log(),
                             f'the kernel sent {len(spurious)} spurious event(s); freezerd dropped them')
                else:
                    print('# the kernel sent no spurious event this time', flush=True)
                grp('/hist', 'RemovePressureTrigger', hist_id)
            finally:
                raw.close()

            ft.check(all(p.poll() is None for p in hogs), 'the /busy hogs ran throughout')


ft.run(test)
