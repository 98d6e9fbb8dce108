#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Restart freezerd while groups are frozen: the new process reports the same
states without writing anything; subtrees given to Track() are tracked again
(issue 5, "Crash safety and restart").

Configuration: {"track": ["/t"]}.

  /t/a     own flag (frozen), a sleeper       /t/a/x   frozen by /t/a, a sleeper
  /t/a/y   own flag and frozen by /t/a        /t/b     running, a sleeper
  /t/b/z   own flag (frozen), a sleeper       /t/e     own flag, empty (frozen)
  /t/s     own flag, a task blocked (D) on a FUSE mount: "freezing" for ever
  /t/r     running, a sleeper
  /u, /u/k outside the configured list, tracked through Track("/u"); /u/k frozen
  /v, /v/w outside, never asked for: must never show up

Restarts, each with the same state and runtime dirs:
  1. SIGTERM while a Freeze("/t/s") waits (it gets Cancelled), start again;
  2. SIGKILL while idle, start again;
  3. Untrack("/u"), SIGTERM, start again: /u is no longer tracked.
Around restarts 1 and 2 one inotify instance watches every group's directory
for IN_MODIFY of cgroup.freeze, from before the old process stops until after
the new one answered every property read: it must see no write.  (Positive
control: one Thaw through the new process is seen as exactly one write.)
Each new process must report, for every group, the Freeze, Frozen,
FreezerState, FrozenDescendants, Descendants and Populated the old one did
(ListGroups, GetAll), and the kernel's cgroup.freeze/frozen must be unchanged."""

import collections
import json
import os
import shutil
import signal
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

T_GROUPS = ['/t', '/t/a', '/t/a/x', '/t/a/y', '/t/b', '/t/b/z', '/t/e', '/t/s', '/t/r']
U_GROUPS = ['/u', '/u/k']
V_GROUPS = ['/v', '/v/w']
ALL = T_GROUPS + U_GROUPS + V_GROUPS
CONFIG = {'track': ['/t']}
PROPS = ('Freeze', 'Frozen', 'FreezerState', 'FrozenDescendants', 'Descendants', 'Populated')
LONG_USEC = 120 * 1000000


class WriteWatch:
    """IN_MODIFY on every group's directory: counts cgroup.freeze writes by anyone."""

    def __init__(self, sc):
        self.ino = ft.Inotify()
        self.wds = {self.ino.add_watch(sc.abspath(g), ft.Inotify.IN_MODIFY): g for g in ALL}
        self.writes = collections.Counter()

    def drain(self):
        for wd, mask, name in self.ino.read():
            if mask & ft.Inotify.IN_Q_OVERFLOW:
                ft.fail('the test\'s inotify queue overflowed')
            if wd in self.wds and name == 'cgroup.freeze':
                self.writes[self.wds[wd]] += 1
        return dict(self.writes)

    def close(self):
        self.ino.close()


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    fig = ft.Figures('test-restart-frozen')
    dirs = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}daemon-{os.getpid()}-restart-')
    state_dir = os.path.join(dirs, 'state')
    runtime_dir = os.path.join(dirs, 'run')
    os.mkdir(state_dir)
    os.mkdir(runtime_dir)
    tracked_json = os.path.join(state_dir, 'tracked.json')
    try:
        with ft.Scratch('restart-frozen') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
            for g in ALL:
                sc.mkdir(g)
            for g in ('/t/a', '/t/a/x', '/t/a/y', '/t/b', '/t/b/z', '/t/r', '/u/k', '/v/w'):
                sc.spawn_sleepers(g, 1)
            fuse.spawn_stuck(sc, '/t/s')

            def kernel():
                return {g: (sc.read_freeze(g), sc.read_events(g)['frozen']) for g in ALL}

            def call(c, method, *args, **kw):
                try:
                    out = c.call(method, *args, **kw)
                except ft.DBusError as e:
                    fig.reply(method, e.name)
                    raise
                fig.reply(method)
                return out

            def view(c):
                """{path: {prop: value}} of every group ListGroups reports (checked against GetAll)."""
                groups = call(c, 'ListGroups')[0]
                out, bad = {}, []
                for path, obj, state in groups:
                    props = c.get_all(obj, ft.GROUP_IFACE)
                    fig.reply('GetAll')
                    out[path] = {k: props[k] for k in PROPS}
                    if state != props['FreezerState'] or obj != ft.group_object(path):
                        bad.append((path, obj, state, props['FreezerState']))
                ft.check(not bad, f'ListGroups ({len(groups)} groups) agrees with GetAll and the object paths', bad)
                return out

            def start(**kw):
                d = ft.CrashableDaemon(bus, sc.root, config=CONFIG, state_dir=state_dir, runtime_dir=runtime_dir, **kw)
                return d

            def compare(what, before, after, kernel_before, writes):
                ft.check_equal(writes, {}, f'{what}: no cgroup.freeze was written across the restart')
                fig.checked['groups watched for writes'] += len(ALL)
                ft.check_equal(sorted(after), sorted(before), f'{what}: the same groups are tracked')
                diff = {g: (before[g], after.get(g)) for g in before if before[g] != after.get(g)}
                ft.check(not diff, f'{what}: every group reports the same {", ".join(PROPS)}', diff)
                fig.checked['group states compared'] += len(before)
                ft.check_equal(kernel(), kernel_before, f'{what}: the kernel\'s cgroup.freeze and frozen unchanged')
                fig.checked['kernel states compared'] += len(ALL)

            # ---- the states, set through the first freezerd
            watch = None
            try:
                with start() as d1:
                    c = d1.client
                    for g in ('/t/a', '/t/a/y', '/t/b/z', '/t/e'):
                        call(c, 'Freeze', g, LONG_USEC, 0)
                    call(c, 'Freeze', '/t/s', LONG_USEC, ft.FLAG_NO_WAIT)
                    obj = call(c, 'Track', '/u')[0]
                    ft.check_equal(obj, ft.group_object('/u'), 'Track("/u") returns its object')
                    call(c, 'Freeze', '/u/k', LONG_USEC, 0)
                    with open(tracked_json) as f:
                        ft.check_equal(json.load(f), {'tracked': ['/u'], 'root': sc.root},
                                       f'{tracked_json} lists /u (not the configured /t), and the cgroup root')
                    want_kernel = {'/t': (0, 0), '/t/a': (1, 1), '/t/a/x': (0, 1), '/t/a/y': (1, 1), '/t/b': (0, 0),
                                   '/t/b/z': (1, 1), '/t/e': (1, 1), '/t/s': (1, 0), '/t/r': (0, 0), '/u': (0, 0),
                                   '/u/k': (1, 1), '/v': (0, 0), '/v/w': (0, 0)}
                    ft.check_equal(kernel(), want_kernel, 'the kernel has the states asked for')
                    before = view(c)
                    ft.check_equal(sorted(before), sorted(['/'] + T_GROUPS + U_GROUPS),
                                   'tracked: /t and /u with their subtrees, not /v (and "/", always an object)')
                    ft.check_equal({g: before[g]['FreezerState'] for g in before},
                                   {'/': 'running',
                                    '/t': 'running', '/t/a': 'frozen', '/t/a/x': 'frozen-by-parent', '/t/a/y': 'frozen',
                                    '/t/b': 'running', '/t/b/z': 'frozen', '/t/e': 'frozen', '/t/s': 'freezing',
                                    '/t/r': 'running', '/u': 'running', '/u/k': 'frozen'}, 'the states before')
                    ft.check_equal((before['/t']['Descendants'], before['/t']['FrozenDescendants']), (8, 5),
                                   '/t: 8 descendants, 5 frozen')
                    kernel_before = kernel()

                    # ---- restart 1: SIGTERM while a Freeze waits
                    with ft.Client(bus.address) as c2:
                        pending = c2.call_async('Freeze', '/t/s', LONG_USEC, 0)
                        ft.check_equal(c2.group_property('/t/s', 'FreezerState'), 'freezing', 'a Freeze of /t/s waits')
                        # Armed once the Freeze made its (redundant) write of 1.
                        watch = WriteWatch(sc)
                        status = d1.stop()
                        fig.faults['SIGTERM'] += 1
                        ft.check_equal(status, 0, 'the first freezerd exits 0 on SIGTERM')
                        e = ft.expect_dbus_error(ft.ERROR_CANCELLED, pending.result)
                        fig.reply('Freeze', e.name)
                ft.check_equal(os.listdir(runtime_dir), ['lock'], 'no journal left behind (the lock file stays)')

                with start() as d2:
                    c = d2.client
                    after = view(c)
                    compare('restart after SIGTERM', before, after, kernel_before, watch.drain())
                    # Positive control: the watch does see freezerd's writes.
                    call(c, 'Thaw', '/t/b/z', LONG_USEC, 0)
                    ft.check_equal(watch.drain(), {'/t/b/z': 1}, 'control: one Thaw through the new freezerd is '
                                                                 'seen as one write')
                    call(c, 'Freeze', '/t/b/z', LONG_USEC, 0)
                    ft.check_equal(watch.drain(), {'/t/b/z': 2}, 'control: and the Freeze back as another')
                    watch.close()
                    watch = None
                    ft.check_equal(view(c), before, 'back to the states before')
                    kernel_before = kernel()

                    # ---- restart 2: SIGKILL while idle
                    watch = WriteWatch(sc)
                    d2.sigkill()
                    ft.check_equal(d2.wait_dead(), -signal.SIGKILL, 'the second freezerd is SIGKILLed')
                    fig.faults['SIGKILL'] += 1

                with start() as d3:
                    c = d3.client
                    ft.check(not any('Recovered' in line for line in d3.log().splitlines()),
                             'nothing to recover after an idle crash', d3.log())
                    after = view(c)
                    compare('restart after SIGKILL', before, after, kernel_before, watch.drain())
                    watch.close()
                    watch = None
                    # ---- restart 3: Untrack("/u") persists too
                    call(c, 'Untrack', '/u')
                    with open(tracked_json) as f:
                        ft.check_equal(json.load(f), {'tracked': [], 'root': sc.root},
                                       f'after Untrack("/u") {tracked_json} lists none')
                    ft.check_equal(sorted(p for p, _o, _s in call(c, 'ListGroups')[0]), sorted(['/'] + T_GROUPS),
                                   'after Untrack("/u") only /t is tracked')
                fig.faults['SIGTERM'] += 1

                with start() as d4:
                    c = d4.client
                    after = view(c)
                    ft.check_equal(sorted(after), sorted(['/'] + T_GROUPS),
                                   'after the third restart /u is still untracked')
                    ft.check(all(after[g] == before[g] for g in T_GROUPS), 'and /t reports the same states', after)
                    ft.check_equal(kernel(), kernel_before, 'an untracked group keeps its kernel state (/u/k frozen)')
                    # Leave everything running.
                    call(c, 'Thaw', '/t', LONG_USEC, ft.FLAG_RECURSIVE)
                ft.check_equal({g: sc.read_freeze(g) for g in T_GROUPS}, {g: 0 for g in T_GROUPS},
                               'Thaw("/t", RECURSIVE) cleared every flag of /t')
            finally:
                if watch is not None:
                    watch.close()
    finally:
        shutil.rmtree(dirs, ignore_errors=True)
    fig.print()


ft.run(test)
