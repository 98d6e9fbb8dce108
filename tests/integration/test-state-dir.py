#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""tracked.json as an operator's machine may leave it.

  * tracked.json damaged (cut short by hand, or without its "tracked" array):
    freezerd starts, logs the file and what is wrong with it, and keeps it as
    tracked.json.broken, which a later Track() (that saves tracked.json) leaves
    as it was.  (Before session 33 the log said "Ignoring unreadable FILE." and
    the next save wrote over it.)"""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


# Only /c by configuration: /a and /b are tracked by Track(), and tracked.json.
CONFIG = {'track': ['/c']}


def tracked(c):
    return sorted(p for p, _o, _s in c.call('ListGroups')[0] if p in ('/a', '/b'))


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('state-dir') as sc, ft.Bus() as bus:
        for g in ('/a', '/b', '/c'):
            sc.mkdir(g)
        base = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}state-dir-{os.getpid()}-')
        try:
            # ---- tracked.json damaged
            for n, (text, why) in enumerate([('{"tracked": ["/a",\n', 'not JSON: '),
                                             ('{"track": ["/a"]}\n', 'no "tracked" array in it')]):
                state = os.path.join(base, f'state{n}')
                os.mkdir(state)
                path = os.path.join(state, 'tracked.json')
                with open(path, 'w') as f:
                    f.write(text)
                with ft.Daemon(bus, sc.root, config=CONFIG, state_dir=state) as d:
                    log = d.log()
                    ft.check(f'Cannot read {path}: {why}' in log and f'kept as {path}.broken' in log,
                             f'the damaged tracked.json ({why.rstrip(": ")}) named with what is wrong', log)
                    ft.check_equal(tracked(d.client), [], 'nothing tracked from it')
                    d.client.call('Track', '/b')
                with open(path + '.broken') as f:
                    ft.check_equal(f.read(), text, 'the damaged file kept as it was')
                with open(path) as f:
                    ft.check('"/b"' in f.read(), 'tracked.json saved anew')

        finally:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == '__main__':
    ft.run(test)
