#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A group above freezerd's cgroup root frozen (or thawed) behind its back.

  /pods                    (outside: frozen and thawed by the test)
  /pods/c                  freezerd's --cgroup-root, "/"
  /pods/c/x {/x/a (one sleeper), /x/b (empty)},  /pods/c/z (empty),
  /pods/c/w (one sleeper, its own cgroup.freeze 1 before freezerd starts)

Checks:
  * freezerd started while /pods has cgroup.freeze 1: "/" and every group not
    frozen by its own flag are "frozen-by-parent" (never "thawing"), /w
    "frozen"; ListGroups, Get, freezectl list and the GroupStatesChanged bits
    (2: an ancestor freezes it, for "/" too) say so, as the kernel has them.
  * Thaw /x fails at once with FrozenByParent naming /pods (its absolute path,
    "above freezerd's cgroup root"), and so do Thaw / and `freezectl thaw /x
    --timeout=1s`; the kernel keeps them frozen.  Freeze /x succeeds at once
    (as under a tracked frozen parent), and a Thaw after it clears the flag
    again with FrozenByParent.
  * echo 0 > /pods/cgroup.freeze behind freezerd's back: PropertiesChanged and
    GroupsChanged say "running" for every group but /w, without a call to
    freezerd (it is told by inotify, not by polling); Get agrees, and so does
    the kernel.  A Thaw /x then succeeds.
  * echo 1 > /pods/cgroup.freeze again: "frozen-by-parent" again, likewise.
  * `freezectl thaw --recursive /x` and `/` then exit 3 (it was 0) with a note that a group
    above freezerd's cgroup root still freezes them; with /pods thawed and the
    root's own cgroup.freeze 1, with a note naming the root's own flag (both
    were silent); with --json, "frozen_by": "above-root" or "/" (it said "done"
    alone, as of a group that runs), and no "frozen_by" once nothing freezes /x.
    The note of a group above the root names the root's absolute path (it did
    not: libfreezer could not read CgroupRoot).  With --no-wait too, the same
    notes and "frozen_by" (it gave none).

Signals are waited for with a deadline, never by sleeping.  Cleanup thaws /pods
before the scratch tree is killed and removed."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ROOT = '/pods/c'
GROUPS = ['/', '/x', '/x/a', '/x/b', '/z', '/w']
OWN = {'/w'}  # frozen by its own flag whatever /pods does
ANCESTOR_FREEZES, FROZEN = 2, 4


def scratch_path(p):
    return ROOT if p == '/' else ROOT + p


def kernel_frozen(sc):
    return {p: sc.frozen(scratch_path(p)) for p in GROUPS}


def group_states(rec, ids):
    """{path: state bits} from the last GroupStatesChanged entry of each group."""
    by_id = {i: p for p, i in ids.items()}
    out = {}
    for s in rec.signals:
        if s.interface == ft.MANAGER_IFACE and s.member == 'GroupStatesChanged':
            for i, bits in zip(s.body[0], s.body[1]):
                if i in by_id:
                    out[by_id[i]] = bits
    return out


def expect_states(c, rec, ids, state, what):
    """Every group but /w ends in `state` (and /w in "frozen"), as PropertiesChanged,
    GroupsChanged, GroupStatesChanged and Get say."""
    want = {p: ('frozen' if p in OWN else state) for p in GROUPS}
    frozen = state != 'running'
    bits = {p: (ANCESTOR_FREEZES | FROZEN) if frozen else 0 for p in GROUPS}
    rec.wait_for(lambda r: all(r.property_values(ft.group_object(p), 'FreezerState')[-1:] == [want[p]]
                               for p in GROUPS if p not in OWN),
                 what=f'{what}: PropertiesChanged FreezerState {state!r} of every group but /w')
    rec.wait_for(lambda r: all(r.group_values(p, 'FreezerState')[-1:] == [want[p]]
                               for p in GROUPS if p not in OWN),
                 what=f'{what}: GroupsChanged saying {state!r} of every group but /w')
    rec.wait_for(lambda r: all((group_states(r, ids).get(p, -1) & (ANCESTOR_FREEZES | FROZEN)) == bits[p]
                               for p in GROUPS if p not in OWN),
                 what=f'{what}: GroupStatesChanged with bits {bits}')
    got = {p: s for p, _o, s in c.call('ListGroups')[0]}
    ft.check_equal(got, want, f'{what}: ListGroups says {state!r} (/w "frozen")')
    for p in ('/', '/x/a'):
        props = c.get_all(ft.group_object(p), ft.GROUP_IFACE)
        ft.check_equal((props['FreezerState'], props['Freeze'], props['Frozen']), (want[p], False, frozen),
                       f'{what}: Get of {p}')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    with ft.Scratch('core-outside-frozen') as sc, ft.Bus() as bus:
        for p in GROUPS:
            sc.mkdir(scratch_path(p))
        sc.spawn_sleepers(scratch_path('/x/a'), 1)
        sc.spawn_sleepers(scratch_path('/w'), 1)
        # Before the scratch tree is killed and removed, whatever happened.
        sc.before_cleanup.append(lambda: os.path.isdir(sc.abspath('/pods')) and sc.write_freeze('/pods', 0))
        sc.write_freeze(scratch_path('/w'), 1)
        sc.write_freeze('/pods', 1)
        sc.wait_events(ROOT, frozen=1)
        sc.wait_tasks_frozen(scratch_path('/x/a'))
        outside = sc.abspath('/pods')

        with ft.Daemon(bus, sc.abspath(ROOT)) as d:
            c = d.client
            ids = {p: i for p, i in c.call('ListGroupIds')[0]}
            c.call('SubscribeGroupStates')
            rec = c.record()

            # ---- at start, frozen from outside
            want = {p: ('frozen' if p in OWN else 'frozen-by-parent') for p in GROUPS}
            ft.check_equal({p: s for p, _o, s in c.call('ListGroups')[0]}, want,
                           'at start under a frozen /pods: every group frozen-by-parent (/w frozen by itself)')
            ft.check_equal(kernel_frozen(sc), {p: True for p in GROUPS}, 'the kernel has every group frozen')
            for p in ('/', '/x', '/x/b'):
                props = c.get_all(ft.group_object(p), ft.GROUP_IFACE)
                ft.check_equal((props['FreezerState'], props['Freeze'], props['Frozen']),
                               ('frozen-by-parent', False, True), f'Get of {p} at start')
            r = ft.freezectl('list', address=bus.address)
            listed = {tuple(line.split(None, 1)) for line in r.stdout.splitlines()}
            ft.check_equal(listed, {(s, p) for p, s in want.items()}, 'freezectl list says frozen-by-parent')

            # ---- Thaw fails at once, naming the group outside
            for p in ('/x', '/'):
                t0 = time.monotonic()
                e = ft.expect_dbus_error(ft.ERROR_FROZEN_BY_PARENT, c.call, 'Thaw', p, 30 * 1000000, 0)
                ft.check(time.monotonic() - t0 < 10, f'Thaw {p} fails at once, not after its timeout')
                ft.check(f'frozen by {outside}, above freezerd\'s cgroup root' in e.message,
                         f'Thaw {p}: the error names {outside} above the root', e.message)
            r = ft.freezectl('thaw', '/x', '--timeout=1s', address=bus.address, check=False)
            ft.check(r.returncode != 0 and outside in r.stderr and 'Timeout' not in r.stderr,
                     'freezectl thaw /x --timeout=1s fails naming the group outside, not with a timeout',
                     f'exit {r.returncode}: {r.stderr!r}')
            ft.check_equal(kernel_frozen(sc), {p: True for p in GROUPS}, 'the kernel still has every group frozen')

            # ---- Freeze as under a tracked frozen parent
            c.call('Freeze', '/x', 0, 0)
            ft.check_equal(c.group_property('/x', 'FreezerState'), 'frozen', 'Freeze /x: frozen by its own flag')
            ft.expect_dbus_error(ft.ERROR_FROZEN_BY_PARENT, c.call, 'Thaw', '/x', 0, 0)
            ft.check_equal(sc.read_freeze(scratch_path('/x')), 0, 'that Thaw cleared /x\'s own flag')
            ft.check_equal(c.group_property('/x', 'FreezerState'), 'frozen-by-parent',
                           '/x is frozen-by-parent again')

            # ---- thawed outside, behind freezerd's back
            rec.clear()
            sc.write_freeze('/pods', 0)
            expect_states(c, rec, ids, 'running', 'after echo 0 > /pods/cgroup.freeze')
            ft.check_equal(kernel_frozen(sc), {p: p in OWN for p in GROUPS}, 'the kernel agrees: only /w frozen')
            sc.wait_tasks_frozen(scratch_path('/x/a'), frozen=False)
            c.call('Thaw', '/x', 0, 0)
            ft.check_equal(c.group_property('/x', 'FreezerState'), 'running', 'Thaw /x succeeds now')

            # ---- frozen outside again
            rec.clear()
            sc.write_freeze('/pods', 1)
            expect_states(c, rec, ids, 'frozen-by-parent', 'after echo 1 > /pods/cgroup.freeze')
            ft.check_equal(kernel_frozen(sc), {p: True for p in GROUPS}, 'the kernel agrees: every group frozen')
            e = ft.expect_dbus_error(ft.ERROR_FROZEN_BY_PARENT, c.call, 'Thaw', '/x/a', 0, 0)
            ft.check(outside in e.message, 'Thaw /x/a names the group outside again', e.message)

            # ---- freezectl thaw --recursive succeeds, and notes what still freezes
            # (it said nothing: it looked for a flag up to "/" only)
            # (it named no root: libfreezer could not read CgroupRoot; and --no-wait gave no note)
            above = f'a group above freezerd\'s cgroup root ({sc.abspath(ROOT)}) still freezes it'
            for p in ('/x', '/'):
                for no_wait in ([], ['--no-wait']):
                    r = ft.freezectl('thaw', '--recursive', *no_wait, p, address=bus.address, check=False)
                    ft.check(r.returncode == 3 and f'every freeze flag in {p} is cleared, but {above}' in r.stderr,
                             f'thaw --recursive {" ".join(no_wait)} {p} under a frozen /pods notes the group '
                             'above the root, naming the root', r.stderr)
            # --json says it too (it said "done" alone, as for a group thawed)
            r = ft.freezectl('--json', 'thaw', '--recursive', '/x', address=bus.address, check=False)
            ft.check_equal((r.returncode, json.loads(r.stdout)),
                           (3, [{'path': '/x', 'result': 'done', 'frozen_by': 'above-root', 'untracked_between': None}]),
                           '--json thaw --recursive /x under a frozen /pods: exit 3, "frozen_by": "above-root"')
            r = ft.freezectl('--json', 'thaw', '--recursive', '--no-wait', '/x', address=bus.address, check=False)
            ft.check_equal((r.returncode, json.loads(r.stdout)),
                           (3, [{'path': '/x', 'result': 'done', 'frozen_by': 'above-root', 'untracked_between': None}]),
                           '--json thaw --recursive --no-wait /x under a frozen /pods: exit 3, "frozen_by": "above-root"')
            sc.write_freeze('/pods', 0)
            sc.wait_events(ROOT, frozen=0)
            r = ft.freezectl('--json', 'thaw', '--recursive', '/x', address=bus.address)
            ft.check_equal(json.loads(r.stdout), [{'path': '/x', 'result': 'done'}],
                           '--json thaw --recursive /x once /pods is thawed: no "frozen_by"')
            r = ft.freezectl('thaw', '--recursive', '--no-wait', '/x', address=bus.address)
            ft.check_equal((r.returncode, r.stderr), (0, ''),
                           'thaw --recursive --no-wait /x once /pods is thawed: exit 0, no note')
            # The root's own flag, which freezerd does not write (not even a
            # thaw --recursive /, which stands for the groups below it).
            sc.before_cleanup.append(lambda: os.path.isdir(sc.abspath(ROOT)) and sc.write_freeze(ROOT, 0))
            sc.write_freeze(ROOT, 1)
            sc.wait_events(ROOT, frozen=1)
            own = 'the own flag of freezerd\'s cgroup root, "/", still freezes it'
            for p, where in (('/x', 'in /x'), ('/', 'below /')):
                for no_wait in ([], ['--no-wait']):
                    r = ft.freezectl('thaw', '--recursive', *no_wait, p, address=bus.address, check=False)
                    ft.check(r.returncode == 3 and f'every freeze flag {where} is cleared, but {own}' in r.stderr,
                             f'thaw --recursive {" ".join(no_wait)} {p} with the root\'s own flag set notes the '
                             'root', r.stderr)
                r = ft.freezectl('--json', 'thaw', '--recursive', p, address=bus.address, check=False)
                ft.check_equal((r.returncode, json.loads(r.stdout)),
                               (3, [{'path': p, 'result': 'done', 'frozen_by': '/', 'untracked_between': None}]),
                               f'--json thaw --recursive {p} with the root\'s own flag set: exit 3, "frozen_by": "/"')
            ft.check_equal(kernel_frozen(sc), {p: True for p in GROUPS}, 'the root\'s flag still freezes every group')
    print('# checked: a freeze above the cgroup root makes every group frozen-by-parent, Thaw fails with '
          'FrozenByParent naming it, and its thaw and freeze behind freezerd\'s back are followed')


ft.run(test)
