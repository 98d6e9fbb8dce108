#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A Thaw left waiting by an ancestor frozen behind freezerd's back in the
middle of it.

  /top              above freezerd's cgroup root (the scratch root)
  /top/c            freezerd's --cgroup-root, "/"
  /top/c/p          kept for its flag (the call names /p/g)
  /top/c/p/g        a sleeper, frozen by its own flag (Freeze)

Thaw("/p/g") writes its flag 0, reads the kernel's queued cgroup.freeze writes
(inotify) and then reads /p/g's cgroup.events.  An ancestor frozen by someone
else between those two reads is not in freezerd's model yet, and /p/g reads
frozen 1: the Thaw waits for it to read 0.  The ancestor's write comes next
(inotify), but /p/g's own frozen never changes again, and nothing looked at
the Thaw: it waited for its whole timeout and failed with Timeout (its message
even said "frozen-by-parent").  It must fail promptly with FrozenByParent
naming the ancestor, as a Thaw under an ancestor frozen already does
(test-core-outside-frozen).

That interleaving is a window of a few instructions, so the test makes it
with gdb: a breakpoint on the line of manager_settle_written() right after
its inotify read (found in daemon/manager.c), where the test freezes the
ancestor, waits until /p/g reads frozen 1 and lets freezerd go on.  Twice:
with /p (inside the root) and with /top (above it).  Skipped without gdb, or
under a FREEZERD_WRAPPER (valgrind), or where ptrace is not allowed."""

import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ROOT = '/c'
GROUP = '/p/g'
THAW_USEC = 8 * 1000000
# The line after the inotify read of the settle that follows freezerd's own writes.
MARK = re.compile(r'^\s*deduce = deduce && !\(outer >= 0 \? outer : manager_outer_frozen\(m\)\);')


def breakpoint_line():
    path = os.path.join(ft.SRCDIR, 'daemon', 'manager.c')
    with open(path) as f:
        lines = [i + 1 for i, line in enumerate(f) if MARK.match(line)]
    if len(lines) != 1:
        ft.fail(f'{path}: the line after manager_settle_written()\'s inotify read was not found once '
                f'({len(lines)} matches of {MARK.pattern!r}): update this test')
    return f'manager.c:{lines[0]}'


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    if shutil.which('gdb') is None:
        ft.skip('no gdb')
    if ft.FREEZERD_WRAPPER:
        ft.skip(f'freezerd runs under {" ".join(ft.FREEZERD_WRAPPER)}: gdb cannot attach to it')
    where = breakpoint_line()
    with ft.Scratch('fault-thaw-frozen-above') as sc, ft.Bus() as bus:
        sc.mkdir(ROOT + GROUP)
        sc.spawn_sleepers(ROOT + GROUP, 1)
        for a in ('/', ROOT + '/p'):  # whatever happened, before the tree is killed
            sc.before_cleanup.append(lambda a=a: sc.write_freeze(a, 0))
        events = sc.abspath(ROOT + GROUP, 'cgroup.events')

        with ft.Daemon(bus, sc.abspath(ROOT)) as d:
            c = d.client
            for ancestor, shown, named, label in (
                    (ROOT + '/p', '/p', 'frozen by /p', 'inside the root'),
                    ('/', sc.root, f'frozen by {sc.root}, above freezerd\'s cgroup root', 'above the root')):
                c.call('Freeze', GROUP, 0, 0)
                freeze = sc.abspath(ancestor, 'cgroup.freeze')
                gdb = subprocess.Popen(
                    ['gdb', '-q', '-nx', '-batch', '-p', str(d.pid), '-ex', f'break {where}', '-ex', 'continue',
                     '-ex', f'shell echo 1 > {freeze}; for i in $(seq 200); do grep -q "frozen 1" {events} && '
                            f'break; sleep 0.02; done; cat {events}',
                     '-ex', 'delete', '-ex', 'detach'],
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                head = ''
                try:
                    # Once the breakpoint is set: the call then waits in the socket
                    # until gdb's "continue" lets freezerd go on (attached, it is stopped).
                    for line in gdb.stdout:
                        head += line
                        if line.startswith('Breakpoint 1 at'):
                            break
                    t0 = time.monotonic()
                    pending = c.call_async('Thaw', GROUP, THAW_USEC, 0)
                    try:
                        result = pending.result(timeout=THAW_USEC / 1e6 + 30)
                        error = None
                    except ft.DBusError as e:
                        result, error = None, e
                    elapsed = time.monotonic() - t0
                    out, _ = gdb.communicate(timeout=60)
                    out = head + out
                finally:
                    if gdb.poll() is None:
                        gdb.kill()
                        gdb.wait()
                if re.search(r'ptrace: Operation not permitted|Could not attach', out):
                    ft.skip(f'gdb cannot attach to freezerd: {out.strip()}')
                ft.check(re.search(r'^Breakpoint 1(\.\d+)?, ', out, re.M) and 'frozen 1' in out,
                         f'{label}: freezerd stopped after its inotify read, the ancestor froze, '
                         f'{GROUP} read frozen 1', out)
                print(f'# {label}: Thaw replied after {elapsed:.2f} s: '
                      f'{error.name + ": " + error.message if error else result}', flush=True)
                ft.check(error is not None and error.name == ft.ERROR_FROZEN_BY_PARENT and named in error.message,
                         f'{label}: the Thaw fails with FrozenByParent naming {shown}, not with Timeout',
                         f'{error.name}: {error.message}' if error else f'succeeded: {result}')
                ft.check(elapsed < THAW_USEC / 1e6 / 2, f'{label}: promptly ({elapsed:.2f} s), not at its timeout')
                ft.check_equal(sc.read_freeze(ROOT + GROUP), 0, f'{label}: the Thaw cleared {GROUP}\'s own flag')
                sc.write_freeze(ancestor, 0)
                sc.wait_events(ROOT + GROUP, frozen=0)
            ft.check(d.proc.poll() is None, 'freezerd is still running')


if __name__ == '__main__':
    ft.run(test)
