#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What freezectl and ListGroups say of the groups: their Ids, what freezes them,
their order, and a watch that starts from the list without a gap.

  /g/h/i   /a/b   /a-b   /C   /n/c00 ... /n/c23 (made in a shuffled order)
  (no process anywhere)

Checks:
  * ListGroups is sorted by path in byte order ("/a-b" before "/a/b", "/C" before
    "/a"), and ListGroupIds comes in the same order (both came in the tree's
    preorder, its children in hash order: /a/b followed /a, before or after /a-b).
  * /g and /g/h frozen: `--json status` of /g/h/i, /g/h, /g and "/" has "id" (the
    group's Id property, the inode number of its directory) and "frozen_by": /g/h,
    then null for the others (the nearest ancestor whose own flag freezes it, for a
    group frozen by a parent; the keys were not there); the text status has an "Id:"
    line, and a "Frozen by:" line for /g/h/i only.  `--json list` has the same "id" and "frozen_by" for every group, its other
    keys as before, and "untracked_between" null (every group is tracked).
  * "/"'s own flag set (written to the kernel, as freezerd does not write it): /a and
    /a/b are frozen by "/" in `--json list` and `--json status` (/a/b by an ancestor
    above its parent), /g/h/i still by /g/h.
  * `watch --json`: an "added" event carries "frozen", as "state" events do (it had
    only "path" and "state"): true for a group made below the frozen /g.
  * `watch --json --initial`, its standard output a pipe filled up before it starts
    (so that it blocks on its first write, past its list and before it reads any
    signal): /a frozen then, right after the list, comes as a "state" event after
    the "listed" events, which say /a was running; every group is listed once,
    sorted, with "state" and "frozen".  Text `watch /g --initial`: "listed" lines for
    /g and below only.  `list --initial` is a usage error (exit 2)."""

import json
import os
import random
import subprocess
import sys
import fcntl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

N = [f'/n/c{i:02d}' for i in range(24)]
GROUPS = ['/g', '/g/h', '/g/h/i', '/a', '/a/b', '/a-b', '/C', '/n'] + N


def list_json():
    return {e['path']: e for e in json.loads(ft.freezectl('--json', 'list').stdout)}


def status_json(path):
    return json.loads(ft.freezectl('--json', 'status', path).stdout)


def check_order(c):
    listed = [p for p, _o, _s in c.call('ListGroups')[0]]
    ft.check_equal(sorted(listed), sorted(['/'] + GROUPS), 'ListGroups has every group')
    ft.check_equal(listed, sorted(listed, key=lambda p: p.encode()), 'ListGroups is sorted by path, byte order')
    ids = [p for p, _i in c.call('ListGroupIds')[0]]
    ft.check_equal(ids, listed, 'ListGroupIds in the order of ListGroups')


def check_ids_and_frozen_by(sc, c):
    ids = dict(c.call('ListGroupIds')[0])
    expect = {'/g/h/i': '/g/h', '/g/h': None, '/g': None, '/': None}
    for path, by in expect.items():
        j = status_json(path)
        ft.check_equal((j.get('id'), j.get('frozen_by', 'absent')), (os.stat(sc.abspath(path)).st_ino, by),
                       f'--json status {path}: id (its directory\'s inode) and frozen_by')
        ft.check_equal(j['id'], ids[path], f'--json status {path}: id is its Id property')
        ft.check({'path', 'state', 'freeze', 'frozen', 'populated', 'descendants', 'frozen_descendants',
                  'frozen_usec'} <= set(j), f'--json status {path}: the other keys are still there', j)
        text = ft.freezectl('status', path).stdout.splitlines()
        ft.check(f'Id:                 {ids[path]}' in text, f'status {path}: an Id line', text)
        by_lines = [ln for ln in text if ln.startswith('Frozen by:')]
        ft.check_equal(by_lines, [f'Frozen by:          {by}'] if by else [], f'status {path}: its Frozen by line')
    listed = list_json()
    for path, e in listed.items():
        ft.check_equal(set(e), {'path', 'object', 'state', 'id', 'frozen_by', 'untracked_between'},
                       f'--json list {path}: its keys')
        ft.check_equal((e['id'], e['frozen_by'], e['untracked_between']), (ids[path], expect.get(path), None),
                       f'--json list {path}: id and frozen_by (nothing untracked between)')
        ft.check_equal(e['object'], ft.group_object(path), f'--json list {path}: object as before')


def check_root_flag(sc, c):
    rec = c.record()
    sc.write_freeze('/', 1)
    try:
        rec.wait_property(ft.group_object('/a/b'), 'FreezerState', 'frozen-by-parent')
        listed = list_json()
        ft.check_equal((listed['/a']['frozen_by'], listed['/a/b']['frozen_by'], listed['/g/h/i']['frozen_by']),
                       ('/', '/', '/g/h'), '"/"\'s own flag: --json list says /a, /a/b frozen by "/" (/g/h/i by '
                       '/g/h, the nearest)')
        ft.check_equal(status_json('/a/b')['frozen_by'], '/', '--json status /a/b: frozen by "/"')
    finally:
        sc.write_freeze('/', 0)
    rec.wait_property(ft.group_object('/a/b'), 'FreezerState', 'running')


def read_lines(p, n, what):
    lines = []
    for _ in range(n):
        line = p.stdout.readline()
        if not line:
            ft.fail(f'{what}: watch exited ({p.poll()}) after {lines}')
        lines.append(json.loads(line))
    return lines


def check_watch_added(sc):
    p = subprocess.Popen([ft.FREEZECTL_BIN, f'--address={ft._bus_address(None)}', '--json', 'watch'],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    try:
        ft.check_equal(read_lines(p, 1, 'watch --json')[0]['event'], 'watching', 'watch --json: the watching line')
        sc.mkdir('/g/new')
        e = read_lines(p, 1, 'watch --json, /g/new made')[0]
        ft.check_equal({k: e.get(k) for k in ('event', 'path', 'state', 'frozen')},
                       {'event': 'added', 'path': '/g/new', 'state': 'frozen-by-parent', 'frozen': True},
                       'watch --json: the "added" event of /g/new carries "frozen"')
    finally:
        p.terminate()
        p.wait(timeout=ft.DEFAULT_TIMEOUT)
    sc.rmdir('/g/new')


def blocked_on_stdout(pid):
    """Whether pid sleeps in a write to a pipe (its wchan: pipe_write, or anon_pipe_write on
    newer kernels), or in a call on fd 1 where wchan is hidden."""
    st = ft.proc_state(pid)
    if not st or st.state != 'S':
        return False
    if 'pipe_write' in st.wchan:
        return True
    try:
        with open(f'/proc/{pid}/syscall') as f:
            fields = f.read().split()
    except OSError:
        return False
    return st.wchan in ('', '0') and len(fields) > 1 and fields[1] == '0x1'


def check_watch_initial(sc, c):
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, fcntl.F_SETFL, os.O_NONBLOCK)
        junk = 0
        try:
            while True:
                junk += os.write(w, b'x' * 4096)
        except BlockingIOError:
            pass
        fcntl.fcntl(w, fcntl.F_SETFL, 0)
        p = subprocess.Popen([ft.FREEZECTL_BIN, f'--address={ft._bus_address(None)}', '--json', 'watch', '--initial'],
                             stdin=subprocess.DEVNULL, stdout=w, stderr=subprocess.PIPE)
        os.close(w)
        w = -1
        try:
            # Blocked on its first write: past its list, no signal read yet.
            ft.wait_for(lambda: p.poll() is not None or blocked_on_stdout(p.pid),
                        what='watch --initial to block on its full standard output', poll=0.01)
            ft.check(p.poll() is None, 'watch --initial runs', p.poll() is not None and p.stderr.read())
            rec = c.record()
            ft.freezectl('freeze', '/a')
            rec.wait_property(ft.group_object('/a'), 'FreezerState', 'frozen')
            f = os.fdopen(r, 'rb')
            r = -1
            skipped = 0
            while skipped < junk:
                skipped += len(f.read(min(65536, junk - skipped)))
            lines = []
            n = len(GROUPS) + 1
            for _ in range(1 + n + 1):
                line = f.readline()
                if not line:
                    ft.fail(f'watch --initial exited ({p.poll()}) after {lines}: {p.stderr.read()!r}')
                lines.append(json.loads(line))
        finally:
            p.kill()  # (SIGTERM waits in its blocked signals while a write blocks)
            p.wait(timeout=ft.DEFAULT_TIMEOUT)
        ft.check_equal(lines[0]['event'], 'watching', 'watch --initial: the watching line first')
        listed = lines[1:1 + n]
        ft.check_equal([e['event'] for e in listed], ['listed'] * n, 'then one "listed" event per group')
        paths = [e['path'] for e in listed]
        ft.check_equal(paths, sorted(['/'] + GROUPS, key=lambda s: s.encode()), 'every group once, sorted')
        a = next(e for e in listed if e['path'] == '/a')
        ft.check_equal((a['state'], a['frozen']), ('running', False), 'listed: /a running, not frozen')
        ghi = next(e for e in listed if e['path'] == '/g/h/i')
        ft.check_equal((ghi['state'], ghi['frozen']), ('frozen-by-parent', True),
                       'listed: /g/h/i frozen by its parent')
        last = lines[-1]
        ft.check_equal({k: last.get(k) for k in ('event', 'path', 'state')},
                       {'event': 'state', 'path': '/a', 'state': 'frozen'},
                       'the freeze of /a right after the list comes after it, not lost')
    finally:
        for fd in (r, w):
            if fd >= 0:
                os.close(fd)
    ft.freezectl('thaw', '/a')

    p = subprocess.Popen([ft.FREEZECTL_BIN, f'--address={ft._bus_address(None)}', 'watch', '/g', '--initial'],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    try:
        lines = [p.stdout.readline() for _ in range(4)]
    finally:
        p.terminate()
        p.wait(timeout=ft.DEFAULT_TIMEOUT)
    ft.check(' watching ' in lines[0] and [ln.split()[2:] for ln in lines[1:]] ==
             [['listed', '/g', 'frozen'], ['listed', '/g/h', 'frozen'], ['listed', '/g/h/i', 'frozen-by-parent']],
             'watch /g --initial: the listed lines of /g and below', lines)

    r = ft.freezectl('list', '--initial', check=False)
    ft.check_equal((r.returncode, r.stdout), (2, ''), 'list --initial: a usage error')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    with ft.Scratch('core-freezectl-list') as sc, ft.Bus() as bus:
        for p in GROUPS[:-len(N)]:
            sc.mkdir(p)
        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            # Made while freezerd runs, in a shuffled order: its tables hold them in
            # their hash order, not the order they came in.
            rec = c.record(subscribe=False)
            for p in random.sample(N, len(N)):
                sc.mkdir(p)
            rec.wait_for(lambda r: {ft.group_object(p) for p in N} <= {o for o, _i in r.interfaces_added()},
                         what='freezerd to add /n/*')
            check_order(c)
            ft.freezectl('freeze', '/g', '/g/h')
            check_ids_and_frozen_by(sc, c)
            check_root_flag(sc, c)
            check_watch_added(sc)
            check_watch_initial(sc, c)
            ft.freezectl('thaw', '/g', '/g/h')
    print('# checked: ListGroups sorted; status/list --json id and frozen_by; watch added frozen; watch --initial')


ft.run(test)
