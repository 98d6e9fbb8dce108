#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezectl end to end against freezerd on a private bus.

  /g        (no process)          /g/h   one sleeper    /g/k   two sleepers
  /a-b/c d  (odd characters)      /-odd  (a name starting with "-")
  /s        a task blocked on a FUSE mount that never answers

Checks:
  * `--json status /g` (and of /g/h, "/", "/a-b/c d") parses and every field
    matches the kernel: state (derived from cgroup.freeze of the group and its
    ancestors and cgroup.events frozen), freeze, frozen, populated, descendants
    and frozen_descendants (counted in the cgroup tree), frozen_usec
    (cgroup.stat.local, bracketed by two kernel reads).
  * `freeze /g` exits 0, prints nothing, the kernel says frozen 1 when it
    returns; `--json freeze` prints [{"path", "result": "done"}], the path
    normalized ("g/" as "/g": it was echoed as typed); `thaw` likewise.
  * `list` / `--json list` name every group with its object and state; `tree`
    names every group (indented under its parent) with its state; `--json tree`
    nests every group under its parent, a leaf's empty children printed "[]".
  * A thaw of /g/h under a frozen /g exits 3 (its flag cleared, still frozen),
    plain, --no-wait, --recursive and --recursive --no-wait alike (a plain thaw
    exited 1, as for a failure, and --recursive 0, as for a group that runs);
    thaw /g/h /a-b 3, /a-b thawed; thaw /g/h /nope 1 (a failure wins).  With
    --json, /g/h's object is "done" with "frozen_by": "/g", as thaw --recursive's
    (a plain thaw's said "failed", with FrozenByParent's error).
  * Exit status 1 with one line on stderr naming the path and the error for
    NoSuchGroup, FrozenByParent (exit 3), Timeout (--timeout=300ms --rollback: rolled
    back; without --rollback, freeze, freeze --recursive and --json freeze: the
    flags stay "Without --rollback", not freezerd's bus flag ROLLBACK_ON_TIMEOUT,
    which --json's message keeps; a group /s/ROLLBACK_ON_TIMEOUT keeps its name in
    freezerd's message, with --rollback or without), an unreachable bus, a bus that does not let root in (freeze said
    it "lost the connection"), a bus that drops a batch over its max_message_size
    (it said the bus did not let root in), and a bus address that is none (--address=bogus,
    which said only "Invalid argument"); --json failure objects carry error and
    message.
  * --help says that a Timeout's last sentence on an error line is freezectl's
    (it said the line carries "<message from freezerd>").  --help is filled: no
    line over 80 columns, none in a paragraph ending where the next line's first
    word fits (it had eleven, "(--json keeps freezerd's" a line of its own).
  * `freezectl freeze --help` and `help freeze` print freeze's entries and
    options (not the whole help, as --help did), `help watch` watch's, and
    `help` the whole --help.  -h/--help acts as soon as it is read: `--help
    --bogus` prints the help and exits 0 (it was a usage error), and so does
    `freeze --help --bogus` with freeze's part.
  * Exit status 2 with one line on stderr for an unknown option, a missing
    command, an unknown command, a missing PATH, a bad duration, --timeout=
    with --no-wait, --rollback with --no-wait but for a batch (it was taken in
    silence), an option that takes no argument given one (--no-wait=1: it said
    "invalid option"), help of an unknown command, freeze --except= of a path
    not below PATH (freezerd's InvalidArgs
    exited 1), an irq trigger on a watched PATH, a trigger's THRESHOLD of 0
    or above its WINDOW, its WINDOW outside 500ms..10s, an irq trigger of KIND
    some (freezerd refused them: exit 1).
  * `freeze --timeout=` of "2min 3s", "2min3s" (as status prints durations, and as
    systemd.time(7) takes them), "1min 0.5s", "1 hour", "500ms": exit 0 (the first four
    were usage errors).
  * `freeze /x --except=/x/keep` (text and --json) prints the groups it froze sorted
    by their bytes (/x/C, /x/a, /x/b), as list sorts (it printed freezerd's tree
    order).
  * With no freezerd on the bus, `tree` says "cannot show tree: freezerd is
    not running", as `tree PATH` names its verb (it said "cannot list groups").
  * An argument that starts with one '-' and is no option of a command that takes
    PATHs (`freeze -odd`, `status -odd`; `batch -x` for its FILE): exit 2, the
    line says how to pass it: after "--" (it said only "invalid option '-o'");
    not for a long option (`status --odd`), a mistyped option more likely, nor for
    one before the command (`-x freeze /a`). The hint names the argument that holds
    the letter also when the letter ends it (`freeze -pop`, `freeze /a -xx`).
  * `--no-wait` returns at once while the group is still freezing; `--` allows
    a path starting with "-".
  * SIGINT while the freeze of a 404-byte PATH waits: the line names it as path_q()
    cuts it, "(404 bytes)" and the rest of the line kept (it was cut off at 255 bytes).
  * SIGINT or SIGTERM while `freeze /s` waits: freezectl dies of the signal
    after one line on stderr saying that freezerd goes on with the freeze of
    /s if it was already working on it (and refuses it if it reads it only
    after freezectl left the bus), and /s is still freezing.
  * An error line is written whole in one write(2), stderr a SOCK_SEQPACKET
    socket (one message per write): freezectls sharing a log do not mix their
    lines (session 29's freezectl wrote it byte by byte, 66 writes).
  * --socket= naming the bus's socket: one line saying it is a D-Bus bus,
    served by dbus-daemon, and to use --address= (it asked "is it a bus?",
    after the bus's UnknownMethod), without the bus's trailing newline as \x0a.
  * --socket= naming the bus's socket for `list` (sd-bus, which the bus
    daemon disconnects without Hello): the same line (it said "lost the
    connection to freezerd").
  * the same for the socket of a dbus-daemon --fork, whose listening process
    has exited (freeze, status, list): status and list said only "lost the
    connection to freezerd (its private socket)".
  * freezerd killed (SIGKILL) while `freeze --timeout=60s /s` waits, over the
    private socket with --rollback and over the bus without: exit 1, one line
    saying freezerd stopped or crashed during the freeze of /s and what becomes
    of its flags; never that freezerd goes on, nor that a bus was lost on the
    private socket.  The same for `freeze / --except=...` (libfreezer, not the
    wire), over both: over the bus it said "lost the connection to the bus
    (freezerd left the bus without replying)", and nothing of the freeze.
  * A bus whose reply_timeout (1 s, 3 s under ASan) ends a `freeze --timeout=60s /s` first:
    exit 1, one line saying no reply came and that freezerd goes on with the
    freeze of /s if it was already working on it; /s is still freezing.

Processes live in leaf groups only (see test-core-libfreezer.py: Linux 6.18
may report a group with processes of its own and child cgroups frozen early)."""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ['/', '/-odd', '/a-b', '/a-b/c d', '/g', '/g/h', '/g/k', '/s']


def derive(freeze, e_freeze, frozen):
    if freeze:
        return 'frozen' if frozen else 'freezing'
    if e_freeze:
        return 'frozen-by-parent' if frozen else 'freezing-by-parent'
    return 'thawing' if frozen else 'running'


def ancestors(path):
    parts = [p for p in path.split('/') if p]
    return ['/' + '/'.join(parts[:i]) for i in range(1, len(parts))]


def descendants(path):
    pre = '/' if path == '/' else path + '/'
    return [p for p in GROUPS if p != path and p.startswith(pre)]


def frozen_usec(sc, path):
    try:
        with open(sc.abspath(path, 'cgroup.stat.local')) as f:
            return dict(line.split() for line in f).get('frozen_usec')
    except OSError:
        return None


def kernel_status(sc, path):
    freeze = bool(sc.read_freeze(path)) if path != '/' else False
    ev = sc.read_events(path)
    e_freeze = any(sc.read_freeze(a) for a in ancestors(path))
    return {'path': path, 'state': derive(freeze, e_freeze, ev['frozen'] == 1), 'freeze': freeze,
            'frozen': ev['frozen'] == 1, 'populated': ev['populated'] == 1,
            'descendants': len(descendants(path)),
            'frozen_descendants': sum(1 for p in descendants(path) if sc.frozen(p))}


def check_status(sc, path):
    k1 = frozen_usec(sc, path)
    r = ft.freezectl('--json', 'status', path)
    k2 = frozen_usec(sc, path)
    try:
        j = json.loads(r.stdout)
    except ValueError as e:
        ft.fail(f'freezectl --json status {path}: not JSON ({e}): {r.stdout!r}')
    ft.check_equal(sorted(j), sorted(['path', 'id', 'state', 'frozen_by', 'untracked_between', 'freeze', 'frozen',
                                      'populated', 'descendants', 'frozen_descendants', 'frozen_usec']),
                   f'status {path}: the JSON fields')
    ft.check_equal(j.pop('id'), os.stat(sc.abspath(path)).st_ino, f'status {path}: id, its directory\'s inode')
    j.pop('frozen_by')  # (test-core-freezectl-list)
    j.pop('untracked_between')  # (test-core-thaw-untracked-above)
    usec = j.pop('frozen_usec')
    ft.check_equal(j, kernel_status(sc, path), f'--json status {path} matches the kernel')
    if k1 is not None:
        ft.check(int(k1) <= usec <= int(k2), f'status {path}: frozen_usec within the kernel\'s readings',
                 f'{k1} <= {usec} <= {k2}')
    return j


def one_line(r, what, *words):
    lines = r.stderr.splitlines()
    ft.check(len(lines) == 1 and all(w in lines[0] for w in words),
             f'{what}: one line on stderr naming {", ".join(words) or "the problem"}', repr(r.stderr))


def ragged_lines(text, fits=72):
    """The lines of a --help that end short of where the next line's first word would
    fit (within fits columns) in one paragraph or one entry's description: left over
    from a reflow.  A line that ends a sentence may end short (the help starts some
    sentences on a line of their own); tables, examples and entries are rows."""
    lines = text.split('\n')
    out = []
    for a, b in zip(lines, lines[1:]):
        if not a.strip() or not b.strip():
            continue
        ia, ib = len(a) - len(a.lstrip(' ')), len(b) - len(b.lstrip(' '))
        if ia == ib == 2 or '  ' in b.strip():
            continue  # a table's rows, an example's lines, a new entry
        if ia != ib and not (ia < ib and a[ib - 1:ib] == ' ' and a[:ib].strip()):
            continue  # neither one paragraph nor an entry's label line and its description
        if a.rstrip().endswith(('.', ':', ';', '.)')):
            continue
        if len(a) + 1 + len(b.split()[0]) <= fits:
            out.append(a)
    return out


def check_forked_bus_as_socket(sc, tmpdir):
    """--socket= naming the socket of a dbus-daemon --fork, whose listening process has
    exited (the socket's peer pid names no process): freeze (the wire), status and list
    (sd-bus) say that the socket is a bus and to use --address= (status and list said
    "lost the connection to freezerd (its private socket)", nothing else)."""
    sock = os.path.join(tmpdir, 'forked-bus')
    r = subprocess.run(['dbus-daemon', f'--config-file={ft.DBUS_TEST_CONF}', '--fork', '--print-pid',
                        f'--address=unix:path={sock}'], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=ft.DEFAULT_TIMEOUT)
    ft.check(r.returncode == 0 and r.stdout.strip().isdigit(), 'dbus-daemon --fork started', (r.stdout, r.stderr))
    pid = int(r.stdout.strip())
    try:
        for cmd in (['freeze', '/g'], ['status', '/g'], ['list']):
            what = f'{" ".join(cmd)} --socket= naming a dbus-daemon --fork\'s socket'
            r = ft.freezectl(*cmd, socket=sock, check=False)
            ft.check_equal(r.returncode, 1, f'{what}: exit 1')
            one_line(r, what, f'{sock} is a D-Bus bus', f'use --address=unix:path={sock}')
        ft.check_equal(sc.read_freeze('/g'), 0, 'nothing was frozen through the forked bus')
    finally:
        os.kill(pid, signal.SIGTERM)


@contextlib.contextmanager
def bus_conf(what, old, new):
    """A bus started from tests/dbus-test.conf with old replaced by new; yields the bus
    and a temporary directory for the caller's files (removed after)."""
    with open(ft.DBUS_TEST_CONF) as f:
        conf = f.read()
    changed = conf.replace(old, new)
    ft.check(changed != conf, f'a bus configuration {what}')
    tmp = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}busconf-{os.getpid()}-')
    try:
        path = os.path.join(tmp, 'bus.conf')
        with open(path, 'w') as f:
            f.write(changed)
        with ft.Bus(config=path) as bus:
            yield bus, tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_bus_reply_timeout(sc, d_config):
    """A bus daemon gives up on a reply after its reply_timeout, whatever the call's
    --timeout; freezerd goes on, and freezectl says so.  1 s (times the harness's multiplier:
    freezerd must have taken the call, and learnt the caller's uid, before freezectl leaves,
    or it refuses the call of a caller gone), far below the call's 60 s."""
    reply_ms = int(1000 * ft.TIMEOUT_MULTIPLIER)
    with bus_conf(f'with a reply_timeout of {reply_ms} ms', '<limit name="reply_timeout">300000</limit>',
                  f'<limit name="reply_timeout">{reply_ms}</limit>') as (bus2, _tmp), \
            ft.Daemon(bus2, sc.root, config=d_config):
        r = ft.freezectl('freeze', '--timeout=60s', '/s', address=bus2.address, check=False,
                         timeout=ft.DEFAULT_TIMEOUT)
        ft.check_equal((r.returncode, r.stdout), (1, ''),
                       f'freeze --timeout=60s /s, the bus giving up after {reply_ms} ms: exit 1')
        one_line(r, 'the bus gave up on the reply', 'cannot freeze /s: no reply from freezerd',
                 'freezerd may or may not carry out the freeze of /s: a call it was already working on goes on '
                 '(the flags it wrote stay)', 'see freezectl status')
        ft.check_equal(check_status(sc, '/s')['state'], 'freezing',  # on bus2, the bus started last
                       'freezerd goes on: /s is still freezing')
        ft.freezectl('thaw', '/s', address=bus2.address)


def check_bus_refuses_root(sc):
    """A bus that does not let root in (as another user's session bus) closes the
    connection after authentication: every command says it could not connect, and
    why, not that a connection it had was lost."""
    with bus_conf('that does not let root in', '<allow user="*"/>',
                  '<allow user="*"/>\n                <deny user="root"/>') as (bus2, _tmp):
        # freeze and batch go through freezectl's own wire, list through sd-bus.
        for cmd, stdin in ((['freeze', '/s'], None), (['batch', '-'], '[{"path": "/s", "freeze": true}]'),
                           (['list'], None)):
            r = ft.freezectl(*cmd, address=bus2.address, check=False, input=stdin)
            ft.check_equal(r.returncode, 1, f'{cmd[0]} on a bus that refuses root: exit 1')
            one_line(r, f'{cmd[0]} on a bus that refuses root', f'cannot connect to the bus at {bus2.address}',
                     'the bus closed the connection: does it let uid 0 in?')
    ft.check_equal(sc.read_freeze('/s'), 0, 'and nothing was written')


def check_freezerd_stopped(sc, bus):
    """freezerd stopped (SIGSTOP) while freezectl sends it a batch larger than the socket's
    buffer: freezectl ends at the call's deadline, its --timeout and 5 s (it waited in send()
    for ever), and says the call never reached freezerd, not that freezerd goes on with it."""
    batch = json.dumps([{'path': f'/s/{"x" * 200}{i}', 'freeze': True} for i in range(40000)])  # 9 MB
    with ft.Daemon(bus, sc.root) as d:
        private = os.path.join(d.runtime_dir, 'private')
        ft.wait_for(lambda: os.path.exists(private), what='the private socket')
        # freezectl reads and checks the 9 MB before it connects: that takes what this build
        # (a sanitizer's is slower) on this machine at its present load takes, measured as it
        # fails to connect where nothing listens (a fixed 15 s bound was passed twice under
        # ASan on a loaded machine).  Then it waits to send until the call's deadline: the
        # --timeout of 1 s and its margin of 5 s for freezerd's reply (CALL_TIMEOUT_MARGIN_USEC).
        start = time.monotonic()
        r = ft.freezectl('--timeout=1s', 'batch', '-', socket=os.path.join(d.runtime_dir, 'nowhere'), input=batch,
                         check=False, timeout=ft.DEFAULT_TIMEOUT * 3)
        before_call = time.monotonic() - start
        ft.check(r.returncode == 1 and 'cannot connect' in r.stderr, 'the batch where nothing listens: cannot connect',
                 r)
        call_deadline = 1 + 5
        bound = call_deadline + 2 * before_call + 5 * ft.TIMEOUT_MULTIPLIER  # twice: the load may grow meanwhile
        os.kill(d.pid, signal.SIGSTOP)
        try:
            start = time.monotonic()
            r = ft.freezectl('--timeout=1s', 'batch', '-', socket=private, input=batch, check=False,
                             timeout=bound + ft.DEFAULT_TIMEOUT)
            took = time.monotonic() - start
        finally:
            os.kill(d.pid, signal.SIGCONT)
        ft.check_equal((r.returncode, r.stdout), (1, ''), 'a batch to a stopped freezerd: exit 1')
        ft.check(call_deadline <= took < bound, f'it ended at the call\'s deadline, {call_deadline} s after its '
                 f'{before_call:.1f} s of reading the batch ({took:.1f} s; at most {bound:.1f} s)')
        one_line(r, 'a batch to a stopped freezerd', 'cannot apply the batch from standard input',
                 'freezerd took nothing of the call within its timeout (is freezerd stopped?)',
                 'nothing of it was done')
        ft.check('goes on' not in r.stderr, 'it does not say freezerd goes on', r.stderr)
        # freezerd, going on, dropped the part it got and serves the next caller.
        ft.freezectl('status', '/s', socket=private)
        ft.check_equal(sc.read_freeze('/s'), 0, 'and nothing was written')
        ft.check('Error' not in d.log() and 'warn' not in d.log().lower(), 'freezerd logged no error', d.log())


def check_bus_drops_large_call(sc):
    """A bus that lets root in but takes no message over its max_message_size reads
    Hello and the call's header together and closes the connection, Hello
    unanswered: freezectl says the bus closed it while the call was written, and why
    that may be, not that the bus does not let uid 0 in (it said so before the review of
    session 32; the bus let it in, as the small call after shows)."""
    with bus_conf('with a max_message_size of 1 MB', '<limit name="reply_timeout">300000</limit>',
                  '<limit name="reply_timeout">300000</limit>\n        '
                  '<limit name="max_message_size">1000000</limit>') as (bus2, tmp):
        batch = os.path.join(tmp, 'big.json')
        with open(batch, 'w') as f:  # about 4 MB on the wire
            json.dump([{'path': '/s/' + 'x' * 200 + str(i), 'freeze': True} for i in range(20000)], f)
        with ft.Daemon(bus2, sc.root):
            r = ft.freezectl('batch', batch, address=bus2.address, check=False)
            ft.check_equal(r.returncode, 1, 'a batch larger than the bus takes: exit 1')
            one_line(r, 'a batch larger than the bus takes', 'the bus closed the connection while the call was written',
                     'max_message_size', 'nothing of it was done')
            ft.check('does it let uid' not in r.stderr and 'cannot connect' not in r.stderr,
                     'a batch larger than the bus takes: no word of the bus refusing uid 0', repr(r.stderr))
            sc.mkdir('/large')
            r = ft.freezectl('freeze', '/large', address=bus2.address, check=False)
            ft.check(r.returncode == 0, 'that bus lets root in: a small call works', r)
            ft.freezectl('thaw', '/large', address=bus2.address)
            sc.rmdir('/large')


def check_freezerd_killed(sc, bus):
    """freezerd killed while freezectl waits for a freeze: freezectl says freezerd is gone
    (not that a bus went, nor that freezerd goes on) and what becomes of the flags."""
    # freeze --except (libfreezer, not the wire) says it as the plain freeze: / --except
    # every group but /s freezes /s alone.
    excepts = ['--except=/g', '--except=/a-b', '--except=/-odd']
    for how, rollback, except_ in (('private socket', True, False), ('bus', False, False),
                                   ('private socket', False, True), ('bus', False, True)):
        with ft.CrashableDaemon(bus, sc.root) as d:
            private = os.path.join(d.runtime_dir, 'private')
            ft.wait_for(lambda: os.path.exists(private), what='the private socket')
            where = [f'--socket={private}'] if how == 'private socket' else [f'--address={bus.address}']
            args = ['freeze', '--timeout=60s', *(['--rollback'] if rollback else []),
                    *(['/', *excepts] if except_ else ['/s'])]
            call = 'freeze of / except /g, ...' if except_ else 'freeze of /s'
            how = f'{how}{" (--except)" if except_ else ""}'
            ft.loop().watch(sc.abspath('/s'))  # a write of its cgroup.freeze wakes the wait below
            p = subprocess.Popen([ft.FREEZECTL_BIN, *where, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
            try:
                ft.wait_for(lambda: sc.read_freeze('/s') == 1, what=f'{how}: freezerd wrote /s\'s flag')
                d.sigkill()
                d.wait_dead()
                out, err = p.communicate(timeout=ft.DEFAULT_TIMEOUT)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
            ft.check_equal((r.returncode, r.stdout), (1, ''), f'{how}: freezerd killed during the {call}: exit 1')
            words = [f'cannot {call.replace(" of", "")}', f'freezerd stopped or crashed during the {call}',
                     'with --rollback, the flags it changed are restored' if rollback
                     else 'see freezectl status for the flags it left']
            words += ['lost the connection to freezerd (its private socket)'] if how.startswith('private socket') \
                else ['freezerd left the bus without answering']
            one_line(r, f'{how}: freezerd killed', *words)
            ft.check('goes on' not in r.stderr, f'{how}: it does not say freezerd goes on', r.stderr)
            if how.startswith('bus'):  # the same words, whichever of the wire and libfreezer carried it
                ft.check_equal(r.stderr, f'freezectl: cannot {call.replace(" of", "")}: freezerd left the bus without '
                               f'answering; freezerd stopped or crashed during the {call}: see freezectl status for '
                               'the flags it left\n', f'{how}: freezerd killed: the line')
        sc.write_freeze('/s', 0)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl', 'fuse')
    with ft.Scratch('core-freezectl') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        for p in GROUPS[1:]:
            sc.mkdir(p)
        sc.spawn_sleepers('/g/k', 2)
        sc.spawn_sleepers('/g/h', 1)
        fuse.spawn_stuck(sc, '/s')

        # No freezerd on the bus yet: said in those words, not as the bus' ServiceUnknown.
        r = ft.freezectl('status', '/g', address=bus.address, check=False)
        ft.check_equal(r.returncode, 1, 'status with no freezerd on the bus exits 1')
        one_line(r, 'no freezerd', 'freezerd is not running', ft.BUS_NAME)
        # The system's pressure likewise: no freezerd is no fault of cpu's pressure.
        r = ft.freezectl('pressure', address=bus.address, check=False)
        ft.check_equal(r.returncode, 1, 'pressure with no freezerd on the bus exits 1')
        one_line(r, 'no freezerd: pressure', "cannot read the system's pressure: freezerd is not running")
        # tree without PATH in its own words, as with one (it said list's "cannot list groups").
        r = ft.freezectl('tree', address=bus.address, check=False)
        ft.check_equal(r.returncode, 1, 'tree with no freezerd on the bus exits 1')
        one_line(r, 'no freezerd: tree', 'freezectl: cannot show tree: freezerd is not running')
        # --json freeze there: the bus answered the call, so one "failed" object with its
        # error, as --help says (a connection that fails prints nothing).
        r = ft.freezectl('--json', 'freeze', '/g', '/g/k', address=bus.address, check=False)
        ft.check_equal(r.returncode, 1, '--json freeze with no freezerd on the bus exits 1')
        ft.check_equal([(o['path'], o['result'], o['error']) for o in json.loads(r.stdout)],
                       [('/g', 'failed', 'org.freedesktop.DBus.Error.ServiceUnknown')],
                       '--json freeze with no freezerd on the bus: one failed object, the bus\' error')

        with ft.Daemon(bus, sc.root, config={'default_timeout_usec': 2000000}) as d:
            c = d.client
            for p in ('/g', '/g/h', '/', '/a-b/c d'):
                check_status(sc, p)
            # A group never frozen: its time frozen with a unit, as every duration (it was a bare 0).
            lines = ft.freezectl('status', '/g').stdout.splitlines()
            ft.check([ln.split(':', 1)[1].strip() for ln in lines if ln.startswith('Frozen in all:')] == ['0s'],
                     'status /g (never frozen): "Frozen in all: 0s"', lines)

            # ---- freeze / thaw
            rec = c.record()
            r = ft.freezectl('freeze', '/g')
            ft.check_equal(sc.read_events('/g').get('frozen'), 1, 'freezectl freeze /g: frozen 1 when it exits 0')
            ft.check_equal((r.stdout, r.stderr), ('', ''), 'freezectl freeze prints nothing')
            # The children's notifications may reach freezerd a moment after /g's.
            rec.wait_property(ft.group_object('/g/h'), 'FreezerState', 'frozen-by-parent')
            rec.wait_property(ft.group_object('/g/k'), 'FreezerState', 'frozen-by-parent')
            j = check_status(sc, '/g')
            ft.check_equal((j['state'], j['frozen_descendants']), ('frozen', 2), 'status /g: frozen, 2 frozen below')
            sc.wait_tasks_frozen('/g/k')
            sc.wait_tasks_frozen('/g/h')
            ft.check(sc.all_tasks_frozen('/g/k') and sc.all_tasks_frozen('/g/h'),
                     'the tasks below /g are in the freezer trap')
            check_status(sc, '/g/h')

            r = ft.freezectl('--json', 'freeze', '/g', '/a-b')
            ft.check_equal(json.loads(r.stdout), [{'path': '/g', 'result': 'done'}, {'path': '/a-b', 'result': 'done'}],
                           '--json freeze /g /a-b: both done')
            ft.check_equal(sc.read_events('/a-b').get('frozen'), 1, '/a-b frozen')
            # The paths normalized, as list and watch print them (it echoed them as typed).
            r = ft.freezectl('--json', 'freeze', 'g/', '/a-b/')
            ft.check_equal(json.loads(r.stdout), [{'path': '/g', 'result': 'done'}, {'path': '/a-b', 'result': 'done'}],
                           '--json freeze g/ /a-b/: the paths normalized')

            # ---- list / tree
            r = ft.freezectl('list')
            listed = c.call('ListGroups')[0]
            states = {p: s for p, _o, s in listed}
            ft.check_equal(sorted(states), GROUPS, 'ListGroups has every group')
            lines = r.stdout.splitlines()
            ft.check(all(any(line.split(None, 1) == [s, p] for line in lines) for p, s in states.items()),
                     'freezectl list names every group with its state', r.stdout)
            ft.check_equal(len(lines), len(GROUPS), 'freezectl list: one line per group')
            r = ft.freezectl('--json', 'list')
            ft.check_equal(sorted((e['path'], e['object'], e['state']) for e in json.loads(r.stdout)),
                           sorted(tuple(x) for x in listed), '--json list equals ListGroups')

            r = ft.freezectl('tree')
            text = r.stdout
            for p in GROUPS:
                name = p if p == '/' else p.rsplit('/', 1)[1]
                ft.check(any(line.endswith(f'{name} ({states[p]})') for line in text.splitlines()),
                         f'freezectl tree names {p} with its state', text)
            depth = {p: next(line for line in text.splitlines()
                             if line.endswith(f'{p.rsplit("/", 1)[1]} ({states[p]})')).index(p.rsplit('/', 1)[1])
                     for p in ('/g', '/g/h')}
            ft.check(depth['/g/h'] > depth['/g'], 'tree: /g/h is indented under /g', text)
            r = ft.freezectl('--json', 'tree')
            # An empty list (a leaf's children) on its line, "[]": json-c printed "[" and "]"
            # over two lines.
            ft.check('"children": []' in r.stdout and
                     not any(a.rstrip().endswith(('[', '{')) and b.strip() in (']', '}', '],', '},')
                             for a, b in zip(r.stdout.splitlines(), r.stdout.splitlines()[1:])),
                     '--json tree: a leaf\'s children printed "[]", not over two lines', r.stdout)
            seen = {}

            def walk(node, parent):
                seen[node['path']] = (node['state'], parent)
                for ch in node['children']:
                    walk(ch, node['path'])
            walk(json.loads(r.stdout), None)
            ft.check_equal({p: s for p, (s, _par) in seen.items()}, states, '--json tree: every group, its state')
            ft.check(all(par == (ancestors(p)[-1] if ancestors(p) else '/') for p, (_s, par) in seen.items()
                         if p != '/'), '--json tree: each group under its parent', seen)
            r = ft.freezectl('tree', '/g')
            ft.check(r.stdout.splitlines()[0].startswith('/g') and 'h (frozen-by-parent)' in r.stdout and
                     'a-b' not in r.stdout, 'freezectl tree /g shows the subtree only', r.stdout)

            # ---- still frozen by an ancestor: exit 3, plain and --recursive alike (a plain
            # thaw exited 1, as for a failure, and --recursive 0, as for a group that runs)
            r = ft.freezectl('thaw', '/g/h', check=False)
            ft.check_equal(r.returncode, 3, 'thaw of a frozen-by-parent group exits 3')
            one_line(r, 'thaw /g/h', '/g/h', 'FrozenByParent')
            for args in (['--no-wait'], ['--recursive'], ['--recursive', '--no-wait']):
                ft.freezectl('freeze', '/g/h')
                r = ft.freezectl('thaw', *args, '/g/h', check=False)
                what = ' '.join(['thaw'] + args + ['/g/h'])
                ft.check_equal((r.returncode, sc.read_freeze('/g/h'), sc.frozen('/g/h')), (3, 0, True),
                               f'{what} under a frozen /g: exit 3, the flag cleared, still frozen')
            # A FrozenByParent thaw cleared its flag: thaw goes on with the paths after it, and
            # exits 3 (/a-b thawed); a failure after it makes it 1.
            for json_arg in ([], ['--json']):
                ft.freezectl('freeze', '/g/h')
                r = ft.freezectl(*json_arg, 'thaw', '/g/h', '/a-b', check=False)
                what = ' '.join(json_arg + ['thaw /g/h /a-b'])
                ft.check_equal((r.returncode, sc.read_freeze('/g/h'), sc.read_freeze('/a-b')), (3, 0, 0),
                               f'{what} under a frozen /g: exit 3, both flags cleared')
                one_line(r, what, '/g/h', 'FrozenByParent')
                if json_arg:
                    # /g/h's object as thaw --recursive's: "done" (its flag is cleared) and what
                    # freezes it (it said "failed" with FrozenByParent's error and message).
                    ft.check_equal(json.loads(r.stdout),
                                   [{'path': '/g/h', 'result': 'done', 'frozen_by': '/g', 'untracked_between': None},
                                    {'path': '/a-b', 'result': 'done'}],
                                   f'{what}: /g/h done, frozen by /g, /a-b done')
                    ft.freezectl('freeze', '/g/h')
                    rec = ft.freezectl('--json', 'thaw', '--recursive', '/g/h', check=False)
                    ft.check_equal((rec.returncode, json.loads(rec.stdout)), (3, json.loads(r.stdout)[:1]),
                                   f'{what}: /g/h\'s object is thaw --recursive\'s')
                ft.freezectl('freeze', '/a-b')
            for args in ([], ['--recursive']):
                r = ft.freezectl('thaw', *args, '/g/h', '/nope', check=False)
                ft.check_equal(r.returncode, 1, f'thaw {" ".join(args + ["/g/h /nope"])}: exit 1, not 3')
            r = ft.freezectl('thaw', '/g', '/a-b')
            ft.check_equal((sc.frozen('/g'), sc.frozen('/a-b')), (False, False), 'thaw /g /a-b: both thawed')

            r = ft.freezectl('freeze', '/nope', check=False)
            ft.check_equal((r.returncode, r.stdout), (1, ''), 'freeze of a missing group exits 1, nothing on stdout')
            one_line(r, 'freeze /nope', '/nope', 'NoSuchGroup')
            r = ft.freezectl('--json', 'freeze', '/nope', check=False)
            j = json.loads(r.stdout)
            ft.check(r.returncode == 1 and len(j) == 1 and j[0]['path'] == '/nope' and j[0]['result'] == 'failed' and
                     j[0]['error'] == ft.ERROR_NO_SUCH_GROUP and '/nope' in j[0]['message'],
                     '--json freeze /nope: exit 1, a "failed" object with error and message', (r.returncode, j))
            r = ft.freezectl('freeze', '/g', '/nope', '/a-b', check=False)
            ft.check(r.returncode == 1 and sc.frozen('/g') and not sc.read_freeze('/a-b'),
                     'freeze stops at the first failure: /g frozen, /a-b left alone', (r.returncode, r.stderr))
            ft.freezectl('thaw', '/g')

            r = ft.freezectl('freeze', '--timeout=300ms', '--rollback', '/s', check=False)
            ft.check_equal(r.returncode, 1, 'freeze --timeout=300ms --rollback of a blocked group exits 1')
            one_line(r, 'freeze /s timeout', '/s', 'Timeout')
            ft.check_equal(sc.read_freeze('/s'), 0, '--rollback: cgroup.freeze is back to 0')
            # Without --rollback freezerd's Timeout says the flags stay "Without ROLLBACK_ON_TIMEOUT",
            # its bus flag: freezectl says it of its own option (--json keeps freezerd's message).
            for args in (['freeze'], ['freeze', '--recursive'], ['--json', 'freeze']):
                what = ' '.join(args + ['--timeout=300ms /s'])
                r = ft.freezectl(*args, '--timeout=300ms', '/s', check=False)
                ft.check_equal((r.returncode, sc.read_freeze('/s')), (1, 1), f'{what}: exit 1, the flag stays')
                one_line(r, what, '/s', 'Timeout', 'Without --rollback the flags stay as asked')
                ft.check('ROLLBACK_ON_TIMEOUT' not in r.stderr, f'{what}: the bus flag not named', r.stderr)
                if '--json' in args:
                    ft.check('Without ROLLBACK_ON_TIMEOUT' in json.loads(r.stdout)[0]['message'],
                             f'{what}: the --json message is freezerd\'s', r.stdout)
                ft.freezectl('thaw', '/s')
                sc.wait_events('/s', frozen=0)
            # Only freezerd's sentence at the end is said of --rollback, not the same word
            # in a group's path, and only without --rollback.
            odd = '/s/ROLLBACK_ON_TIMEOUT'
            sc.mkdir(odd)
            ft.wait_for(lambda: ft.freezectl('status', odd, check=False).returncode == 0,
                        what=f'freezerd to publish {odd}')
            stuck = fuse.spawn_stuck(sc, odd)
            for rollback in (False, True):
                what = f'freeze --timeout=300ms{" --rollback" if rollback else ""} {odd}'
                r = ft.freezectl('freeze', '--timeout=300ms', *(['--rollback'] if rollback else []), odd,
                                 check=False)
                ft.check_equal((r.returncode, sc.read_freeze(odd)), (1, 0 if rollback else 1),
                               f'{what}: exit 1, the flag {"restored" if rollback else "stays"}')
                one_line(r, what, f'cannot freeze {odd}: Timeout: ', f'of {odd}, in uninterruptible sleep',
                         *([] if rollback else ['. Without --rollback the flags stay as asked']))
                ft.check(r.stderr.count('--rollback') == (0 if rollback else 1),
                         f'{what}: the path not rewritten, no other "--rollback"', r.stderr)
                sc.write_freeze(odd, 0)
                sc.wait_events(odd, frozen=0)
            stuck.kill()
            stuck.wait(timeout=ft.DEFAULT_TIMEOUT)
            sc.rmdir(odd)

            r = ft.freezectl('freeze', '--no-wait', '/s')
            ft.check_equal((r.returncode, sc.read_freeze('/s'), sc.frozen('/s')), (0, 1, False),
                           'freeze --no-wait /s exits 0 at once, cgroup.freeze 1, kernel not frozen')
            ft.check_equal(check_status(sc, '/s')['state'], 'freezing', 'status /s: freezing')
            ft.freezectl('thaw', '/s')
            ft.check_equal(sc.read_freeze('/s'), 0, 'thaw /s')

            # ---- SIGINT while waiting: freezectl says what goes on without it
            for sig in (signal.SIGINT, signal.SIGTERM):
                p = subprocess.Popen([ft.FREEZECTL_BIN, f'--address={bus.address}', 'freeze', '--timeout=60s', '/s'],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
                try:
                    ft.wait_for(lambda: sc.read_freeze('/s') == 1, what='freezectl freeze /s to write the flag',
                                poll=0.005)
                    p.send_signal(sig)
                    out, err = p.communicate(timeout=ft.DEFAULT_TIMEOUT)
                finally:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
                ft.check_equal((p.returncode, out), (-sig, ''), f'{sig.name} while freeze /s waits: freezectl dies of '
                                                                 'it, printing nothing on stdout')
                ft.check_equal(err, 'freezectl: interrupted: freezerd may or may not carry out the freeze of /s: a '
                                    'call it was already working on goes on (the flags it wrote stay), one it reads '
                                    'only after freezectl left the bus is refused; see freezectl status\n',
                               f'{sig.name}: one line on stderr says so')
                ft.check_equal(check_status(sc, '/s')['state'], 'freezing', f'{sig.name}: /s is still freezing')
                ft.freezectl('thaw', '/s')
            # A PATH path_q() cuts ("... (404 bytes)"): the line keeps the cut form whole (it
            # was cut off at 255 bytes, its "(N bytes)" and the rest of the sentence lost).
            long_top = '/l/' + 'y' * 200
            long_path = long_top + '/' + 'y' * 200
            sc.mkdir(long_path)
            ft.wait_for(lambda: ft.freezectl('status', long_path, check=False).returncode == 0,
                        what='freezerd to publish the long path')
            stuck = fuse.spawn_stuck(sc, long_path)
            p = subprocess.Popen([ft.FREEZECTL_BIN, f'--address={bus.address}', 'freeze', '--timeout=60s', long_path],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
            try:
                ft.wait_for(lambda: sc.read_freeze(long_path) == 1, what='freezectl to write the long path\'s flag',
                            poll=0.005)
                p.send_signal(signal.SIGINT)
                out, err = p.communicate(timeout=ft.DEFAULT_TIMEOUT)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            ft.check(p.returncode == -signal.SIGINT and
                     err.startswith('freezectl: interrupted: freezerd may or may not carry out the freeze of /l/yyy') and
                     f'yyy ({len(long_path)} bytes): a call it was already working on goes on' in err and
                     err.endswith('; see freezectl status\n'),
                     f'SIGINT while freeze of a {len(long_path)}-byte PATH waits: the line names it cut, whole', err)
            sc.write_freeze(long_path, 0)
            stuck.kill()
            stuck.wait(timeout=ft.DEFAULT_TIMEOUT)
            sc.wait_events(long_path, frozen=0)
            sc.rmdir(long_path)
            sc.rmdir(long_top)
            sc.rmdir('/l')

            # ---- an error line in one write(2): stderr a SOCK_SEQPACKET socket keeps each write whole
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            with mine, theirs:
                r = subprocess.run([ft.FREEZECTL_BIN, f'--address={bus.address}', 'freeze', '/nope'],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=theirs,
                                   timeout=ft.DEFAULT_TIMEOUT)
                theirs.close()
                writes = []
                while True:
                    m = mine.recv(65536)
                    if not m:
                        break
                    writes.append(m.decode(errors='replace'))
            ft.check(r.returncode == 1 and len(writes) == 1 and writes[0].startswith('freezectl: cannot freeze /nope: '
                                                                                     'NoSuchGroup') and
                     writes[0].endswith('\n') and writes[0].count('\n') == 1,
                     'freeze /nope: its error line written whole, in one write', (r.returncode, writes[:5], len(writes)))

            # ---- --socket= naming a bus: the bus itself answers the call
            bus_socket = bus.address.split('unix:path=', 1)[1].split(',', 1)[0]
            r = ft.freezectl('freeze', '/g', socket=bus_socket, check=False)
            ft.check_equal(r.returncode, 1, '--socket= naming the bus\'s socket: exit 1')
            one_line(r, '--socket= naming a bus', f'{bus_socket} is a D-Bus bus, served by dbus-daemon',
                     f'use --address=unix:path={bus_socket}')
            ft.check('\\x0a' not in r.stderr, 'the bus\'s message ends without its newline as \\x0a', r.stderr)
            ft.check_equal(sc.read_freeze('/g'), 0, 'and nothing was written')
            # A command that goes through sd-bus: the bus daemon closes a connection without Hello.
            r = ft.freezectl('list', socket=bus_socket, check=False)
            ft.check_equal(r.returncode, 1, 'list --socket= naming the bus\'s socket: exit 1')
            one_line(r, 'list --socket= naming a bus', f'{bus_socket} is a D-Bus bus, served by dbus-daemon',
                     f'use --address=unix:path={bus_socket}')
            check_forked_bus_as_socket(sc, d.tmpdir)

            bad = ft.freezectl('status', '/g', address=f'unix:path={d.tmpdir}/no-such-socket', check=False)
            ft.check_equal(bad.returncode, 1, 'an unreachable bus exits 1')
            one_line(bad, 'unreachable bus')
            for cmd in (['list'], ['freeze', '/g']):
                bad = ft.freezectl(*cmd, address='bogus', check=False)
                ft.check_equal(bad.returncode, 1, f'{cmd[0]} --address=bogus exits 1')
                one_line(bad, f'{cmd[0]} --address=bogus', 'cannot connect to the bus at bogus',
                         'not a D-Bus address')

            # A control character in a path stays inside the one line (as \x0a), as freezerd
            # writes it in its own message.
            r = ft.freezectl('freeze', '/a\nb', check=False)
            ft.check_equal(r.returncode, 1, 'freeze of a path with a newline exits 1')
            one_line(r, 'freeze /a<newline>b', 'cannot freeze /a\\x0ab:')

            # ---- usage: exit 2
            for args, what in ((['--bogus', 'list'], 'an unknown option'), ([], 'a missing command'),
                               (['frobnicate'], 'an unknown command'), (['freeze'], 'freeze without PATH'),
                               (['freeze', '--timeout=xyz', '/g'], 'a bad duration'),
                               (['freeze', '--timeout=0.0000001s', '/g'], 'a timeout below 1us (it would read 0, '
                                                                          'the default)'),
                               (['--system', '--user', 'list'], 'two ways to freezerd'),
                               (['freeze', '--no-wait', '--timeout=1s', '/g'], '--timeout= with --no-wait (it was '
                                                                                'ignored in silence)'),
                               (['watch', '/g', '--trigger=irq:full:1s:2s'], 'an irq trigger on a PATH (freezerd '
                                                                             'said "use the Manager")'),
                               (['watch', '/g', '--trigger=memory:some:0:2s'], 'a trigger\'s THRESHOLD of 0 (as '
                                                                               '--help says; freezerd refused it, '
                                                                               'exit 1)'),
                               (['watch', '/g', '--trigger=memory:some:3s:2s'], 'a trigger\'s THRESHOLD above '
                                                                                'its WINDOW'),
                               (['watch', '/g', '--trigger=memory:some:100ms:20s'], 'a trigger\'s WINDOW above '
                                                                                    '10s (freezerd refused it, '
                                                                                    'exit 1)'),
                               (['watch', '/g', '--trigger=memory:some:100ms:400ms'], 'a trigger\'s WINDOW below '
                                                                                      '500ms'),
                               (['watch', '--trigger=irq:some:100ms:2s'], 'an irq trigger of KIND some (irq is '
                                                                         'full only; freezerd refused it, exit 1)')):
                r = ft.freezectl(*args, check=False)
                ft.check_equal((r.returncode, r.stdout), (2, ''), f'{what} exits 2')
                one_line(r, what)
            # A path that reads as an option: said how to pass it ("-odd" was only "invalid option '-o'"),
            # where the command takes one; list takes none, and its line has no such hint.
            for args, line in ((['freeze', '-odd'], "invalid option '-o' (see --help; a path that starts with '-' "
                                                   "goes after '--': freezectl freeze -- -odd)"),
                               (['status', '-odd'], "invalid option '-o' (see --help; a path that starts with "
                                                    "'-' goes after '--': freezectl status -- -odd)"),
                               # A long option mistyped, far likelier than a path "--odd": no hint.
                               (['status', '--odd'], "invalid option '--odd' (see --help)"),
                               (['batch', '-x'], "invalid option '-x' (see --help; a file that starts with '-' "
                                                 "goes after '--': freezectl batch -- -x)"),
                               (['list', '-o'], "invalid option '-o' (see --help)"),
                               # The unknown letter last in its word: that word (it named the one before,
                               # "freeze", "/a", or argv[0]).
                               (['freeze', '-pop'], "invalid option '-p' (see --help; a path that starts with '-' "
                                                    "goes after '--': freezectl freeze -- -pop)"),
                               # The word in the command as a shell word; none where the line escapes it.
                               (['freeze', '-a b'], "invalid option '-a' (see --help; a path that starts with '-' "
                                                    "goes after '--': freezectl freeze -- '-a b')"),
                               (['freeze', '-a\\b'], "invalid option '-a' (see --help; a path that starts with '-' "
                                                     "goes after '--')"),
                               (['freeze', '/a', '-xx'], "invalid option '-x' (see --help; a path that starts with "
                                                         "'-' goes after '--': freezectl freeze -- -xx)"),
                               (['freeze', '-x', '-xy'], "invalid option '-x' (see --help; a path that starts with "
                                                         "'-' goes after '--': freezectl freeze -- -x)"),
                               (['freeze', '--except', '-x', '-xy'], "invalid option '-x' (see --help; a path that "
                                                                     "starts with '-' goes after '--': freezectl "
                                                                     "freeze -- -xy)"),
                               # Before the command: an option of freezectl, no path: no hint (after
                               # --address=..., it read "option '--address' takes no argument").
                               (['-xx', 'freeze'], "invalid option '-x' (see --help)"),
                               (['-x', 'freeze', '/a'], "invalid option '-x' (see --help)")):
                r = ft.freezectl(*args, check=False)
                what = ' '.join(args)
                ft.check_equal((r.returncode, r.stdout, r.stderr), (2, '', f'freezectl: {line}\n'),
                               f'{what}: exit 2, the line')
            # A unit --timeout= does not take is said to be one (help lists the units).
            for bad in ('1d', 'infinity'):
                r = ft.freezectl('freeze', f'--timeout={bad}', '/g', check=False)
                ft.check_equal((r.returncode, r.stdout), (2, ''), f'--timeout={bad} exits 2')
                one_line(r, f'--timeout={bad}', f"invalid duration '{bad}' (units us, ms, s, min, h; no days nor "
                                                '"infinity"')
            # An --except= that is not below PATH (a sibling, PATH itself, and PATH written with
            # a trailing "/"): freezerd's InvalidArgs exited 1, for arguments that tell it alone.
            for path, x in (('/g', '/a-b'), ('/g', '/g'), ('/g/', '/g'), ('/', '/'), ('/g', '/gh')):
                what = f'freeze {path} --except={x}'
                r = ft.freezectl('--json', 'freeze', path, f'--except={x}', check=False)
                ft.check_equal((r.returncode, r.stdout), (2, ''), f'{what} exits 2, nothing on stdout')
                one_line(r, what, f'--except={x} is not below {path}')
            # --rollback with --no-wait of one group: it means nothing there (it was taken in
            # silence); a batch still restores its flags after a failed write, so it is taken there.
            for args in (['freeze', '--no-wait', '--rollback', '/g'], ['thaw', '--rollback', '--no-wait', '/g']):
                r = ft.freezectl(*args, check=False)
                what = ' '.join(args)
                ft.check_equal((r.returncode, r.stdout), (2, ''), f'{what} exits 2')
                one_line(r, what, '--rollback', '--no-wait')
            # COMMAND --help and help [COMMAND]: COMMAND's entries and options (they printed the
            # whole --help; "help" was an unknown command).
            whole = ft.freezectl('--help').stdout
            ft.check_equal(ft.freezectl('help').stdout, whole, 'freezectl help prints --help')
            # Filled: no line over 80 columns, none ending short in a paragraph ("(--json
            # keeps freezerd's" was a line of its own, and ten more ended short).
            ft.check_equal([line for line in whole.splitlines() if len(line) > 80], [],
                           'freezectl --help: no line over 80 columns')
            ft.check_equal(ragged_lines(whole), [], 'freezectl --help: no line that ends short in a paragraph')
            # Error lines: the Timeout's last sentence is freezectl's, not "<message from freezerd>".
            ft.check('The message is freezerd\'s, but for a Timeout\'s last sentence without --rollback, which is '
                     'freezectl\'s: "Without --rollback the flags stay as asked, and the kernel goes on with them" '
                     '(for --except and --recursive, which set flags of groups not named, "Without --rollback the '
                     'flags it wrote stay as asked, and the kernel goes on with them: PATH..."), and a '
                     'Cancelled\'s or a batch\'s NoSuchGroup\'s "Without --rollback the flags it wrote stay as asked: '
                     'PATH..."' in ' '.join(whole.split()),
                     'freezectl --help: a Timeout\'s last sentence on an error line is freezectl\'s', whole)
            for args in (['freeze', '--help'], ['help', 'freeze'], ['--help', 'freeze', '/g']):
                r = ft.freezectl(*args)
                what = ' '.join(args)
                ft.check('freeze PATH --except=EXCLUDED' in r.stdout and '--except=PATH' in r.stdout and
                         '--rollback' in r.stdout and '--trigger' not in r.stdout and 'untrack' not in r.stdout and
                         len(r.stdout) < len(whole) // 4,
                         f'freezectl {what}: the entries of freeze and its options, not the whole help', r.stdout)
            # -h/--help acts as soon as it is read, as GNU tools do: the options after it are not
            # looked at ("--help --bogus" was a usage error).
            for args in (['--help', '--bogus'], ['-h', '--order'], ['--help', '--no-wait=1']):
                r = ft.freezectl(*args, check=False)
                ft.check_equal((r.returncode, r.stdout, r.stderr), (0, whole, ''),
                               f'freezectl {" ".join(args)}: the whole help, exit 0')
            for args in (['freeze', '--help', '--bogus'], ['--timeout', '5s', 'freeze', '-h', '--order'],
                         ['help', 'freeze', '--help', '--json=1']):
                r = ft.freezectl(*args, check=False)
                ft.check_equal((r.returncode, r.stdout, r.stderr), (0, ft.freezectl('help', 'freeze').stdout, ''),
                               f'freezectl {" ".join(args)}: the help of freeze, exit 0')
            r = ft.freezectl('--bogus', '--help', check=False)
            ft.check_equal((r.returncode, r.stdout), (2, ''), '--bogus --help: the option before it is refused')
            r = ft.freezectl('help', 'watch')
            ft.check('--trigger=RESOURCE' in r.stdout and '--rollback' not in r.stdout,
                     'freezectl help watch: watch and --trigger', r.stdout)
            r = ft.freezectl('help', 'frobnicate', check=False)
            ft.check_equal((r.returncode, r.stdout), (2, ''), 'freezectl help frobnicate exits 2')
            one_line(r, 'help frobnicate', "unknown command 'frobnicate'")
            # An option that takes no argument given one: said so (it read "invalid option").
            for arg in ('--no-wait=1', '--json=yes'):
                r = ft.freezectl(arg, 'freeze', '/g', check=False)
                ft.check_equal((r.returncode, r.stdout), (2, ''), f'{arg} exits 2')
                one_line(r, arg, f"option '{arg.split('=')[0]}' takes no argument")
            r = ft.freezectl('thaw', '--recursive', '--no-wait', '--rollback', '/g', check=False)
            ft.check_equal(r.returncode, 0, 'thaw --recursive --no-wait --rollback /g is taken (a batch)')
            ft.check_equal(sc.read_freeze('/g'), 0, 'usage errors changed nothing')
            # Durations as status prints them and systemd.time(7) writes them: --timeout= took one
            # number and one unit ("2min 3s" and "2min3s" were usage errors).
            for t in ('2min 3s', '2min3s', '1min 0.5s', '1 hour', '500ms'):
                r = ft.freezectl('freeze', f'--timeout={t}', '/g', check=False)
                ft.check_equal((r.returncode, r.stderr), (0, ''), f'freeze --timeout="{t}" /g')
                ft.freezectl('thaw', '/g')

            # ---- freeze --except prints the groups it froze sorted by their bytes, as list does
            # (they came in freezerd's tree order). Made while freezerd runs, in an order that is
            # neither the sorted one nor its reverse; "C" sorts before "a" in byte order only.
            rec = c.record(subscribe=False)
            for g in ('/x', '/x/keep', '/x/a', '/x/C', '/x/b'):
                sc.mkdir(g)
            rec.wait_for(lambda r: {ft.group_object(g) for g in ('/x/a', '/x/C', '/x/b')} <=
                         {o for o, _i in r.interfaces_added()}, what='freezerd to add /x/a, /x/C and /x/b')
            r = ft.freezectl('freeze', '/x', '--except=/x/keep')
            ft.check_equal(r.stdout, '/x/C\n/x/a\n/x/b\n', 'freeze /x --except=/x/keep prints the groups it froze '
                                                             'sorted')
            r = ft.freezectl('--json', 'freeze', '/x', '--except=/x/keep')
            ft.check_equal(json.loads(r.stdout), ['/x/C', '/x/a', '/x/b'], '--json freeze --except: sorted too')
            ft.freezectl('thaw', '--recursive', '/x')

            # ---- "--" and a path starting with "-"
            ft.freezectl('freeze', '--', '-odd')
            ft.check_equal(sc.read_events('/-odd').get('frozen'), 1, 'freeze -- -odd froze /-odd')
            ft.freezectl('thaw', '--', '/-odd')
            ft.check_equal(sc.read_events('/-odd').get('frozen'), 0, 'thaw -- /-odd')
        check_freezerd_killed(sc, bus)
        check_freezerd_stopped(sc, bus)
        check_bus_reply_timeout(sc, d_config={'default_timeout_usec': 2000000})
        check_bus_refuses_root(sc)
        check_bus_drops_large_call(sc)
    print('# checked: freezectl status/freeze/thaw/list/tree (text and --json) against the kernel, exit codes 0/1/2 '
          'with one-line errors, --timeout --rollback, --no-wait, --')


ft.run(test)
