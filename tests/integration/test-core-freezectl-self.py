#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezectl refuses a freeze that waits and would freeze freezectl itself: frozen
with its group, it would never read the reply (it hung, silent, SIGTERM pending,
until the group was thawed from elsewhere).

  /p     no process of its own
  /p/d   where each freezectl below runs (it joins before exec)
  /p/x   one sleeper
  /d     empty; its name ends freezectl's own path, but /d does not hold it

freezerd's root is the scratch tree (--cgroup-root, below the cgroup2 mount), so
freezectl maps its CgroupRoot (a directory) onto its own /proc/self/cgroup.
Each freezectl gets DEADLINE seconds; past it (freezectl frozen: the bug) every
flag in the scratch tree is cleared from here, so that it ends, and the check fails.

Checks, over the bus and over the private socket where the command goes by the
wire (freeze, batch), through libfreezer for --except:
  * freeze /p/d and freeze /p (its parent), freeze --recursive /p: exit 1, one line
    on stderr naming the group and freezectl's own (/p/d) and --no-wait; no
    cgroup.freeze written; --json prints nothing on stdout.
  * freeze /p --except=/p/x (does not exclude /p/d): refused alike, naming /p/d, the
    group it would freeze; nothing written.
  * batch [/p/x frozen, /p frozen]: refused alike, naming request 1 and /p; nothing
    written (not /p/x either).  A batch whose later request thaws /p again: accepted;
    with --recursive also one that freezes /p/d, then thaws /p or / (their subtrees
    hold /p/d), but not one that freezes /p, then thaws /p/d (/p's flag freezes it).
  * freeze /p --except=/p/d: exit 0, prints /p/x, which is frozen; /p/d runs.
  * freeze /p/x (beside it): works; so does freeze /d (freezerd's CgroupRoot looked up,
    /d does not hold /p/d).
  * freeze --no-wait /p/d: accepted, cgroup.freeze 1; once /p/d is thawed from
    here, that freezectl ends with exit 0.
  * freeze "/q " run in "/q /d ": refused, the line naming both in double quotes."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ('/p', '/p/d', '/p/x', '/d', '/q ', '/q /d ')
DEADLINE = 10  # s; a refusal or a freeze of /p/x takes milliseconds


def thaw_all(sc):
    for g in GROUPS:
        if sc.read_freeze(g):
            sc.write_freeze(g, 0)


def run_in_d(sc, how, *args, input=None, group='/p/d'):
    """freezectl HOW ARGS... run inside group (/p/d); (exit status, stdout, stderr, in time)."""
    p = subprocess.Popen([ft.FREEZECTL_BIN, how, *args], stdin=subprocess.PIPE if input else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=ft._child_setup(sc.abspath(group, 'cgroup.procs')))
    try:
        out, err = p.communicate(input, timeout=DEADLINE)
        return p.returncode, out, err, True
    except subprocess.TimeoutExpired:
        thaw_all(sc)  # freezectl froze itself: free it, and say so
        try:
            out, err = p.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        return p.returncode, out, err, False


def unwritten(sc):
    return {g: sc.read_freeze(g) for g in GROUPS}


def check_refused(sc, how, what, args, group, input=None):
    rc, out, err, in_time = run_in_d(sc, how, *args, input=input)
    ft.check(in_time, f'{what}: ends in time (not frozen with /p/d)', f'exit {rc}: {err.strip()}')
    lines = err.splitlines()
    ft.check(rc == 1 and len(lines) == 1 and f'{group} contains freezectl itself (/p/d)' in lines[0] and
             '--no-wait' in lines[0],
             f'{what}: exit 1, one line naming {group}, freezectl\'s /p/d and --no-wait', f'exit {rc}: {err}')
    ft.check_equal(out, '', f'{what}: nothing on stdout')
    ft.check_equal(unwritten(sc), {g: 0 for g in GROUPS}, f'{what}: no cgroup.freeze written')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    with ft.Scratch('core-freezectl-self') as sc, ft.Bus() as bus:
        sc.mkdir('/p/d')
        sc.mkdir('/d')
        sc.mkdir('/q /d ')
        sc.spawn_sleepers('/p/x', 1)
        with ft.Daemon(bus, sc.root) as d:
            private = os.path.join(d.runtime_dir, 'private')
            try:
                for label, how in (('bus', f'--address={bus.address}'), ('private socket', f'--socket={private}')):
                    check_refused(sc, how, f'{label}: freeze /p/d', ['freeze', '/p/d'], '/p/d')
                    check_refused(sc, how, f'{label}: freeze /p, its parent', ['freeze', 'p/'], '/p')
                    check_refused(sc, how, f'{label}: freeze /p/x /p', ['freeze', '/p/x', '/p'], '/p')
                    check_refused(sc, how, f'{label}: freeze --recursive /p', ['freeze', '--recursive', '/p'], '/p')
                    check_refused(sc, how, f'{label}: freeze --json /p', ['--json', 'freeze', '/p'], '/p')
                    check_refused(sc, how, f'{label}: freeze /p --except=/p/x',
                                  ['freeze', '/p', '--except=/p/x'], '/p/d')
                    batch = json.dumps([{'path': '/p/x', 'freeze': True}, {'path': '/p', 'freeze': True}])
                    check_refused(sc, how, f'{label}: batch freezing /p/x and /p', ['batch', '-'],
                                  'request 1 freezes /p): /p', input=batch)

                    rc, out, err, in_time = run_in_d(
                        sc, how, 'batch', '-',
                        input=json.dumps([{'path': '/p', 'freeze': True}, {'path': '/p', 'freeze': False}]))
                    ft.check(in_time and rc == 0 and unwritten(sc) == {g: 0 for g in GROUPS},
                             f'{label}: batch whose later request thaws /p: its last request counts, accepted',
                             f'exit {rc}: {out}{err}')
                    # With --recursive a later request whose subtree holds a group wins it: a thaw of
                    # /p (or /) after a freeze of /p/d leaves /p/d running.
                    for top in ('/p', '/'):
                        rc, out, err, in_time = run_in_d(
                            sc, how, '--recursive', 'batch', '-',
                            input=json.dumps([{'path': '/p/d', 'freeze': True}, {'path': top, 'freeze': False}]))
                        ft.check(in_time and rc == 0 and unwritten(sc) == {g: 0 for g in GROUPS},
                                 f'{label}: batch --recursive freezing /p/d, then thawing {top}: accepted',
                                 f'exit {rc}: {out}{err}')
                    batch = json.dumps([{'path': '/p', 'freeze': True}, {'path': '/p/d', 'freeze': False}])
                    check_refused(sc, how, f'{label}: batch --recursive freezing /p, then thawing /p/d (/p freezes '
                                  'it still)', ['--recursive', 'batch', '-'], 'request 0 freezes /p): /p', input=batch)

                    if label == 'bus':
                        rc, out, err, in_time = run_in_d(sc, how, 'freeze', '/p/d')
                        print(f'# {err.strip()}')
                        root = d.client.manager_property('CgroupRoot')
                        ft.check_equal(root, sc.root, 'CgroupRoot is the directory of the root')

                    rc, out, err, in_time = run_in_d(sc, how, 'freeze', '/p', '--except=/p/d')
                    ft.check(in_time and rc == 0 and out == '/p/x\n',
                             f'{label}: freeze /p --except=/p/d: exit 0, prints /p/x', f'exit {rc}: {out}{err}')
                    ft.check(sc.frozen('/p/x') and not sc.frozen('/p/d') and sc.read_freeze('/p/d') == 0,
                             f'{label}: /p/x frozen, /p/d runs')
                    d.client.call('Thaw', '/p/x', 0, 0)

                    rc, out, err, in_time = run_in_d(sc, how, 'freeze', '/p/x')
                    ft.check(in_time and rc == 0 and sc.frozen('/p/x'), f'{label}: freeze /p/x, beside it, works',
                             f'exit {rc}: {err}')
                    d.client.call('Thaw', '/p/x', 0, 0)

                    rc, out, err, in_time = run_in_d(sc, how, 'freeze', '/d')
                    ft.check(in_time and rc == 0 and sc.frozen('/d'), f'{label}: freeze /d, not above it, works',
                             f'exit {rc}: {err}')
                    d.client.call('Thaw', '/d', 0, 0)

                    # --no-wait: freezerd writes the flag and replies; freezectl may
                    # freeze before it reads the reply, and ends once thawed.
                    p = subprocess.Popen([ft.FREEZECTL_BIN, how, 'freeze', '--no-wait', '/p/d'],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True, preexec_fn=ft._child_setup(sc.abspath('/p/d', 'cgroup.procs')))
                    try:
                        ft.wait_for(lambda: sc.read_freeze('/p/d') == 1 or p.poll() is not None,
                                    what='freeze --no-wait /p/d writes the flag')
                        ft.check_equal(sc.read_freeze('/p/d'), 1, f'{label}: freeze --no-wait /p/d: cgroup.freeze 1')
                    finally:
                        thaw_all(sc)
                        try:
                            out, err = p.communicate(timeout=DEADLINE)
                        except subprocess.TimeoutExpired:
                            p.kill()
                            out, err = p.communicate()
                    ft.check(p.returncode == 0 and err == '', f'{label}: freeze --no-wait /p/d, thawed here: exit 0',
                             f'exit {p.returncode}: {err}')

                    # Paths that end with white space: the group and freezectl's own quoted,
                    # as freezectl's words name every such path.
                    rc, out, err, in_time = run_in_d(sc, how, 'freeze', '/q ', group='/q /d ')
                    ft.check(in_time and rc == 1 and err.startswith(
                        'freezectl: cannot freeze "/q ": "/q " contains freezectl itself ("/q /d "): ') and
                        unwritten(sc) == {g: 0 for g in GROUPS},
                        f'{label}: freeze "/q " from "/q /d ": refused, the group and its own quoted',
                        f'exit {rc}: {err}')
            finally:
                thaw_all(sc)


if __name__ == '__main__':
    ft.run(test)
