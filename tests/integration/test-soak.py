#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A seeded random soak: freezerd's model of a changing cgroup tree against the kernel.

A scratch subtree of 30-80 groups under three top groups /A, /B (the "track" setting)
and /C (tracked and untracked by the soak), with a few sleeping processes, goes through
random steps:

  * mkdir, mkdir -p of a deep chain, rmdir of a leaf (its processes killed first with
    cgroup.kill), a rename (cgroup2 refuses it: EPERM, nothing changes);
  * a process moved to another group, a new sleeper;
  * cgroup.freeze written behind freezerd's back (0 or 1, sometimes twice quickly);
  * Freeze, Thaw, Thaw RECURSIVE (also of "/"), ApplyBatch (random requests, order and
    flags: ROLLBACK_ON_TIMEOUT, NO_WAIT, RECURSIVE), FreezeExcept, each on the Manager or
    the group object, some on a group outside the tracked subtrees (which tracks it);
  * two clients' calls at once (both sent before either reply is read);
  * Track and Untrack (of any track root, the setting's too), GetGroup of an untracked
    group, SIGHUP (with /B taken out of the "track" setting or put back).

The soak keeps its own expected cgroup.freeze of every directory (what the calls and
writes asked for; for concurrent calls, either order).  After each step it waits (a
deadline, polling the kernel and freezerd's model) until everything agrees, and fails
with the seed, the step log and the differences if it does not:

  * the kernel: each cgroup.freeze is the expected one, and each group's "frozen" is its
    effective flag (its own or an ancestor's);
  * freezerd's model (GetManagedObjects): the set of group objects is "/" and the
    directories below the track roots; each group's Freeze, Frozen, Populated,
    FreezerState, Descendants and FrozenDescendants are the kernel's; ListGroups and
    ListGroupIds list the same groups, with the same FreezerState and Id;
  * the signals: a client following GroupStatesChanged (with ListGroupIds and
    InterfacesAdded/Removed for the Ids), one following GroupsChanged, and `freezectl
    watch --json` (libfreezer's state callback) end with the same picture as
    GetManagedObjects.

CI runs one seed for a bounded time.  Environment, for longer runs:
  FREEZERD_SOAK_SEED     the seed (default 1); "random" for a new one (printed)
  FREEZERD_SOAK_STEPS    the number of steps (default 100000, bounded by the time)
  FREEZERD_SOAK_SECONDS  the time to stop after (default 25)
  FREEZERD_SOAK_CHECK    check every N steps (default 1)
  FREEZERD_SOAK_LOG      a file to write every step to on failure (else the last 60 are printed)
e.g. FREEZERD_SOAK_SEED=random FREEZERD_SOAK_SECONDS=600 tests/integration/test-soak.py
A failure prints the seed and the steps: the same seed and step count replays them
(the kernel's timing aside)."""

import errno
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

CONFIG_ROOTS = ('/A', '/B')
TOPS = ('/A', '/B', '/C')
MAX_GROUPS = 80
MIN_GROUPS = 30
SLEEPERS = 5
FREEZE, ANCESTOR_FREEZES, FROZEN, POPULATED = 1, 2, 4, 8
SETTLE_TIMEOUT = ft.DEFAULT_TIMEOUT
CALL_TIMEOUT_USEC = 8_000_000
ORDERS = ('top-down', 'bottom-up', 'auto', '')
NAMES = 'abcdefgh'


def parent(p):
    return p.rsplit('/', 1)[0] or '/'


def below(p, q):
    """q is p or below it."""
    return p == '/' or q == p or q.startswith(p + '/')


def strictly_below(p, q):
    return q != p and below(p, q)


def ancestors(p):
    out = []
    while p != '/':
        p = parent(p)
        out.append(p)
    return out


class Divergence(Exception):
    pass


class Soak:
    def __init__(self, sc, d, bus, rng, log):
        self.sc = sc
        self.d = d
        self.bus = bus
        self.rng = rng
        self.log = log
        self.c = d.client
        self.c2 = ft.Client(bus.address)
        self.config_roots = set(CONFIG_ROOTS)
        self.roots = set(CONFIG_ROOTS)  # freezerd's one list: the setting's, Track()'s, lookups'
        self.called = set()  # the roots a call asked for (Track(), lookups), configured or not
        self.flags = {}  # expected cgroup.freeze of every directory (but "/"): {path: 0|1}
        self.alternatives = None  # concurrent calls: [flags, ...] any of which may come out
        self.procs = []
        self.steps = 0
        self.counts = {}
        self.concurrent = False  # no ROLLBACK_ON_TIMEOUT in concurrent calls
        self.mirrors = None
        self.confirm = None  # make_call's check of the kernel at the reply: (reply) -> [problem]

    # -- the file system
    def dirs(self):
        """Every directory below the scratch root, API paths, parents first."""
        out = []
        for dirpath, dirnames, _ in os.walk(self.sc.root):
            dirnames.sort()
            rel = '/' + os.path.relpath(dirpath, self.sc.root)
            if rel != '/.':
                out.append(rel)
        return out

    def tracked(self, p):
        return any(below(r, p) for r in self.roots)

    def kept(self, dirs):
        """The groups in freezerd's model: the tracked ones and the ancestors of roots."""
        out = set()
        for p in dirs:
            if self.tracked(p) or any(strictly_below(p, r) for r in self.roots):
                out.add(p)
        return out

    def published(self, dirs):
        return {p for p in dirs if self.tracked(p)} | {'/'}

    def track_root(self, p):
        self.roots.add(p)
        self.called.add(p)

    def alive(self):
        self.procs = [p for p in self.procs if p.poll() is None]
        return self.procs

    def pid_group(self, pid):
        try:
            with open(f'/proc/{pid}/cgroup') as f:
                for line in f:
                    if line.startswith('0::'):
                        path = line.strip()[3:]
                        rel = os.path.relpath(os.path.join(self.sc.mount, path.lstrip('/')), self.sc.root)
                        return '/' if rel == '.' else '/' + rel
        except OSError:
            return None
        return None

    # -- the steps
    def note(self, text):
        self.log.append(f'{self.steps}: {text}')

    def count(self, what):
        self.counts[what] = self.counts.get(what, 0) + 1

    def pick_dir(self, dirs, tracked_only=True):
        cands = [p for p in dirs if (not tracked_only or self.tracked(p))]
        return self.rng.choice(cands) if cands else None

    def set_flag(self, p, v):
        self.flags[p] = int(v)
        if self.alternatives is not None:
            for alt in self.alternatives:
                alt[p] = int(v)

    def op_mkdir(self, dirs):
        if len(dirs) >= MAX_GROUPS:
            return self.op_rmdir(dirs)
        base = self.rng.choice(['/'] + dirs)
        depth = 1 if self.rng.random() < 0.6 else self.rng.randint(2, 6)
        p = base
        for _ in range(depth):
            p = p.rstrip('/') + '/' + self.rng.choice(NAMES)
        if p in dirs or p.count('/') > 12:
            return
        self.note(f'mkdir -p {p}')
        self.count('mkdir')
        os.makedirs(self.sc.abspath(p), exist_ok=True)
        for q in [p] + ancestors(p):
            if q != '/' and q not in self.flags:
                self.set_flag(q, 0)

    def op_rmdir(self, dirs):
        if len(dirs) <= MIN_GROUPS:
            return self.op_mkdir(dirs)
        leaves = [p for p in dirs if not any(strictly_below(p, q) for q in dirs)]
        leaves = [p for p in leaves if p not in TOPS]
        if not leaves:
            return self.op_mkdir(dirs)
        p = self.rng.choice(leaves)
        if self.sc.populated(p):
            self.note(f'cgroup.kill {p}')
            self.sc.kill(p)
            ft.wait_for(lambda: not self.sc.populated(p), timeout=SETTLE_TIMEOUT, what=f'{p} empty after cgroup.kill')
        self.note(f'rmdir {p}')
        self.count('rmdir')
        os.rmdir(self.sc.abspath(p))
        self.flags.pop(p, None)
        if self.alternatives is not None:
            for alt in self.alternatives:
                alt.pop(p, None)

    def op_rename(self, dirs):
        p = self.rng.choice(dirs)
        self.note(f'rename {p} (EPERM expected)')
        self.count('rename')
        try:
            os.rename(self.sc.abspath(p), self.sc.abspath(p + 'x'))
        except OSError as e:
            if e.errno != errno.EPERM:
                raise
            return
        ft.fail(f'cgroup2 renamed {p}: the soak assumes it refuses (EPERM)')

    def op_spawn(self, dirs):
        if len(self.alive()) >= SLEEPERS + 2:
            return self.op_move(dirs)
        p = self.rng.choice(dirs)
        self.note(f'spawn a sleeper in {p}')
        self.count('spawn')
        self.procs.append(spawn_sleeper(self.sc, p))

    def op_move(self, dirs):
        procs = self.alive()
        if not procs:
            return self.op_spawn(dirs)
        pr = self.rng.choice(procs)
        p = self.rng.choice(dirs)
        self.note(f'move pid {pr.pid} ({self.pid_group(pr.pid)}) to {p}')
        self.count('move')
        try:
            with open(self.sc.abspath(p, 'cgroup.procs'), 'w') as f:
                f.write(str(pr.pid))
        except ProcessLookupError:
            pass

    def op_write(self, dirs):
        p = self.rng.choice(dirs)
        vals = [self.rng.randint(0, 1)]
        if self.rng.random() < 0.3:
            vals.append(self.rng.randint(0, 1))
        self.note(f'write cgroup.freeze of {p}: {vals}')
        self.count('write')
        for v in vals:
            self.sc.write_freeze(p, v)
            self.set_flag(p, v)

    def random_flags(self, allow_recursive=False):
        f = 0
        if self.rng.random() < 0.3 and not self.concurrent:
            f |= ft.FLAG_ROLLBACK_ON_TIMEOUT
        if self.rng.random() < 0.25:
            f |= ft.FLAG_NO_WAIT
        if allow_recursive and self.rng.random() < 0.3:
            f |= ft.FLAG_RECURSIVE
        return f

    def make_call(self, dirs, client, flags_model):
        """A random freezerd call: (name, description, send(), apply(flags, reply)); apply
        updates a flags dict as the call's success would.  Sets self.confirm: what the
        kernel must say at the reply (None with NO_WAIT).  flags_model: the flags before."""
        r = self.rng.random()
        outside = self.rng.random() < 0.08
        p = self.pick_dir(dirs, tracked_only=not outside)
        if p is None:
            p = '/A'
        group_obj = self.rng.random() < 0.3 and self.tracked(p)

        def track_if_outside(path):
            if not self.tracked(path):
                self.track_root(path)

        if r < 0.44:
            v = 1 if r < 0.22 else 0
            method = 'Freeze' if v else 'Thaw'
            fl = self.random_flags()
            desc = f'{method} {p} flags={fl}{" (object)" if group_obj else ""}'

            def send():
                track_if_outside(p)
                if group_obj:
                    return client.group_call_async(p, method, CALL_TIMEOUT_USEC, fl)
                return client.call_async(method, p, CALL_TIMEOUT_USEC, fl)

            def apply(m, reply):
                m[p] = v
            self.confirm = None if fl & ft.FLAG_NO_WAIT else lambda reply: self.frozen_as([p], v)
            return method, desc, send, apply
        if r < 0.55:
            q = '/' if self.rng.random() < 0.15 else p
            fl = self.random_flags() | ft.FLAG_RECURSIVE
            desc = f'Thaw RECURSIVE {q} flags={fl}'

            def send():
                if q != '/':
                    track_if_outside(q)
                return client.call_async('Thaw', q, CALL_TIMEOUT_USEC, fl)

            def apply(m, reply):
                for g in list(m):
                    if below(q, g) and self.tracked(g):
                        m[g] = 0
            self.confirm = None if fl & ft.FLAG_NO_WAIT else \
                lambda reply: self.frozen_as([g for g in self.dirs() if below(q, g) and self.tracked(g)], None)
            return 'ThawRecursive', desc, send, apply
        if r < 0.85:
            tracked = [g for g in dirs if self.tracked(g)]
            n = self.rng.randint(1, 8)
            reqs = [(self.rng.choice(tracked), self.rng.random() < 0.5) for _ in range(n)]
            order = self.rng.choice(ORDERS)
            fl = self.random_flags(allow_recursive=True)
            desc = f'ApplyBatch {reqs} order={order!r} flags={fl}'

            def send():
                return client.call_async('ApplyBatch', reqs, order, CALL_TIMEOUT_USEC, fl)

            def apply(m, reply):
                if fl & ft.FLAG_RECURSIVE:
                    # Where subtrees overlap, the later request wins.
                    want = {}
                    for path, fz in reqs:
                        for g in m:
                            if below(path, g) and self.tracked(g):
                                want[g] = int(fz)
                    m.update(want)
                else:
                    for path, fz in reqs:
                        m[path] = int(fz)
            before = dict(flags_model)

            def confirm(reply):
                want = {}
                for path, fz in reqs:
                    for g in (self.dirs() if fl & ft.FLAG_RECURSIVE else [path]):
                        if below(path, g) and self.tracked(g):
                            want[g] = int(fz)
                probs = []
                writes = sum(1 for g, v in want.items() if before.get(g) != v)
                if reply[0] != writes or (not fl & ft.FLAG_RECURSIVE and reply[1] != len(want) - writes):
                    probs.append(f'ApplyBatch replied (writes, skipped) {tuple(reply)}, expected {writes} writes '
                                 f'of {len(want)} groups')
                if not fl & ft.FLAG_NO_WAIT:
                    probs += self.frozen_as(list(want), None)
                return probs
            self.confirm = confirm
            return 'ApplyBatch', desc, send, apply
        # FreezeExcept
        under = [g for g in dirs if strictly_below(p, g)]
        excl = self.rng.sample(under, min(len(under), self.rng.randint(0, 3)))
        fl = self.random_flags() & ~ft.FLAG_RECURSIVE
        desc = f'FreezeExcept {p} exclude={excl} flags={fl}'

        def send():
            track_if_outside(p)
            return client.call_async('FreezeExcept', p, excl, CALL_TIMEOUT_USEC, fl)

        def apply(m, reply):
            cover = self.cover(p, excl, dirs)
            frozen = set(reply[0]) if reply else set(cover)
            if not frozen <= set(cover):
                raise Divergence(f'FreezeExcept {p} {excl} froze {sorted(frozen)}, not within the cover {cover}')
            for g in cover:
                m[g] = 1
        self.confirm = None if fl & ft.FLAG_NO_WAIT else lambda reply: self.frozen_as(list(reply[0]), 1)
        return 'FreezeExcept', desc, send, apply

    def frozen_as(self, groups, value):
        """At a reply: the kernel's "frozen" of each group is value (None: its effective flag)."""
        probs = []
        for g in groups:
            if g == '/':
                continue
            want = value
            if want is None:
                want = int(any(self.sc.read_freeze(a) for a in [g] + ancestors(g) if a != '/'))
            got = self.sc.read_events(g).get('frozen')
            if got != want:
                probs.append(f'at the reply the kernel says {g} frozen {got}, expected {want}')
        return probs

    def cover(self, p, excl, dirs):
        if any(below(e, p) for e in excl):
            return []
        if not any(strictly_below(p, e) for e in excl):
            return [p]
        out = []
        for ch in [g for g in dirs if parent(g) == p]:
            out += self.cover(ch, excl, dirs)
        return out

    def outcome(self, name, pending):
        try:
            return pending.result(timeout=SETTLE_TIMEOUT + CALL_TIMEOUT_USEC / 1e6), None
        except ft.DBusError as e:
            return None, e

    # Errors a call may end with without having done wrong, by the rules of the API.
    OK_ERRORS = {
        'Freeze': (),
        'Thaw': (ft.ERROR_FROZEN_BY_PARENT,),
        'ThawRecursive': (ft.ERROR_FROZEN_BY_PARENT,),
        'ApplyBatch': (),
        'FreezeExcept': (ft.ERROR_INVALID_ARGS, ft.ERROR_FROZEN_BY_PARENT),
    }

    def op_call(self, dirs):
        name, desc, send, apply = self.make_call(dirs, self.c, self.flags)
        self.note(desc)
        self.count(name)
        before = dict(self.flags)
        roots, called = set(self.roots), set(self.called)
        reply, err = self.outcome(name, send())
        if err is None:
            self.note(f'  -> {reply!r}')
            if self.confirm is not None:
                probs = self.confirm(reply)
                if probs:
                    raise Divergence(f'{desc}: ' + '; '.join(probs))
            apply(self.flags, reply)
            return
        self.note(f'  -> {err.name}: {err.message}')
        if err.name not in self.OK_ERRORS[name]:
            raise Divergence(f'{desc} failed: {err.name}: {err.message}')
        if name in ('Thaw', 'ThawRecursive') and err.name == ft.ERROR_FROZEN_BY_PARENT:
            # The own flags are cleared all the same (unless "/" is frozen from above).
            apply(self.flags, None)
        else:
            # Refused: nothing written, and the path it tracked (outside the tracked
            # subtrees) untracked again.
            self.flags = before
            self.roots, self.called = roots, called

    def op_concurrent(self, dirs):
        """Two clients' calls sent back to back (no ROLLBACK: either order's flags)."""
        calls = []
        self.concurrent = True
        for client in (self.c, self.c2):
            while True:
                name, desc, send, apply = self.make_call(dirs, client, self.flags)
                if name != 'FreezeExcept':
                    break
            calls.append((name, desc, send, apply))
        self.concurrent = False
        self.note('concurrently: ' + ' | '.join(desc for _n, desc, _s, _a in calls))
        self.count('concurrent')
        pend = [send() for _n, _d, send, _a in calls]
        results = [self.outcome(n, pc) for (n, _d, _s, _a), pc in zip(calls, pend)]
        for (name, desc, _s, _a), (reply, err) in zip(calls, results):
            self.note(f'  {desc} -> {err.name + ": " + err.message if err else repr(reply)}')
            if err is not None and err.name not in self.OK_ERRORS[name] + (ft.ERROR_CANCELLED,):
                raise Divergence(f'{desc} (concurrent) failed: {err.name}: {err.message}')
        alts = []
        for order in ((0, 1), (1, 0)):
            m = dict(self.flags)
            for i in order:
                name, _d, _s, apply = calls[i]
                reply, err = results[i]
                if err is None or err.name in (ft.ERROR_FROZEN_BY_PARENT, ft.ERROR_CANCELLED):
                    apply(m, reply)
            alts.append(m)
        self.alternatives = alts

    def op_track(self, dirs):
        r = self.rng.random()
        if r < 0.4 and '/C' in dirs:
            p = self.rng.choice([g for g in dirs if below('/C', g)])
            self.note(f'Track {p}')
            self.count('Track')
            self.c.call('Track', p)
            self.track_root(p)
        elif r < 0.8:
            p = self.rng.choice(sorted(self.roots))
            self.note(f'Untrack {p}')
            self.count('Untrack')
            self.c.call('Untrack', p)
            self.roots.discard(p)
            self.called.discard(p)
        else:
            cands = [g for g in dirs if not self.tracked(g)]
            if not cands:
                return
            p = self.rng.choice(cands)
            self.note(f'GetGroup {p} (untracked: tracks it)')
            self.count('GetGroup')
            self.c.call('GetGroup', p)
            self.track_root(p)

    def op_race(self, dirs):
        """A change freezerd learns from inotify, and at once a call about the same group:
        a write behind its back, or a mkdir -p of a new group, then Freeze or Thaw of it."""
        if self.rng.random() < 0.5:
            p = self.pick_dir(dirs)
            v = self.rng.randint(0, 1)
            self.note(f'race: write cgroup.freeze of {p}: {v}, then at once:')
            self.sc.write_freeze(p, v)
            self.set_flag(p, v)
        else:
            base = self.rng.choice([g for g in dirs if self.tracked(g)])
            p = base + '/' + self.rng.choice(NAMES) + '/' + self.rng.choice(NAMES)
            if os.path.isdir(self.sc.abspath(p)):
                return
            self.note(f'race: mkdir -p {p}, then at once:')
            os.makedirs(self.sc.abspath(p))
            for q in [p] + ancestors(p):
                if q != '/' and q not in self.flags:
                    self.set_flag(q, 0)
        self.count('race')
        freeze = self.rng.random() < 0.5
        fl = self.random_flags()
        desc = f'{"Freeze" if freeze else "Thaw"} {p} flags={fl}'
        self.note(desc)
        reply, err = self.outcome('race', self.c.call_async('Freeze' if freeze else 'Thaw', p, CALL_TIMEOUT_USEC, fl))
        self.note(f'  -> {err.name + ": " + err.message if err else repr(reply)}')
        if err is not None and not (not freeze and err.name == ft.ERROR_FROZEN_BY_PARENT):
            raise Divergence(f'{desc} failed: {err.name}: {err.message}')
        self.set_flag(p, int(freeze))
        if err is None and not fl & ft.FLAG_NO_WAIT:
            probs = self.frozen_as([p], int(freeze))
            if probs:
                raise Divergence(f'{desc}: ' + '; '.join(probs))

    def op_restart(self, dirs):
        """SIGTERM, and a new freezerd on the same state directory: the subtrees tracked
        beyond the setting come back from tracked.json."""
        self.note('restart freezerd')
        self.count('restart')
        old = self.mirrors
        old.close(keep_watch=True)
        self.d.__exit__(None, None, None)
        self.d = ft.Daemon(self.bus, self.sc.root, config={'track': sorted(self.config_roots)},
                           state_dir=self.state_dir)
        self.d.__enter__()
        self.c = self.d.client
        self.roots |= self.config_roots
        self.mirrors = Mirrors(self.bus, watch_from=old)

    def op_sighup(self, dirs):
        """SIGHUP, half the time with /B taken out of the "track" setting or put back."""
        old = set(self.config_roots)
        if self.rng.random() < 0.5:
            self.config_roots ^= {'/B'}
            self.d.write_config({'track': sorted(self.config_roots)})
        self.note(f'SIGHUP, "track": {sorted(self.config_roots)}')
        self.count('SIGHUP')
        self.d.reload()
        # What the old setting tracked and the new one does not is untracked, unless a
        # call asked for it too; what the new one lists is tracked (again, after an Untrack).
        self.roots = (self.roots - (old - self.config_roots - self.called)) | self.config_roots

    OPS = [
        (op_mkdir, 12), (op_rmdir, 10), (op_rename, 1), (op_spawn, 2), (op_move, 8),
        (op_write, 12), (op_call, 40), (op_concurrent, 10), (op_track, 5), (op_sighup, 1),
        (op_race, 8), (op_restart, 0.3),
    ]

    def step(self):
        self.steps += 1
        dirs = self.dirs()
        if not any(self.tracked(p) for p in dirs):
            self.note('Track /A (nothing else is tracked)')
            self.c.call('Track', '/A')
            self.track_root('/A')
            return
        ops, weights = zip(*self.OPS)
        op = self.rng.choices(ops, weights)[0]
        op(self, dirs)

    # -- the checks
    def kernel(self, dirs):
        out = {}
        for p in dirs:
            ev = self.sc.read_events(p)
            out[p] = (self.sc.read_freeze(p), ev.get('frozen', 0), ev.get('populated', 0))
        return out

    def differences(self):
        """[] once the kernel, freezerd's model and the signals agree; else what differs."""
        diffs = []
        try:
            dirs = self.dirs()
            k = self.kernel(dirs)
        except FileNotFoundError:
            return ['a directory went while reading']
        kflags = {p: v[0] for p, v in k.items()}
        # The flags: the expected ones (or either order's, after concurrent calls).
        choices = self.alternatives if self.alternatives is not None else [self.flags]
        if not any(kflags == {p: alt.get(p) for p in dirs} for alt in choices):
            for p in dirs:
                exp = sorted({alt.get(p) for alt in choices}, key=str)
                if kflags[p] not in exp:
                    diffs.append(f'kernel cgroup.freeze of {p} is {kflags[p]}, expected {exp}')
            if not diffs:
                diffs.append(f'kernel flags match no single order: {kflags} vs {choices}')
        eff = {p: int(kflags[p] or any(kflags[a] for a in ancestors(p) if a != '/')) for p in dirs}
        for p in dirs:
            if k[p][1] != eff[p]:
                diffs.append(f'kernel: {p} frozen {k[p][1]} with effective flag {eff[p]}')
        if diffs:
            return diffs
        # freezerd's model.
        objs = self.c.managed_objects()
        model = {}
        for _o, ifaces in objs.items():
            g = ifaces.get(ft.GROUP_IFACE)
            if g is not None:
                model[g['Path']] = g
        kept = self.kept(dirs)
        pub = self.published(dirs)
        if set(model) != pub:
            diffs.append(f'group objects: missing {sorted(pub - set(model))}, extra {sorted(set(model) - pub)}')
        root_ev = self.sc.read_events('/')
        for p in sorted(pub & set(model)):
            g = model[p]
            if p == '/':
                kf, kfz, kpop = 0, root_ev.get('frozen', 0), root_ev.get('populated', 0)
                desc = [q for q in kept]
            else:
                kf, kfz, kpop = k[p]
                desc = [q for q in dirs if strictly_below(p, q)]
            byparent = any(kflags[a] for a in ancestors(p) if a != '/')
            want = {
                'Freeze': bool(kf), 'Frozen': bool(kfz), 'Populated': bool(kpop),
                'FreezerState': ft.derive_state(kf, byparent, kfz),
                'Descendants': len(desc), 'FrozenDescendants': sum(1 for q in desc if k[q][1]),
            }
            got = {n: g[n] for n in want}
            if got != want:
                diffs.append(f'freezerd says {p}: {got}; kernel: {want}')
        if diffs:
            return diffs
        listed = self.c.call('ListGroups')[0]
        ids = dict(self.c.call('ListGroupIds')[0])
        lmap = {path: state for path, _o, state in listed}
        if lmap != {p: model[p]['FreezerState'] for p in model}:
            diffs.append(f'ListGroups {lmap} differs from GetManagedObjects')
        if ids != {p: model[p]['Id'] for p in model}:
            diffs.append(f'ListGroupIds {ids} differs from GetManagedObjects')
        for p, i in ids.items():
            if p != '/' and i != os.stat(self.sc.abspath(p)).st_ino:
                diffs.append(f'Id of {p} is {i}, its inode {os.stat(self.sc.abspath(p)).st_ino}')
        if diffs:
            return diffs
        diffs += self.mirrors.differences(model, kflags)
        return diffs

    def check(self):
        last = [None]

        def agree():
            last[0] = self.differences()
            return not last[0]
        try:
            ft.wait_for(agree, timeout=SETTLE_TIMEOUT, poll=0.02, what='agreement')
        except ft.TestFailure:
            raise Divergence('after settling: ' + '\n  '.join(last[0]))
        # Once settled the concurrent calls' outcome is one of the alternatives: take it.
        if self.alternatives is not None:
            kflags = {p: self.sc.read_freeze(p) for p in self.dirs()}
            self.flags = dict(kflags)
            self.alternatives = None


class Mirrors:
    """What a client of GroupStatesChanged (by Id) and one of GroupsChanged (by path) know."""

    def __init__(self, bus, watch_from=None):
        self.sc_client = ft.Client(bus.address)
        self.sc_client.add_match(type='signal', sender=ft.BUS_NAME)
        self.sc_client.call_method(ft.MANAGER_PATH, ft.MANAGER_IFACE, 'SubscribeGroupStates')
        self.gc_client = ft.Client(bus.address)
        self.gc = self.gc_client.record(subscribe='groups')
        self.st = ft.SignalRecorder(self.sc_client)
        # Starting points, taken after subscribing: later signals bring whole states.
        self.by_id = {}
        self.id_path = {}
        for _o, ifaces in self.sc_client.managed_objects().items():
            g = ifaces.get(ft.GROUP_IFACE)
            if g:
                self.by_id[g['Id']] = self.entry_of(g)
                self.id_path[g['Id']] = g['Path']
        self.by_path = {}
        for _o, ifaces in self.gc_client.managed_objects().items():
            g = ifaces.get(ft.GROUP_IFACE)
            if g:
                self.by_path[g['Path']] = {k: g[k] for k in ft.SignalRecorder.GROUPS_CHANGED_FIELDS}
        self.st_seen = len(self.sc_client.signals)
        self.gc_seen = len(self.gc_client.signals)
        # freezectl watch --json: libfreezer's state callback (it follows GroupStatesChanged).
        self.watch = None
        if watch_from is not None and watch_from.watch is not None:
            # The same freezectl watch goes on over a restart (its catch-up).
            self.watch, self.watch_buf, self.watch_lines = watch_from.watch, watch_from.watch_buf, \
                watch_from.watch_lines
            self.by_watch, self.watch_seen = watch_from.by_watch, watch_from.watch_seen
            ft.loop().remove_reader(self.watch.stdout)
            ft.loop().add_reader(self.watch.stdout, self.on_watch)
        elif os.access(ft.FREEZECTL_BIN, os.X_OK):
            self.watch = subprocess.Popen([ft.FREEZECTL_BIN, f'--address={bus.address}', 'watch', '--json'],
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                          stdin=subprocess.DEVNULL)
            self.watch_buf = b''
            self.watch_lines = []
            ft.loop().add_reader(self.watch.stdout, self.on_watch)
            ft.wait_for(lambda: any(json.loads(x).get('event') == 'watching' for x in self.watch_lines)
                        or self.watch.poll() is not None, what='freezectl watch to start')
            if self.watch.poll() is not None:
                ft.fail(f'freezectl watch exited {self.watch.returncode}')
            self.by_watch = {p: st for p, _o, st in self.gc_client.call('ListGroups')[0]}
            self.watch_seen = len(self.watch_lines)
        # A snapshot is taken before the signals received during it: those are skipped.
        self.st.clear()
        self.gc.clear()

    def on_watch(self):
        data = os.read(self.watch.stdout.fileno(), 1 << 16)
        if not data:
            ft.loop().remove_reader(self.watch.stdout)
            return
        *done, self.watch_buf = (self.watch_buf + data).split(b'\n')
        self.watch_lines += [x.decode() for x in done]

    @staticmethod
    def entry_of(g):
        bits = (FREEZE if g['Freeze'] else 0) | (FROZEN if g['Frozen'] else 0) | (POPULATED if g['Populated'] else 0)
        return (bits, None, g['Descendants'], g['FrozenDescendants'])

    def pump(self):
        for s in self.sc_client.signals[self.st_seen:]:
            if s.member == 'InterfacesAdded':
                obj, ifaces = s.body
                g = ifaces.get(ft.GROUP_IFACE)
                if g:
                    g = {k: ft._unvariant(v) for k, v in g.items()}
                    self.by_id[g['Id']] = self.entry_of(g)
                    self.id_path[g['Id']] = g['Path']
            elif s.member == 'InterfacesRemoved':
                obj, ifaces = s.body
                if ft.GROUP_IFACE in ifaces:
                    path = ft.path_decode(ft.GROUP_PREFIX, obj)
                    for i, p in list(self.id_path.items()):
                        if p == path:
                            del self.id_path[i]
                            self.by_id.pop(i, None)
            elif s.member == 'GroupStatesChanged':
                for i, st, d, f in zip(*s.body):
                    if i not in self.id_path:
                        raise Divergence(f'GroupStatesChanged names Id {i}, of no group object')
                    self.by_id[i] = (st & ~ANCESTOR_FREEZES, bool(st & ANCESTOR_FREEZES), d, f)
        self.st_seen = len(self.sc_client.signals)
        for s in self.gc_client.signals[self.gc_seen:]:
            if s.member == 'InterfacesAdded':
                obj, ifaces = s.body
                g = ifaces.get(ft.GROUP_IFACE)
                if g:
                    g = {k: ft._unvariant(v) for k, v in g.items()}
                    self.by_path[g['Path']] = {k: g[k] for k in ft.SignalRecorder.GROUPS_CHANGED_FIELDS}
            elif s.member == 'InterfacesRemoved':
                obj, ifaces = s.body
                if ft.GROUP_IFACE in ifaces:
                    self.by_path.pop(ft.path_decode(ft.GROUP_PREFIX, obj), None)
            elif s.member == 'GroupsChanged' and s.interface == ft.MANAGER_IFACE:
                for e in s.body[0]:
                    if e[0] not in self.by_path:
                        raise Divergence(f'GroupsChanged names {e[0]}, no group object')
                    self.by_path[e[0]] = dict(zip(ft.SignalRecorder.GROUPS_CHANGED_FIELDS, e[1:]))
        self.gc_seen = len(self.gc_client.signals)

    def differences(self, model, kflags):
        self.pump()
        diffs = []
        if self.watch is not None:
            if self.watch.poll() is not None:
                raise Divergence(f'freezectl watch exited {self.watch.returncode}')
            for x in self.watch_lines[self.watch_seen:]:
                e = json.loads(x)
                if e.get('event') in ('state', 'added'):
                    self.by_watch[e['path']] = e['state']
                elif e.get('event') == 'removed':
                    self.by_watch.pop(e['path'], None)
            self.watch_seen = len(self.watch_lines)
            want = {p: g['FreezerState'] for p, g in model.items()}
            if self.by_watch != want:
                for p in sorted(set(self.by_watch) | set(want)):
                    if self.by_watch.get(p) != want.get(p):
                        diffs.append(f'freezectl watch: {p} {self.by_watch.get(p)}, objects say {want.get(p)}')
        want_ids = {g['Id']: self.entry_of(g) for g in model.values()}
        if set(self.by_id) != set(want_ids):
            diffs.append(f'GroupStatesChanged client knows Ids {sorted(self.by_id)}, objects {sorted(want_ids)}')
        for i, (bits, anc, d, f) in self.by_id.items():
            w = want_ids.get(i)
            if w is None:
                continue
            path = self.id_path.get(i)
            if (bits, d, f) != (w[0], w[2], w[3]):
                diffs.append(f'GroupStatesChanged client: {path} (Id {i}) bits/desc/frozen {(bits, d, f)}, '
                             f'objects say {(w[0], w[2], w[3])}')
            elif anc is not None and path in model and path != '/':
                kanc = any(kflags.get(a) for a in ancestors(path) if a != '/')
                if anc != kanc:
                    diffs.append(f'GroupStatesChanged client: {path} ancestor bit {anc}, kernel {kanc}')
        want_paths = {p: {k: g[k] for k in ft.SignalRecorder.GROUPS_CHANGED_FIELDS} for p, g in model.items()}
        if self.by_path != want_paths:
            for p in sorted(set(self.by_path) | set(want_paths)):
                if self.by_path.get(p) != want_paths.get(p):
                    diffs.append(f'GroupsChanged client: {p} {self.by_path.get(p)}, objects say {want_paths.get(p)}')
        return diffs

    def close(self, keep_watch=False):
        self.sc_client.close()
        self.gc_client.close()
        if self.watch is not None and not keep_watch:
            ft.loop().remove_reader(self.watch.stdout)
            self.watch.terminate()
            self.watch.wait()
            self.watch.stdout.close()


def spawn_sleeper(sc, p):
    """A sleeper started in the scratch root (never frozen: a child joining a frozen group
    before its exec would freeze there, and Popen wait for ever), then moved to p."""
    pr = sc.spawn('/', ['sleep', '1000000'])
    with open(sc.abspath(p, 'cgroup.procs'), 'w') as f:
        f.write(str(pr.pid))
    return pr


def build(sc, rng, soak_log):
    """The starting tree: /A, /B, /C with random subtrees, SLEEPERS sleepers."""
    for top in TOPS:
        sc.mkdir(top)
    paths = list(TOPS)
    while len(paths) < 40:
        base = rng.choice(paths)
        p = base + '/' + rng.choice(NAMES)
        if p not in paths:
            sc.mkdir(p)
            paths.append(p)
    procs = []
    for _ in range(SLEEPERS):
        procs.append(spawn_sleeper(sc, rng.choice(paths)))
    soak_log.append(f'0: start with {sorted(paths)}')
    return procs


def soak(seed, steps, seconds, check_every):
    rng = random.Random(seed)
    log = []
    print(f'# soak seed {seed}, up to {steps} steps or {seconds} s', flush=True)
    with ft.Scratch('soak') as sc, ft.Bus() as bus:
        procs = build(sc, rng, log)
        state_dir = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}soak-state-{os.getpid()}-')
        d = ft.Daemon(bus, sc.root, config={'track': list(CONFIG_ROOTS)}, state_dir=state_dir)
        s = None
        try:
            d.__enter__()
            s = Soak(sc, d, bus, rng, log)
            s.state_dir = state_dir
            s.procs = procs
            s.flags = {p: 0 for p in s.dirs()}
            end = time.monotonic() + seconds
            try:
                s.mirrors = Mirrors(bus)
                s.check()
                while s.steps < steps and time.monotonic() < end:
                    s.step()
                    # After concurrent calls, settle: which order won is read from the kernel.
                    if s.steps % check_every == 0 or s.alternatives is not None:
                        s.check()
                s.check()
            except (Divergence, ft.TestFailure, ft.DBusError) as e:
                if os.environ.get('FREEZERD_SOAK_LOG'):
                    with open(os.environ['FREEZERD_SOAK_LOG'], 'w') as f:
                        f.write('\n'.join(log) + '\n')
                tail = '\n'.join(log[-60:])
                ft.fail(f'seed {seed}, step {s.steps}: {e}\nthe last steps:\n{tail}\n'
                        f'(replay: FREEZERD_SOAK_SEED={seed} FREEZERD_SOAK_STEPS={s.steps})')
            finally:
                if s.mirrors is not None:
                    s.mirrors.close()
                s.c2.close()
        except BaseException:
            (s.d if s is not None else d).__exit__(*sys.exc_info())
            raise
        else:
            s.d.__exit__(None, None, None)
        finally:
            shutil.rmtree(state_dir, ignore_errors=True)
        ft.check(True, f'seed {seed}: {s.steps} steps agreed: ' +
                 ', '.join(f'{k} {v}' for k, v in sorted(s.counts.items())))
        m = s.mirrors
        print(f'# seed {seed}: {s.steps} steps, {sorted(s.counts.items())}; followed '
              f'{sum(x.member == "GroupStatesChanged" for x in m.sc_client.signals)} GroupStatesChanged, '
              f'{sum(x.member == "GroupsChanged" for x in m.gc_client.signals)} GroupsChanged '
              f'(since the last start of freezerd), '
              f'{len(m.watch_lines) if m.watch else 0} lines of freezectl watch', flush=True)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    seed = os.environ.get('FREEZERD_SOAK_SEED', '1')
    seed = random.randrange(1 << 32) if seed == 'random' else int(seed)
    steps = int(os.environ.get('FREEZERD_SOAK_STEPS', '100000'))
    seconds = float(os.environ.get('FREEZERD_SOAK_SECONDS', '25'))
    check_every = int(os.environ.get('FREEZERD_SOAK_CHECK', '1'))
    soak(seed, steps, seconds, check_every)


ft.run(test)
