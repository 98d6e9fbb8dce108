#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""tests/demo.sh, the README's "Try it" command, does what the README says and
leaves nothing behind: no process, no cgroup, no temporary directory; also when
it is interrupted (^C: SIGINT to its process group).

Each run is a session of its own, so that whatever it left running is found by
its session id.

  1. A whole run: exit 0, the states the README's tour shows (/demo/app2
     frozen-by-parent under /demo, /demo/app1 still frozen after /demo's thaw,
     all running at the end), the kernel's cgroup.events of /demo/app1 on one
     line with no trailing space ("kernel: populated 1 frozen 1"), nothing left.
  2. SIGTERM (kill PID, timeout(1)) to demo.sh while freezerd starts (a
     stand-in freezerd that never gets ready): nothing left.  Before, the
     READY=1 listener, which the signal did not reach, stayed for its 20 s.
  3. ^C while two sleepers of /demo/app2 have not joined their group yet (an
     `sh` first in PATH holds them until the demo's cleanup has killed the
     groups): nothing left.  Before, the cleanup killed the groups once, and
     the late sleepers joined before its rmdir: they kept running, the groups
     stayed (rmdir: Device or resource busy)."""

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

DEMO = os.path.join(ft.SRCDIR, 'tests', 'demo.sh')


def session_pids(sid):
    """The processes of session sid (zombies included: not yet reaped is not gone)."""
    pids = []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            # Bytes: a task's name need not be UTF-8 (other tests name
            # theirs so), and this looks at every process of the machine.
            with open(f'/proc/{name}/stat', 'rb') as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b')') + 2:].split()
        if int(fields[3]) == sid:
            pids.append(int(name))
    return pids


def describe(pids):
    out = []
    for pid in pids:
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as f:
                cmdline = f.read().replace(b'\0', b' ').decode(errors='replace').strip()
            out.append(f'{pid} {cmdline}')
        except OSError:
            pass
    return '; '.join(out)


class Demo:
    """tests/demo.sh BUILD in a session of its own; cleans up whatever it left."""

    def __init__(self, build, env=None):
        self.build = build
        self.env = env
        self.output = ''

    def __enter__(self):
        # Its temporary directory goes below one of ours, removed whatever it left.
        self.tmpdir = tempfile.mkdtemp(prefix='freezerd-test-demo-')
        env = dict(self.env if self.env is not None else os.environ, TMPDIR=self.tmpdir)
        # Its output goes to a file: a process it left running would hold a pipe open.
        self.out = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([DEMO, self.build], stdin=subprocess.DEVNULL, stdout=self.out,
                                     stderr=subprocess.STDOUT, start_new_session=True, env=env)
        self.root = os.path.join(ft.cgroup2_mount(), f'freezerd-demo-{self.proc.pid}')
        return self

    def wait(self, timeout=6 * ft.DEFAULT_TIMEOUT):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            ft.fail(f'demo.sh did not end within {timeout} s')
        self.out.seek(0)
        self.output = self.out.read().decode(errors='replace')
        print(self.output, end='', flush=True)
        return self.proc.returncode

    def leftovers(self):
        return session_pids(self.proc.pid)

    def check_nothing_left(self, what):
        # A late sleeper that found its group gone is on its way out: wait for the
        # session to empty, up to a deadline (a process left running never does).
        # No event says so: look again every 50 ms.
        ft.wait_for(lambda: not self.leftovers(), timeout=ft.DEFAULT_TIMEOUT, poll=0.05,
                    what=f'{what}: the processes demo.sh started to end ({describe(self.leftovers())})')
        ft.check(True, f'{what}: no process of demo.sh is left')
        ft.check(not os.path.exists(self.root), f'{what}: its cgroup {self.root} is removed')
        ft.check_equal(os.listdir(self.tmpdir), [], f'{what}: its temporary directory is removed')

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        for pid in self.leftovers():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in ft.kill_cgroup_tree(self.root):
            print(f'warning: {p}', file=sys.stderr)
        self.out.close()
        shutil.rmtree(self.tmpdir, ignore_errors=True)
        return False


def whole_run():
    with Demo(ft.BUILDDIR) as d:
        ft.check_equal(d.wait(), 0, 'demo.sh exits 0')
        trees = d.output.split('freezectl --address=$ADDR tree\n')
        ft.check('app2 (frozen-by-parent)' in trees[2] and 'demo (frozen)' in trees[2],
                 'after the Freeze of /demo, /demo is frozen and /demo/app2 frozen-by-parent', trees[2])
        ft.check('app1 (frozen)' in trees[3] and 'app2 (running)' in trees[3],
                 'after the Thaw of /demo, /demo/app1 stays frozen, /demo/app2 runs', trees[3])
        ft.check(trees[4].count('(running)') == 4, 'at the end every group runs', trees[4])
        kernel = [line for line in d.output.splitlines() if line.startswith('kernel: ')]
        ft.check_equal(kernel, ['kernel: populated 1 frozen 1'],
                       'the kernel\'s cgroup.events of the frozen /demo/app1, on one line, no trailing space')
        d.check_nothing_left('a whole run')


def interrupted_start(tmp):
    # A build whose freezerd never gets ready: demo.sh waits for READY=1 meanwhile.
    build = os.path.join(tmp, 'build')
    os.makedirs(os.path.join(build, 'daemon'))
    os.makedirs(os.path.join(build, 'client'))
    os.symlink(os.path.abspath(ft.FREEZECTL_BIN), os.path.join(build, 'client', 'freezectl'))
    stand_in = os.path.join(build, 'daemon', 'freezerd')
    with open(stand_in, 'w') as f:
        f.write(f'#!/bin/sh\ntouch {tmp}/started\nexec sleep 600\n')
    os.chmod(stand_in, 0o755)
    started = os.path.join(tmp, 'started')
    with Demo(build) as d:
        ft.loop().watch(tmp, ft.Inotify.IN_CREATE)
        ft.wait_for(lambda: os.path.exists(started), timeout=3 * ft.DEFAULT_TIMEOUT, what='the stand-in freezerd to start')
        os.kill(d.proc.pid, signal.SIGTERM)
        ft.check_equal(d.wait(), 143, 'demo.sh stopped (SIGTERM) while freezerd starts exits 143')
        d.check_nothing_left('SIGTERM while freezerd starts')


def interrupted_late_sleepers(tmp):
    # An sh first in PATH that holds the sleepers of /demo/app2 (spawn() runs
    # `sh -c '... exec sleep' sh GROUP`) until the gate's lock is released.
    bin_dir = os.path.join(tmp, 'bin')
    os.mkdir(bin_dir)
    gate = os.path.join(tmp, 'gate')
    with open(os.path.join(bin_dir, 'sh'), 'w') as f:
        f.write('#!/bin/bash\n'
                'case "${!#}" in\n'
                f'*/demo/app2) touch {tmp}/held.$$; flock -s {gate} true ;;\n'
                'esac\n'
                'exec /bin/sh "$@"\n')
    os.chmod(os.path.join(bin_dir, 'sh'), 0o755)
    gate_fd = os.open(gate, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(gate_fd, fcntl.LOCK_EX)
        env = dict(os.environ, PATH=bin_dir + ':' + os.environ.get('PATH', '/usr/bin:/bin'))
        with Demo(ft.BUILDDIR, env=env) as d:
            app1 = os.path.join(d.root, 'demo', 'app1')
            ft.loop().watch(tmp, ft.Inotify.IN_CREATE)
            ft.wait_for(lambda: len([n for n in os.listdir(tmp) if n.startswith('held.')]) == 2, timeout=3 * ft.DEFAULT_TIMEOUT,
                        what='the two sleepers of /demo/app2 to be held')

            def app1_full():
                try:
                    with open(os.path.join(app1, 'cgroup.procs')) as f:
                        return len(f.read().split()) == 3
                except OSError:
                    return False
            # Each joins by a write of its own, which no event reports here.
            ft.wait_for(app1_full, timeout=3 * ft.DEFAULT_TIMEOUT, poll=0.01, what='the three sleepers of /demo/app1 to be in their group')
            events = os.path.join(d.root, 'cgroup.events')
            ft.loop().watch(events)
            os.killpg(d.proc.pid, signal.SIGINT)

            def killed():
                try:
                    with open(events) as f:
                        return 'populated 0' in f.read()
                except OSError:
                    return True  # removed already
            ft.wait_for(killed, timeout=3 * ft.DEFAULT_TIMEOUT, what="demo.sh's cleanup to kill its groups")
            os.close(gate_fd)  # the held sleepers go on: they join /demo/app2 now, if it is still there
            gate_fd = -1
            ft.check_equal(d.wait(), 130, 'demo.sh interrupted with sleepers not yet in their group exits 130')
            d.check_nothing_left('^C before two sleepers joined their group')
    finally:
        if gate_fd >= 0:
            os.close(gate_fd)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl', 'busctl')
    whole_run()
    with tempfile.TemporaryDirectory(prefix='freezerd-test-demo-') as tmp:
        interrupted_start(tmp)
    with tempfile.TemporaryDirectory(prefix='freezerd-test-demo-') as tmp:
        interrupted_late_sleepers(tmp)


if __name__ == '__main__':
    ft.run(test)
