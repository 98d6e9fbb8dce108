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
Checks, freezerd restarted under a watch with a trigger (method-call timeout 10 min):
  * a stand-in takes freezerd's bus name and answers nothing; once watch has asked
    it to add the trigger again, SIGINT: exit 0 at once, with the exited line (not
    the started one, which comes with the catch-up's lines) and no error (the signal
    was blocked there and waited for each call of the catch-up).
Checks, freezerd stopped before watch starts (method-call timeout 10 min):
  * watch /g, SIGINT once it handles or blocks SIGINT (it is past connecting, in
    its setup's calls): exit 0 at once, no "watching" line (the signal was
    blocked from the start, and waited for the setup's calls: 25 s each).
Checks, SIGINT pending at the watching line (freezectl-test-hooks stops itself once it
blocked the signal for its loop, and the signal is sent meanwhile):
  * exit 0 at once, without the watching line, as --help says of a signal before it (it
    printed the line, which a script takes for "ready", and then ended).
  * so after a restart: freezectl-test-hooks stops itself again before the watching line
    it prints once the new freezerd took the trigger; SIGINT then: exit 0 without that
    line (it was printed without looking)."""

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


def run_catch_up(bus, sc):
    """SIGINT while watch adds its trigger again after a restart, to a freezerd that does
    not answer: a stand-in that takes freezerd's bus name and holds every call."""
    from jeepney import HeaderFields, MessageType
    from jeepney.bus_messages import message_bus
    from jeepney.io.blocking import open_dbus_connection

    what = 'SIGINT during the catch-up after a restart'
    with ft.Daemon(bus, sc.root) as d:
        p = start_watch(bus, TRIGGERS[:1], '600')
        d.stop()
    try:
        with open_dbus_connection(bus.address) as conn:
            reply = conn.send_and_get_reply(message_bus.RequestName(ft.BUS_NAME), timeout=ft.DEFAULT_TIMEOUT)
            ft.check_equal(reply.body[0], 1, 'the stand-in owns freezerd\'s bus name')
            deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
            while True:  # until watch waits for the stand-in's answer to its trigger
                left = deadline - time.monotonic()
                if left <= 0:
                    ft.fail(f'{what}: watch did not add its trigger again')
                msg = conn.receive(timeout=left)
                if msg.header.message_type == MessageType.method_call and \
                        msg.header.fields.get(HeaderFields.member) == 'AddPressureTrigger':
                    break
            p.send_signal(signal.SIGINT)
            # The call would wait for 10 min.
            status, lines = wait_exit(p, what, ft.DEFAULT_TIMEOUT)
            out = p.stdout.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    ft.check_equal(status, 0, f'{what}: exit status 0')
    ft.check(b'freezerd exited' in out and b'freezerd started' not in out and lines == [],
             f'{what}: the exited line, not the started one of the unfinished catch-up, no error', (out, lines))


def stopped(pid):
    """Whether pid is stopped (state T)."""
    st = ft.proc_state(pid)
    return st is not None and st.state == 'T'


def watch_stopping(bus):
    """freezectl-test-hooks watch /g, which stops itself (SIGSTOP) before each watching
    line, with SIGINT blocked for its loop (FREEZECTL_TEST_STOP_BEFORE_WATCHING)."""
    hooks = os.environ.get('FREEZECTL_HOOKS_BIN') or os.path.join(ft.BUILDDIR, 'client', 'freezectl-test-hooks')
    if not os.access(hooks, os.X_OK):
        ft.fail(f'{hooks} is missing (a build with -Dtests=true makes it)')
    env = dict(os.environ, FREEZECTL_TEST_STOP_BEFORE_WATCHING='1')
    return subprocess.Popen([hooks, f'--address={bus.address}', 'watch', '/g', TRIGGERS[0]], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def interrupt_stopped(p, what, where):
    """Once watch p stopped itself (before the watching line where says), SIGINT, which
    stays pending, then SIGCONT: its exit status, stderr lines and stdout."""
    ft.wait_for(lambda: stopped(p.pid) or p.poll() is not None, poll=0.05,
                what=f'freezectl watch to stop before its watching line{where}')
    p.send_signal(signal.SIGINT)
    p.send_signal(signal.SIGCONT)
    status, lines = wait_exit(p, what, ft.DEFAULT_TIMEOUT)
    return status, lines, p.stdout.read()


def run_pending(bus):
    """SIGINT that comes just before the watching line, once watch blocked it for its
    loop: freezectl-test-hooks stops itself there (FREEZECTL_TEST_STOP_BEFORE_WATCHING),
    the signal sent meanwhile stays pending."""
    what = 'SIGINT pending before the watching line'
    p = watch_stopping(bus)
    try:
        status, lines, out = interrupt_stopped(p, what, '')
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    ft.check_equal(status, 0, f'{what}: exit status 0')
    ft.check(out == b'' and lines == [], f'{what}: no watching line (a script takes it for "ready"), no error',
             (out, lines))


def run_pending_restart(bus, sc):
    """SIGINT pending at the watching line watch prints again once a restarted freezerd
    took its trigger again: as at the start, exit 0 without the line."""
    what = 'SIGINT pending before the watching line after a restart'
    p = None
    try:
        with ft.Daemon(bus, sc.root) as d:
            p = watch_stopping(bus)
            ft.wait_for(lambda: stopped(p.pid) or p.poll() is not None, poll=0.05,
                        what='freezectl watch to stop before its first watching line')
            p.send_signal(signal.SIGCONT)
            sel = selectors.DefaultSelector()
            sel.register(p.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
            first = b''
            while not first.endswith(b'\n'):
                if not sel.select(deadline - time.monotonic()):
                    ft.fail(f'{what}: no first watching line')
                chunk = os.read(p.stdout.fileno(), 4096)
                if not chunk:
                    ft.fail(f'{what}: watch exited ({p.wait()}): {p.stderr.read()!r}')
                first += chunk
            sel.close()
            ft.check(b'watching' in first, f'{what}: the first watching line', first)
            d.stop()
        with ft.Daemon(bus, sc.root):
            status, lines, out = interrupt_stopped(p, what, ' after the restart')
    finally:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()
    ft.check_equal(status, 0, f'{what}: exit status 0')
    ft.check(b'freezerd exited' in out and b'watching' not in out and lines == [],
             f'{what}: the exited line, no second watching line (it printed one, then ended), no error',
             (out, lines))


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl', 'psi')
    with ft.Scratch('core-freezectl-watch-exit') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        with ft.Daemon(bus, sc.root) as d:
            run(bus, d)
            run_pending(bus)
        run_catch_up(bus, sc)
        run_pending_restart(bus, sc)


if __name__ == '__main__':
    ft.run(test)
