#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezectl pressure and freezectl watch against freezerd and the real kernel.

  /w/hog   CPU hogs, more than there are CPUs (at least 4): cpu "some" pressure
           in /w/hog and, the kernel's accounting being hierarchical, in /w
  /w/nap   one `sleep`: frozen and thawed while watch runs
  /hidden  cgroup.pressure set to 0: the kernel hides its pressure files

Checks:
  * `pressure /w/hog` (text) and `--json pressure /w/hog` equal a direct read of
    cpu/memory/io.pressure taken around the command (totals between the two
    reads, averages equal to one of them: within one 2-s update); so does the
    system's (`pressure`, `--json pressure`) against /proc/pressure/*, with irq
    there exactly where the kernel has /proc/pressure/irq;
  * `pressure /hidden` exits 0 and shows every resource as "not available:"
    with freezerd's reason (cgroup.pressure is 0); --json gives NotSupported
    and the message; `pressure /nope` exits 1 with nothing on stdout;
  * `--json watch /w --trigger=cpu:some:100ms:2s` prints a "watching" line
    naming its trigger (freezerd then holds one more fd), "state" lines for a
    freeze and a thaw of /w/nap, "added"/"removed" for /w/new, and a "pressure"
    event of its trigger on /w within two windows; every line is one JSON
    object with "time" and "event"; on SIGINT it exits 0 and removes its
    trigger itself (freezerd's fd count is back, and freezerd did not have to
    drop the trigger of a disconnected client);
  * text `watch /w` prints "state" lines and exits 0 on SIGTERM;
  * a malformed --trigger exits 2 (a THRESHOLD above WINDOW named with both as
    read: "100" is 100 s, and how to write 100ms), one freezerd refuses exits 1 before the
    "watching" line; watch on a bus without freezerd says so on stderr (it
    said nothing before session 30), prints nothing until one comes (it printed
    its "watching" line at once before session 31) and exits 1 when the bus
    goes away;
  * `watch /w/nap`, `watch --trigger=cpu:some:100ms:2s` and `--json watch /w
    --trigger=...` started on a bus without freezerd each say so on stderr and
    wait (before session 31 the first and the last exited 1 with "cannot watch
    /w...", the second with "cannot add the pressure trigger"); once a freezerd
    comes each starts as if it had been there: its "watching" line first (no
    "freezerd started"), then /w/nap frozen and thawed, a pressure line of each
    trigger within two windows; `watch /nope`, waiting too, then exits 1 with
    "cannot watch /nope" (NoSuchGroup), as at a start with freezerd; freezerd
    restarts: each trigger ends (daemon-exited), and right after "freezerd
    started" a "watching" line names it added again (session 30's watch went on
    without it, saying nothing), and it fires again; the watch without a
    trigger prints no "watching" line again;
  * removing the group of watch's trigger gives "trigger-removed" (reason
    group-removed) before "removed"; freezerd exiting ends a system-wide
    trigger ("path": null) with "daemon-exited"; watch goes on in both cases;
    it then prints a "freezerd" event "exited", and "started" once a new
    freezerd takes the bus name, then a "watching" event naming the
    system-wide trigger added again (which then fires), then exactly one line
    for each change it had not heard of: /w/nap frozen by hand ("state"),
    /offline made ("added"),
    /gone2 removed ("removed") while none ran, and, watch being stopped
    (SIGSTOP) until then, /new2 made and /gone3 removed under the new
    freezerd (each said once, with its Frozen); session 29's
    freezectl printed none of them; then it follows the new freezerd's
    changes (/w/nap thawed) and exits 0 on the signal;
  * a watch started without freezerd prints, when one comes, "watching" and
    then only changes, not an "added" line for each of its groups.
No sleeps: watch's output is read through the harness's event loop with a
deadline, processes are waited for through pidfds."""

import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ERROR_NOT_SUPPORTED = 'org.freezerd.Freezer1.Error.NotSupported'
HOG = ['sh', '-c', 'while :; do :; done']
WINDOW = 2.0                # seconds: the trigger's window (a whole multiple of 2 s)
SLACK = 2.0 * ft.TIMEOUT_MULTIPLIER
RESOURCES = ('cpu', 'memory', 'io')
TIME_RE = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$')
TEXT_LINE_RE = re.compile(r'^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} (\S+) +(.*)$')
NOT_RUNNING = ('freezectl: freezerd is not running (nobody owns org.freezerd.Freezer1 on the bus): watch waits '
               'for it\n')


# ---- pressure files ---------------------------------------------------------------------------------------------

def read_pressure_file(path):
    """{'some': (avg10, avg60, avg300, total), 'full': (...)} of a *.pressure file."""
    out = {}
    with open(path) as f:
        for line in f.read().splitlines():
            kind, *fields = line.split()
            vals = dict(x.split('=') for x in fields)
            out[kind] = (float(vals['avg10']), float(vals['avg60']), float(vals['avg300']), int(vals['total']))
    return out


def read_all(files):
    return {res: read_pressure_file(path) for res, path in files.items()}


def same_avgs(a, b):
    return all(round(x, 2) == round(y, 2) for x, y in zip(a[:3], b[:3]))


def within_one_update(before, got, after, tolerance=0):
    """got (through freezerd) lies between the direct reads before and after: each total
    between theirs (give or take the rounding of the text output), the averages (updated
    every 2 s) equal to one of theirs."""
    for kind, g in got.items():
        b, a = before[kind], after[kind]
        if not b[3] - tolerance <= g[3] <= a[3] + tolerance:
            return False
        if not (same_avgs(g, b) or same_avgs(g, a)):
            return False
    return True


def parse_total(s):
    """A TOTAL of the text table back to (usec, how far the rounding may be off)."""
    if s == '0':
        return 0, 0
    for pattern, scale, tol in ((r'(\d+)us', 1, 0), (r'([\d.]+)ms', 1e3, 50), (r'([\d.]+)s', 1e6, 5e3)):
        m = re.fullmatch(pattern, s)
        if m:
            return float(m.group(1)) * scale, tol
    m = re.fullmatch(r'(\d+)min ([\d.]+)s', s)
    if m:
        return int(m.group(1)) * 60e6 + float(m.group(2)) * 1e6, 5e4
    m = re.fullmatch(r'(\d+)h (\d+)min', s)
    if m:
        return (int(m.group(1)) * 60 + int(m.group(2))) * 60e6, 60e6  # minutes are cut, not rounded
    m = re.fullmatch(r'(\d+)d (\d+)h', s)
    if m:
        return (int(m.group(1)) * 24 + int(m.group(2))) * 3600e6, 3600e6  # hours are cut
    ft.fail(f'unexpected TOTAL {s!r}')


def parse_table(text):
    """freezectl pressure's table: ({resource: {kind: (avg10, avg60, avg300, total)}}, tolerance of the
    totals, {resource: reason} of the rows "not available")."""
    lines = text.splitlines()
    ft.check(lines and lines[0].split() == ['RESOURCE', 'KIND', 'AVG10', 'AVG60', 'AVG300', 'TOTAL'],
             'the table has its header', text)
    rows, unavailable, tol = {}, {}, 0
    for line in lines[1:]:
        m = re.fullmatch(r'(\S+) +not available: (.*)', line)
        if m:
            unavailable[m.group(1)] = m.group(2)
            continue
        res, kind, a10, a60, a300, total = line.split(None, 5)
        usec, t = parse_total(total)
        tol = max(tol, t)
        rows.setdefault(res, {})[kind] = (float(a10), float(a60), float(a300), usec)
    return rows, tol, unavailable


def json_kinds(r):
    return {k: (v['avg10'], v['avg60'], v['avg300'], v['total_usec']) for k, v in r.items()}


def fds(pid):
    """{fd: what it is} of a process."""
    out = {}
    for fd in os.listdir(f'/proc/{pid}/fd'):
        try:
            out[int(fd)] = os.readlink(f'/proc/{pid}/fd/{fd}')
        except OSError:
            pass
    return out


# ---- freezectl watch ---------------------------------------------------------------------------------------------

class Watch:
    """freezectl watch in the background; its output is read line by line through the
    harness's event loop, so that waiting for a line has a deadline and no sleep."""

    def __init__(self, address, *args):
        self.argv = [ft.FREEZECTL_BIN, f'--address={address}', 'watch', *args]
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, preexec_fn=ft._child_setup())
        self.buf = b''
        self.lines = []
        self.eof = False
        self.err = b''
        self.err_eof = False
        os.set_blocking(self.proc.stdout.fileno(), False)
        ft.loop().add_reader(self.proc.stdout, self._on_read)
        os.set_blocking(self.proc.stderr.fileno(), False)
        ft.loop().add_reader(self.proc.stderr, self._on_read_err)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _on_read(self):
        try:
            data = os.read(self.proc.stdout.fileno(), 65536)
        except BlockingIOError:
            return
        if not data:
            self.eof = True
            ft.loop().remove_reader(self.proc.stdout)
            return
        self.buf += data
        *complete, self.buf = self.buf.split(b'\n')
        self.lines += [x.decode() for x in complete]

    def _on_read_err(self):
        """Reads what is there; False at the end of stderr."""
        try:
            data = os.read(self.proc.stderr.fileno(), 65536)
        except BlockingIOError:
            return True
        if not data:
            self.err_eof = True
            ft.loop().remove_reader(self.proc.stderr)
            return False
        self.err += data
        return True

    def events(self):
        return [json.loads(x) for x in self.lines]

    def stderr(self):
        """What watch wrote on stderr so far; all of it once it exited."""
        if self.proc.poll() is not None and not self.err_eof and not self.proc.stderr.closed:
            while self._on_read_err():
                pass
        return self.err.decode(errors='replace')

    def wait_stderr(self, text, what):
        """Wait until stderr holds text; fail at the deadline, or at once if watch exits first."""
        def find():
            if text in self.err.decode(errors='replace'):
                return True
            if self.err_eof and ft._wait_pidfd_exit(self.proc, ft.DEFAULT_TIMEOUT) is not None:
                ft.fail(f'watch exited ({self.proc.returncode}) before {what}: {self.lines} {self.stderr()!r}')
            return None
        return ft.wait_for(find, what=f'{what} from watch (stderr so far: {self.err!r})')

    def wait_line(self, predicate, timeout=None, what='a line'):
        """The first line (or, with parse, event) that predicate accepts; fail at the deadline,
        or at once if watch exits first."""
        def find():
            for x in self.lines:
                if predicate(x):
                    return x
            if self.eof and self.proc.poll() is not None:
                ft.fail(f'watch exited ({self.proc.returncode}) before {what}: {self.lines} {self.stderr()}')
            return None
        return ft.wait_for(find, timeout=timeout, what=f'{what} from watch (so far: {self.lines})')

    def wait_event(self, predicate, timeout=None, what='an event'):
        return json.loads(self.wait_line(lambda x: predicate(json.loads(x)), timeout, what))

    def stop(self, sig, timeout=None):
        """Send sig, wait for the exit (pidfd), read what is left; returns the exit status."""
        self.proc.send_signal(sig)
        status = ft._wait_pidfd_exit(self.proc, ft.DEFAULT_TIMEOUT if timeout is None else timeout)
        if status is None:
            ft.fail(f'watch did not exit after {signal.Signals(sig).name}')
        ft.wait_for(lambda: self.eof, what='the end of watch\'s output')
        return status

    def close(self):
        ft.loop().remove_reader(self.proc.stdout)
        ft.loop().remove_reader(self.proc.stderr)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


# ---- the test ---------------------------------------------------------------------------------------------------

def wait_state(w, path, state):
    """The text line "state PATH STATE" of the watch w."""
    return w.wait_line(lambda x: TEXT_LINE_RE.match(x).groups() == ('state', f'{path} {state}'),
                       what=f'the text line "state {path} {state}"')


def check_pressure_cli(sc, bus):
    group_files = {res: sc.abspath('/w/hog', f'{res}.pressure') for res in RESOURCES}
    system_files = {res: f'/proc/pressure/{res}' for res in RESOURCES}
    have_irq = os.path.exists('/proc/pressure/irq')
    if have_irq:
        system_files['irq'] = '/proc/pressure/irq'

    for label, args, files in (('/w/hog', ['/w/hog'], group_files), ('the system', [], system_files)):
        # text
        before = read_all(files)
        r = ft.freezectl('pressure', *args)
        after = read_all(files)
        rows, tol, unavailable = parse_table(r.stdout)
        ft.check_equal(unavailable, {}, f'pressure of {label}: every resource available')
        ft.check_equal(sorted(rows), sorted(files), f'pressure of {label}: a row for each resource')
        for res in files:
            want_kinds = ['full'] if res == 'irq' else ['some', 'full']
            ft.check_equal(sorted(rows[res]), sorted(want_kinds), f'pressure of {label}: {res} has {want_kinds}')
            ft.check(within_one_update(before[res], rows[res], after[res], tol),
                     f'pressure of {label}: the {res} rows equal {files[res]} within one update',
                     f'{before[res]} / {rows[res]} / {after[res]}')
        # JSON
        before = read_all(files)
        r = ft.freezectl('--json', 'pressure', *args)
        after = read_all(files)
        o = json.loads(r.stdout)
        ft.check_equal(o['path'], args[0] if args else None, f'--json pressure of {label}: path')
        ft.check_equal(sorted(k for k in o if k != 'path'), sorted(files),
                       f'--json pressure of {label}: a key for each resource'
                       + (' (irq included: the kernel has it)' if have_irq and not args else ''))
        for res in files:
            got = json_kinds(o[res])
            ft.check(within_one_update(before[res], got, after[res]),
                     f'--json pressure of {label}: {res} equals {files[res]} within one update',
                     f'{before[res]} / {got} / {after[res]}')
    busy = json.loads(ft.freezectl('--json', 'pressure', '/w/hog').stdout)['cpu']['some']
    ft.check(busy['total_usec'] > 0, 'the CPU hogs have cpu some pressure', busy)

    # hidden, and missing
    r = ft.freezectl('pressure', '/hidden')
    _rows, _tol, unavailable = parse_table(r.stdout)
    ft.check_equal(sorted(unavailable), sorted(RESOURCES), 'pressure /hidden: every resource "not available"')
    ft.check(all('cgroup.pressure is 0' in why for why in unavailable.values()),
             'pressure /hidden: the reason is freezerd\'s (cgroup.pressure is 0)', unavailable)
    o = json.loads(ft.freezectl('--json', 'pressure', '/hidden').stdout)
    ft.check(all(o[res]['error'] == ERROR_NOT_SUPPORTED and 'cgroup.pressure is 0' in o[res]['message']
                 and 'some' not in o[res] for res in RESOURCES),
             '--json pressure /hidden: NotSupported with freezerd\'s message for each resource', o)
    r = ft.freezectl('pressure', '/nope', check=False)
    ft.check(r.returncode == 1 and r.stdout == '' and 'NoSuchGroup' in r.stderr
             and len(r.stderr.splitlines()) == 1,
             'pressure /nope: exit 1, nothing on stdout, one line naming NoSuchGroup', r)


def check_watch_json(sc, bus, d):
    c = d.client
    c.add_match(type='signal', sender='org.freedesktop.DBus', interface='org.freedesktop.DBus',
                member='NameOwnerChanged')
    # freezerd keeps some files open once used: /w's pressure files after a GetAll (watch
    # reads /w through freezer_get_group()), /w/nap's cgroup.freeze after a freeze.  Have
    # that done before counting, so that the count tells about the trigger only.
    c.get_all(ft.group_object('/w'), ft.GROUP_IFACE)
    c.call('Freeze', '/w/nap', 0, 0)
    c.call('Thaw', '/w/nap', 0, 0)
    fds_before = fds(d.pid)
    rec = ft.SignalRecorder(c)

    with Watch(bus.address, '--json', '/w', f'--trigger=cpu:some:100ms:{WINDOW:g}s') as w:
        first = w.wait_event(lambda e: True, what='the first line')
        armed = time.monotonic()
        ft.check(first['event'] == 'watching' and first['path'] == '/w' and len(first['triggers']) == 1,
                 'watch starts with a "watching" line naming /w and its trigger', first)
        trig = first['triggers'][0]
        ft.check_equal((trig['resource'], trig['kind'], trig['threshold_usec'], trig['window_usec']),
                       ('cpu', 'some', 100_000, int(WINDOW * 1e6)), 'the trigger is the one asked for')
        tid = trig['id']
        now = fds(d.pid)
        ft.check(len(now) == len(fds_before) + 1, 'freezerd holds one fd for the session\'s trigger',
                 {k: v for k, v in now.items() if fds_before.get(k) != v})

        # freeze and thaw a group below /w
        c.call('Freeze', '/w/nap', 0, 0)
        e = w.wait_event(lambda e: e['event'] == 'state' and e['path'] == '/w/nap' and e['state'] == 'frozen',
                         what='a state line: /w/nap frozen')
        ft.check(e['frozen'] is True, 'state line: /w/nap frozen, "frozen": true', e)
        c.call('Thaw', '/w/nap', 0, 0)
        e = w.wait_event(lambda e: e['event'] == 'state' and e['path'] == '/w/nap' and e['state'] == 'running',
                         what='a state line: /w/nap running')
        ft.check(e['frozen'] is False, 'state line: /w/nap running, "frozen": false', e)

        # a group appears and goes
        sc.mkdir('/w/new')
        e = w.wait_event(lambda e: e['event'] == 'added' and e['path'] == '/w/new', what='an added line')
        ft.check_equal(e['state'], 'running', 'added line: /w/new running')
        sc.rmdir('/w/new')
        w.wait_event(lambda e: e['event'] == 'removed' and e['path'] == '/w/new', what='a removed line')
        ft.check(True, 'removed line: /w/new')

        # the trigger fires: the hogs stall all the time
        e = w.wait_event(lambda e: e['event'] == 'pressure', what='a pressure line',
                         timeout=max(0.0, armed + 2 * WINDOW + SLACK - time.monotonic()))
        direct = read_pressure_file(sc.abspath('/w', 'cpu.pressure'))['some']
        ft.check(e['path'] == '/w' and e['id'] == tid and e['resource'] == 'cpu' and e['kind'] == 'some'
                 and 0 < e['total_usec'] <= direct[3],
                 'pressure line of the trigger on /w within two windows, its total no later than now', e)
        ft.check(all(isinstance(e[k], (int, float)) for k in ('avg10', 'avg60', 'avg300')),
                 'pressure line: the averages are numbers', e)

        status = w.stop(signal.SIGINT)
        ft.check_equal(status, 0, 'watch exits 0 on SIGINT')
        ft.check_equal(w.stderr(), '', 'watch wrote nothing on stderr')
        events = w.events()
        ft.check(all(set(x) >= {'time', 'event'} and TIME_RE.match(x['time']) for x in events),
                 'every line is one JSON object with an RFC 3339 UTC "time" and an "event"', events)
        ft.check(all(x['path'] == '/w' or x['path'].startswith('/w/') for x in events),
                 'watch /w reports only /w and below', events)
        ft.check(not any(x['event'] == 'trigger-removed' for x in events), 'the trigger did not end by itself')

    # watch's connection is the one that came and went since it started
    def came(s):
        return s.member == 'NameOwnerChanged' and s.body[0].startswith(':') and not s.body[1] and s.body[2]
    names = {s.body[0] for s in rec.signals if came(s)}
    ft.check_equal(len(names), 1, 'watch had one bus connection')
    ft.wait_for(lambda: any(s.member == 'NameOwnerChanged' and s.body[0] in names and not s.body[2]
                            for s in rec.signals), what='the NameOwnerChanged of watch\'s going')
    c.manager_property('Version')  # freezerd got the same NameOwnerChanged before this call
    # The watcher thread closes a removed trigger's fd a moment after the removal is
    # answered (a grace period, up to 17 ms under load; README, "Pressure"): looked at
    # at once, the fd was sometimes still open on a loaded machine.
    try:
        ft.wait_for(lambda: len(fds(d.pid)) == len(fds_before), timeout=5 * ft.TIMEOUT_MULTIPLIER, poll=0.01,
                    what='freezerd\'s fd count back')
    except ft.TestFailure:
        pass
    now = fds(d.pid)
    ft.check(len(now) == len(fds_before), 'watch left no trigger behind: freezerd\'s fd count is back',
             ({k: v for k, v in now.items() if fds_before.get(k) != v},
              {k: v for k, v in fds_before.items() if now.get(k) != v}))
    ft.check('dropping its' not in d.log(),
             'watch removed its trigger itself (freezerd did not drop the trigger of a disconnected client)',
             [x for x in d.log().splitlines() if 'dropping its' in x])


def check_watch_text(bus, d):
    with Watch(bus.address, '/w') as w:
        first = w.wait_line(lambda x: True, what='the first line')
        m = TEXT_LINE_RE.match(first)
        ft.check(m and m.group(1) == 'watching' and m.group(2) == '/w', 'text watch starts with "watching /w"',
                 first)
        d.client.call('Freeze', '/w/nap', 0, 0)
        w.wait_line(lambda x: (lambda m: m and m.groups() == ('state', '/w/nap frozen'))(TEXT_LINE_RE.match(x)),
                    what='the text line "state /w/nap frozen"')
        ft.check(True, 'text watch: "TIME state /w/nap frozen"')
        d.client.call('Thaw', '/w/nap', 0, 0)
        w.wait_line(lambda x: (lambda m: m and m.groups() == ('state', '/w/nap running'))(TEXT_LINE_RE.match(x)),
                    what='the text line "state /w/nap running"')
        ft.check_equal(w.stop(signal.SIGTERM), 0, 'text watch exits 0 on SIGTERM')


def check_watch_errors(sc, bus, d):
    r = ft.freezectl('watch', '/w', '--trigger=cpu:sometimes:100ms:2s', check=False)
    ft.check(r.returncode == 2 and r.stdout == '' and 'invalid trigger' in r.stderr,
             'a malformed --trigger: exit 2', r)
    # THRESHOLD and WINDOW as they were read: a number without a unit is seconds.
    for spec, says in (('cpu:some:100:2s', "THRESHOLD 1min 40s is above WINDOW 2s (a number without a unit is "
                                           "seconds: for milliseconds write 100ms)"),
                       ('cpu:some:3s:2s', 'THRESHOLD 3s is above WINDOW 2s'),
                       ('cpu:some:0:2s', 'THRESHOLD is 0 (it must be above 0 and at most WINDOW)')):
        r = ft.freezectl('watch', '/w', f'--trigger={spec}', check=False)
        ft.check_equal((r.returncode, r.stdout, r.stderr),
                       (2, '', f"freezectl: invalid trigger '{spec}': {says} (see --help)\n"),
                       f'--trigger={spec}: the values as read')
    r = ft.freezectl('pressure', '--trigger=cpu:some:100ms:2s', check=False)
    ft.check(r.returncode == 2 and '--trigger applies only to watch' in r.stderr, '--trigger is for watch only', r)
    # The earlier triggers' fds closed (by freezerd's watcher thread) before the count.
    ft.wait_pressure_trigger_fds(d.pid, 0, 'the earlier triggers\' fds closed')
    fds = ft.fd_count(d.pid)
    r = ft.freezectl('watch', '/w', '--trigger=cpu:some:100ms:2s', '--trigger=cpu:some:100ms:3s', check=False)
    ft.check(r.returncode == 1 and r.stdout == '' and 'whole multiple of 2s' in r.stderr,
             'a trigger freezerd refuses: exit 1 with its message, before any line', r)
    # In the duration given, not in microseconds alone (it read "The window (3000000 usec)").
    ft.check('cpu:some:100ms:3s' in r.stderr and 'The window, 3s (3000000 usec), is not a whole multiple' in r.stderr,
             'the refusal names the window as given, 3s', r.stderr)
    d.client.manager_property('Version')
    # Its fd is closed by the watcher thread, after the main loop dropped the trigger.
    ft.wait_for(lambda: ft.fd_count(d.pid) == fds, timeout=5 * ft.TIMEOUT_MULTIPLIER, poll=0.02,
                what=f"freezerd's fd count back to {fds}")
    ft.check(True, 'the trigger added before the refused one was removed')

    # The bus goes away: watch exits 1 (a bus of its own, without freezerd).
    with ft.Bus() as bus2:
        with Watch(bus2.address) as w:
            w.wait_stderr(NOT_RUNNING, 'the line saying that no freezerd runs')
            ft.check(w.lines == [] and w.proc.poll() is None,
                     'watch on a bus without freezerd says so on stderr, prints nothing and waits', w.lines)
            # A first freezerd comes: watch starts as if it had been there ("watching", no
            # "freezerd started" line); its groups are not news (no "added" line for each, as
            # the first fix of the catch-up printed), its changes are.
            with ft.Daemon(bus2, sc.root) as d3:
                first = w.wait_line(lambda x: True, what='the first line')
                ft.check(TEXT_LINE_RE.match(first).groups() == ('watching', 'all groups'),
                         'watch started without freezerd prints "watching all groups" once one comes', first)
                d3.client.call('Freeze', '/w/nap', 0, 0)
                wait_state(w, '/w/nap', 'frozen')
                d3.client.call('Thaw', '/w/nap', 0, 0)
            w.wait_line(lambda x: TEXT_LINE_RE.match(x).groups() == ('freezerd', 'exited'),
                        what='a freezerd exited line')
            events = [TEXT_LINE_RE.match(x).group(1) for x in w.lines]
            ft.check(events[:2] == ['watching', 'state'] and 'added' not in events
                     and events.count('freezerd') == 1,
                     'watch started without freezerd: "watching", then only the changes (no "freezerd started" '
                     'line, no "added" line for the groups the first freezerd has)', w.lines)
            bus2.proc.kill()
            bus2.proc.wait()
            status = ft._wait_pidfd_exit(w.proc, ft.DEFAULT_TIMEOUT)
            err = w.stderr()
            ft.check(status == 1 and 'lost the connection to the bus' in err,
                     'watch exits 1 when the bus goes away', (status, err))
            ft.check(err.startswith(NOT_RUNNING), 'watch said at its start, on stderr, that no freezerd ran', err)


def check_watch_waits(sc):
    """watch PATH, watch --trigger and --json watch PATH --trigger started on a bus without
    freezerd: each says so on stderr and waits; once one comes each starts as if it had been
    there, then freezerd restarts and the triggers are added again."""
    trig = f'--trigger=cpu:some:100ms:{WINDOW:g}s'
    trig_text = rf'cpu some 100ms per {WINDOW:g}s'

    def text(w):
        return [TEXT_LINE_RE.match(x).groups() for x in w.lines]

    def wait_after(w, i, predicate, what):
        """The index and line of the first line after line i (-1: any) that predicate accepts."""
        w.wait_line(lambda x: any(predicate(y) for y in w.lines[i + 1:]), what=what)
        return next((k, y) for k, y in enumerate(w.lines) if k > i and predicate(y))

    def is_text(x, event, rest):
        return TEXT_LINE_RE.match(x).groups() == (event, rest)

    def is_json(x, **fields):
        e = json.loads(x)
        return all(e.get(k) == v for k, v in fields.items())

    def text_watching(line, label, path):
        m = TEXT_LINE_RE.match(line)
        t = m and re.fullmatch(rf'{path}; trigger (\d+): {trig_text}( \(system-wide\))?', m.group(2))
        ft.check(m and m.group(1) == 'watching' and t and bool(t.group(2)) == (path == 'all groups'),
                 f'{label}: "watching {path}" naming its trigger', line)
        return int(t.group(1))

    def json_watching(e, label):
        ft.check(e['event'] == 'watching' and e['path'] == '/w' and len(e['triggers']) == 1
                 and (e['triggers'][0]['resource'], e['triggers'][0]['kind'], e['triggers'][0]['threshold_usec'],
                      e['triggers'][0]['window_usec']) == ('cpu', 'some', 100_000, int(WINDOW * 1e6)),
                 f'{label}: a watching event naming /w and its trigger', e)
        return e['triggers'][0]['id']

    def fires(wt, wj, tid_t, tid_j, after_t, after_j, armed, label):
        """The trigger of each fires within two windows of armed, after line after_*."""
        timeout = max(0.0, armed + 2 * WINDOW + SLACK - time.monotonic())
        wt.wait_line(lambda x: any(TEXT_LINE_RE.match(y).group(1) == 'pressure'
                                   and TEXT_LINE_RE.match(y).group(2).startswith(f'system cpu some (trigger {tid_t}): ')
                                   for y in wt.lines[after_t + 1:]),
                     timeout=timeout, what=f'a pressure line of trigger {tid_t}')
        ft.check(True, f'watch --trigger: its trigger fires {label}')
        timeout = max(0.0, armed + 2 * WINDOW + SLACK - time.monotonic())
        wj.wait_line(lambda x: any(is_json(y, event='pressure', path='/w', id=tid_j) for y in wj.lines[after_j + 1:]),
                     timeout=timeout, what=f'a pressure event of trigger {tid_j}')
        ft.check(True, f'--json watch /w --trigger: its trigger fires {label}')

    with ft.Bus() as bus2, Watch(bus2.address, '/w/nap') as wp, Watch(bus2.address, trig) as wt, \
            Watch(bus2.address, '--json', '/w', trig) as wj, Watch(bus2.address, '/nope') as wn:
        watches = ((wp, 'watch /w/nap'), (wt, 'watch --trigger'), (wj, '--json watch /w --trigger'))
        for w, label in watches + ((wn, 'watch /nope'),):
            w.wait_stderr(NOT_RUNNING, f'{label}: the line saying that no freezerd runs')
            ft.check(w.lines == [] and w.proc.poll() is None,
                     f'{label} without freezerd: says so on stderr, prints nothing and waits (before session 31 '
                     'it exited 1)',
                     (w.lines, w.proc.returncode))

        with ft.Daemon(bus2, sc.root) as d3:
            # A PATH that freezerd does not have: the error it is at the start.
            status = ft._wait_pidfd_exit(wn.proc, ft.DEFAULT_TIMEOUT)
            ft.wait_for(lambda: wn.eof, what='the end of watch /nope\'s output')
            err = wn.stderr()
            ft.check(status == 1 and wn.lines == [] and err.startswith(NOT_RUNNING)
                     and err[len(NOT_RUNNING):].startswith('freezectl: cannot watch /nope: ')
                     and 'NoSuchGroup' in err and len(err.splitlines()) == 2,
                     'watch /nope: once freezerd comes, "cannot watch /nope" (NoSuchGroup) and exit 1', (status, err))
            first = wp.wait_line(lambda x: True, what='the first line')
            ft.check(TEXT_LINE_RE.match(first).groups() == ('watching', '/w/nap'),
                     'watch /w/nap: "watching /w/nap" once a freezerd comes', first)
            tid_t = text_watching(wt.wait_line(lambda x: True, what='the first line'), 'watch --trigger',
                                  'all groups')
            tid_j = json_watching(wj.wait_event(lambda e: True, what='the first line'), '--json watch /w --trigger')
            armed = time.monotonic()
            d3.client.call('Freeze', '/w/nap', 0, 0)
            wait_state(wp, '/w/nap', 'frozen')
            d3.client.call('Thaw', '/w/nap', 0, 0)
            wait_state(wp, '/w/nap', 'running')
            ft.check(text(wp)[0] == ('watching', '/w/nap') and {x[0] for x in text(wp)[1:]} == {'state'},
                     'watch /w/nap follows /w/nap once freezerd comes: /w/nap frozen and thawed (and no '
                     '"freezerd started" line)', wp.lines)
            fires(wt, wj, tid_t, tid_j, 0, 0, armed, 'once freezerd comes')
            ft.check('freezerd' not in [x[0] for x in text(wt)] and 'freezerd' not in [e['event'] for e in wj.events()],
                     'no "freezerd started" line from the watches with a trigger either', (wt.lines, wj.lines))

            # freezerd restarts: the triggers end with it, and are added again once one is back
            ft.check_equal(d3.stop(), 0, 'freezerd stops')
        wt.wait_line(lambda x: TEXT_LINE_RE.match(x).groups()[0] == 'trigger-removed'
                     and TEXT_LINE_RE.match(x).group(2) == f'system cpu some (trigger {tid_t}): daemon-exited',
                     what='a trigger-removed line (daemon-exited)')
        wj.wait_event(lambda e: e['event'] == 'trigger-removed' and (e['id'], e['reason']) == (tid_j, 'daemon-exited'),
                      what='a trigger-removed event (daemon-exited)')
        ft.check(True, 'freezerd\'s exit ends the triggers (daemon-exited)')
        with ft.Daemon(bus2, sc.root) as d4:
            i_p, _ = wait_after(wp, -1, lambda x: is_text(x, 'freezerd', 'started'), 'a freezerd started line')
            i_t, _ = wait_after(wt, -1, lambda x: is_text(x, 'freezerd', 'started'), 'a freezerd started line')
            i_j, _ = wait_after(wj, -1, lambda x: is_json(x, event='freezerd', status='started'),
                                'a freezerd started event')
            new_t = text_watching(wait_after(wt, i_t, lambda x: True, 'the line after started')[1],
                                  'watch --trigger, next after "freezerd started"', 'all groups')
            new_j = json_watching(json.loads(wait_after(wj, i_j, lambda x: True, 'the line after started')[1]),
                                  '--json watch /w --trigger, next after "freezerd started"')
            armed = time.monotonic()
            fires(wt, wj, new_t, new_j, i_t + 1, i_j + 1, armed, 'again under the new freezerd')
            d4.client.call('Freeze', '/w/nap', 0, 0)
            wait_after(wp, i_p, lambda x: is_text(x, 'state', '/w/nap frozen'), '/w/nap frozen, from the new freezerd')
            d4.client.call('Thaw', '/w/nap', 0, 0)
            wait_after(wp, i_p, lambda x: is_text(x, 'state', '/w/nap running'),
                       '/w/nap running, from the new freezerd')
            ft.check({x[0] for x in text(wp)[i_p + 1:]} == {'state'},
                     'watch /w/nap (no trigger): after "freezerd started", no watching line again', wp.lines)
            for w, label in watches:
                ft.check_equal(w.stop(signal.SIGINT), 0, f'{label} exits 0 on SIGINT')
                ft.check_equal(w.stderr(), NOT_RUNNING, f'{label}: nothing more on stderr')


def known(client, path):
    """Whether freezerd has a group at path."""
    try:
        client.call('GetGroup', path)
    except ft.DBusError:
        return False
    return True


def check_trigger_ends(sc, bus, d):
    # the group of the trigger goes: "trigger-removed" (group-removed), then "removed"
    sc.mkdir('/gone')
    with Watch(bus.address, '--json', '/gone', '--trigger=memory:some:100ms:2s') as w:
        first = w.wait_event(lambda e: True, what='the first line')
        tid = first['triggers'][0]['id']
        sc.rmdir('/gone')
        e = w.wait_event(lambda e: e['event'] == 'trigger-removed', what='a trigger-removed line')
        ft.check_equal((e['path'], e['id'], e['resource'], e['kind'], e['reason']),
                       ('/gone', tid, 'memory', 'some', 'group-removed'),
                       'removing the group ends the trigger: trigger-removed, group-removed')
        w.wait_event(lambda e: e['event'] == 'removed' and e['path'] == '/gone', what='a removed line')
        kinds = [x['event'] for x in w.events()]
        ft.check(kinds.index('trigger-removed') < kinds.index('removed'), 'trigger-removed comes before removed',
                 kinds)
        ft.check_equal(w.stop(signal.SIGINT), 0, 'watch goes on without its trigger, and exits 0 on SIGINT')

    # freezerd goes: a system-wide trigger ends with "daemon-exited", watch goes on
    d.client.record(subscribe=False)  # InterfacesAdded wakes the wait below
    sc.mkdir('/gone2')
    sc.mkdir('/gone3')
    # freezerd has it (woken by the group's InterfacesAdded): watch lists it at its start.
    ft.wait_for(lambda: known(d.client, '/gone2') and known(d.client, '/gone3'),
                what='freezerd to follow /gone2 and /gone3')
    with Watch(bus.address, '--json', '--trigger=cpu:some:1s:2s') as w:
        first = w.wait_event(lambda e: True, what='the first line')
        ft.check(first['event'] == 'watching' and first['path'] is None and len(first['triggers']) == 1,
                 'watch without PATH: all groups, a system-wide trigger', first)
        tid = first['triggers'][0]['id']
        ft.check_equal(d.stop(), 0, 'freezerd stops')
        e = w.wait_event(lambda e: e['event'] == 'trigger-removed', what='a trigger-removed line')
        ft.check_equal((e['path'], e['id'], e['resource'], e['kind'], e['reason']),
                       (None, tid, 'cpu', 'some', 'daemon-exited'),
                       'freezerd exiting ends the system-wide trigger: trigger-removed, daemon-exited')
        ft.check(w.proc.poll() is None, 'watch goes on while the bus is there')
        e = w.wait_event(lambda e: e['event'] == 'freezerd', what='a freezerd line')
        ft.check_equal(e.get('status'), 'exited', 'watch says freezerd exited')
        # While no freezerd runs: /w/nap frozen by hand, /offline made, /gone2 removed.
        sc.write_freeze('/w/nap', 1)
        ft.wait_for(lambda: sc.frozen('/w/nap'), what='/w/nap frozen by hand')
        sc.mkdir('/offline')
        sc.rmdir('/gone2')
        # watch stopped (SIGSTOP) meanwhile and until the new freezerd has made /new2 and seen
        # /gone3 go: the catch-up's list has them, and any of their InterfacesAdded/Removed
        # queued behind the start must not say them again.
        w.proc.send_signal(signal.SIGSTOP)
        # A freezerd comes back on the bus: watch says so, then what changed meanwhile.
        with ft.Daemon(bus, sc.root) as d2:
            d2.client.record(subscribe=False)  # InterfacesAdded/Removed wake the waits below
            sc.mkdir('/new2')
            sc.rmdir('/gone3')
            ft.wait_for(lambda: known(d2.client, '/new2') and not known(d2.client, '/gone3'),
                        what='freezerd to see /new2 and not /gone3')
            w.proc.send_signal(signal.SIGCONT)
            e = w.wait_event(lambda e: e['event'] == 'freezerd' and e.get('status') == 'started',
                             what='a freezerd started line')
            ft.check(True, 'watch says freezerd started')
            armed = time.monotonic()
            d2.client.call('Thaw', '/w/nap', 0, 0)
            w.wait_event(lambda e: e['event'] == 'state' and e['path'] == '/w/nap' and e['state'] == 'running',
                         what='/w/nap thawed, from the new freezerd')
            events = w.events()
            i = next(k for k, x in enumerate(events) if x['event'] == 'freezerd' and x.get('status') == 'started')
            j = next(k for k, x in enumerate(events) if k > i and x['event'] == 'state' and x['path'] == '/w/nap'
                     and x['state'] == 'running')
            # The trigger freezerd's exit ended is added again: a watching line says so, first.
            again = events[i + 1]
            ft.check(again['event'] == 'watching' and again['path'] is None and len(again['triggers']) == 1
                     and (again['triggers'][0]['resource'], again['triggers'][0]['kind'],
                          again['triggers'][0]['threshold_usec'], again['triggers'][0]['window_usec'])
                     == ('cpu', 'some', 1_000_000, 2_000_000),
                     'next after "started": a watching line, the system-wide trigger added again', again)
            caught_up = [(x['event'], x['path'], x.get('state')) for x in events[i + 2:j] if x['event'] != 'pressure']
            ft.check_equal(sorted(caught_up), [('added', '/new2', 'running'), ('added', '/offline', 'running'),
                                               ('removed', '/gone2', None), ('removed', '/gone3', None),
                                               ('state', '/w/nap', 'frozen')],
                           'then one line for each change while watch had not heard of it, and for nothing else '
                           '(but the trigger\'s pressure lines)')
            st = next(x for x in events[i + 1:] if x['event'] == 'state' and x['path'] == '/w/nap')
            ft.check_equal(st['frozen'], True, 'the catch-up\'s state line of /w/nap says frozen: true')
            tid = again['triggers'][0]['id']
            e = w.wait_event(lambda e: e['event'] == 'pressure' and e['id'] == tid and e in w.events()[i + 2:],
                             what='a pressure line of the trigger added again',
                             timeout=max(0.0, armed + 2 * 2.0 + SLACK - time.monotonic()))
            ft.check(e['path'] is None, 'the trigger added again fires (system-wide)', e)
            ft.check(True, 'watch follows the new freezerd: /w/nap thawed')
            ft.check_equal(w.stop(signal.SIGTERM), 0, 'and exits 0 on SIGTERM')
        text = [x for x in w.lines if json.loads(x)['event'] == 'freezerd']
        ft.check_equal([json.loads(x)['status'] for x in text], ['exited', 'started'],
                       'one freezerd line for the exit, one for the start')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl', 'psi')
    ncpu = os.cpu_count() or 1

    with ft.Scratch('pressure-cli') as sc, ft.Bus() as bus:
        for g in ('/w/hog', '/w/nap', '/hidden'):
            sc.mkdir(g)
        sc.require_pressure('/w')
        with open(sc.abspath('/hidden', 'cgroup.pressure'), 'w') as f:
            f.write('0')
        hogs = [sc.spawn('/w/hog', HOG) for _ in range(max(4, 2 * ncpu))]
        sc.spawn_sleepers('/w/nap', 1)

        with ft.Daemon(bus, sc.root, env={'FREEZERD_LOG_LEVEL': 'debug'}) as d:
            check_pressure_cli(sc, bus)
            check_watch_json(sc, bus, d)
            check_watch_text(bus, d)
            check_watch_errors(sc, bus, d)
            check_watch_waits(sc)
            ft.check(all(p.poll() is None for p in hogs), 'the hogs ran throughout')
            check_trigger_ends(sc, bus, d)  # stops freezerd


ft.run(test)
