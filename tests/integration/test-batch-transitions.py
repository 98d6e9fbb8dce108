#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The transition property of ApplyBatch's order "auto", recorded on the kernel.

Tree A{B{D{H},E,F},C{G}}, a `sleep` in every group.  Each case is a start state
(own flags of A..H, applied and confirmed first) and a mixed batch: some groups
frozen, some thawed in the same call.  A few cases are written by hand (the ones
where a naive order must flip a subtree twice); the rest are pseudo-random
(seed FREEZERD_TEST_SEED, default 3; printed).

During the batch every group's cgroup.events is watched with inotify (armed
before the call); after every event all eight files are re-read and each
group's sequence of "frozen" values is recorded, starting from the value read
when the watch was armed and ending with the value read once the reply came
and the kernel settled.  The kernel merges and rate-limits these notifications
(cgroup_file_notify: at most one per 10 ms per file), so an intermediate value
can go unseen; the start/end comparison still catches any net change.

A second witness that does not depend on notifications: every group also holds
a `cat` (Echo).  Before the batch, each group that is frozen and will stay frozen
gets a ping queued on its cat's stdin; a cat answers only if its group ran at
some point, so an unanswered ping after the batch proves the group was not thawed
on the way (a thaw of a few microseconds may let it run too little to answer:
best effort as well, but independent of the notification rate limit).

A group with tasks of its own and children can read frozen 1 too early (README,
"Kernel behaviour to know"): as soon as its children are frozen, then 0 when the
first of its own tasks enters the freezer's trap and 1 after the last, all from
one write.  Such a group starts running and ends frozen; its freeze state is the
OR of the flags on its path, and as none of them is written twice (a third
witness: inotify on every group's cgroup.freeze counts the writes; two writes to
one file with no other event between them merge into one, so this one is best
effort too), none is cleared once set: it changes once, whatever the order, and
its extra changes are counted apart.  A group that thaws or ends as it started
gets no such report (the kernel clears frozen with the last flag and never sets it
without one, and every task of a group frozen at the start is in the trap before
the batch), so a second change there is a double transition.

Asserted for order "auto":
  * every group's cgroup.freeze is written at most once and ends with its flag;
  * every group's recorded frozen value changes at most once during the batch,
    beyond the kernel's early report in a group that goes from running to frozen;
  * a group that starts frozen and ends frozen never reads frozen 0 in between,
    and its cat did not answer the ping queued before the batch;
  * the end state is what the final flags imply, and the batch succeeds.
Orders "top-down" and "bottom-up" run the same cases as a contrast only: the
number of double transitions they cause is printed, not asserted."""

import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ['/A', '/A/B', '/A/C', '/A/B/D', '/A/B/E', '/A/B/F', '/A/C/G', '/A/B/D/H']
NAME = {g: g.rsplit('/', 1)[1] for g in GROUPS}
BY_NAME = {v: k for k, v in NAME.items()}
N_RANDOM = 20
ORDERS = ['auto', 'top-down', 'bottom-up']


def parent(path):
    return path.rsplit('/', 1)[0] or None


def effective(flags):
    out = {}
    for g in GROUPS:  # parents first
        p = parent(g)
        out[g] = int(bool(flags[g]) or (p in out and out[p]))
    return out


def fmt_flags(flags):
    return ''.join(NAME[g] if flags[g] else NAME[g].lower() for g in GROUPS)


def fmt_requests(requests):
    return ' '.join(f'{"+" if v else "-"}{NAME[g]}' for g, v in requests)


def hand_cases():
    """(start flags, requests) where top-down or bottom-up flip a subtree twice."""
    def flags(*names):
        return {g: int(NAME[g] in names) for g in GROUPS}

    def req(s):
        return [(BY_NAME[x[1:]], x[0] == '+') for x in s.split()]
    return [
        # top-down thaws A (everything) before it freezes B: B, D, E, F, H flip twice.
        (flags('A'), req('-A +B')),
        # bottom-up thaws D (D, H) before it freezes B.
        (flags('D'), req('-D +B')),
        # both: A's thaw and D's freeze, C's freeze and G's thaw at two depths.
        (flags('A', 'G'), req('-A +D -G +C')),
        # the whole tree moves from "A" to "B and C" (A ends running, the rest stays frozen).
        (flags('A'), req('+B +C -A')),
    ]


def random_cases(rng, n):
    cases = []
    while len(cases) < n:
        start = {g: int(rng.random() < 0.35) for g in GROUPS}
        k = rng.randint(2, 6)
        requests = [(g, rng.random() < 0.5) for g in rng.sample(GROUPS, k)]
        # Mixed: at least one request freezes and one thaws a group whose flag changes.
        if not any(v and not start[g] for g, v in requests) or not any(not v and start[g] for g, v in requests):
            continue
        cases.append((start, requests))
    return cases


class EventsRecorder:
    """Records every observed change of "frozen" in the groups' cgroup.events."""

    def __init__(self, sc, groups):
        self.sc = sc
        self.groups = groups
        self.ino = ft.Inotify()
        self.wds = {self.ino.add_watch(sc.abspath(g, 'cgroup.events'), ft.Inotify.IN_MODIFY): g for g in groups}
        self.freeze_wds = {self.ino.add_watch(sc.abspath(g, 'cgroup.freeze'), ft.Inotify.IN_MODIFY): g
                           for g in groups}
        self.writes = {g: 0 for g in groups}  # writes to cgroup.freeze seen
        self.seq = {g: [sc.read_events(g)['frozen']] for g in groups}
        self.events = 0
        ft.loop().add_reader(self.ino.fd, self.on_events)

    def reread(self):
        for g in self.groups:
            v = self.sc.read_events(g)['frozen']
            if v != self.seq[g][-1]:
                self.seq[g].append(v)

    def on_events(self):
        evs = self.ino.read()
        self.events += sum(1 for wd, _m, _n in evs if wd in self.wds)
        for wd, _m, _n in evs:
            if wd in self.freeze_wds:
                self.writes[self.freeze_wds[wd]] += 1
        self.reread()

    def close(self):
        ft.loop().remove_reader(self.ino.fd)
        self.on_events()  # whatever is still queued, and a last read
        self.ino.close()

    def start(self):
        return {g: s[0] for g, s in self.seq.items()}

    def end(self):
        return {g: s[-1] for g, s in self.seq.items()}

    def transitions(self):
        return {g: len(s) - 1 for g, s in self.seq.items()}


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    seed = int(os.environ.get('FREEZERD_TEST_SEED', '3'))
    print(f'# seed {seed} (FREEZERD_TEST_SEED)', flush=True)
    rng = random.Random(seed)
    cases = hand_cases() + random_cases(rng, N_RANDOM)
    timeout_usec = int(ft.DEFAULT_TIMEOUT * 1e6)

    with ft.Scratch('batch-transitions') as sc, ft.Bus() as bus:
        for g in GROUPS:
            sc.mkdir(g)
        for g in GROUPS:
            sc.spawn_sleepers(g, 1)
        echoes = {g: sc.spawn_echo(g) for g in GROUPS}
        for g in GROUPS:
            echoes[g].ping()

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            doubles = {o: 0 for o in ORDERS}      # groups that changed twice or more
            doubles_cases = {o: 0 for o in ORDERS}  # cases with at least one
            glitches = {o: 0 for o in ORDERS}     # frozen -> 0 -> frozen
            early = {o: 0 for o in ORDERS}        # the kernel's early "frozen 1" in a group being frozen
            ran = {o: 0 for o in ORDERS}          # stayed-frozen groups whose cat answered
            pinged = 0
            changes = {o: 0 for o in ORDERS}
            n_events = {o: 0 for o in ORDERS}
            batches = 0

            def settle(flags):
                """Apply the flags of all eight groups and wait until the kernel shows them."""
                c.call('ApplyBatch', [(g, bool(flags[g])) for g in GROUPS], 'auto', timeout_usec, 0)
                eff = effective(flags)
                ft.wait_for(lambda: all(sc.read_events(g)['frozen'] == eff[g] for g in GROUPS),
                            what=f'the start state {fmt_flags(flags)}')

            for i, (start, requests) in enumerate(cases):
                final = dict(start)
                for g, v in requests:
                    final[g] = int(v)
                e_start, e_final = effective(start), effective(final)
                want_writes = sum(1 for g in {g for g, _ in requests} if final[g] != start[g])
                desc = f'case {i + 1:2} {fmt_flags(start)} -> [{fmt_requests(requests)}] = {fmt_flags(final)}'

                for order in ORDERS:
                    settle(start)
                    stays = [g for g in GROUPS if e_start[g] and e_final[g]]
                    # The kernel may report a group frozen before all its tasks are (see
                    # above): one entering later would lower it during the batch.
                    for g in GROUPS:
                        if e_start[g]:
                            sc.wait_tasks_frozen(g)
                    tokens = {g: echoes[g].send() for g in stays}
                    pinged += len(tokens)
                    rec = EventsRecorder(sc, GROUPS)
                    try:
                        ft.check_equal(rec.start(), e_start, f'{desc} {order}: kernel start state')
                        writes, _skipped = c.call('ApplyBatch', requests, order, timeout_usec, 0)
                        batches += 1
                        ft.wait_for(lambda: all(sc.read_events(g)['frozen'] == e_final[g] for g in GROUPS),
                                    what=f'{desc} {order}: the final state')
                    finally:
                        rec.close()
                    ft.loop().run_once(0)  # take in any echo already written
                    answered = [NAME[g] for g in stays if echoes[g].answered(tokens[g])]
                    ran[order] += len(answered)
                    ft.check_equal(writes, want_writes, f'{desc} {order}: writes')
                    tr = rec.transitions()
                    seqs = ' '.join(f'{NAME[g]}:{"".join(map(str, rec.seq[g]))}' for g in GROUPS)
                    print(f'#   {order:9} frozen seen {seqs}  ({rec.events} events, '
                          f'{sum(rec.writes.values())} writes seen)', flush=True)
                    ft.check_equal(rec.end(), e_final, f'{desc} {order}: kernel end state is what the flags imply')
                    n_events[order] += rec.events
                    changes[order] += sum(tr.values())
                    # A group being frozen changes once (the flags on its path are written once,
                    # asserted below); more changes seen there are the kernel's early report.
                    freezing = [g for g in GROUPS if not e_start[g] and e_final[g]]
                    twice = [NAME[g] for g in GROUPS if tr[g] >= 2 and g not in freezing]
                    early[order] += sum(1 for g in freezing if tr[g] >= 2)
                    rewritten = [NAME[g] for g in GROUPS if rec.writes[g] > 1]
                    ft.check_equal({g: sc.read_freeze(g) for g in GROUPS}, final,
                                   f'{desc} {order}: every cgroup.freeze holds its final flag')
                    glitch = [NAME[g] for g in GROUPS if e_start[g] and e_final[g] and 0 in rec.seq[g]]
                    doubles[order] += len(twice)
                    doubles_cases[order] += bool(twice)
                    glitches[order] += len(glitch)
                    if order == 'auto':
                        ft.check(not rewritten, f'{desc} auto: every group\'s cgroup.freeze is written at most once',
                                 f'written more than once: {rewritten}')
                        ft.check(not twice, f'{desc} auto: every group\'s frozen changes at most once '
                                 '(beyond the kernel\'s early report while it freezes)',
                                 f'changed more than once: {twice}: {seqs}')
                        ft.check(not glitch, f'{desc} auto: no group frozen at start and end reads frozen 0',
                                 f'thawed on the way: {glitch}: {seqs}')
                        ft.check(not answered, f'{desc} auto: no group frozen at start and end ran in between',
                                 f'the cat answered in {answered}')
                        ft.check(all(bool(tr[g]) == (e_start[g] != e_final[g]) for g in GROUPS),
                                 f'{desc} auto: exactly the groups whose state differs changed', seqs)

            settle({g: 0 for g in GROUPS})
            for g in GROUPS:
                echoes[g].ping()
            ft.check(True, 'after the last case every group runs (each cat answers)')
            print(f'# summary: {len(cases)} cases ({len(cases) - N_RANDOM} by hand, {N_RANDOM} random, seed {seed}) '
                  f'x {len(ORDERS)} orders = {batches} recorded batches over 8 groups; {pinged} pings to groups that '
                  f'stay frozen', flush=True)
            for o in ORDERS:
                print(f'#   {o:9}: {changes[o]:3} frozen changes seen, {n_events[o]:3} inotify events, '
                      f'{doubles[o]:3} double transitions in {doubles_cases[o]:2} cases, '
                      f'{early[o]:3} early kernel reports (not counted), '
                      f'{glitches[o]:3} frozen groups seen thawed on the way, '
                      f'{ran[o]:3} frozen groups ran (cat answered)'
                      + (' (asserted 0)' if o == 'auto' else ' (contrast, not asserted)'), flush=True)


ft.run(test)
