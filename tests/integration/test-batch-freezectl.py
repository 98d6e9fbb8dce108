#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""`freezectl batch FILE|-`: options, output and exit codes, against the real daemon.

  /a, /b, /c, /c/d   a `sleep` each
  /s                 a `sleep` and a process blocked (D) on a FUSE mount that never
                     answers: /s cannot finish freezing

Exit codes (freezectl --help): 0 success; 1 freezerd refused or failed the batch, or
the file cannot be read; 2 usage error or malformed batch file (nothing is sent).
Checked: FILE and "-" (stdin), text and --json output, --order=auto|top-down|
bottom-up, a bad --order, malformed files (message naming the element and its line),
a missing group (freezerd's message naming it and its index; nothing written), a
missing file, --timeout with --rollback (everything as before) and without (the
others frozen, the message naming /s), --recursive, --no-wait."""

import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ['/a', '/b', '/c', '/c/d', '/s']


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl', 'fuse')
    with ft.Scratch('batch-freezectl') as sc, ft.Bus() as bus, ft.FuseHang() as fuse, \
            tempfile.TemporaryDirectory(prefix=f'{ft.TMP_PREFIX}batchfiles-') as tmp:
        for g in GROUPS:
            sc.mkdir(g)
            sc.spawn_sleepers(g, 1)
        fuse.spawn_stuck(sc, '/s')
        runs = 0

        def flags():
            return {g: sc.read_freeze(g) for g in GROUPS}

        def frozen():
            return {g: sc.read_events(g)['frozen'] for g in GROUPS}

        def write(name, requests_or_text):
            path = os.path.join(tmp, name)
            with open(path, 'w') as f:
                if isinstance(requests_or_text, str):
                    f.write(requests_or_text)
                else:
                    json.dump([{'path': p, 'freeze': v} for p, v in requests_or_text], f, indent=1)
            return path

        def ctl(*args, code=0, stdin=None, what):
            nonlocal runs
            runs += 1
            r = ft.freezectl(*args, check=False, input=stdin, timeout=ft.DEFAULT_TIMEOUT + 5)
            ft.check(r.returncode == code, f'freezectl {" ".join(args)}: {what}: exit {code}',
                     f'exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r}')
            if r.stderr:
                print(f'#   stderr: {r.stderr.strip()}', flush=True)
            return r

        def state(want_flags, what):
            ft.check_equal(flags(), {g: int(g in want_flags) for g in GROUPS}, f'{what}: cgroup.freeze')

        with ft.Daemon(bus, sc.root):
            freeze_ac = write('freeze-ac.json', [('/a', True), ('/c', True)])
            r = ctl('batch', freeze_ac, what='FILE freezing /a and /c')
            ft.check_equal(r.stdout, '2 writes, 0 skipped\n', '  prints the counts')
            state({'/a', '/c'}, '  after')
            ft.check_equal([frozen()[g] for g in ('/a', '/c', '/c/d', '/b')], [1, 1, 1, 0],
                           '  /a, /c and /c/d frozen, /b not: the batch waited for the kernel')
            r = ctl('--json', 'batch', freeze_ac, what='the same FILE again, --json')
            ft.check_equal(json.loads(r.stdout), {'writes': 0, 'skipped': 2}, '  prints {"writes": 0, "skipped": 2}')

            thaw = json.dumps([{'path': '/a', 'freeze': False}, {'path': '/c', 'freeze': False},
                               {'path': '/b', 'freeze': True}])
            r = ctl('batch', '-', '--order=bottom-up', stdin=thaw, what='"-" (stdin) with --order=bottom-up')
            ft.check_equal(r.stdout, '3 writes, 0 skipped\n', '  prints the counts')
            state({'/b'}, '  after')
            ft.check_equal(frozen(), {'/a': 0, '/b': 1, '/c': 0, '/c/d': 0, '/s': 0}, '  kernel: only /b frozen')
            for order in ('top-down', 'auto'):
                r = ctl('batch', '--order', order, '-', stdin=json.dumps([{'path': '/b', 'freeze': False},
                                                                           {'path': '/c/d', 'freeze': True}]),
                        what=f'--order {order}')
                state({'/c/d'}, '  after')
                ctl('batch', f'--order={order}', '-', stdin='[{"path": "/c/d", "freeze": false}]',
                    what=f'--order={order} thaws /c/d')
                state(set(), '  after')

            # Last one wins inside a file.
            r = ctl('batch', '-', stdin='[{"path": "/a", "freeze": true}, {"path": "/a", "freeze": false}]',
                    what='two requests for /a')
            ft.check_equal(r.stdout, '0 writes, 1 skipped\n', '  the last request wins: nothing to write')

            # Usage errors and malformed files: exit 2, nothing sent.
            before = flags()
            r = ctl('batch', freeze_ac, '--order=sideways', code=2, what='unknown order')
            ft.check('sideways' in r.stderr, '  the message names the order', r.stderr)
            r = ctl('batch', code=2, what='no FILE')
            r = ctl('batch', freeze_ac, freeze_ac, code=2, what='two FILEs')
            r = ctl('freeze', '/a', '--order=auto', code=2, what='--order with freeze')
            ft.check('--order' in r.stderr, '  the message names --order', r.stderr)
            bad_files = {
                'trailing comma': ('[{"path": "/a", "freeze": true},\n]', []),
                'other key': ('[{"path": "/a", "freeze": true},\n {"path": "/b", "freeze": true, "x": 1}]',
                              [r'\b1\b', r'line 2']),
                'string for freeze': ('[{"path": "/a", "freeze": true},\n {"path": "/b",\n "freeze": "yes"}]',
                                      [r'\b1\b', 'line']),
                'empty array': ('[]', []),
                'not an array': ('{"path": "/a", "freeze": true}', []),
                'missing freeze': ('[{"path": "/a"}]', [r'\b0\b']),
                'not JSON': ('freeze /a', []),
                'empty file': ('', []),
            }
            for name, (text, says) in bad_files.items():
                r = ctl('batch', write(name.replace(' ', '-') + '.json', text), code=2, what=f'malformed: {name}')
                for s in says:
                    ft.check(re.search(s, r.stderr) is not None, f'  the message says {s!r}', r.stderr)
                ft.check_equal(r.stdout, '', '  nothing on stdout')
            r = ctl('batch', '-', stdin='[{"path": "/a", "freeze": true}', code=2, what='malformed stdin')
            ft.check('standard input' in r.stderr, '  the message says "standard input"', r.stderr)
            # The parser's own escapes are shown as written (its advice can be typed as it
            # reads); the file name, any bytes, is escaped: a newline as \x0a, a backslash doubled.
            for text, says in (('[{"path": "/a\tb", "freeze": true}]',
                                'standard input: line 1, column 14: control character 0x09 in a string '
                                '(write it as \\u0009)'),
                               ('[{"path": "/a\\ud800", "freeze": true}]',
                                'standard input: line 1, column 14: lone UTF-16 surrogate \\ud800 in a string '
                                '(not followed by \\udc00-\\udfff)'),
                               ('[{"path": "/a", "freeze": true, "pa\\"t\\\\h": 1}]',
                                'standard input: element 0 (line 1): unknown key "pa\\"t\\\\h" (expected only '
                                '"path" and "freeze")')):
                r = ctl('batch', '-', stdin=text, code=2, what=f'malformed stdin {text!r}')
                ft.check_equal(r.stderr, f'freezectl: {says}\n', '  the parser\'s message, as written')
            r = ctl('batch', write('x\\x0a\ny.json', '[{"path": "/a\tb", "freeze": true}]'), code=2,
                    what='a malformed FILE whose name holds a newline and a backslash')
            ft.check_equal(r.stderr, f'freezectl: {tmp}/x\\\\x0a\\x0ay.json: line 1, column 14: control character '
                           '0x09 in a string (write it as \\u0009)\n', '  the name escaped, the message not')
            ft.check_equal(flags(), before, 'no usage error or malformed file wrote anything')

            # Refused by freezerd: exit 1, nothing written.
            r = ctl('batch', write('missing.json', [('/a', True), ('/nope', True), ('/b', True)]), code=1,
                    what='a missing group')
            ft.check(all(s in r.stderr for s in ('/nope', 'NoSuchGroup', '1')), '  the message names /nope, '
                     'its index and the error', r.stderr)
            ft.check_equal(r.stdout, '', '  nothing on stdout')
            r = ctl('batch', '-', stdin='[{"path": "/a/../b", "freeze": true}]', code=1, what='a path with ".."')
            ft.check('InvalidPath' in r.stderr, '  InvalidPath', r.stderr)
            r = ctl('batch', os.path.join(tmp, 'does-not-exist.json'), code=1, what='a missing file')
            ft.check('does-not-exist.json' in r.stderr, '  the message names the file', r.stderr)
            ft.check_equal(flags(), before, 'nothing was written by the refused batches')

            # Timeouts.
            stuck = write('stuck.json', [('/a', True), ('/s', True), ('/b', True), ('/c', False)])
            r = ctl('batch', stuck, '--timeout=1s', '--rollback', code=1, what='--rollback, /s cannot freeze')
            ft.check('Timeout' in r.stderr and '/s' in r.stderr, '  Timeout, naming /s', r.stderr)
            state(set(), '  rolled back')
            ft.check(all(v == 0 for v in frozen().values()), '  nothing is frozen', frozen())
            r = ctl('batch', stuck, '--timeout=1s', '--order=top-down', code=1, what='no --rollback')
            ft.check('Timeout' in r.stderr and re.search(r'/s\b', r.stderr) and '/a' not in r.stderr,
                     '  Timeout, naming /s and not /a', r.stderr)
            state({'/a', '/s', '/b'}, '  left as requested')
            ft.check_equal(frozen(), {'/a': 1, '/b': 1, '/c': 0, '/c/d': 0, '/s': 0}, '  /a, /b frozen; /s not')
            r = ctl('batch', '-', '--no-wait', stdin=json.dumps([{'path': g, 'freeze': False} for g in GROUPS]),
                    what='--no-wait thaw of everything')
            ft.check_equal(r.stdout, '3 writes, 2 skipped\n', '  prints the counts')
            state(set(), '  after')

            # --recursive: each request covers its subtree.
            r = ctl('batch', '-', '--recursive', stdin='[{"path": "/c", "freeze": true}]', what='--recursive')
            ft.check_equal(r.stdout, '2 writes, 0 skipped\n', '  /c and /c/d written')
            state({'/c', '/c/d'}, '  after')
            r = ctl('--json', 'batch', '-', '--recursive', stdin='[{"path": "/", "freeze": false}]',
                    what='--recursive thaw of "/"')
            ft.check_equal(json.loads(r.stdout), {'writes': 2, 'skipped': 3}, '  2 writes, 3 skipped')
            state(set(), '  after')
            ft.check(all(v == 0 for v in frozen().values()), '  nothing is frozen', frozen())

            print(f'# summary: {runs} freezectl batch runs (FILE and stdin, 3 orders, {len(bad_files)} malformed '
                  'files, refusals, timeouts with and without --rollback, --recursive, --no-wait)', flush=True)


ft.run(test)
