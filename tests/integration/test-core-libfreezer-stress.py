#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""libfreezer's queue of messages, driven as a container manager's event loop drives it
(tests/libfreezer-stress.c, a C program: under ASan, and valgrind, a use after free or a
leak in the library shows in its run).  Since 0.4.8 the handle's sd-bus handlers only
queue what sd-bus reads (also during blocking calls) and freezer_dispatch() runs the
callbacks; each scenario on the bus, then on freezerd's private socket:

  storm     600 children of /s frozen and thawed by a freezer_freeze_async() of /s, twice,
            while 30 freezer_get_group() wait each time: a loop on the fd and
            freezer_get_timeout() gets every child's last state to the state callback and
            the call's callback once; no callback runs outside freezer_dispatch(); groups
            made meanwhile reach the group callback, which makes a blocking call.
  fdonly    the same storm after a blocking freeze and thaw, with a loop that polls the fd
            alone and dispatches after each blocking call and while freezer_dispatch()
            says it stopped at FREEZER_DISPATCH_MAX, the state callback making a blocking
            call per report (freezer.h, "Event loop integration"): every child reported,
            and the loop never finds messages in memory that the fd did not wake it for.
  close     the first callback (a call's or the state callback) closes the handle with
            replies and signals queued: nothing more runs (6 rounds).
  cancel    a call's reply queued, the call cancelled (outside a callback, or from another
            call's callback, which frees its userdata): its callback never runs;
            cancelled calls' replies queued at the close.
  remove    the state and group callbacks removed (or removing themselves) with their
            signals queued: they do not run (again).
  triggers  six pressure triggers ended by an Untrack, their signals queued: the removed
            callback closing the handle, or removing itself, runs once.
  restart   a storm on its way and freezerd restarted, all unread: EXITED then STARTED,
            the trigger "daemon-exited", the call's callback once, and the new freezerd's
            storm reaches the state callback.
  timeout   freezerd stopped: blocking calls time out (-ETIMEDOUT) one after the other until a
            call in flight passes its method-call timeout inside one of them: its callback
            has not run, freezer_get_timeout() says now, freezer_wait() returns at once,
            and freezer_dispatch() runs it once with -ETIMEDOUT.
  lost      freezerd stopped, then killed during a blocking call: -ECONNRESET; the call in
            flight completes with -ECONNRESET (on the private socket, DISCONNECTED too)."""

import os
import select
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

SCENARIOS = ('storm', 'fdonly', 'close', 'cancel', 'remove', 'triggers')


def stress_bin():
    path = os.environ.get('LIBFREEZER_STRESS_BIN') or os.path.join(ft.BUILDDIR, 'tests', 'libfreezer-stress')
    if not os.path.exists(path):
        ft.skip(f'{path} is not built')
    return path


def run(args, what, **kw):
    p = subprocess.run([stress_bin(), *args], capture_output=True, text=True,
                       timeout=ft.DEFAULT_TIMEOUT * 6, **kw)
    out = p.stdout + p.stderr
    ft.check(p.returncode == 0 and f'ok {args[3]}' in p.stdout, what, out.strip()[-3000:])
    for line in p.stdout.splitlines():
        if line.startswith('#'):
            print(line, flush=True)


def restart(bus, sc, d, args):
    """The restart scenario: the helper says 'restart' with a storm on its way; freezerd (d) is
    stopped and another started; the helper goes on with it."""
    p = subprocess.Popen([stress_bin(), *args, 'restart'], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    out = []
    try:
        # Bounded: a helper that hangs before it asks must fail the test, not stall it.
        ready, _, _ = select.select([p.stdout], [], [], ft.DEFAULT_TIMEOUT * 6)
        line = p.stdout.readline() if ready else ''
        out.append(line)
        ft.check(line.strip() == 'restart', 'the helper asks for the restart', ''.join(out))
        d.stop()
        with ft.Daemon(bus, sc.root):
            p.stdin.write('go\n')
            p.stdin.flush()
            rest, _ = p.communicate(timeout=ft.DEFAULT_TIMEOUT * 6)
            out.append(rest)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    ft.check(p.returncode == 0 and 'ok restart' in ''.join(out), f'{args[0]}: restart', ''.join(out)[-3000:])


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    stress_bin()
    with ft.Scratch('core-libfreezer-stress') as sc, ft.Bus() as bus:
        sc.mkdir('/s')
        sc.mkdir('/p')
        for kind in ('bus', 'private'):
            with ft.Daemon(bus, sc.root) as d:
                address = bus.address if kind == 'bus' else f'{d.runtime_dir}/private'
                args = [kind, address, sc.root]
                for s in SCENARIOS:
                    run(args + [s], f'{kind}: {s}')
                try:
                    run(args + ['timeout', str(d.pid)], f'{kind}: timeout')
                finally:
                    os.kill(d.pid, signal.SIGCONT)
                if kind == 'bus':
                    restart(bus, sc, d, args)
        for kind in ('private', 'bus'):
            with ft.Daemon(bus, sc.root) as d:
                address = bus.address if kind == 'bus' else f'{d.runtime_dir}/private'
                try:
                    run([kind, address, sc.root, 'lost', str(d.pid)], f'{kind}: lost')
                finally:
                    if d.proc.poll() is None:
                        os.kill(d.pid, signal.SIGCONT)
                d.stop()
                d.exit_status = 0  # killed on purpose
    print('# checked: callbacks closing the handle, cancelling calls, removing callbacks and triggers with '
          'messages queued; a storm, a timeout, freezerd restarted and killed during blocking calls; a loop on '
          'the fd alone')


if __name__ == '__main__':
    ft.run(test)
