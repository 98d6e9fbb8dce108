#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""SIGKILL freezerd in the middle of a batch: after a restart every group is
exactly as before the batch (issue 5, "Crash safety and restart"), but after a
batch without ROLLBACK whose writes had all landed, which stays as it asked.

  /p00 .. /p39         40 parents, no process of their own
  /pNN/c0 .. /pNN/c3   4 children each, one `sleep` each          (200 groups)
  /stuck               a `sleep` and `stat -f MOUNT` blocked (D) on a FUSE mount
                       that never answers: a freeze of it never completes

freezerd runs with FREEZERD_TEST_WRITE_DELAY_USEC=2000 (every cgroup.freeze write
is followed by a 2 ms pause), on a runtime dir and a state dir that outlive it.
Each case starts from a random state S of the 200 flags, set through one
ApplyBatch (which must leave no journal behind once it replied), then:

  * 20 random points: an ApplyBatch of the 200 groups (random target flags,
    order and ROLLBACK flag).  One inotify instance watches the runtime dir and
    every group's directory, so that the journal's appearance (IN_MODIFY of a
    journal-N.json that then holds one: freezerd's journal files are slots,
    written whole when a batch starts and emptied when it ends) and each
    cgroup.freeze write (IN_MODIFY "cgroup.freeze") are seen in the order they
    happened; freezerd is SIGKILLed from the event
    handler once the journal is there and k writes were seen, k drawn from
    [0, writes-1] (the first two cases take k = 0 and k = writes-1).
  * "after the last write": the batch also freezes /stuck, so it is still
    waiting for the kernel when every write has landed; killed then, once
    with ROLLBACK (its journal stays until it ends: the restart restores) and
    once without: then the journal is emptied as soon as the last write
    landed, and the restart leaves every flag as requested, as a timeout or a
    clean stop would (session 29's build kept the journal until the reply, and
    the restart thawed what the caller had frozen, /stuck and the rest).
  * a single Freeze("/stuck", ROLLBACK): killed as soon as its journal appears,
    and killed after its write.
  * a single Freeze("/stuck") without ROLLBACK: it writes no journal (none may
    appear); after the restart /stuck keeps the flag (nothing to undo).

After each kill: the journal is still there and records every changed group
with its previous and requested flag; the pending call got an error reply from
the bus.  A new freezerd on the same runtime dir must, before READY=1, have put
every cgroup.freeze back as in S (read at READY, no wait) and logged
"Recovered interrupted batch N: W groups restored ..., U had it already ...,
0 gone, 0 failed", W the flags whose writes had landed, U the others (it
logged one line per group and counted them all restored);
the journal must be gone (no journal file left holding one); then the kernel's "frozen" of every group, and the
daemon's Freeze/Frozen/FreezerState, must equal what they were before the batch.

A batch that replied must have emptied its journal already (the check is made
as soon as the reply arrives): otherwise a crash between its reply and the
removal would make the next freezerd undo a batch its caller was told had
succeeded.  A batch without ROLLBACK killed after its last write landed (its
journal emptied; the kill of a random point can land there on a slow machine)
must stay applied in full, with nothing recovered.  Violations are collected and fail the test at the end, after every
other check ran.  Should a kill land after the batch replied (k = writes-1 on a
very slow machine), the batch must have been applied in full instead.

The seed is printed; FREEZERD_TEST_SEED=N repeats a run."""

import collections
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

PARENTS = [f'/p{i:02d}' for i in range(40)]
GROUPS = [g for p in PARENTS for g in [p] + [f'{p}/c{j}' for j in range(4)]]
STUCK = '/stuck'
ALL = GROUPS + [STUCK]
RANDOM_POINTS = 20
WRITE_DELAY_USEC = 2000
LONG_USEC = 120 * 1000000


class Watcher:
    """One inotify instance on the runtime dir (journal writes) and on every group's
    directory (cgroup.freeze writes): one queue, so the order of events is the order
    in which freezerd did things.  on_event(kind, name) is called for each in turn.
    A journal is the IN_MODIFY of a journal file that then holds one (the emptying
    of a slot is an IN_MODIFY too); the journal is whole when its event is queued
    (after the one pwrite() that writes it), and stays until its batch ends (without
    ROLLBACK, until its last write landed), which comes after the writes this test
    waits for (but in the case that waits for all of them)."""

    def __init__(self, sc, runtime_dir, on_event):
        self.ino = ft.Inotify()
        self.on_event = on_event
        self.runtime_dir = runtime_dir
        self.run_wd = self.ino.add_watch(runtime_dir, ft.Inotify.IN_MODIFY)
        self.wds = {self.ino.add_watch(sc.abspath(g), ft.Inotify.IN_MODIFY): g for g in ALL}
        self.journals = []  # names seen, in order
        self.ended = []  # journal files seen empty (emptied, or free), in order
        self.writes = collections.Counter()
        ft.loop().add_reader(self.ino.fd, self._on_readable)

    def _on_readable(self):
        for wd, mask, name in self.ino.read():
            if mask & ft.Inotify.IN_Q_OVERFLOW:
                ft.fail('the test\'s inotify queue overflowed')
            if wd == self.run_wd and (mask & ft.Inotify.IN_MODIFY) and ft.JOURNAL_RE.fullmatch(name):
                j = ft.read_journal(self.runtime_dir, name)
                if j is not None and name not in self.journals:
                    self.journals.append(name)
                    self.on_event('journal', name)
                elif j is None:
                    # A slot emptied (its batch no longer needs it), or a free one: the
                    # reader was maybe too late to see what it held.
                    self.ended.append(name)
                    self.on_event('journal-end', name)
            elif wd in self.wds and name == 'cgroup.freeze' and (mask & ft.Inotify.IN_MODIFY):
                self.writes[self.wds[wd]] += 1
                self.on_event('write', self.wds[wd])

    def total_writes(self):
        return sum(self.writes.values())

    def close(self):
        ft.loop().remove_reader(self.ino.fd)
        self._on_readable()  # what is still queued
        self.ino.close()


def runtime_files(runtime_dir):
    """The files in the runtime dir but the private socket, which a SIGKILL leaves behind
    (the next freezerd replaces it; test-core-private checks that), and the lock file,
    which stays (test-core-single-instance)."""
    return sorted(f for f in os.listdir(runtime_dir) if f not in ('private', 'lock'))


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    seed = os.environ.get('FREEZERD_TEST_SEED')
    seed = int(seed) if seed else random.SystemRandom().randrange(1 << 32)
    print(f'# seed {seed} (FREEZERD_TEST_SEED={seed} repeats this run)', flush=True)
    rng = random.Random(seed)
    fig = ft.Figures('test-crash-batch')
    fig.lines.append(f'seed:            {seed}')
    kill_points = []
    violations = []
    restarts = [0]
    journal_checks = [0]

    # Cases: (kind, k) where k is the number of observed writes to kill after
    # (None: decided once the number of writes is known).
    cases = [('batch', 'first'), ('batch', 'last')] + [('batch', None)] * (RANDOM_POINTS - 2)
    cases += [('batch-waiting', 'all'), ('batch-waiting-plain', 'all'), ('single-rollback', 0),
              ('single-rollback', 1), ('single-plain', 1)]

    dirs = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}daemon-{os.getpid()}-crash-')
    state_dir = os.path.join(dirs, 'state')
    runtime_dir = os.path.join(dirs, 'run')
    os.mkdir(state_dir)
    os.mkdir(runtime_dir)
    env = {'FREEZERD_TEST_WRITE_DELAY_USEC': str(WRITE_DELAY_USEC)}
    try:
        with ft.Scratch('crash-batch') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
            for p in PARENTS:
                for j in range(4):
                    sc.spawn_sleepers(f'{p}/c{j}', 1)
            sc.spawn_sleepers(STUCK, 1)
            fuse.spawn_stuck(sc, STUCK)
            # Wakes check_no_journal_at_reply(): a slot emptied, or a journal removed.
            ft.loop().watch(runtime_dir, ft.Inotify.IN_MODIFY | ft.Inotify.IN_DELETE)
            ft.check(True, f'{len(GROUPS)} groups with {len(GROUPS) - len(PARENTS)} sleepers; {STUCK} holds a task '
                           'blocked (D) on the FUSE mount')

            def kernel():
                return {g: (sc.read_freeze(g), sc.read_events(g)['frozen']) for g in ALL}

            def expected_frozen(flags):
                """The kernel's "frozen" that flags imply (/stuck can never finish freezing)."""
                out = {}
                for g in ALL:
                    parent = g.rsplit('/', 1)[0]
                    eff = flags[g] or (parent in flags and flags[parent])
                    out[g] = 0 if g == STUCK else int(bool(eff))
                return out

            def daemon_view(c):
                objs = c.managed_objects()
                fig.reply('GetManagedObjects')
                out = {}
                for g in ALL:
                    p = objs.get(ft.group_object(g), {}).get(ft.GROUP_IFACE)
                    out[g] = None if p is None else (int(p['Freeze']), int(p['Frozen']))
                return out

            def wait_daemon_view(c, want, what):
                """Until GetManagedObjects shows want (woken by PropertiesChanged)."""
                deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
                while True:
                    n = len(c.signals)
                    got = daemon_view(c)
                    if got == want or time.monotonic() >= deadline:
                        break
                    if len(c.signals) == n:
                        ft.loop().run_once(deadline - time.monotonic())
                diff = {g: (got[g], want[g]) for g in ALL if got[g] != want[g]}
                ft.check(not diff, what, f'(daemon, expected) differ for {len(diff)} groups: '
                                         f'{dict(list(diff.items())[:8])}')

            def check_no_journal(what):
                left = ft.live_journals(runtime_dir)
                ft.check(not left, what, f'left in {runtime_dir}: {left}')

            def check_no_journal_at_reply(what):
                """A batch that replied must have emptied its journal already: were freezerd
                killed between its reply and the emptying, the restart would undo a batch its
                caller was told had succeeded.  A violation is recorded (the test fails at the
                end) and its extent measured: how long until the journal does go."""
                journal_checks[0] += 1
                left = ft.live_journals(runtime_dir)
                if not left:
                    ft.check(True, f'{what}: no journal left when it replied')
                    return
                t0 = time.monotonic()
                ft.wait_for(lambda: not ft.live_journals(runtime_dir), what=f'{left} to be emptied')
                dt = (time.monotonic() - t0) * 1e6
                violations.append(f'{what}: replied with {left} still in the runtime dir (removed {dt:.0f} us '
                                  'later)')
                print(f'#   VIOLATION: {violations[-1]}', flush=True)

            def verify_recovery(d, info):
                """Right after READY=1 of the freezerd that follows a crash."""
                c = d.client
                before, journal_id, (n_restored, n_unchanged), what = info
                flags = {g: sc.read_freeze(g) for g in ALL}
                want_flags = {g: f for g, (f, _z) in before.items()}
                bad = {g: (flags[g], want_flags[g]) for g in ALL if flags[g] != want_flags[g]}
                # Before the call, where a journal undid it; else as the call left it.
                as_ = 'as before' if journal_id is not None else 'as the call left it'
                ft.check(not bad, f'{what}: at READY=1 every cgroup.freeze ({len(ALL)}) is {as_}',
                         f'(now, before) differ for {len(bad)}: {dict(list(bad.items())[:8])}')
                check_no_journal(f'{what}: the journal is gone after recovery')
                log = d.log()
                recovered = re.findall(r'Recovered interrupted batch (\d+): (\d+) groups? restored to (?:its|their) '
                                       r'previous flags?, (\d+) had it already \(not written before the stop\), (\d+) gone, '
                                       r'(\d+) failed', log)
                if journal_id is None:
                    ft.check_equal(recovered, [], f'{what}: nothing to recover (no journal was left)')
                else:
                    ft.check_equal(recovered, [(str(journal_id), str(n_restored), str(n_unchanged), '0', '0')],
                                   f'{what}: freezerd logged the recovery of journal {journal_id} '
                                   f'({n_restored} groups restored, the {n_unchanged} whose writes had not landed '
                                   'had their flag already, 0 gone, 0 failed)')
                ft.check('Restored /' not in log, f'{what}: no line per group (a summary)', log[-500:])
                ft.wait_for(lambda: kernel() == before, timeout=ft.DEFAULT_TIMEOUT,
                            what=f'{what}: the kernel\'s frozen of every group to be {as_}')
                now = kernel()
                ft.check_equal(now, before, f'{what}: cgroup.freeze and frozen of all {len(ALL)} groups {as_}')
                fig.checked['kernel (cgroup.freeze + frozen) after a restart'] += len(ALL)
                wait_daemon_view(c, before, f'{what}: the new freezerd reports every group\'s Freeze and Frozen '
                                            f'{as_}')
                fig.checked['daemon view (Freeze + Frozen) after a restart'] += len(ALL)
                st = c.group_property(STUCK, 'FreezerState')
                fig.reply('Get')
                ft.check_equal(st, 'freezing' if before[STUCK][0] else 'running', f'{what}: {STUCK} FreezerState')

            def set_start_state(d, rnd):
                """A random S through one ApplyBatch; returns the kernel state after it."""
                c = d.client
                start = {g: int(rng.random() < (0.2 if g in PARENTS else 0.3)) for g in GROUPS}
                start[STUCK] = 0
                reqs = [(g, bool(start[g])) for g in ALL]
                rng.shuffle(reqs)
                writes, skipped = c.call('ApplyBatch', reqs, 'auto', LONG_USEC, 0, timeout=6 * ft.DEFAULT_TIMEOUT)
                fig.reply('ApplyBatch')
                check_no_journal_at_reply(f'case {rnd}: the batch that set the start state ({writes} writes)')
                state = kernel()
                ft.check_equal(state, {g: (start[g], expected_frozen(start)[g]) for g in ALL},
                               f'case {rnd}: start state set ({sum(start.values())} groups frozen)')
                wait_daemon_view(c, state, f'case {rnd}: the daemon agrees')
                return state

            def crash(d, rnd, kind, k):
                """Run the case on d and SIGKILL it; returns what verify_recovery needs."""
                c = d.client
                before = set_start_state(d, rnd)
                start = {g: f for g, (f, _z) in before.items()}
                if kind in ('batch', 'batch-waiting', 'batch-waiting-plain'):
                    target = dict(start)
                    for g in GROUPS:
                        if rng.random() < 0.7:
                            target[g] ^= 1
                    if kind != 'batch':
                        target[STUCK] = 1
                    changed = [g for g in ALL if target[g] != start[g]]
                    n_writes = len(changed)
                    reqs = [(g, bool(target[g])) for g in ALL]
                    rng.shuffle(reqs)
                    order = rng.choice(['auto', 'top-down', 'bottom-up'])
                    flags = {'batch': rng.choice([0, ft.FLAG_ROLLBACK_ON_TIMEOUT]), 'batch-waiting':
                             ft.FLAG_ROLLBACK_ON_TIMEOUT, 'batch-waiting-plain': 0}[kind]
                    method = 'ApplyBatch'
                    args = (reqs, order, LONG_USEC, flags)
                    desc = f'ApplyBatch of {len(ALL)} groups, {n_writes} to change, order {order}, flags {flags}'
                else:
                    target = dict(start, **{STUCK: 1})
                    changed = [STUCK]
                    n_writes = 1
                    flags = ft.FLAG_ROLLBACK_ON_TIMEOUT if kind == 'single-rollback' else 0
                    method = 'Freeze'
                    args = (STUCK, LONG_USEC, flags)
                    desc = f'Freeze({STUCK}, flags {flags})'
                journaled = kind != 'single-plain'
                if k == 'first':
                    k = 0
                elif k in ('last', 'all'):
                    k = n_writes - 1 if k == 'last' else n_writes
                elif k is None:
                    k = rng.randrange(n_writes)
                seen = {'journal': None, 'writes': 0, 'at_kill': None}

                def on_event(what, name):
                    if what == 'journal':
                        seen['journal'] = name
                    elif what == 'journal-end':
                        pass
                    else:
                        seen['writes'] += 1
                    # Without ROLLBACK, waiting: killed once every write landed and no journal
                    # is left (looked at here, not only through the events: a test held off
                    # for the batch's whole writes would have read its journal empty).
                    if kind == 'batch-waiting-plain':
                        if not d.killed and seen['writes'] >= k and not ft.live_journals(runtime_dir):
                            d.sigkill()
                            seen['at_kill'] = seen['writes']
                        return
                    if not d.killed and (seen['journal'] or not journaled) and seen['writes'] >= k:
                        d.sigkill()
                        seen['at_kill'] = seen['writes']

                w = Watcher(sc, runtime_dir, on_event)
                try:
                    pending = c.call_async(method, *args)
                    ft.wait_for(lambda: d.killed, timeout=6 * ft.DEFAULT_TIMEOUT,
                                what=f'case {rnd}: the journal and {k} writes of {desc}' +
                                     (', then the journal emptied' if kind == 'batch-waiting-plain' else ''))
                    status = d.wait_dead()
                finally:
                    w.close()
                ft.check_equal(status, -signal.SIGKILL, f'case {rnd}: freezerd killed by SIGKILL during {desc}, '
                                                        f'after {seen["at_kill"]} observed writes (k={k})')
                fig.faults['SIGKILL of freezerd'] += 1
                kill_points.append(f'{seen["at_kill"]}/{n_writes}')
                # The bus answers the call freezerd will never answer.
                try:
                    pending.result(timeout=ft.DEFAULT_TIMEOUT)
                except ft.DBusError as e:
                    fig.reply(method, e.name)
                    ft.check(True, f'case {rnd}: the pending call got an error reply from the bus: {e.name}')
                else:
                    # Only possible for k = writes-1 on a machine slow enough that the last
                    # write and the kernel's confirmation beat the SIGKILL: the batch finished,
                    # so all of it must stay (and its journal must be gone already).
                    fig.reply(method)
                    ft.check(kind == 'batch' and k == n_writes - 1, f'case {rnd}: {desc} replied before the kill: '
                                                                    'only possible after its last write', k)
                    kill_points[-1] += ' (finished first)'
                    after = {g: (target[g], expected_frozen(target)[g]) for g in ALL}
                    ft.check_equal(kernel(), after, f'case {rnd}: the batch finished before the kill landed: all '
                                                    'of it applied')
                    return after, None, (0, 0), f'case {rnd} ({kind}, finished before the kill)'

                landed = [g for g in ALL if sc.read_freeze(g) != start[g]]
                files = runtime_files(runtime_dir)
                journals = ft.live_journals(runtime_dir)
                if kind != 'single-plain' and not flags & ft.FLAG_ROLLBACK_ON_TIMEOUT and \
                        (kind == 'batch-waiting-plain' or (not journals and sorted(landed) == sorted(changed))):
                    # Without ROLLBACK, a batch whose writes all landed is applied, whatever the
                    # kernel confirms: its journal is gone, and the restart leaves it.
                    ft.check_equal(sorted(landed), sorted(changed), f'case {rnd}: every write of {desc} landed')
                    ft.check_equal(journals, [], f'case {rnd}: without ROLLBACK, no journal is left once the '
                                                 'writes landed (the batch is applied: a crash must not undo it)')
                    ft.check_equal([f for f in files if not ft.JOURNAL_RE.fullmatch(f)], [],
                                   f'case {rnd}: nothing but journal files is left')
                    kill_points[-1] += ' (writes all landed)'
                    after = {g: (target[g], expected_frozen(target)[g]) for g in ALL}
                    return after, None, (0, 0), f'case {rnd} ({kind}, killed after its writes landed)'
                if not journaled:
                    ft.check_equal(w.journals, [], f'case {rnd}: a Freeze without ROLLBACK writes no journal')
                    ft.check_equal(journals, [], f'case {rnd}: no journal file holds a journal')
                    ft.check_equal(landed, [STUCK], f'case {rnd}: its write landed')
                    after = dict(before)
                    after[STUCK] = (1, 0)
                    return after, None, (0, 0), f'case {rnd} ({kind})'
                ft.check_equal(journals, [w.journals[0]] if w.journals else ['?'],
                               f'case {rnd}: the journal {journals} is left by the crash, nothing else')
                ft.check_equal([f for f in files if not ft.JOURNAL_RE.fullmatch(f)], [],
                               f'case {rnd}: nothing but journal files is left')
                j = ft.read_journal(runtime_dir, journals[0])
                journal_id = j['id']
                entries = {e['path']: (int(e['prev']), int(e['new'])) for e in j['groups']}
                ft.check_equal(entries, {g: (start[g], target[g]) for g in changed},
                               f'case {rnd}: the journal lists the {len(changed)} groups to change with their '
                               'previous and requested flags')
                fig.checked['journal entries compared'] += len(entries)
                print(f'#   case {rnd}: {kind}, killed after {seen["at_kill"]} of {n_writes} writes '
                      f'({w.total_writes()} observed in all, {len(landed)} flags had changed at death)', flush=True)
                return before, journal_id, (len(landed), len(changed) - len(landed)), \
                    f'case {rnd} ({kind}, kill at {seen["at_kill"]}/{n_writes})'

            info = None
            for rnd in range(len(cases) + 1):
                with ft.CrashableDaemon(bus, sc.root, state_dir=state_dir, runtime_dir=runtime_dir, env=env) as d:
                    d.client.record()  # PropertiesChanged wake wait_daemon_view()
                    if info is not None:
                        verify_recovery(d, info)
                        restarts[0] += 1
                    if rnd == len(cases):
                        # The end: a batch that finishes leaves no journal, everything thawed.
                        writes, _skipped = d.client.call('ApplyBatch', [(g, False) for g in ALL], 'auto',
                                                         LONG_USEC, 0, timeout=6 * ft.DEFAULT_TIMEOUT)
                        fig.reply('ApplyBatch')
                        check_no_journal_at_reply(f'the final thaw ({writes} writes)')
                        ft.check_equal(kernel(), {g: (0, 0) for g in ALL}, 'everything thawed at the end')
                        break
                    kind, k = cases[rnd]
                    info = crash(d, rnd, kind, k)
    finally:
        shutil.rmtree(dirs, ignore_errors=True)
    fig.lines.append(f'kill points:     {", ".join(kill_points)} (observed writes / writes of the call)')
    fig.lines.append(f'restarts:        {restarts[0]} (each recovered a journal or, for the calls without '
                     'ROLLBACK whose writes had landed, had none)')
    fig.lines.append(f'write delay:     FREEZERD_TEST_WRITE_DELAY_USEC={WRITE_DELAY_USEC}')
    fig.lines.append(f'journal at reply: {journal_checks[0]} finished batches checked, {len(violations)} still had '
                     'their journal when they replied')
    fig.print()
    if violations:
        ft.fail(f'{len(violations)} finished batches still had their journal when they replied:\n  ' +
                '\n  '.join(violations))


ft.run(test)
