#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Processes that fork while their group is being frozen (issue 5, "Faults and load").

A forker is `sh -c 'for i in $(seq 200); do sleep 1000 >/dev/null & done; echo done; wait'`:
200 forks as fast as the shell goes, then "done" on its stdout (read through the
test's event loop: no polling for the count).

Rounds, each with fresh forkers (the previous ones killed with cgroup.kill):
  1. /f/a: Freeze("/f/a") sent the moment the forker starts;
  2. /f/a and /f/b: Freeze("/f") (the parent) the moment both start;
  3. /f/a and /f/b: ApplyBatch([/f/a, /f/b] freeze) the moment both start.
In each round the freeze is then undone and redone 10 times in a row while the
forkers keep forking (Thaw + Freeze, or the batch both ways), and once more after
"done" (all 201 tasks there).  Every freeze must succeed, and when it replied the
kernel must say "frozen 1" for each group and every task listed in the groups'
cgroup.threads must be in the freezer trap (per task, /proc/PID/status and wchan;
a task can take an instant to get there, so that check polls briefly).  The
number of `sleep` tasks must never shrink (the shell's $(seq) subshell comes and
goes, sleeps do not), and after "done" each group holds 201 tasks, all frozen
(the last child may be caught between fork and exec: still "sh")."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

FORKS = 200
CYCLES = 10
LONG_USEC = 60 * 1000000
FORKER = f'for i in $(seq {FORKS}); do sleep 1000 >/dev/null & done; echo done; wait'


class Forker:
    """The forking shell in a group; .done once it printed "done"."""

    def __init__(self, sc, path):
        self.path = path
        self.proc = sc.spawn(path, ['sh', '-c', FORKER], stdout=subprocess.PIPE)
        self.out = b''
        os.set_blocking(self.proc.stdout.fileno(), False)
        ft.loop().add_reader(self.proc.stdout, self._on_read)

    def _on_read(self):
        try:
            data = os.read(self.proc.stdout.fileno(), 4096)
        except BlockingIOError:
            return
        if not data:
            ft.loop().remove_reader(self.proc.stdout)
        self.out += data

    @property
    def done(self):
        return b'done\n' in self.out

    def close(self):
        ft.loop().remove_reader(self.proc.stdout)


def tasks(sc, path):
    """Thread ids in the group (cgroup.threads)."""
    with open(sc.abspath(path, 'cgroup.threads')) as f:
        return [int(x) for x in f.read().split()]


def comm(tid):
    try:
        with open(f'/proc/{tid}/comm') as f:
            return f.read().strip()
    except OSError:
        return None


def all_in_trap(sc, path):
    tids = tasks(sc, path)
    return bool(tids) and all(ft.task_frozen(ft.proc_state(t)) for t in tids if ft.proc_state(t) is not None)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    fig = ft.Figures('test-fault-fork')
    counts = []
    with ft.Scratch('fault-fork') as sc, ft.Bus() as bus:
        for g in ('/f/a', '/f/b'):
            sc.mkdir(g)
        with ft.Daemon(bus, sc.root) as d:
            c = d.client

            def call(method, *args):
                try:
                    out = c.call(method, *args, timeout=ft.DEFAULT_TIMEOUT * 3)
                except ft.DBusError as e:
                    fig.reply(method, e.name)
                    ft.fail(f'{method}{args!r} failed: {e}')
                fig.reply(method)
                return out

            def check_frozen(groups, what, last):
                """At the reply: kernel frozen, then every task in the trap.  Returns
                {group: (tasks, sleeps)}: the sleeps (which never exit) must not be fewer
                than at the last freeze; other tasks come and go (the $(seq) subshell)."""
                ev = {g: sc.read_events(g)['frozen'] for g in groups}
                ft.check_equal(ev, {g: 1 for g in groups}, f'{what}: the kernel says frozen 1 at the reply')
                n = {}
                for g in groups:
                    ft.wait_for(lambda: all_in_trap(sc, g), poll=0.002,
                                what=f'{what}: every task of {g} in the freezer trap '
                                     f'({[ft.proc_state(t) for t in tasks(sc, g)][:5]}...)')
                    tids = tasks(sc, g)
                    n[g] = (len(tids), sum(1 for t in tids if comm(t) == 'sleep'))
                    before = last.get(g, (0, 0))[1]
                    ft.check(n[g][1] >= before, f'{what}: {g}: {n[g][0]} tasks ({n[g][1]} sleeps, no fewer than '
                                                f'before: {before}), all in the freezer trap')
                    fig.checked['tasks found in the freezer trap'] += n[g][0]
                fig.checked['groups found frozen with every task'] += len(groups)
                return n

            rounds = [
                ('Freeze /f/a', ['/f/a'],
                 lambda: call('Freeze', '/f/a', LONG_USEC, 0), lambda: call('Thaw', '/f/a', LONG_USEC, 0)),
                ('Freeze /f', ['/f/a', '/f/b'],
                 lambda: call('Freeze', '/f', LONG_USEC, 0), lambda: call('Thaw', '/f', LONG_USEC, 0)),
                ('ApplyBatch', ['/f/a', '/f/b'],
                 lambda: call('ApplyBatch', [('/f/a', True), ('/f/b', True)], 'auto', LONG_USEC, 0),
                 lambda: call('ApplyBatch', [('/f/a', False), ('/f/b', False)], 'auto', LONG_USEC, 0)),
            ]
            for name, groups, freeze, thaw in rounds:
                forkers = [Forker(sc, g) for g in groups]
                fig.faults[f'forkers of {FORKS} processes'] += len(forkers)
                try:
                    freeze()
                    last = check_frozen(groups, f'{name}: at once', {})
                    seen = [sum(t for t, _s in last.values())]
                    for i in range(CYCLES):
                        thaw()
                        freeze()
                        last = check_frozen(groups, f'{name}: cycle {i}', last)
                        seen.append(sum(t for t, _s in last.values()))
                    thaw()
                    ft.wait_for(lambda: all(f.done for f in forkers), timeout=ft.DEFAULT_TIMEOUT * 3,
                                what=f'{name}: the forkers to finish')
                    freeze()
                    last = check_frozen(groups, f'{name}: after the forks', last)
                    seen.append(sum(t for t, _s in last.values()))
                    # The last child may be frozen between fork and exec ("sh", not yet "sleep").
                    ft.check_equal({g: t for g, (t, _s) in last.items()}, {g: FORKS + 1 for g in groups},
                                   f'{name}: the shell and its {FORKS} children in each group, all frozen')
                    counts.append(f'{name}: ' + ' '.join(map(str, seen)))
                    print(f'#   {name}: tasks frozen at each freeze: {" ".join(map(str, seen))}', flush=True)
                    ft.check(seen[0] < len(groups) * (FORKS + 1),
                             f'{name}: the first freeze caught the forkers mid-way ({seen[0]} tasks of '
                             f'{len(groups) * (FORKS + 1)})')
                    thaw()
                finally:
                    for f in forkers:
                        f.close()
                for g in groups:
                    sc.kill(g)
                    sc.wait_events(g, populated=0)
    fig.lines += [f'tasks at each freeze: {x}' for x in counts]
    fig.print()


ft.run(test)
