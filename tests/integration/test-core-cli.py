#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezerd's command line: usage errors exit 2 with one log line that names the
problem and points to --help, before freezerd touches anything.

Checks, each run with --runtime-dir and --state-dir naming directories that do
not exist yet (and a bus address where nothing listens):
  * an unknown option (--bogus, -x), an option without its argument
    (--address), an argument (extra): exit 2, one line "...; see freezerd
    --help.", naming the option; no getopt message of its own.
  * an empty value for --address=, --cgroup-root=, --config=, --runtime-dir=,
    --state-dir=, and a relative --runtime-dir and --state-dir: exit 2, one
    line naming the option.
  * two bus options (--address= with --system, or with --user): exit 2, one
    line naming both.
  * none of them created the runtime or state directory.
  * --help exits 0 and documents the exit statuses; --version exits 0.  No
    line of --help is wider than 80 columns, the build's default paths
    included (--config=FILE's and --runtime-dir=DIR's pushed theirs past it).
  * The "<N>" priority prefix (here "<3>") only when stderr is the journal:
    $JOURNAL_STREAM names stderr's DEV:INODE (a file here).  Not to a pipe
    without it, nor when it names another file (inherited); it was always
    there, on a terminal too.
  * Off the journal the line says its level: "error: MESSAGE" on a terminal
    (a pty), "TIME error: MESSAGE" (an RFC 3339 local time with microseconds)
    to a pipe or a file; before, it was the message alone."""

import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

NOWHERE = 'unix:path=/nonexistent/bus'


def freezerd(*args, env=None, stderr=None):
    argv = ft.FREEZERD_WRAPPER + [ft.FREEZERD_BIN, *args]
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != 'JOURNAL_STREAM'}
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE if stderr is None else stderr, text=True, env=env,
                           timeout=ft.DEFAULT_TIMEOUT, preexec_fn=ft._child_setup(pdeathsig=signal.SIGKILL))
    except subprocess.TimeoutExpired:
        ft.fail(f'freezerd {" ".join(args)} did not exit')
    return r


def test():
    ft.require('freezerd')
    tmp = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}daemon-{os.getpid()}-cli-')
    try:
        run, state = os.path.join(tmp, 'run'), os.path.join(tmp, 'state')
        dirs = [f'--runtime-dir={run}', f'--state-dir={state}']
        cases = [
            # (arguments, words the one line must contain)
            (['--bogus'], ["'--bogus'"]),
            (['-x'], ["'-x'"]),
            (['--address'], ["'--address'"]),
            (['extra'], ['"extra"']),
            (['--address='], ['--address=']),
            (['--cgroup-root='], ['--cgroup-root=']),
            (['--config='], ['--config=']),
            (['--runtime-dir='], ['--runtime-dir=']),
            (['--state-dir='], ['--state-dir=']),
            (['--runtime-dir=relative'], ['--runtime-dir=', 'relative', 'absolute']),
            (['--state-dir=relative'], ['--state-dir=', 'relative', 'absolute']),
            # Two buses: the last one won, silently (--user --system ran as the system's instance).
            (['--system'], ['--address', '--system', 'give one']),
            (['--user'], ['--address', '--user', 'give one']),
        ]
        for args, words in cases:
            # The bad argument last: it wins over the good ones before it.
            argv = [f'--address={NOWHERE}', *dirs, *args]
            r = freezerd(*argv)
            lines = [x for x in r.stderr.splitlines() if not x.startswith('==')]  # but valgrind's
            what = f'freezerd {" ".join(args)}'
            ft.check_equal(r.returncode, 2, f'{what}: exit status 2')
            ft.check(len(lines) == 1 and re.fullmatch(r'[^<].*; see freezerd --help\.', lines[0]) and
                     all(w in lines[0] for w in words),
                     f'{what}: one line "...; see freezerd --help." naming {" ".join(words)}', lines)
            ft.check_equal(r.stdout, '', f'{what}: nothing on stdout')
            ft.check(not os.path.exists(run) and not os.path.exists(state),
                     f'{what}: no runtime or state directory was created')

        # The priority prefix: only to the journal, which $JOURNAL_STREAM names.
        log = os.path.join(tmp, 'stderr')
        other = os.path.join(tmp, 'other')
        open(other, 'w').close()
        timed = r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}[+-]\d\d:\d\d '
        for name, stream, want in (('stderr', log, r"<3>Invalid option '--bogus'"),
                                   ('another file', other, timed + r"error: Invalid option '--bogus'")):
            with open(log, 'w') as f:
                st = os.stat(stream)
                env = dict(os.environ, JOURNAL_STREAM=f'{st.st_dev}:{st.st_ino}')
                r = freezerd(f'--address={NOWHERE}', *dirs, '--bogus', env=env, stderr=f)
            with open(log) as f:
                lines = [x for x in f.read().splitlines() if not x.startswith('==')]
            ft.check(r.returncode == 2 and len(lines) == 1 and re.match(want, lines[0]),
                     f'$JOURNAL_STREAM naming {name}: the line starts "{want}"', lines)
        r = freezerd(f'--address={NOWHERE}', *dirs, '--bogus')
        lines = [x for x in r.stderr.splitlines() if not x.startswith('==')]
        ft.check(r.returncode == 2 and len(lines) == 1 and
                 re.match(timed + "error: Invalid option '--bogus'", lines[0]), 'to a pipe: "TIME error: MESSAGE"', lines)

        # A terminal: the level, no time (it is read as it comes).
        master, slave = pty.openpty()
        try:
            r = freezerd(f'--address={NOWHERE}', *dirs, '--bogus', stderr=slave)
            os.close(slave)
            slave = -1
            out = b''
            while True:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the pty's other end closed, all read
                    break
                if not chunk:
                    break
                out += chunk
        finally:
            os.close(master)
            if slave >= 0:
                os.close(slave)
        lines = [x for x in out.decode(errors='replace').splitlines() if not x.startswith('==')]
        ft.check(r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: Invalid option '--bogus'"),
                 'to a terminal: "error: MESSAGE", no time', lines)

        r = freezerd('--help')
        ft.check(r.returncode == 0 and 'Exit status:' in r.stdout, '--help exits 0 and documents the exit statuses',
                 (r.returncode, r.stdout[-400:]))
        wide = [line for line in r.stdout.splitlines() if len(line) > 80]
        ft.check(not wide, '--help: no line wider than 80 columns', wide)
        r = freezerd('--version')
        ft.check(r.returncode == 0 and r.stdout.startswith('freezerd '), '--version exits 0', (r.returncode, r.stdout))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    ft.run(test)
