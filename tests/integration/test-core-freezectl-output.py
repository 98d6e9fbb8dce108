#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezectl's standard output failing: every command says so and exits 1.

  /g   (no process)

Checks:
  * --help and --version with standard output on /dev/full: exit 1, one line on
    stderr "cannot write output" (--help exited 0 in silence: its text fills the
    stdio buffer, and the write that failed inside printf() left nothing for the
    final fflush() to fail on; --version exited 1 in silence).
  * list and --json freeze with standard output on /dev/full: exit 1, one line
    naming ENOSPC.
  * watch (text and --json) with SIGPIPE ignored (as systemd's services have it)
    and a pipe whose reader has gone: once an event comes (a freeze of /g), it
    exits 1 with one line "cannot write output: Broken pipe" (it ran on for ever,
    printing to nobody, and said "Resource temporarily unavailable" when it was
    finally stopped)."""

import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def freezectl_to_full(bus, *args):
    with open('/dev/full', 'w') as full:
        try:
            return subprocess.run([ft.FREEZECTL_BIN, f'--address={bus.address}', *args], stdout=full,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                  timeout=ft.DEFAULT_TIMEOUT)
        except subprocess.TimeoutExpired:
            ft.fail(f'freezectl {" ".join(args)} >/dev/full did not finish in time')


def check_full(bus, args, words):
    r = freezectl_to_full(bus, *args)
    lines = r.stderr.splitlines()
    what = f'freezectl {" ".join(args)} >/dev/full'
    ft.check_equal(r.returncode, 1, f'{what}: exit status 1')
    ft.check(len(lines) == 1 and lines[0].startswith('freezectl: cannot write output') and
             all(w in lines[0] for w in words), f'{what}: one line "cannot write output" {" ".join(words)}', lines)


def check_watch_reader_gone(bus, args):
    """watch ARGS with SIGPIPE ignored, its stdout a pipe whose reader closes after the
    watching line."""
    what = f'freezectl {" ".join(args)}'
    rfd, wfd = os.pipe2(os.O_CLOEXEC)
    old = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        p = subprocess.Popen([ft.FREEZECTL_BIN, f'--address={bus.address}', *args], stdout=wfd,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, restore_signals=False)
    finally:
        signal.signal(signal.SIGPIPE, old)
        os.close(wfd)
    try:
        with os.fdopen(rfd, 'rb') as reader:
            first = reader.readline()  # the watching line: the watch is set up
            ft.check(b'watching' in first, f'{what}: the watching line', first)
        ft.freezectl('freeze', '/g', address=bus.address)
        ft.freezectl('thaw', '/g', address=bus.address)
        try:
            rc = p.wait(timeout=ft.DEFAULT_TIMEOUT)
        except subprocess.TimeoutExpired:
            ft.fail(f'{what}: still running with nobody to read its output')
        lines = p.stderr.read().decode(errors='replace').splitlines()
        ft.check_equal(rc, 1, f'{what}: exit status 1 once its output cannot be written')
        ft.check(lines == ['freezectl: cannot write output: Broken pipe'],
                 f'{what}: one line "cannot write output: Broken pipe"', lines)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stderr.close()


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-freezectl-output') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        check_full(bus, ['--help'], [])
        check_full(bus, ['--version'], [])
        with ft.Daemon(bus, sc.root):
            check_full(bus, ['list'], ['No space left on device'])
            check_full(bus, ['--json', 'freeze', '/g'], ['No space left on device'])
            ft.freezectl('thaw', '/g', address=bus.address)
            check_watch_reader_gone(bus, ['watch'])
            check_watch_reader_gone(bus, ['--json', 'watch', '/g'])


if __name__ == '__main__':
    ft.run(test)
