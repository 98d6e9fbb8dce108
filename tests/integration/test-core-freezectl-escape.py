#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezectl's text output shows a path's characters that end or break a line escaped, as
its error lines show control characters: byte by byte as \\xNN.

freezerd publishes a group whose name holds U+2028 LINE SEPARATOR, U+2029 PARAGRAPH
SEPARATOR or a C1 control character such as U+0085 NEXT LINE (only C0 control
characters and bytes that are no UTF-8 keep a group out), and pagers, editors, log
viewers and str.splitlines() take each of them for the end of a line:

  /e/a<U+2028>b      (LS)
  /e/n<U+0085>l      (NEL)
  /e/p<U+2029>q/c    (PS; c a sleeper)

Checks (each printed them as they are, one line of output read as two):
  * tree /e: one line per group (str.splitlines()), the names as a\\xe2\\x80\\xa8b,
    n\\xc2\\x85l and p\\xe2\\x80\\xa9q; --json tree has them as they are.
  * list: one line per group, the paths escaped; --json list as they are.
  * status /e/p<PS>q/c with /e/p<PS>q frozen: its "Path:" and "Frozen by:" escaped,
    and as many lines as the status of a plain group.
  * freeze /e --except=/e/p<PS>q: the two groups it froze, one line each, escaped;
    --json as they are.
  * watch --initial /e: its watching and listed lines escaped.
  * an error line (freeze /e/no<LS>such: NoSuchGroup): one line, the path escaped
    in it (stderr escaped control characters, not these).
  * pressure /e/a<LS>b with its cgroup.pressure 0: freezerd's "not available" message,
    which names the group, escaped.
  * freeze /e/a<LS>b interrupted (SIGINT) while freezerd, stopped, has not read the
    call: the "interrupted:" line, which the signal handler writes as it was made
    beforehand, one line, the path escaped.

A backslash is shown as "\\\\" wherever these are escaped (not in --json), so that a name
holding a literal "\\x0a" (as systemd's unit names hold "\\x2d") does not read as an
escaped newline:

  /b/s\\x0al       (a backslash, then "x0a")
  /b/t\\x2du

  * tree /b, list, status /b/s\\x0al: the names with the backslash doubled; --json as
    they are.
  * freeze /b --except=/b/s\\x0al: the group it froze, doubled.
  * freeze /b/no\\such: NoSuchGroup, the path doubled in freezectl's words and in
    freezerd's message alike.
  * freeze /b/s\\x0al/nope: NoSuchGroup, the literal "\\x0a" doubled in freezerd's
    message (which doubles a backslash itself) as in freezectl's words.
  * freeze /b/a<LF>b: freezerd's message escapes the newline itself (\\x0a), which is
    shown as it is, while freezectl's words show it escaped too; freeze /b/a<LF>b\\x0a:
    the newline as \\x0a and the literal one as \\\\x0a in both.

A path longer than 256 bytes is cut in freezectl's words as freezerd cuts it in its
message (its first 96 and last 160 bytes, "...", " (N bytes)"):

  * status of a 5,025-byte path (25 names of 200 bytes): one line under 1 kB, which
    names it so, with its byte count (freezectl's words named it whole); the same in
    double quotes where a name in it ends with a space.
  * freeze of a path of 400 bytes that holds backslashes, LS and NEL where the head
    and the tail are cut (NoSuchGroup), and of one with a newline and a tab there
    (InvalidPath): freezectl's words and freezerd's message in the line name it cut
    alike, the characters escaped the same (freezectl cuts with freezerd's code,
    cg_quote_cut(): the head counts the path's bytes, not the escaped ones)."""

import json
import os
import selectors
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LS, PS, NEL = '\u2028', '\u2029', '\u0085'
A, N, P = f'/e/a{LS}b', f'/e/n{NEL}l', f'/e/p{PS}q'
C = P + '/c'
GROUPS = ['/e', A, N, P, C]
BS, BT = '/b/s\\x0al', '/b/t\\x2du'
B_GROUPS = ['/b', BS, BT]


def esc(s):
    """s as freezectl's text shows it: these characters as \\xNN, byte by byte, and a
    backslash doubled."""
    return ''.join(''.join(f'\\x{b:02x}' for b in ch.encode()) if ch in (LS, PS, NEL)
                   else '\\\\' if ch == '\\' else ch for ch in s)


def run(*args, address):
    """freezectl ARGS...; (exit status, stdout, stderr), decoded as UTF-8 whatever the locale."""
    r = subprocess.run([ft.FREEZECTL_BIN, f'--address={address}', *args], capture_output=True,
                       timeout=ft.DEFAULT_TIMEOUT)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def check_raw_free(what, text):
    ft.check(not any(ch in text for ch in (LS, PS, NEL)), f'{what}: no LS, PS or NEL as it is', repr(text))


def check_watch(bus):
    p = subprocess.Popen([ft.FREEZECTL_BIN, f'--address={bus.address}', 'watch', '--initial', '/e'],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
    data = b''
    try:
        while data.count(b'\n') < 1 + len(GROUPS):  # the watching line, a listed line per group
            if not sel.select(deadline - time.monotonic()):
                ft.fail(f'watch --initial /e printed no more than {data!r}')
            chunk = os.read(p.stdout.fileno(), 4096)
            if not chunk:
                ft.fail(f'watch --initial /e exited: {p.stderr.read()!r}')
            data += chunk
    finally:
        sel.close()
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=ft.DEFAULT_TIMEOUT)
    text = data.decode()
    check_raw_free('watch --initial /e', text)
    lines = text.split('\n')[:1 + len(GROUPS)]
    ft.check(lines[0].split()[2:4] == ['watching', '/e'], 'watch --initial /e: the watching line', lines[0])
    ft.check_equal(sorted(ln.split()[3] for ln in lines[1:]), sorted(esc(g) for g in GROUPS),
                   'watch --initial /e: one listed line per group, the paths escaped')


def check_backslashes(bus, sc):
    rc, out, err = run('tree', '/b', address=bus.address)
    ft.check_equal((rc, err), (0, ''), 'tree /b: exit 0')
    ft.check_equal(out.splitlines()[1:], ['├─s\\\\x0al (running)', '└─t\\\\x2du (running)'],
                   'tree /b: the names with the backslash doubled')
    rc, out, _ = run('--json', 'tree', '/b', address=bus.address)
    ft.check_equal(sorted(ch['path'] for ch in json.loads(out)['children']), [BS, BT],
                   '--json tree /b: the paths as they are')

    rc, out, err = run('status', BS, address=bus.address)
    ft.check_equal((rc, err), (0, ''), f'status {BS}: exit 0')
    ft.check(f'Path:               {esc(BS)}' in out.splitlines(), f'status {BS}: Path with the backslash doubled',
             out)
    rc, out, _ = run('--json', 'status', BS, address=bus.address)
    ft.check_equal(json.loads(out)['path'], BS, f'--json status {BS}: the path as it is')

    rc, out, err = run('freeze', '/b', f'--except={BS}', address=bus.address)
    ft.check_equal((rc, out, err), (0, esc(BT) + '\n', ''), f'freeze /b --except={BS}: {BT} frozen, doubled')
    rc, out, err = run('thaw', BT, address=bus.address)
    ft.check_equal((rc, sc.read_freeze(BT)), (0, 0), f'{BT} thawed again')

    missing = '/b/no\\such'
    rc, out, err = run('freeze', missing, address=bus.address)
    ft.check_equal((rc, err), (1, f'freezectl: cannot freeze {esc(missing)}: NoSuchGroup: {esc(missing)} does not '
                               'exist\n'),
                   'an error line: the path doubled in freezectl\'s words and in freezerd\'s message alike')

    # A literal "\x0a" that is not there: freezerd's message doubles its backslash itself,
    # and freezectl shows it as freezerd sent it (not guessed for an escape of freezerd's).
    missing = BS + '/nope'
    rc, out, err = run('freeze', missing, address=bus.address)
    ft.check_equal((rc, err), (1, f'freezectl: cannot freeze {esc(missing)}: NoSuchGroup: {esc(missing)} does not '
                               'exist\n'),
                   'an error line: a literal \\x0a doubled in freezerd\'s message too')
    rc, out, err = run('freeze', '/b/a\nb\\x0a', address=bus.address)
    ft.check_equal((rc, err), (1, 'freezectl: cannot freeze /b/a\\x0ab\\\\x0a: InvalidPath: Invalid path '
                               '"/b/a\\x0ab\\\\x0a": contains a control character\n'),
                   'an error line: a newline and a literal \\x0a told apart in freezerd\'s message')

    # freezerd's message escapes the newline itself: its \x0a stays as it is.
    rc, out, err = run('freeze', '/b/a\nb', address=bus.address)
    ft.check_equal((rc, err), (1, 'freezectl: cannot freeze /b/a\\x0ab: InvalidPath: Invalid path "/b/a\\x0ab": '
                               'contains a control character\n'),
                   'an error line: freezerd\'s own escape of a newline as it is')


def check_long_paths(bus):
    """A path of 25 names of 200 bytes (5,025 bytes): freezectl's words name it cut as
    freezerd's message does (its first 96 and last 160 bytes, " (5025 bytes)"), the
    line short; in double quotes where a name in it ends with a space, the quotes
    around the cut path."""
    for path, quoted in ((''.join('/' + 'y' * 200 for _ in range(25)), False),
                         ('/' + 'y' * 199 + ' ' + ''.join('/' + 'y' * 200 for _ in range(24)), True)):
        what = f'status of a {len(path)}-byte path{" with a name ending in a space" if quoted else ""}'
        rc, out, err = run('status', path, address=bus.address)
        ft.check_equal((rc, out, len(err.splitlines())), (1, '', 1), f'{what}: exit 1, one line')
        head = path[:96] + '...' + path[-160:] + f' ({len(path)} bytes)'
        prefix = f'freezectl: cannot get status of {chr(34) + head + chr(34) if quoted else head}: '
        ft.check(len(err.encode()) < 1024 and err.startswith(prefix),
                 f'{what}: freezectl\'s words name it cut, with its byte count, the line under 1 kB',
                 f'{len(err.encode())} bytes: {err[:400]!r}')


def esc_ctl(s):
    """esc(s), and a control character as \\xNN too (as both freezectl and freezerd show it)."""
    return ''.join(f'\\x{ord(ch):02x}' if ord(ch) < 0x20 or ch == '\x7f' else ch for ch in esc(s))


def long_escaped(head_char, tail_char, fill):
    """A 400-byte path below /e: head_char from byte 94 (a character of 3 bytes passes
    the head's 96), fill (bytes to escape) before it; tail_char ending on byte 240, the
    tail's first (one of 2 bytes starts before it: the tail begins after it), fill
    after it."""
    head = '/e/' + 'y' * (94 - 3 - len(fill.encode())) + fill + head_char
    tail = fill + '/' + 'v' * (159 - len(fill.encode()) - 6) + '/leaf'
    middle = 400 - len(head.encode()) - len(tail_char.encode()) - len(tail.encode())
    path = head + ('/' + 'm' * 99) * (middle // 100) + 'm' * (middle % 100) + tail_char + tail  # names < 256 bytes
    b = path.encode()
    h, t = head_char.encode(), tail_char.encode()
    assert len(b) == 400 and b[94:94 + len(h)] == h and b[241 - len(t):241] == t, path
    return path


def check_long_escaped(bus):
    """freezectl's words and freezerd's message cut a long path that holds bytes to
    escape alike (head and tail in the path's bytes), and show them escaped the same."""
    missing = long_escaped(LS, NEL, '\\\\x0a\\')
    cut = esc_ctl(ft.quoted(missing))
    rc, out, err = run('freeze', missing, address=bus.address)
    ft.check_equal((rc, err), (1, f'freezectl: cannot freeze {cut}: NoSuchGroup: {cut} does not exist\n'),
                   'freeze of a 400-byte path with backslashes, LS and NEL at its cuts: cut alike in both')
    bad = long_escaped('\x01', '\x7f', '\t\\\x1b')  # no white space at a name's end: no double quotes
    cut = esc_ctl(ft.quoted(bad))
    rc, out, err = run('freeze', bad, address=bus.address)
    ft.check_equal((rc, err), (1, f'freezectl: cannot freeze {cut}: InvalidPath: Invalid path "{cut}": contains a '
                               'control character\n'),
                   'freeze of a 400-byte path with control characters at its cuts: cut alike in both')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    with ft.Scratch('core-freezectl-escape') as sc, ft.Bus() as bus:
        for g in GROUPS + B_GROUPS:
            sc.mkdir(g)
        sc.spawn_sleepers(C, 1)
        sc.before_cleanup.append(lambda: sc.exists(P) and sc.write_freeze(P, 0))

        with ft.Daemon(bus, sc.root, config={'track': ['/e', '/b']}) as d:
            c = d.client
            listed = sorted(p for p, _o, _s in c.call('ListGroups')[0])
            ft.check_equal(listed, sorted(['/'] + GROUPS + B_GROUPS),
                           'freezerd publishes the groups named with LS, NEL, PS and backslashes')

            # ---- tree
            rc, out, err = run('tree', '/e', address=bus.address)
            ft.check_equal((rc, err), (0, ''), 'tree /e: exit 0')
            check_raw_free('tree /e', out)
            ft.check_equal(len(out.splitlines()), len(GROUPS), f'tree /e: one line per group: {out!r}')
            for g in (A, N, P):
                name = esc(g.rsplit('/', 1)[1])
                ft.check(any(ln.endswith(f'{name} (running)') for ln in out.splitlines()),
                         f'tree /e names {esc(g)} escaped', out)
            rc, out, _ = run('--json', 'tree', '/e', address=bus.address)
            seen = []

            def walk(node):
                seen.append(node['path'])
                for ch in node['children']:
                    walk(ch)
            walk(json.loads(out))
            ft.check_equal(sorted(seen), sorted(GROUPS), '--json tree /e: the paths as they are')

            # ---- list
            rc, out, err = run('list', address=bus.address)
            ft.check_equal((rc, err), (0, ''), 'list: exit 0')
            check_raw_free('list', out)
            ft.check_equal(sorted(ln.split()[1] for ln in out.splitlines()),
                           sorted(esc(g) for g in ['/'] + GROUPS + B_GROUPS),
                           'list: one line per group, the paths escaped, backslashes doubled')
            rc, out, _ = run('--json', 'list', address=bus.address)
            ft.check_equal(sorted(e['path'] for e in json.loads(out)), sorted(['/'] + GROUPS + B_GROUPS),
                           '--json list: the paths as they are')

            check_backslashes(bus, sc)
            check_long_paths(bus)
            check_long_escaped(bus)

            # ---- status, frozen by a parent named so
            sc.write_freeze(P, 1)
            sc.wait_events(C, frozen=1)
            ft.wait_for(lambda: c.group_property(C, 'FreezerState') == 'frozen-by-parent',
                        what=f'{esc(C)} frozen-by-parent in freezerd')
            rc, out, err = run('status', C, address=bus.address)
            ft.check_equal((rc, err), (0, ''), 'status of the child of the PS group: exit 0')
            check_raw_free('status', out)
            plain = run('status', '/e', address=bus.address)[1]
            ft.check_equal(len(out.splitlines()), len(plain.splitlines()) + 1,
                           f'status: as many lines as for /e, and "Frozen by:": {out!r}')
            fields = dict((k, v.strip()) for k, v in (ln.split(':', 1) for ln in out.splitlines()))
            ft.check_equal((fields.get('Path'), fields.get('Frozen by')), (esc(C), esc(P)),
                           'status: Path and Frozen by escaped')
            rc, out, _ = run('--json', 'status', C, address=bus.address)
            j = json.loads(out)
            ft.check_equal((j['path'], j['frozen_by']), (C, P), '--json status: the paths as they are')
            sc.write_freeze(P, 0)
            sc.wait_events(C, frozen=0)

            # ---- freeze --except
            rc, out, err = run('freeze', '/e', f'--except={P}', address=bus.address)
            ft.check_equal((rc, err), (0, ''), 'freeze /e --except=PS group: exit 0')
            check_raw_free('freeze --except', out)
            ft.check_equal(out.splitlines(), sorted([esc(A), esc(N)]),
                           'freeze --except: the groups frozen, one line each, escaped')
            run('thaw', A, N, address=bus.address)
            rc, out, _ = run('--json', 'freeze', '/e', f'--except={P}', address=bus.address)
            ft.check_equal((rc, json.loads(out)), (0, sorted([A, N])), '--json freeze --except: as they are')
            run('thaw', A, N, address=bus.address)
            ft.check_equal((sc.read_freeze(A), sc.read_freeze(N)), (0, 0), 'thawed again')

            # ---- watch
            check_watch(bus)

            # ---- an error line
            rc, out, err = run('freeze', f'/e/no{LS}such', address=bus.address)
            ft.check_equal((rc, out), (1, ''), 'freeze of a missing group named with LS: exit 1')
            check_raw_free('the error line', err)
            ft.check(len(err.splitlines()) == 1 and f'cannot freeze {esc("/e/no" + LS + "such")}: NoSuchGroup' in err,
                     'the error line: one line, the path escaped', repr(err))

            # ---- pressure: freezerd's message names the group
            with open(os.path.join(sc.abspath(A), 'cgroup.pressure'), 'w') as f:
                f.write('0')
            rc, out, err = run('pressure', A, address=bus.address)
            check_raw_free('pressure of a group with pressure off', out + err)
            ft.check('not available' in out and esc(A) in out,
                     'pressure: the "not available" lines name the group escaped', repr(out))

            # ---- the interrupted line, written by the signal handler
            d.proc.send_signal(signal.SIGSTOP)
            try:
                queued = ft.unix_recv_queued(d.pid)
                p = subprocess.Popen([ft.FREEZECTL_BIN, f'--address={bus.address}', 'freeze', A],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
                try:
                    ft.wait_for(lambda: ft.unix_recv_queued(d.pid) > queued, poll=0.005,
                                what='the freeze call in freezerd\'s socket')
                    p.send_signal(signal.SIGINT)
                    out, err = p.communicate(timeout=ft.DEFAULT_TIMEOUT)
                finally:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
            finally:
                d.proc.send_signal(signal.SIGCONT)
            err = err.decode()
            check_raw_free('the interrupted line', err)
            ft.check(len(err.splitlines()) == 1 and err.startswith('freezectl: interrupted:')
                     and f'the freeze of {esc(A)}' in err, 'the interrupted line: one line, the path escaped',
                     repr(err))

    print('# checked: tree, list, status, freeze --except, watch, pressure, the interrupted line and error lines '
          'escape LS, PS and NEL')


if __name__ == '__main__':
    ft.run(test)
