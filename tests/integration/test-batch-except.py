#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""FreezeExcept on a 3-level tree, over D-Bus and through freezectl.

  /p
   +- a ---- a1   a `cat` (Echo): the excluded subtree, must keep running
   |     `-- a2
   +- b ---- b1
   |     `-- b2
   `- c
  a `sleep` in every group (the inner ones too: those of /p and /p/a keep running,
  the kernel cannot freeze a group without its descendants)

1. FreezeExcept("/p", ["/p/a/a1"]) returns exactly the minimal cover
   {/p/a/a2, /p/b, /p/c}; only those three cgroup.freeze are 1; every group below
   them is frozen (kernel), /p, /p/a and /p/a/a1 are not; the cat in /p/a/a1
   answers a ping.  One ApplyBatch of the returned set (freeze=false) thaws them
   (3 writes) and everything runs.
2. The same through `freezectl freeze /p --except /p/a/a1` (text: one path a
   line, and --json); `freeze /p/a --except` both its children freezes nothing
   and says so in one note on stderr (it said nothing before session 30); then `freezectl thaw --recursive /p` with extra flags set by
   hand (/p/b/b1 and /p itself): every cgroup.freeze 0, everything running, nothing
   printed.  `thaw --recursive /p/b` under a frozen /p: exit 3 (it was 0), /p/b/b1's flag
   cleared, and one note on stderr that /p still freezes /p/b.
3. Nothing excluded: the cover is /p itself; excluding a whole branch (/p/b)
   freezes /p/a and /p/c only; from "/" (no flag of its own) the cover is the
   same as from /p; two exclusions in different branches.
4. /p/a (then /p) frozen before: FreezeExcept("/p", ["/p/a/a1"]) must not succeed
   while /p/a/a1 stays frozen by that flag -- it must make the excluded subtree
   run or refuse with nothing written.
5. The refusals name the cause: /p/b frozen, FreezeExcept("/p", ["/p/a/a1", "/p/b"])
   fails with InvalidArgs "Cannot keep /p/b running: its own cgroup.freeze is 1;
   thaw it first" (not FrozenByParent: no ancestor freezes it); /p/a frozen,
   FreezeExcept("/p", ["/p/a/a1"]) fails with FrozenByParent naming /p/a as the
   ancestor.  Nothing is written; `freezectl freeze --except` prints the first."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ['/p', '/p/a', '/p/a/a1', '/p/a/a2', '/p/b', '/p/b/b1', '/p/b/b2', '/p/c']
EXCLUDED = '/p/a/a1'
COVER = {'/p/a/a2', '/p/b', '/p/c'}
RUNNING = {'/p', '/p/a', '/p/a/a1'}  # the excluded group and its ancestors


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    timeout_usec = int(ft.DEFAULT_TIMEOUT * 1e6)
    with ft.Scratch('batch-except') as sc, ft.Bus() as bus:
        for g in GROUPS:
            sc.mkdir(g)
        for g in GROUPS:
            sc.spawn_sleepers(g, 1)
        echo = sc.spawn_echo(EXCLUDED)
        echo.ping()

        def flags():
            return {g: sc.read_freeze(g) for g in GROUPS}

        def frozen():
            return {g: sc.read_events(g)['frozen'] for g in GROUPS}

        def check_except_state(what, cover):
            ft.check_equal(flags(), {g: int(g in cover) for g in GROUPS},
                           f'{what}: cgroup.freeze is 1 exactly in {sorted(cover)}')
            ft.check_equal(frozen(), {g: int(g not in RUNNING) for g in GROUPS},
                           f'{what}: the kernel says frozen everywhere but {sorted(RUNNING)}')
            echo.ping()
            ft.check_equal(sc.read_events(EXCLUDED)['frozen'], 0, f'{what}: {EXCLUDED} runs (its cat answered)')
            for g in GROUPS:
                sc.wait_tasks_frozen(g, frozen=g not in RUNNING)
            ft.check(True, f'{what}: the sleepers of the frozen groups are in the freezer trap, the others not')

        def check_all_running(what):
            ft.check_equal(flags(), {g: 0 for g in GROUPS}, f'{what}: every cgroup.freeze is 0')
            ft.check_equal(frozen(), {g: 0 for g in GROUPS}, f'{what}: nothing is frozen')
            for g in GROUPS:
                sc.wait_tasks_frozen(g, frozen=False)
            echo.ping()
            ft.check(True, f'{what}: every task runs')

        with ft.Daemon(bus, sc.root) as d:
            c = d.client

            # -- 1. D-Bus.
            got = c.call('FreezeExcept', '/p', [EXCLUDED], timeout_usec, 0)[0]
            ft.check_equal(sorted(got), sorted(COVER), 'FreezeExcept returns the minimal cover')
            ft.check_equal(len(got), len(set(got)), 'FreezeExcept returns each group once')
            check_except_state('FreezeExcept', COVER)
            for g in GROUPS:
                ft.check_equal(c.group_property(g, 'FreezerState'),
                               'frozen' if g in COVER else 'running' if g in RUNNING else 'frozen-by-parent',
                               f'FreezerState of {g}')

            writes, skipped = c.call('ApplyBatch', [(g, False) for g in got], 'auto', timeout_usec, 0)
            ft.check_equal((writes, skipped), (3, 0), 'one ApplyBatch of the returned set thaws it: 3 writes')
            check_all_running('ApplyBatch of the cover')

            # -- 3. Variants of the cover.
            got = c.call('FreezeExcept', '/p', [], timeout_usec, 0)[0]
            ft.check_equal(got, ['/p'], 'nothing excluded: the cover is /p itself')
            c.call('ApplyBatch', [(g, False) for g in got], 'auto', timeout_usec, 0)
            got = c.call('FreezeExcept', '/p', ['/p/b'], timeout_usec, 0)[0]
            ft.check_equal(sorted(got), ['/p/a', '/p/c'], 'excluding /p/b: the cover is /p/a and /p/c')
            ft.check_equal(sc.read_events('/p/b/b1')['frozen'], 0, '/p/b/b1 runs')
            c.call('ApplyBatch', [(g, False) for g in got], 'auto', timeout_usec, 0)
            got = c.call('FreezeExcept', '/', [EXCLUDED], timeout_usec, 0)[0]
            ft.check_equal(sorted(got), sorted(COVER), 'FreezeExcept("/", ["/p/a/a1"]): the same cover (/ has no flag)')
            check_except_state('FreezeExcept from /', COVER)
            c.call('ApplyBatch', [(g, False) for g in got], 'auto', timeout_usec, 0)
            got = c.call('FreezeExcept', '/p', [EXCLUDED, '/p/b/b2'], timeout_usec, 0)[0]
            ft.check_equal(sorted(got), ['/p/a/a2', '/p/b/b1', '/p/c'], 'excluding /p/a/a1 and /p/b/b2')
            c.call('ApplyBatch', [(g, False) for g in got], 'auto', timeout_usec, 0)
            check_all_running('after the variants')

            # -- 2. freezectl.
            r = ft.freezectl('freeze', '/p', '--except', EXCLUDED)
            lines = r.stdout.split()
            ft.check_equal(sorted(lines), sorted(COVER), 'freezectl freeze /p --except /p/a/a1 prints the cover')
            check_except_state('freezectl freeze --except', COVER)
            r = ft.freezectl('--json', 'freeze', '/p', f'--except={EXCLUDED}')
            ft.check_equal(sorted(json.loads(r.stdout)), sorted(COVER),
                           'freezectl --json freeze --except prints the cover (already set: listed too)')
            check_except_state('freezectl freeze --except again', COVER)
            ft.check_equal(r.stderr, '', 'and says nothing on stderr')

            # Flags that no cover knows about: thaw --recursive clears them all the same.
            c.call('Freeze', '/p/b/b1', timeout_usec, 0)
            c.call('Freeze', '/p', timeout_usec, 0)
            ft.check_equal(sc.read_events(EXCLUDED)['frozen'], 1, 'with /p frozen, /p/a/a1 is frozen too')
            r = ft.freezectl('thaw', '--recursive', '/p')
            ft.check_equal((r.stdout, r.stderr), ('', ''), 'freezectl thaw --recursive prints nothing')
            check_all_running('freezectl thaw --recursive /p')
            for g in GROUPS:
                ft.check_equal(c.group_property(g, 'FreezerState'), 'running', f'FreezerState of {g} after')
            # Every group below /p/a excluded: nothing to freeze, which freezectl notes.
            r = ft.freezectl('freeze', '/p/a', '--except=/p/a/a1', '--except=/p/a/a2')
            ft.check_equal((r.returncode, r.stdout), (0, ''), 'freeze /p/a --except its two children: exit 0, '
                                                              'nothing printed')
            ft.check_equal(r.stderr, 'freezectl: note: nothing was frozen: the excluded subtrees hold every group '
                                     'below /p/a (the tasks of /p/a itself keep running)\n',
                           'one note on stderr that nothing was frozen')
            check_all_running('freeze /p/a --except its two children')
            # Excluded groups deeper down: the groups between (/p/a) keep running too, said.
            r = ft.freezectl('freeze', '/p', '--except=/p/a/a1', '--except=/p/a/a2', '--except=/p/b',
                             '--except=/p/c')
            ft.check_equal((r.returncode, r.stdout), (0, ''), 'freeze /p --except every leaf of /p/a and the '
                                                              'other children: exit 0, nothing printed')
            ft.check_equal(r.stderr, 'freezectl: note: nothing was frozen: the excluded subtrees hold every group '
                                     'below /p (the tasks of /p itself, and of the groups between it and them, '
                                     'keep running)\n',
                           'the note names the groups between /p and the excluded ones too')
            check_all_running('freeze /p --except every leaf of /p/a and the other children')
            # An excluded group inside another excluded one: nothing lies between.
            r = ft.freezectl('freeze', '/p', '--except=/p/a', '--except=/p/a/a1', '--except=/p/b',
                             '--except=/p/c')
            ft.check_equal((r.returncode, r.stdout, r.stderr),
                           (0, '', 'freezectl: note: nothing was frozen: the excluded subtrees hold every group '
                                   'below /p (the tasks of /p itself keep running)\n'),
                           'freeze /p --except /p/a, /p/a/a1 inside it and the other children: the note names '
                           'no group between')
            check_all_running('freeze /p --except /p/a, /p/a/a1 and the other children')

            # Below a frozen ancestor, thaw --recursive clears the flags and says who still freezes.
            c.call('Freeze', '/p/b/b1', timeout_usec, 0)
            c.call('Freeze', '/p', timeout_usec, 0)
            r = ft.freezectl('thaw', '--recursive', '/p/b', check=False)
            ft.check_equal((r.returncode, r.stdout), (3, ''), 'thaw --recursive /p/b under frozen /p: exit 3')
            ft.check(r.stderr.count('\n') == 1 and 'note:' in r.stderr and '/p/b' in r.stderr and
                     'but /p still freezes it' in r.stderr, 'it notes that /p still freezes /p/b', r.stderr)
            ft.check_equal(sc.read_freeze('/p/b/b1'), 0, '/p/b/b1: flag cleared')
            ft.check_equal(sc.read_events('/p/b')['frozen'], 1, '/p/b: still frozen by /p')
            ft.freezectl('thaw', '/p')
            check_all_running('freezectl thaw /p')

            # -- 4. An exclusion that an existing flag above it already freezes.  FreezeExcept
            # promises that the excluded subtree keeps running: it must either make that true
            # or refuse (and then write nothing); it must not succeed with /p/a/a1 frozen.
            bad = []
            for pre in ('/p/a', '/p'):
                c.call('Freeze', pre, timeout_usec, 0)
                before = flags()
                try:
                    got = c.call('FreezeExcept', '/p', [EXCLUDED], timeout_usec, 0)[0]
                except ft.DBusError as e:
                    print(f'#   with {pre} frozen: {e}', flush=True)
                    ft.check_equal(flags(), before, f'{pre} frozen before: FreezeExcept refused, nothing written')
                else:
                    ev = sc.read_events(EXCLUDED)['frozen']
                    print(f'#   with {pre} frozen: FreezeExcept returned {got}; {EXCLUDED} frozen {ev}', flush=True)
                    if ev:
                        bad.append(f'{pre} frozen before: FreezeExcept("/p", ["{EXCLUDED}"]) succeeded, returning '
                                   f'{got}, but {EXCLUDED} is frozen (by {pre})')
                c.call('Thaw', '/p', timeout_usec, ft.FLAG_RECURSIVE)
            check_all_running('after the pre-frozen cases')
            ft.check(not bad, 'FreezeExcept never succeeds while the excluded group stays frozen', '; '.join(bad))

            # -- 5. The errors name the cause: the excluded group's own flag, or its ancestor's.
            c.call('Freeze', '/p/b', timeout_usec, 0)
            before = flags()
            e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, c.call, 'FreezeExcept', '/p', [EXCLUDED, '/p/b'],
                                     timeout_usec, 0)
            ft.check_equal(e.message, 'Cannot keep /p/b running: its own cgroup.freeze is 1; thaw it first; '
                           'nothing was written', '/p/b frozen by its own flag: InvalidArgs saying so')
            ft.check_equal(flags(), before, '... nothing written')
            r = ft.freezectl('freeze', '/p', f'--except={EXCLUDED}', '--except=/p/b', check=False)
            ft.check(r.returncode == 1 and 'its own cgroup.freeze is 1' in r.stderr and
                     'FrozenByParent' not in r.stderr, 'freezectl freeze --except: the same error', r.stderr)
            c.call('Thaw', '/p/b', timeout_usec, 0)
            c.call('Freeze', '/p/a', timeout_usec, 0)
            before = flags()
            e = ft.expect_dbus_error(ft.ERROR_FROZEN_BY_PARENT, c.call, 'FreezeExcept', '/p', [EXCLUDED],
                                     timeout_usec, 0)
            ft.check(e.message.startswith(f'Cannot keep {EXCLUDED} running: its ancestor /p/a freezes it') and
                     'thaw /p/a first' in e.message, f'{EXCLUDED} frozen by /p/a: FrozenByParent naming /p/a',
                     e.message)
            ft.check_equal(flags(), before, '... nothing written')
            c.call('Thaw', '/p/a', timeout_usec, 0)
            check_all_running('after the refusals')

            print('# summary: FreezeExcept over 8 groups x 5 exclusion sets (D-Bus), 2 through freezectl and 2 with '
                  'a flag set above the exclusion, each cover thawed by one batch; thaw --recursive over 8 groups',
                  flush=True)


ft.run(test)
