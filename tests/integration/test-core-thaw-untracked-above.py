#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezectl thaw --recursive names what still freezes PATH without making freezerd track
anything: the ancestors it does not track are read from no GetGroup, which would track them.

  scratch /p            above freezerd's cgroup root
          /p/r          freezerd's cgroup root, "/"
          /p/r/u        /u: not tracked (the configuration tracks /u/t alone)
          /p/r/u/t      /u/t: tracked
          /p/r/u/t/x    /u/t/x: tracked, a sleeper

With each flag set in turn, `freezectl thaw --recursive /u/t/x` (text, --json, --json
--no-wait) exits 0 and notes on stderr what still freezes /u/t/x, and afterwards freezerd
publishes exactly the groups it did before (ListGroups and the D-Bus objects: /u is not
tracked, which a GetGroup of /u did):
  - /u's flag: "a group between /u/t and / that freezerd does not track still freezes it",
    "frozen_by": "untracked" (/ runs, so the freeze is in between);
  - the flag of "/" (/p/r): the root's own flag, and that /u may freeze it too;
    "frozen_by": "/";
  - /p's flag: a group above the cgroup root, and /u may too; "frozen_by": "above-root";
  - /u/t's flag: "/u/t still freezes it", no word of /u (nothing untracked lies between);
    "frozen_by": "/u/t".
status --json and list --json give the same "frozen_by" (one walk for all three), and all
three "untracked_between": ["/u/t", "/"] where /u lies between the group and what they name
(null for /u/t's flag); text status says it after its "Frozen by:" as "(or a group between
/u/t and / that freezerd does not track)", as the note does.  With
nothing frozen, thaw --recursive (also --no-wait) says nothing and gives no "frozen_by":
the walk over the untracked /u must not take a running /u/t above it for a sign that /u
freezes /u/t/x.  Last, with "/a and b/t" tracked and "/a and b" frozen, the note names
the gap 'between "/a and b/t" and /': a path with " and " in it is quoted as one."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ROOT = '/p/r'
PATH = '/u/t/x'
AND_PATH = '/a and b/t/x'
GAP = ' (and so may a group between /u/t and / that freezerd does not track)'
UNTRACKED = 'a group between /u/t and / that freezerd does not track'
CASES = [
    # (scratch group whose flag is set, the note's end, "frozen_by", "untracked_between",
    #  text status's "Frozen by:")
    ('/p/r/u', 'but a group between /u/t and / that freezerd does not track still freezes it (freezectl does not '
               'look it up: that would make freezerd track it)', 'untracked', ['/u/t', '/'], UNTRACKED),
    ('/p/r', 'but the own flag of freezerd\'s cgroup root, "/", still freezes it (freezerd does not write that '
             'flag), and so may a group between /u/t and / that freezerd does not track', '/', ['/u/t', '/'],
     f'/ (or {UNTRACKED})'),
    # (the note names the root's absolute path: built below)
    ('/p', None, 'above-root', ['/u/t', '/'], f"a group above freezerd's cgroup root (or {UNTRACKED})"),
    ('/p/r/u/t', 'but /u/t still freezes it', '/u/t', None, '/u/t'),
]


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    with ft.Scratch('core-thaw-untracked-above') as sc, ft.Bus() as bus:
        sc.mkdir(ROOT + PATH)
        sc.spawn_sleepers(ROOT + PATH, 1)
        # Nothing left frozen for the cleanup to kill, whatever happened.
        sc.before_cleanup.append(lambda: [sc.write_freeze(g, 0) for g, *_ in CASES if sc.exists(g)])

        with ft.Daemon(bus, sc.abspath(ROOT), config={'track': ['/u/t']}) as d:
            c = d.client
            c.subscribe()

            def published():
                return (sorted(p for p, _o, _s in c.call('ListGroups')[0]),
                        sorted(o for o in c.managed_objects()))

            before = published()
            ft.check_equal(before[0], ['/', '/u/t', '/u/t/x'], 'freezerd tracks /u/t and its child, and "/"')

            for group, note, by, between, text_by in CASES:
                if note is None:
                    note = (f'but a group above freezerd\'s cgroup root ({sc.abspath(ROOT)}) still freezes it'
                            + GAP)
                sc.write_freeze(group, 1)
                sc.wait_events(ROOT + PATH, frozen=1)
                ft.wait_for(lambda: c.group_property(PATH, 'FreezerState') == 'frozen-by-parent',
                            what=f'{PATH} frozen-by-parent in freezerd with {group} frozen')

                r = ft.freezectl('thaw', '--recursive', PATH, check=False)
                ft.check_equal(published(), before,
                               f'after thaw --recursive with {group} frozen: freezerd tracks no group more')
                ft.check_equal((r.returncode, r.stdout, r.stderr),
                               (3, '', f'freezectl: note: every freeze flag in {PATH} is cleared, {note}\n'),
                               f'thaw --recursive {PATH} with {group} frozen: exit 3 and the note')
                for args in (['--json'], ['--json', '--no-wait']):
                    r = ft.freezectl(*args, 'thaw', '--recursive', PATH, check=False)
                    ft.check_equal((r.returncode, json.loads(r.stdout)),
                                   (3, [{'path': PATH, 'result': 'done', 'frozen_by': by,
                                         'untracked_between': between}]),
                                   f'{" ".join(args)} thaw --recursive {PATH} with {group} frozen: frozen_by, '
                                   'untracked_between')
                ft.check_equal(published(), before,
                               f'after thaw --json --recursive with {group} frozen: freezerd tracks no group more')
                # status and list name it by the same walk.
                r = ft.freezectl('--json', 'status', PATH)
                j = json.loads(r.stdout)
                ft.check_equal((r.returncode, j.get('frozen_by'), j.get('untracked_between', 'absent')),
                               (0, by, between),
                               f'status --json {PATH} with {group} frozen: frozen_by and untracked_between as thaw '
                               '--recursive says them')
                r = ft.freezectl('--json', 'list')
                ft.check_equal((r.returncode, [(g.get('frozen_by'), g.get('untracked_between', 'absent'))
                                               for g in json.loads(r.stdout) if g['path'] == PATH]),
                               (0, [(by, between)]),
                               f'list --json with {group} frozen: {PATH}\'s frozen_by and untracked_between')
                r = ft.freezectl('status', PATH)
                ft.check_equal((r.returncode, [ln for ln in r.stdout.splitlines() if ln.startswith('Frozen by:')]),
                               (0, [f'Frozen by:          {text_by}']),
                               f'status {PATH} with {group} frozen: its Frozen by line says the untracked /u')

                sc.write_freeze(group, 0)
                sc.wait_events(ROOT + PATH, frozen=0)

            # Once nothing freezes it: no note, and still nothing more tracked.
            ft.wait_for(lambda: c.group_property(PATH, 'FreezerState') == 'running',
                        what=f'{PATH} running in freezerd')
            for args in ([], ['--no-wait']):
                r = ft.freezectl('thaw', '--recursive', *args, PATH)
                ft.check_equal((r.returncode, r.stdout, r.stderr), (0, '', ''),
                               f'thaw --recursive {" ".join(args)} {PATH} with nothing frozen: exit 0, nothing said')
                r = ft.freezectl('--json', 'thaw', '--recursive', *args, PATH)
                ft.check_equal((r.returncode, json.loads(r.stdout)), (0, [{'path': PATH, 'result': 'done'}]),
                               f'--json thaw --recursive {" ".join(args)} {PATH} with nothing frozen: no frozen_by')
            r = ft.freezectl('--json', 'status', PATH)
            j = json.loads(r.stdout)
            ft.check_equal((r.returncode, j.get('frozen_by'), j.get('untracked_between', 'absent')), (0, None, None),
                           f'status --json {PATH} with nothing frozen: frozen_by and untracked_between null')
            ft.check_equal(published(), before, 'at the end: freezerd tracks no group more')

        # A tracked group whose name holds " and ": the note quotes it as one
        # path of "between A and B" (else "/a and b/t and /" reads as three).
        sc.mkdir(ROOT + AND_PATH)
        with ft.Daemon(bus, sc.abspath(ROOT), config={'track': ['/a and b/t']}):
            sc.write_freeze(ROOT + '/a and b', 1)
            sc.before_cleanup.append(lambda: sc.write_freeze(ROOT + '/a and b', 0))
            sc.wait_events(ROOT + AND_PATH, frozen=1)
            r = ft.freezectl('thaw', '--recursive', AND_PATH, check=False)
            ft.check_equal((r.returncode, r.stdout, r.stderr),
                           (3, '', f'freezectl: note: every freeze flag in {AND_PATH} is cleared, but a group between '
                               '"/a and b/t" and / that freezerd does not track still freezes it (freezectl does not '
                               'look it up: that would make freezerd track it)\n'),
                           f'thaw --recursive {AND_PATH}: the note quotes "/a and b/t" as one path')

    print('# checked: thaw --recursive names what freezes PATH above an untracked group, tracking nothing')


if __name__ == '__main__':
    ft.run(test)
