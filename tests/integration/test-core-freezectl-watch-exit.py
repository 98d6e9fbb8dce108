#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezectl watch --trigger ends on SIGINT also while freezerd does not answer.

On SIGINT or SIGTERM watch removes its triggers, one call each, and exits 0. With
freezerd stopped (SIGSTOP: it takes the calls but answers none), each call waits
out the method-call timeout (sd-bus' 25 s; SYSTEMD_BUS_TIMEOUT here):

Checks, freezerd stopped once watch printed its "watching" line:
  * three triggers, method-call timeout 1 s, SIGINT: watch exits 0 with one
    warning that the removal got no reply (it tried each trigger in turn, one
    timeout and one warning each: three; 25 s each by default).
  * two triggers, method-call timeout 10 min, SIGINT and then SIGTERM: watch exits
    0 at once, with no warning (the signals were blocked, so the second one waited
    for the removals as well, and Ctrl+C did nothing).
Checks, freezerd stopped before watch starts (method-call timeout 10 min):
  * watch /g, SIGINT once it handles or blocks SIGINT (it is past connecting, in
    its setup's calls): exit 0 at once, no "watching" line (the signal was
    blocked from the start, and waited for the setup's calls: 25 s each)."""

import os
import selectors
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

TRIGGERS = ['--trigger=cpu:some:100ms:2s', '--trigger=memory:some:100ms:2s', '--trigger=io:some:100ms:2s']


def start_watch(bus, triggers, bus_timeout):
    env = dict(os.environ, SYSTEMD_BUS_TIMEOUT=bus_timeout)
    p = subprocess.Popen([ft.FREEZECTL_BIN, f'--address={bus.address}', 'watch', *triggers], env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
    line = b''
    while not line.endswith(b'\n'):
        if not sel.select(deadline - time.monotonic()):
            p.kill()
            ft.fail('freezectl watch printed no "watching" line')
        chunk = os.read(p.stdout.fileno(), 4096)
        if not chunk:
            ft.fail(f'freezectl watch exited ({p.wait()}): {p.stderr.read()!r}')
        line += chunk
    sel.close()
    ft.check(b'watching' in line and line.count(b'trigger') == len(triggers),
             f'watch with {len(triggers)} triggers: the watching line names them', line)
    return p


def wait_exit(p, what, timeout):
    status = ft._wait_pidfd_exit(p, timeout)
    if status is None:
        p.kill()
        p.wait()
        ft.fail(f'{what}: watch did not exit within {timeout:.0f} s')
    return status, p.stderr.read().decode(errors='replace').splitlines()


def sigint_taken(pid):
    """Whether pid handles or blocks SIGINT (SigCgt, SigBlk in /proc/PID/status)."""
    try:
        with open(f'/proc/{pid}/status') as f:
            masks = dict(line.split(':', 1) for line in f if line.startswith(('SigBlk', 'SigCgt')))
    except OSError:
        return False
    bit = 1 << (signal.SIGINT - 1)
    return any(int(v.strip(), 16) & bit for v in masks.values())


def run(bus, d):
    # One timeout, not one per trigger.
    p = start_watch(bus, TRIGGERS, '1')
    os.kill(d.pid, signal.SIGSTOP)
    try:
        p.send_signal(signal.SIGINT)
        status, lines = wait_exit(p, 'SIGINT with freezerd stopped', ft.DEFAULT_TIMEOUT)
    finally:
        os.kill(d.pid, signal.SIGCONT)
    ft.check_equal(status, 0, 'SIGINT with freezerd stopped: exit status 0')
    ft.check(len(lines) == 1 and 'cannot remove pressure trigger' in lines[0],
             'one warning: the first removal got no reply, the rest end with the connection', lines)

    # A second signal ends the removal.
    p = start_watch(bus, TRIGGERS[:2], '600')
    os.kill(d.pid, signal.SIGSTOP)
    try:
        p.send_signal(signal.SIGINT)
        p.send_signal(signal.SIGTERM)  # another signal: two SIGINTs may be one
        status, lines = wait_exit(p, 'SIGINT, SIGTERM with freezerd stopped', ft.DEFAULT_TIMEOUT)
    finally:
        os.kill(d.pid, signal.SIGCONT)
    ft.check_equal(status, 0, 'SIGINT, then SIGTERM during the removal: exit status 0')
    ft.check_equal(lines, [], 'no warning: the second signal ended watch before the call did')

    # SIGINT during the setup.
    os.kill(d.pid, signal.SIGSTOP)
    try:
        env = dict(os.environ, SYSTEMD_BUS_TIMEOUT='600')
        p = subprocess.Popen([ft.FREEZECTL_BIN, f'--address={bus.address}', 'watch', '/g'], env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        ft.wait_for(lambda: sigint_taken(p.pid) or p.poll() is not None, poll=0.05,
                    what='freezectl watch to take SIGINT in hand')
        p.send_signal(signal.SIGINT)
        status, lines = wait_exit(p, 'SIGINT during the setup with freezerd stopped', ft.DEFAULT_TIMEOUT)
        out = p.stdout.read()
    finally:
        os.kill(d.pid, signal.SIGCONT)
    ft.check_equal(status, 0, 'SIGINT during the setup: exit status 0')
    ft.check(b'watching' not in out and lines == [], 'SIGINT during the setup: no watching line, no error',
             (out, lines))



def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl', 'psi')
    with ft.Scratch('core-freezectl-watch-exit') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        with ft.Daemon(bus, sc.root) as d:
            run(bus, d)


if __name__ == '__main__':
    ft.run(test)
