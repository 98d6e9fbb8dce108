#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""ApplyBatch's `order` decides the order of freezerd's cgroup.freeze writes, end to end:
from `freezectl batch --order=...` (over the bus through libfreezer, and over the
private socket through freezectl's own wire client, client/bus-wire.c) to the kernel.

Tree A{B{D{H},E,F},C{G}} (depths A 1, B C 2, D E F G 3, H 4), a `sleep` in each leaf.
The own flags alternate between two complementary states, S0 (B D F G set) and S1
(A C E H set), so every batch flips all eight groups: each request is a real write
(freezerd skips a request equal to the group's own flag), and each batch is mixed
(four freezes, four thaws).  The requests are listed in the order G B H A E D C F,
which none of the three orders' rules accepts, so a daemon that wrote in request
order, or in another order than asked, fails the check.

The witness is the kernel: one inotify fd of our own (not the harness loop's, not
freezerd's directory watches) watches each group's cgroup.freeze FILE for IN_MODIFY,
armed just before the call.  vfs_write() queues IN_MODIFY inside each write(2) or
pwrite(2) (freezerd's), so the order of the events in that one queue is the order
of the writes; all of a batch's writes happen before its reply, so the queue is
complete when the call returns.  (inotify merges an event identical to the unread
one before it, so two writes of one group back to back would count as one.)
Before freezerd starts, the instrument is calibrated: writes of our own in a known
order come out of the queue in that order, one event each.

Asserted for each batch, over the bus and over the private socket:
  * every requested group is written exactly once, and no other group;
  * top-down: no write of a group comes after a write of a deeper one;
  * bottom-up: no write of a group comes after a write of a shallower one;
  * auto (`--order=auto`, --order omitted, which freezectl --help calls the
    default, and the empty string sent to ApplyBatch directly with jeepney, which
    freezectl cannot send): every freeze before every thaw, the freezes
    shallowest first, the thaws deepest first;
  * the reply's counts: "8 writes, 0 skipped" (text), {"writes": 8, "skipped": 0}
    (--json), (8, 0) (D-Bus reply);
  * afterwards every cgroup.freeze holds the requested flag and every
    cgroup.events "frozen" the value the flags imply (the batch waited)."""

import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ['/A', '/A/B', '/A/C', '/A/B/D', '/A/B/E', '/A/B/F', '/A/C/G', '/A/B/D/H']
LEAVES = ['/A/B/E', '/A/B/F', '/A/C/G', '/A/B/D/H']
NAME = {g: g.rsplit('/', 1)[1] for g in GROUPS}
BY_NAME = {v: k for k, v in NAME.items()}
DEPTH = {g: g.count('/') for g in GROUPS}
REQUEST_ORDER = [BY_NAME[x] for x in 'GBHAEDCF']
S0 = {g: int(NAME[g] in 'BDFG') for g in GROUPS}


def effective(flags):
    """The flag the kernel applies to each group: its own or an ancestor's."""
    return {g: int(any(flags[a] for a in ft.ancestors(g) + [g])) for g in GROUPS}


def fmt(seq):
    """[(group, freeze)] as "+A -B ..." (+ freeze, - thaw)."""
    return ' '.join(('+' if f else '-') + NAME[g] for g, f in seq)


def rule_violation(order, seq):
    """Why the write sequence [(group, freeze)] breaks the rule of `order`, or None."""
    def first_inversion(items, deeper_first):
        for (a, _), (b, _) in zip(items, items[1:]):
            if (DEPTH[b] > DEPTH[a]) if deeper_first else (DEPTH[b] < DEPTH[a]):
                return (f'{NAME[b]} (depth {DEPTH[b]}) written after {NAME[a]} (depth {DEPTH[a]})')
        return None
    if order == 'top-down':
        return first_inversion(seq, False)
    if order == 'bottom-up':
        return first_inversion(seq, True)
    freezes = [x for x in seq if x[1]]
    thaws = [x for x in seq if not x[1]]
    if seq != freezes + thaws:
        return 'a thaw is written before a freeze'
    v = first_inversion(freezes, False)
    if v:
        return 'freezes not shallowest first: ' + v
    v = first_inversion(thaws, True)
    return 'thaws not deepest first: ' + v if v else None


def plan(order, requests):
    """A sequence the rule of `order` accepts (freezerd's plan, ties in request order)."""
    if order == 'top-down':
        return sorted(requests, key=lambda x: DEPTH[x[0]])
    if order == 'bottom-up':
        return sorted(requests, key=lambda x: -DEPTH[x[0]])
    return (sorted([x for x in requests if x[1]], key=lambda x: DEPTH[x[0]]) +
            sorted([x for x in requests if not x[1]], key=lambda x: -DEPTH[x[0]]))


class WriteRecorder:
    """One inotify fd watching each group's cgroup.freeze for IN_MODIFY: the groups
    written, in the order of the write(2) calls."""

    def __init__(self, sc):
        self.ino = ft.Inotify()
        try:
            self.wds = {self.ino.add_watch(sc.abspath(g, 'cgroup.freeze'), ft.Inotify.IN_MODIFY): g for g in GROUPS}
        except BaseException:
            self.ino.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.ino.close()
        return False

    def writes(self):
        """The groups written since the watches were armed (or last read), in order."""
        events = self.ino.read()
        odd = [(wd, hex(mask)) for wd, mask, _name in events if wd not in self.wds or mask != ft.Inotify.IN_MODIFY]
        if odd:  # IN_Q_OVERFLOW (wd -1), IN_IGNORED, ...: the sequence would not be the whole story
            ft.fail(f'the cgroup.freeze watches queued other events than IN_MODIFY: {odd}')
        return [self.wds[wd] for wd, _mask, _name in events]


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    run = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}batch-order-{os.getpid()}-')
    try:
        with ft.Scratch('batch-order') as sc, ft.Bus() as bus:
            for g in GROUPS:
                sc.mkdir(g)
            for g in LEAVES:
                sc.spawn_sleepers(g, 1)
            check_design()
            calibrate(sc)
            socket_path = os.path.join(run, 'private')
            with ft.Daemon(bus, sc.root, runtime_dir=run) as d:
                ft.check(os.path.exists(socket_path), f'freezerd listens on {socket_path}')
                r = d.client.call('ApplyBatch', [(g, True) for g in GROUPS if S0[g]], 'auto', 0, 0)
                ft.check_equal(tuple(r), (4, 0), 'setup: S0 (B D F G frozen) applied')
                check_state(sc, S0, 'setup')
                flags = dict(S0)
                n = 0
                for how, socket in (('bus', None), ('private socket', socket_path)):
                    for order, args, out in (('top-down', ['--order=top-down'], 'text'),
                                             ('bottom-up', ['--order', 'bottom-up'], 'json'),
                                             ('auto', ['--order=auto'], 'text'),
                                             ('auto', [], 'json')):
                        what = f'{how}: --order {args[-1].split("=")[-1] if args else "omitted"}'
                        flags = run_batch(sc, what, order, flags,
                                          lambda reqs: via_freezectl(reqs, args, out, socket, what))
                        n += 1
                    with (ft.Client(f'unix:path={socket_path}', direct=True) if socket else
                          ft.Client(bus.address)) as c:
                        what = f'{how}: ApplyBatch with order ""'
                        flags = run_batch(sc, what, 'auto', flags,
                                          lambda reqs: via_jeepney(c, reqs, what))
                        n += 1
                print(f'# summary: {n} batches of 8 mixed writes each (top-down, bottom-up, auto, '
                      'omitted and "" orders, over the bus and the private socket), write order '
                      'read from one inotify queue', flush=True)
    finally:
        shutil.rmtree(run, ignore_errors=True)


def check_design():
    """The batch distinguishes the orders: the request order and each order's plan
    break every other order's rule (so no order passes by accident)."""
    for flags in (S0, {g: 1 - v for g, v in S0.items()}):
        requests = [(g, not flags[g]) for g in REQUEST_ORDER]
        for order in ('top-down', 'bottom-up', 'auto'):
            ft.check(rule_violation(order, plan(order, requests)) is None,
                     f'design: the plan {fmt(plan(order, requests))} follows {order}')
            others = [('request order', requests)] + [(o, plan(o, requests)) for o in
                                                      ('top-down', 'bottom-up', 'auto') if o != order]
            for name, seq in others:
                ft.check(rule_violation(order, seq) is not None,
                         f'design: {name} ({fmt(seq)}) breaks the {order} rule')


def calibrate(sc):
    """Our writes (of the value already there: no change for the kernel) come out of
    the queue in the order we made them, one event each."""
    seq = [BY_NAME[x] for x in 'HACFBGDE']
    with WriteRecorder(sc) as rec:
        ft.check_equal(rec.writes(), [], 'calibration: nothing queued before any write')
        for g in seq:
            sc.write_freeze(g, 0)
        ft.check_equal([NAME[g] for g in rec.writes()], [NAME[g] for g in seq],
                       'calibration: the queue holds one IN_MODIFY per write, in write order')


def via_freezectl(requests, args, out, socket, what):
    text = json.dumps([{'path': g, 'freeze': f} for g, f in requests])
    r = ft.freezectl(*(['--json'] if out == 'json' else []), 'batch', '-', *args, input=text, socket=socket,
                     check=False, timeout=ft.DEFAULT_TIMEOUT + 5)
    ft.check(r.returncode == 0, f'{what}: freezectl batch exits 0', f'exit {r.returncode}: {r.stdout!r} {r.stderr!r}')
    ft.check_equal(r.stderr, '', f'{what}: nothing on stderr')
    if out == 'json':
        ft.check_equal(json.loads(r.stdout), {'writes': 8, 'skipped': 0}, f'{what}: --json prints the counts')
    else:
        ft.check_equal(r.stdout, '8 writes, 0 skipped\n', f'{what}: prints the counts')


def via_jeepney(c, requests, what):
    r = c.call('ApplyBatch', requests, '', 0, 0, timeout=ft.DEFAULT_TIMEOUT + 5)
    ft.check_equal(tuple(r), (8, 0), f'{what}: replies (writes, skipped) = (8, 0)')


def run_batch(sc, what, order, flags, call):
    """Flip every group's own flag in one batch made by call(requests); check the
    writes' order against `order`'s rule and the state after.  Returns the new flags."""
    requests = [(g, not flags[g]) for g in REQUEST_ORDER]
    print(f'# {what}: requests {fmt(requests)}', flush=True)
    with WriteRecorder(sc) as rec:
        call(requests)
        written = rec.writes()
    want = {g: int(f) for g, f in requests}
    seq = [(g, bool(want[g])) for g in written]
    print(f'#   writes seen: {fmt(seq)}', flush=True)
    ft.check_equal(sorted(written), sorted(GROUPS), f'{what}: each group written exactly once')
    v = rule_violation(order, seq)
    ft.check(v is None, f'{what}: the writes follow the {order} rule ({fmt(seq)})', v)
    check_state(sc, want, what)
    return want


def check_state(sc, flags, what):
    ft.check_equal({NAME[g]: sc.read_freeze(g) for g in GROUPS}, {NAME[g]: flags[g] for g in GROUPS},
                   f'{what}: cgroup.freeze holds the requested flags')
    eff = effective(flags)
    ft.check_equal({NAME[g]: sc.read_events(g)['frozen'] for g in GROUPS}, {NAME[g]: eff[g] for g in GROUPS},
                   f'{what}: cgroup.events "frozen" is what the flags imply')


ft.run(test)
