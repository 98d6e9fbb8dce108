#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezerd integration test harness.

Run with Debian's /usr/bin/python3: the standard library plus python3-jeepney
(pure Python D-Bus).  A test is a script that does

    import freezertest as ft

    def test():
        ft.require('root', 'cgroup2', 'dbus', 'freezerd')
        with ft.Scratch('name') as sc, ft.Bus() as bus:
            sc.mkdir('/g')
            sc.spawn_sleepers('/g', 5)
            with ft.Daemon(bus, sc.root) as d:
                d.client.call('Freeze', '/g', 0, 0)
                ft.check_equal(sc.read_events('/g')['frozen'], 1, 'kernel says frozen')

    ft.run(test)

and exits 0 (pass), 1 (fail) or 77 (skip, for meson).

Waiting.  Everything that waits goes through one event loop (Loop) fed by the
D-Bus sockets, freezerd's notify socket and exit (pidfd), and an inotify
instance that watches the cgroup.events file of every scratch group; wait_for()
re-evaluates its predicate after each event, up to a deadline.  No sleeps.
The only polling (wait_for(..., poll=SECONDS)) is for per-task scheduler state
(a task entering an uninterruptible sleep or the freezer trap), for which the
kernel sends no notification.

Kernel facts the harness relies on (Linux 6.18, checked by hand):
  * A task frozen by the cgroup v2 freezer sleeps in do_freezer_trap(), which
    is inlined into get_signal(): /proc/PID/status says "S (sleeping)" and
    /proc/PID/wchan says "get_signal" (or "do_freezer_trap" where it is not
    inlined).  A SIGSTOPped task is "T (stopped)" in do_signal_stop.  The
    authoritative indicator is the group's cgroup.events "frozen 1", which the
    kernel sets only once every task is in the trap; FROZEN_WCHANS is the
    per-task cross-check (a task may show wchan "0" for an instant between
    entering the trap and schedule()).
  * A task blocked on a FUSE server that never answered INIT sleeps killably
    in fuse_get_req(): "D (disk sleep)", wchan "fuse_get_req".  The freezer
    does not wake it, so its cgroup stays at "frozen 0" for as long as it
    blocks; SIGKILL (cgroup.kill) does end it.  statfs (`stat -f MOUNT`) is
    the call to block in: with lookups (`stat MOUNT/x`) only the first caller
    waits there, later ones wait *unkillably* on the root inode's mutex
    (fuse_lock_inode) or on the in-flight dentry (d_alloc_parallel), so not
    even cgroup.kill ends them until the FUSE server goes away.
  * An empty cgroup with cgroup.freeze 1 reports "frozen 1".
"""

import argparse
import collections
import ctypes
import errno
import fcntl
import importlib.util
import json
import os
import pwd
import re
import select
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import xml.etree.ElementTree as ET
from collections import namedtuple

try:
    from jeepney import DBusAddress, HeaderFields, MessageType, new_error, new_method_call
    from jeepney.bus import get_bus
    from jeepney.bus_messages import MatchRule, message_bus
    from jeepney.io.blocking import DBusConnectionBase, open_dbus_connection, prep_socket
except ImportError:  # reported by require('dbus')
    open_dbus_connection = None

class Figures:
    """The numbers printed at the end (and listed in the README's reliability section)."""

    def __init__(self, name):
        self.name = name
        self.calls = collections.Counter()
        self.errors = collections.Counter()
        self.faults = collections.Counter()
        self.checked = collections.Counter()
        self.lines = []

    def reply(self, method, error=None):
        self.calls[method] += 1
        if error is not None:
            self.errors[error] += 1

    def call(self, client, method, *args, **kwargs):
        """client.call(method, *args), its reply or error name counted."""
        try:
            out = client.call(method, *args, **kwargs)
        except DBusError as e:
            self.reply(method, e.name)
            raise
        self.reply(method)
        return out

    def print(self):
        def fmt(counter):
            return ', '.join(f'{k} {v}' for k, v in sorted(counter.items())) or 'none'
        out = [f'figures: {self.name}',
               f'calls:           {sum(self.calls.values())} ({fmt(self.calls)})',
               f'errors by kind:  {sum(self.errors.values())} ({fmt(self.errors)})',
               f'faults injected: {sum(self.faults.values())} ({fmt(self.faults)})',
               f'groups checked:  {sum(self.checked.values())} ({fmt(self.checked)})'] + self.lines
        print('# ' + '=' * 78, *('# ' + x for x in out), '# ' + '=' * 78, sep='\n', flush=True)


# ---- paths and constants ----------------------------------------------------------------------------------------

SRCDIR = os.environ.get('FREEZERD_SRCDIR') or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILDDIR = os.environ.get('FREEZERD_BUILDDIR') or os.path.join(SRCDIR, 'build')
FREEZERD_BIN = os.environ.get('FREEZERD_BIN') or os.path.join(BUILDDIR, 'daemon', 'freezerd')
FREEZECTL_BIN = os.environ.get('FREEZECTL_BIN') or os.path.join(BUILDDIR, 'client', 'freezectl')
FUSE_HANG_BIN = os.environ.get('FUSE_HANG_BIN') or os.path.join(BUILDDIR, 'tests', 'fuse-hang')
VFORK_HOLD_BIN = os.environ.get('VFORK_HOLD_BIN') or os.path.join(BUILDDIR, 'tests', 'vfork-hold')
DBUS_TEST_CONF = os.path.join(SRCDIR, 'tests', 'dbus-test.conf')
INTERFACE_XML = os.path.join(SRCDIR, 'dbus', 'org.freezerd.Freezer1.xml')
# Words prepended to freezerd's command line, e.g. "valgrind --error-exitcode=99 --leak-check=full".
FREEZERD_WRAPPER = os.environ.get('FREEZERD_WRAPPER', '').split()

BUS_NAME = 'org.freezerd.Freezer1'
MANAGER_PATH = '/org/freezerd/Freezer1'
MANAGER_IFACE = 'org.freezerd.Freezer1.Manager'
GROUP_IFACE = 'org.freezerd.Freezer1.Group'
GROUP_PREFIX = MANAGER_PATH + '/group'
PROPERTIES_IFACE = 'org.freedesktop.DBus.Properties'
OBJECT_MANAGER_IFACE = 'org.freedesktop.DBus.ObjectManager'

FLAG_ROLLBACK_ON_TIMEOUT = 1 << 0
FLAG_NO_WAIT = 1 << 1
FLAG_RECURSIVE = 1 << 2

ERROR_NO_SUCH_GROUP = 'org.freezerd.Freezer1.Error.NoSuchGroup'
ERROR_INVALID_PATH = 'org.freezerd.Freezer1.Error.InvalidPath'
ERROR_TIMEOUT = 'org.freezerd.Freezer1.Error.Timeout'
ERROR_FROZEN_BY_PARENT = 'org.freezerd.Freezer1.Error.FrozenByParent'
ERROR_NOT_TRACKED = 'org.freezerd.Freezer1.Error.NotTracked'
ERROR_CANCELLED = 'org.freezerd.Freezer1.Error.Cancelled'
ERROR_LIMITS_EXCEEDED = 'org.freezerd.Freezer1.Error.LimitsExceeded'
ERROR_INVALID_ARGS = 'org.freedesktop.DBus.Error.InvalidArgs'

# Multiplies every default deadline (sanitizer and valgrind runs are slower).
TIMEOUT_MULTIPLIER = float(os.environ.get('FREEZERD_TEST_TIMEOUT_MULTIPLIER', '1') or 1)
DEFAULT_TIMEOUT = 10.0 * TIMEOUT_MULTIPLIER

# wchan of a task sitting in the cgroup v2 freezer trap (see the module doc).
FROZEN_WCHANS = ('get_signal', 'do_freezer_trap')

SCRATCH_PREFIX = 'freezerd-test-'
TMP_PREFIX = 'freezerd-'  # temporary directories: freezerd-{bus,daemon,fuse}-PID-XXXX
FUSE_TMP_PREFIX = TMP_PREFIX + 'fuse-'

# ---- results ----------------------------------------------------------------------------------------------------


class TestFailure(Exception):
    """A check failed; run() prints the message and exits 1."""


class Terminated(BaseException):
    """SIGTERM/SIGINT/SIGHUP arrived (meson's timeout, ^C): unwinds every context manager."""


_checks = 0


def skip(reason):
    """Skip the test: exit status 77 (meson's SKIP)."""
    print(f'SKIP: {reason}', flush=True)
    raise SystemExit(77)


def fail(message):
    raise TestFailure(message)


def check(cond, what, detail=None):
    """Report one check: 'ok N - what', or fail the test with what (and detail)."""
    global _checks
    _checks += 1
    if not cond:
        raise TestFailure(what + (f': {detail}' if detail is not None else ''))
    print(f'ok {_checks} - {what}', flush=True)


def check_equal(actual, expected, what):
    check(actual == expected, what, f'got {actual!r}, expected {expected!r}')


def expect_dbus_error(name, fn, *args, **kwargs):
    """Call fn(*args, **kwargs), check that it fails with D-Bus error `name`; return the DBusError."""
    try:
        result = fn(*args, **kwargs)
    except DBusError as e:
        check(e.name == name, f'{getattr(fn, "__name__", fn)}{args!r} fails with {name}', f'got {e}')
        return e
    fail(f'{getattr(fn, "__name__", fn)}{args!r} succeeded ({result!r}), expected {name}')


QUOTE_MAX, QUOTE_HEAD, QUOTE_TAIL = 256, 96, 160  # daemon/cgroup-util.h, CG_QUOTE_*


def quoted(s):
    """s as an error message quotes it (cg_quote()): whole up to QUOTE_MAX bytes, else its
    first QUOTE_HEAD and last QUOTE_TAIL bytes, each cut on a character, then its size
    (for valid UTF-8 with no control characters nor backslashes)."""
    b = s.encode()
    if len(b) <= QUOTE_MAX:
        return s
    return (f'{b[:QUOTE_HEAD].decode(errors="ignore")}...{b[-QUOTE_TAIL:].decode(errors="ignore")}'
            f' ({len(b)} bytes)')


def _on_terminate(signum, frame):
    # Raise once; further signals only find the cleanup already under way.
    signal.signal(signum, signal.SIG_IGN)
    raise Terminated(signal.Signals(signum).name)


class _signals_blocked:
    """Block SIGTERM/SIGINT/SIGHUP while a cleanup runs, so that it is not cut short."""
    SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}

    def __enter__(self):
        self.old = signal.pthread_sigmask(signal.SIG_BLOCK, self.SIGNALS)

    def __exit__(self, *exc):
        signal.pthread_sigmask(signal.SIG_SETMASK, self.old)
        return False


def run(test):
    """Run test() and exit: 0 passed, 1 failed, 77 skipped.  Context managers inside
    test() are unwound on any exception and on SIGTERM/SIGINT/SIGHUP."""
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, _on_terminate)
    name = os.path.basename(sys.argv[0])
    try:
        test()
    except TestFailure as e:
        print(f'FAIL: {name}: {e}', file=sys.stderr, flush=True)
        sys.exit(1)
    except Terminated as e:
        print(f'FAIL: {name}: terminated by {e}', file=sys.stderr, flush=True)
        sys.exit(1)
    except SystemExit:
        raise
    except BaseException as e:
        traceback.print_exc()
        # The exception itself on the FAIL line: what run-tests' summary repeats.
        print(f'FAIL: {name}: unexpected {type(e).__name__}: {e}', file=sys.stderr, flush=True)
        sys.exit(1)
    print(f'PASS: {name}: {_checks} checks', flush=True)
    sys.exit(0)


# ---- requirements -----------------------------------------------------------------------------------------------


def cgroup2_mount(mountinfo='/proc/self/mountinfo'):
    """The first cgroup2 mount point in mountinfo, or None."""
    try:
        with open(mountinfo) as f:
            for line in f:
                fields = line.split()
                sep = fields.index('-')
                if fields[sep + 1] == 'cgroup2':
                    return _unescape_mountinfo(fields[4])
    except (OSError, ValueError):
        pass
    return None


def _unescape_mountinfo(s):
    return re.sub(r'\\([0-7]{3})', lambda m: chr(int(m.group(1), 8)), s)


def userns_works():
    """Whether a user namespace can be made here (unshare --user --map-root-user)."""
    try:
        return subprocess.run(['unshare', '--user', '--map-root-user', '--', 'true'],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def require(*what):
    """Skip (exit 77) unless each of: 'root', 'cgroup2', 'fuse', 'dbus', 'freezerd', 'freezectl', 'busctl',
    'psi'."""
    for w in what:
        if w == 'root':
            if os.geteuid() != 0:
                skip('not running as root')
        elif w == 'cgroup2':
            mnt = cgroup2_mount()
            if mnt is None:
                skip('no cgroup2 file system mounted')
            if not os.access(os.path.join(mnt, 'cgroup.procs'), os.W_OK):
                skip(f'{mnt} is not writable')
        elif w == 'fuse':
            if not os.path.exists('/dev/fuse'):
                skip('no /dev/fuse')
            if not os.access(FUSE_HANG_BIN, os.X_OK):
                skip(f'{FUSE_HANG_BIN} is not built')
        elif w == 'dbus':
            if open_dbus_connection is None:
                skip('python3-jeepney is not installed (apt-get install python3-jeepney)')
            if shutil.which('dbus-daemon') is None:
                skip('no dbus-daemon (apt-get install dbus-daemon)')
        elif w == 'freezerd':
            if not os.access(FREEZERD_BIN, os.X_OK):
                skip(f'{FREEZERD_BIN} is not built')
        elif w == 'freezectl':
            if not os.access(FREEZECTL_BIN, os.X_OK):
                skip(f'{FREEZECTL_BIN} is not built')
        elif w == 'busctl':
            if shutil.which('busctl') is None:
                skip('no busctl (apt-get install systemd)')
        elif w == 'psi':
            if not os.path.exists('/proc/pressure/cpu'):
                skip('no /proc/pressure: the kernel has no PSI (CONFIG_PSI) or it is disabled (psi=0)')
        else:
            raise ValueError(f'unknown requirement {w!r}')


# ---- libc bits --------------------------------------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
PR_SET_PDEATHSIG = 1
MNT_DETACH = 2


def _errcheck(ret, what):
    if ret < 0:
        e = ctypes.get_errno()
        raise OSError(e, f'{what}: {os.strerror(e)}')
    return ret


def umount2(path, flags=MNT_DETACH):
    _errcheck(_libc.umount2(os.fsencode(path), flags), f'umount2 {path}')


def _child_setup(cgroup_procs=None, pdeathsig=signal.SIGKILL):
    """preexec_fn: join a cgroup before exec, and die with the harness."""
    def setup():
        if cgroup_procs is not None:
            fd = os.open(cgroup_procs, os.O_WRONLY)
            try:
                os.write(fd, b'%d' % os.getpid())
            finally:
                os.close(fd)
        if pdeathsig:
            _libc.prctl(PR_SET_PDEATHSIG, int(pdeathsig), 0, 0, 0)
    return setup


class Inotify:
    IN_MODIFY = 0x00000002
    IN_ATTRIB = 0x00000004
    IN_CREATE = 0x00000100
    IN_DELETE = 0x00000200
    IN_DELETE_SELF = 0x00000400
    IN_Q_OVERFLOW = 0x00004000
    IN_IGNORED = 0x00008000

    def __init__(self):
        self.fd = _errcheck(_libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC), 'inotify_init1')

    def fileno(self):
        return self.fd

    def add_watch(self, path, mask):
        return _errcheck(_libc.inotify_add_watch(self.fd, os.fsencode(path), mask), f'inotify_add_watch {path}')

    def read(self):
        """All queued events as (wd, mask, name); [] if none."""
        events = []
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return events
            off = 0
            while off + 16 <= len(buf):
                wd, mask, _cookie, length = struct.unpack_from('iIII', buf, off)
                name = buf[off + 16:off + 16 + length].rstrip(b'\0').decode(errors='replace')
                events.append((wd, mask, name))
                off += 16 + length

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# ---- the event loop ---------------------------------------------------------------------------------------------


class Loop:
    """One selector for everything a test waits on: D-Bus sockets, the notify socket,
    pidfds, pipes, and an inotify instance watching cgroup files."""

    def __init__(self):
        self.selector = selectors.DefaultSelector()
        self.inotify = Inotify()
        self.selector.register(self.inotify.fd, selectors.EVENT_READ, self.inotify.read)

    def add_reader(self, fileobj, callback):
        self.selector.register(fileobj, selectors.EVENT_READ, callback)

    def remove_reader(self, fileobj):
        try:
            self.selector.unregister(fileobj)
        except (KeyError, ValueError):
            pass

    def watch(self, path, mask=Inotify.IN_MODIFY):
        """Wake wait_for() when `path` changes (cgroup.events, cgroup.freeze, a directory)."""
        try:
            return self.inotify.add_watch(path, mask)
        except OSError as e:
            if e.errno == errno.ENOENT:
                return None
            raise

    def run_once(self, timeout):
        """Dispatch what is ready, waiting at most timeout seconds for something."""
        for key, _ in self.selector.select(max(timeout, 0)):
            key.data()

    def wait_for(self, predicate, timeout=None, what=None, deadline=None, poll=None):
        """Return predicate()'s first true value, re-evaluated after every event.
        Fails the test at the deadline.  poll (seconds) adds a periodic wake-up: only
        for per-task scheduler state, which no event reports."""
        if deadline is None:
            deadline = time.monotonic() + (DEFAULT_TIMEOUT if timeout is None else timeout)
        while True:
            value = predicate()
            if value:
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                fail(f'timed out waiting for {what or getattr(predicate, "__name__", "a condition")}')
            self.run_once(min(remaining, poll) if poll else remaining)


_loop = None


def loop():
    global _loop
    if _loop is None:
        _loop = Loop()
    return _loop


def wait_for(predicate, timeout=None, what=None, deadline=None, poll=None):
    """See Loop.wait_for."""
    return loop().wait_for(predicate, timeout=timeout, what=what, deadline=deadline, poll=poll)


def _wait_pidfd_exit(proc, timeout):
    """Wait for a child to exit (pidfd, no polling); returns its status or None at the deadline."""
    if proc.poll() is not None:
        return proc.returncode
    try:
        pidfd = os.pidfd_open(proc.pid)
    except ProcessLookupError:
        return proc.wait()
    try:
        sel = selectors.DefaultSelector()
        sel.register(pidfd, selectors.EVENT_READ)
        ready = sel.select(timeout)
        sel.close()
    finally:
        os.close(pidfd)
    return proc.wait() if ready else None


def load_test_module(name):
    """Another integration test's module (tests/integration/NAME.py, e.g.
    "test-core-libfreezer"), for its helpers: loaded from its file, as its name has
    dashes."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'integration', name + '.py')
    spec = importlib.util.spec_from_file_location(name.replace('-', '_'), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_fuse_part(part, what):
    """part() where /dev/fuse exists (a group that cannot finish freezing); elsewhere
    only that part is left out, said as "# not run: WHAT (no /dev/fuse)", or fails
    with FREEZERD_REQUIRE_INTEGRATION=1 (CI on a machine that has it)."""
    if os.path.exists('/dev/fuse'):
        part()
    elif os.environ.get('FREEZERD_REQUIRE_INTEGRATION') == '1':
        fail(f'no /dev/fuse for {what}, and FREEZERD_REQUIRE_INTEGRATION=1')
    else:
        print(f'# not run: {what} (no /dev/fuse)')


def start_watch(address, args, what):
    """freezectl --address=ADDRESS watch ARGS, started and read up to its first line,
    which must say "watching" (within DEFAULT_TIMEOUT): (the process, that line).  The
    caller stops it (_stop_process())."""
    p = subprocess.Popen([FREEZECTL_BIN, f'--address={address}', 'watch', *args],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(p.stdout, selectors.EVENT_READ)
            if not sel.select(DEFAULT_TIMEOUT):
                fail(f'{what}: no "watching" line')
        line = p.stdout.readline()
        check('watching' in line, f'{what}: its watching line', line)
    except BaseException:
        _stop_process(p, signal.SIGKILL)
        p.stdout.close()
        p.stderr.close()
        raise
    return p, line


def _stop_process(proc, sig=signal.SIGTERM, timeout=None):
    """Signal a child, wait for it (SIGKILL at the deadline); returns its exit status."""
    if proc.poll() is None:
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass
        if _wait_pidfd_exit(proc, DEFAULT_TIMEOUT if timeout is None else timeout) is None:
            proc.kill()
            proc.wait()
    return proc.returncode


# ---- D-Bus ------------------------------------------------------------------------------------------------------


def _load_contract():
    """Method signatures and property types from dbus/org.freezerd.Freezer1.xml."""
    methods, props = {}, {}
    try:
        root = ET.parse(INTERFACE_XML).getroot()
    except (OSError, ET.ParseError):
        return methods, props
    for iface in root.iter('interface'):
        iname = iface.get('name')
        for m in iface.iter('method'):
            methods[(iname, m.get('name'))] = ''.join(a.get('type') for a in m.iter('arg')
                                                      if a.get('direction', 'in') == 'in')
        for p in iface.iter('property'):
            props[(iname, p.get('name'))] = p.get('type')
    return methods, props


METHOD_SIGNATURES, PROPERTY_TYPES = _load_contract()


def path_encode(prefix, s):
    """sd_bus_path_encode(): every byte that is not [A-Za-z0-9] becomes _xx (lowercase hex),
    a leading digit too; the empty string becomes "_"."""
    b = s.encode()
    if not b:
        return prefix + '/_'
    out = []
    for i, c in enumerate(b):
        if (0x41 <= c <= 0x5a) or (0x61 <= c <= 0x7a) or (i > 0 and 0x30 <= c <= 0x39):
            out.append(chr(c))
        else:
            out.append(f'_{c:02x}')
    return prefix + '/' + ''.join(out)


def path_decode(prefix, obj):
    """sd_bus_path_decode(): the inverse of path_encode, or None if obj is not below prefix."""
    if not obj.startswith(prefix + '/'):
        return None
    label = obj[len(prefix) + 1:]
    if label == '_':
        return ''
    out = bytearray()
    i = 0
    while i < len(label):
        if label[i] == '_':
            out.append(int(label[i + 1:i + 3], 16))
            i += 3
        else:
            out.append(ord(label[i]))
            i += 1
    return out.decode()


def normalize_group_path(path):
    """API path as freezerd keeps it: "/" or "/a/b" (leading slash added, trailing one dropped)."""
    return '/' + path.strip('/')


def group_object(path):
    """The object path of a group: GROUP_PREFIX + sd_bus_path_encode of its API path."""
    return path_encode(GROUP_PREFIX, normalize_group_path(path))


class DBusError(Exception):
    def __init__(self, name, message=''):
        super().__init__(f'{name}: {message}')
        self.name = name
        self.message = message


Signal = namedtuple('Signal', 'sender path interface member body')


def _unvariant(v):
    """jeepney gives a variant as (signature, value)."""
    return v[1] if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) else v


class PendingCall:
    def __init__(self, client, serial, what):
        self.client = client
        self.serial = serial
        self.what = what

    def done(self):
        return self.serial in self.client.replies

    def wait(self, timeout=None):
        """The reply Message (method return or error), waiting for it."""
        wait_for(self.done, timeout=timeout, what=f'the reply to {self.what}')
        return self.client.replies.pop(self.serial)

    def result(self, timeout=None):
        """The reply's body tuple; raises DBusError for an error reply."""
        msg = self.wait(timeout)
        if msg.header.message_type == MessageType.error:
            name = msg.header.fields.get(HeaderFields.error_name, '?')
            raise DBusError(name, msg.body[0] if msg.body else '')
        return msg.body


def _direct_connection(address):
    """A peer-to-peer connection (jeepney's DBusConnection would say Hello to a bus daemon)."""
    class DirectConnection(DBusConnectionBase):
        def send(self, message, serial=None):
            data, _fds = self._serialise(message, serial)
            self.sock.sendall(data)
    return DirectConnection(prep_socket(get_bus(address), timeout=DEFAULT_TIMEOUT))


class Client:
    """A D-Bus connection (jeepney for authentication and marshalling) pumped by the loop:
    replies are matched by serial, signals recorded in self.signals in arrival order."""

    def __init__(self, address, destination=BUS_NAME, direct=False):
        """direct: a peer-to-peer connection (freezerd's private socket): authentication, no Hello."""
        self.address = address
        self.destination = destination
        self.direct = direct
        if direct:
            self.conn = _direct_connection(address)
        else:
            self.conn = open_dbus_connection(address, auth_timeout=DEFAULT_TIMEOUT)
        self.unique_name = self.conn.unique_name
        self.replies = {}
        self.signals = []
        self.closed = False
        self._drain()
        loop().add_reader(self.conn.sock, self._on_readable)
        global _default_client
        _default_client = self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        global _default_client
        if _default_client is self:
            _default_client = None
        if not self.closed:
            self.closed = True
            loop().remove_reader(self.conn.sock)
            self.conn.close()

    # A connection the peer closes fails the test, unless a subclass expects it
    # (False: closed, and the replies read by then kept).
    fail_when_closed = True

    def _on_readable(self):
        try:
            data = self.conn.sock.recv(1 << 16)
        except ConnectionResetError:
            data = b''
        if not data:
            self.close()
            if self.fail_when_closed:
                fail(f'the D-Bus connection to {self.address} was closed')
            return
        self.conn.parser.add_data(data)
        self._drain()

    def _drain(self):
        while True:
            msg = self.conn.parser.get_next_message()
            if msg is None:
                return
            t = msg.header.message_type
            if t in (MessageType.method_return, MessageType.error):
                self.replies[msg.header.fields.get(HeaderFields.reply_serial)] = msg
            elif t == MessageType.signal:
                f = msg.header.fields
                self.signals.append(Signal(f.get(HeaderFields.sender), f.get(HeaderFields.path),
                                           f.get(HeaderFields.interface), f.get(HeaderFields.member), msg.body))
            elif t == MessageType.method_call:
                self.conn.send(new_error(msg, 'org.freedesktop.DBus.Error.UnknownMethod', 's',
                                         ('the test harness exports nothing',)))

    def send_call(self, path, interface, member, signature=None, body=(), destination=None):
        """Send a method call; returns a PendingCall without waiting."""
        if self.closed:
            fail('call on a closed D-Bus connection')
        msg = new_method_call(DBusAddress(path, destination or self.destination, interface),
                              member, signature or None, tuple(body))
        serial = next(self.conn.outgoing_serial)
        self.conn.send(msg, serial=serial)
        return PendingCall(self, serial, f'{interface}.{member}{tuple(body)!r} on {path}')

    def call_method(self, path, interface, member, signature=None, body=(), timeout=None, destination=None):
        return self.send_call(path, interface, member, signature, body, destination).result(timeout)

    def _signature(self, interface, member):
        sig = METHOD_SIGNATURES.get((interface, member))
        if sig is None:
            raise ValueError(f'{interface}.{member} is not in {INTERFACE_XML}')
        return sig

    def call_async(self, method, *args):
        """Manager.method(*args) without waiting: a PendingCall."""
        return self.send_call(MANAGER_PATH, MANAGER_IFACE, method,
                              self._signature(MANAGER_IFACE, method), args)

    def call(self, method, *args, timeout=None):
        """Manager.method(*args); returns the reply body tuple, raises DBusError."""
        return self.call_async(method, *args).result(timeout)

    def group_call_async(self, path_or_object, method, *args):
        obj = path_or_object if path_or_object.startswith(GROUP_PREFIX + '/') else group_object(path_or_object)
        return self.send_call(obj, GROUP_IFACE, method, self._signature(GROUP_IFACE, method), args)

    def group_call(self, path_or_object, method, *args, timeout=None):
        """Group.method(*args) on a group given by API path or object path."""
        return self.group_call_async(path_or_object, method, *args).result(timeout)

    def get_property(self, obj, interface, name, timeout=None):
        return _unvariant(self.call_method(obj, PROPERTIES_IFACE, 'Get', 'ss', (interface, name), timeout)[0])

    def get_all(self, obj, interface, timeout=None):
        props = self.call_method(obj, PROPERTIES_IFACE, 'GetAll', 's', (interface,), timeout)[0]
        return {k: _unvariant(v) for k, v in props.items()}

    def group_property(self, path, name):
        return self.get_property(group_object(path), GROUP_IFACE, name)

    def manager_property(self, name):
        return self.get_property(MANAGER_PATH, MANAGER_IFACE, name)

    def managed_objects(self):
        objs = self.call_method(MANAGER_PATH, OBJECT_MANAGER_IFACE, 'GetManagedObjects')[0]
        return {o: {i: {k: _unvariant(v) for k, v in p.items()} for i, p in ifaces.items()}
                for o, ifaces in objs.items()}

    def add_match(self, **rule):
        """AddMatch(type=..., sender=..., path=..., path_namespace=..., interface=..., member=...)."""
        mr = MatchRule(**rule)
        serial = next(self.conn.outgoing_serial)
        self.conn.send(message_bus.AddMatch(mr), serial=serial)
        PendingCall(self, serial, f'AddMatch({mr.serialise()})').result()

    def subscribe(self):
        """Manager.Subscribe(): GroupsChanged and per-object PropertiesChanged are sent only while
        a client is subscribed."""
        self.call_method(MANAGER_PATH, MANAGER_IFACE, 'Subscribe')

    def subscribe_groups(self):
        """Manager.SubscribeGroups(): GroupsChanged alone."""
        self.call_method(MANAGER_PATH, MANAGER_IFACE, 'SubscribeGroups')

    def record(self, subscribe=True, **rule):
        """Match the daemon's signals (default: every signal from BUS_NAME), subscribe, and return
        a SignalRecorder of what arrives from now on.  subscribe: True for Subscribe() (every
        signal), 'groups' for SubscribeGroups() (GroupsChanged alone), False for none (then only
        the signals sent to everyone come: InterfacesAdded/Removed, the Manager's
        PropertiesChanged, pressure signals).  On a direct connection (the private socket) no
        match is added, and nothing comes unless subscribed."""
        if not self.direct:  # a direct connection has no match rules: the daemon sends what was subscribed
            rule = rule or {'type': 'signal', 'sender': self.destination}
            self.add_match(**rule)
        if subscribe == 'groups':
            self.subscribe_groups()
        elif subscribe and self.destination == BUS_NAME:
            self.subscribe()
        return SignalRecorder(self)


class SignalRecorder:
    """A view of the signals a Client received since the recorder was made."""

    def __init__(self, client):
        self.client = client
        self.start = len(client.signals)

    @property
    def signals(self):
        return self.client.signals[self.start:]

    def clear(self):
        self.start = len(self.client.signals)

    def properties_changed(self, obj=None, interface=None):
        """[(object, interface, {name: value}, [invalidated])] in arrival order."""
        out = []
        for s in self.signals:
            if s.interface == PROPERTIES_IFACE and s.member == 'PropertiesChanged' and \
                    (obj is None or s.path == obj) and (interface is None or s.body[0] == interface):
                out.append((s.path, s.body[0], {k: _unvariant(v) for k, v in s.body[1].items()}, list(s.body[2])))
        return out

    def property_values(self, obj, name, interface=None):
        """Every value `name` took in PropertiesChanged signals of obj, in order."""
        return [changed[name] for _o, _i, changed, _inv in self.properties_changed(obj, interface) if name in changed]

    GROUPS_CHANGED_FIELDS = ('FreezerState', 'Freeze', 'Frozen', 'Populated', 'Descendants', 'FrozenDescendants')

    def groups_changed(self):
        """Every Manager.GroupsChanged in arrival order: [[(path, {property: value}), ...], ...]."""
        return [[(entry[0], dict(zip(self.GROUPS_CHANGED_FIELDS, entry[1:]))) for entry in s.body[0]]
                for s in self.signals
                if s.interface == MANAGER_IFACE and s.member == 'GroupsChanged' and s.path == MANAGER_PATH]

    def group_values(self, path, name):
        """Every value `name` took for the group at API path `path` in GroupsChanged, in order."""
        return [props[name] for batch in self.groups_changed() for p, props in batch if p == path and name in props]

    def interfaces_added(self):
        """[(object, {interface: {name: value}})]."""
        return [(s.body[0], {i: {k: _unvariant(v) for k, v in p.items()} for i, p in s.body[1].items()})
                for s in self.signals if s.interface == OBJECT_MANAGER_IFACE and s.member == 'InterfacesAdded']

    def interfaces_removed(self):
        """[(object, [interface])]."""
        return [(s.body[0], list(s.body[1]))
                for s in self.signals if s.interface == OBJECT_MANAGER_IFACE and s.member == 'InterfacesRemoved']

    def wait_for(self, predicate, timeout=None, what=None):
        """wait_for(lambda: predicate(self)) driven by incoming messages."""
        return wait_for(lambda: predicate(self), timeout=timeout, what=what)

    def wait_property(self, obj, name, value, timeout=None):
        """Wait until a PropertiesChanged of obj has carried name=value."""
        return self.wait_for(lambda r: value in r.property_values(obj, name), timeout=timeout,
                             what=f'PropertiesChanged {name}={value!r} on {obj}')


_default_client = None


def default_client():
    if _default_client is None:
        fail('no D-Bus client: start a Daemon or make a Client first')
    return _default_client


def call(method, *args, timeout=None):
    """Manager.method(*args) on the most recent Client (e.g. the running Daemon's)."""
    return default_client().call(method, *args, timeout=timeout)


def get_property(obj, interface, name):
    return default_client().get_property(obj, interface, name)


# ---- the private bus ------------------------------------------------------------------------------------------


class Bus:
    """A private dbus-daemon (tests/dbus-test.conf) on a socket in a temporary directory."""

    def __init__(self, config=DBUS_TEST_CONF):
        self.config = config
        self.address = None
        self.proc = None
        self.tmpdir = None

    def __enter__(self):
        global _current_bus
        self.tmpdir = tempfile.mkdtemp(prefix=f'{TMP_PREFIX}bus-{os.getpid()}-')
        self.log_path = os.path.join(self.tmpdir, 'dbus-daemon.log')
        rfd, wfd = os.pipe2(os.O_CLOEXEC)
        try:
            with open(self.log_path, 'w') as log:
                self.proc = subprocess.Popen(
                    ['dbus-daemon', f'--config-file={self.config}', '--nofork', f'--print-address={wfd}',
                     f'--address=unix:path={self.tmpdir}/bus'],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(wfd,),
                    preexec_fn=_child_setup(pdeathsig=signal.SIGTERM))
            os.close(wfd)
            wfd = -1
            line = b''
            deadline = time.monotonic() + DEFAULT_TIMEOUT
            sel = selectors.DefaultSelector()
            sel.register(rfd, selectors.EVENT_READ)
            while not line.endswith(b'\n'):
                if not sel.select(deadline - time.monotonic()):
                    fail(f'dbus-daemon did not print its address:\n{self.log()}')
                chunk = os.read(rfd, 4096)
                if not chunk:
                    fail(f'dbus-daemon exited ({self.proc.wait()}):\n{self.log()}')
                line += chunk
            sel.close()
        except BaseException:
            self._cleanup()
            raise
        finally:
            os.close(rfd)
            if wfd >= 0:
                os.close(wfd)
        self.address = line.decode().strip()
        _current_bus = self
        return self

    def open_to_other_uids(self):
        """Let other uids reach the socket (its directory is 0700)."""
        os.chmod(self.tmpdir, 0o711)
        os.chmod(os.path.join(self.tmpdir, 'bus'), 0o666)

    def log(self):
        """dbus-daemon's output, less its warning that it cannot raise RLIMIT_NOFILE."""
        try:
            with open(self.log_path, errors='replace') as f:
                return ''.join(line for line in f if 'Failed to set fd limit' not in line)
        except OSError:
            return ''

    def _cleanup(self):
        global _current_bus
        if _current_bus is self:
            _current_bus = None
        if self.proc is not None:
            _stop_process(self.proc)
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def __exit__(self, exc_type, exc, tb):
        with _signals_blocked():
            if exc_type is not None and self.log().strip():
                _print_log('dbus-daemon', self.log())
            self._cleanup()
        return False


def client_as(bus, uid):
    """A Client of bus connected with effective uid uid (the bus learns it from
    SO_PEERCRED; the uid needs no user of its own)."""
    bus.open_to_other_uids()
    os.seteuid(uid)
    try:
        return Client(bus.address)
    finally:
        os.seteuid(0)


def client_as_nobody(bus):
    """A Client of bus connected with the effective uid of the user "nobody", or None
    where there is no such user."""
    try:
        uid = pwd.getpwnam('nobody').pw_uid
    except KeyError:
        return None
    return client_as(bus, uid)


_current_bus = None


def _bus_address(address):
    if address:
        return address
    if _current_bus is None:
        fail('no bus: start a Bus first or pass address=')
    return _current_bus.address


# ---- freezerd -----------------------------------------------------------------------------------------------


# A log line of freezerd off the journal: "LEVEL: message" on a terminal, else after an
# RFC 3339 local time with microseconds ("2026-12-06T21:03:04.123456+01:00 warning: ...").
LOG_LINE_RE = re.compile(r'(?:(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}[+-]\d\d:\d\d) )?'
                         r'(?P<level>emerg|alert|crit|error|warning|notice|info|debug): (?P<message>.*)')


class Daemon:
    """The built freezerd on a Bus over a cgroup root, with NOTIFY_SOCKET on a datagram
    socket of ours; __enter__ returns once it sent READY=1 (and connects self.client, which
    pings freezerd once: its start is over).

    cgroup_root: its --cgroup-root (None: none given, the configuration's cgroup_root applies).
    config: dict written as the JSON configuration file (default {}).
    args: extra command-line arguments.
    wrapper: a command freezerd runs under (before FREEZERD_WRAPPER's), e.g. setpriv.
    user: a uid freezerd runs as (setpriv, its primary group as gid, no other groups),
      with its own state and runtime directories and a notify socket it may send to;
      the cgroup files it writes must be the uid's (a delegated subtree).
    state_dir, runtime_dir: directories to use (default: fresh ones, removed on exit);
      pass the same state_dir to a second Daemon to test a restart.
    journal: True (default): the log plays the journal ($JOURNAL_STREAM names it, each
      line starts "<N>"); False: a plain file, as StandardError=file: makes it ("TIME
      LEVEL: message").
    On exit: SIGTERM, and the exit status must be 0 (else the test fails); the log
    (stdout+stderr) is printed whenever the test failed."""

    def __init__(self, bus, cgroup_root, config=None, args=(), env=None, connect=True, ready_timeout=None,
                 state_dir=None, runtime_dir=None, wrapper=(), user=None, journal=True):
        self.bus = bus
        self.journal = journal
        self.user = user
        self.cgroup_root = cgroup_root
        self.config = {} if config is None else config
        self.args = list(args)
        self.wrapper = list(wrapper)
        self.extra_env = env or {}
        self.connect = connect
        self.ready_timeout = ready_timeout
        self.state_dir = state_dir
        self.runtime_dir = runtime_dir
        self.proc = None
        self.client = None
        self.notifications = []  # one dict per datagram: {'READY': '1', 'STATUS': ...}
        self.exit_status = None
        self.tmpdir = None
        self._notify = None
        self._pidfd = -1

    # -- start
    def __enter__(self):
        try:
            self._start()
        except BaseException:
            with _signals_blocked():
                self._print_log()
                self._cleanup()
            raise
        return self

    def _start(self):
        self.tmpdir = tempfile.mkdtemp(prefix=f'{TMP_PREFIX}daemon-{os.getpid()}-')
        self.config_path = os.path.join(self.tmpdir, 'freezerd.json')
        self.write_config(self.config)
        self.log_path = os.path.join(self.tmpdir, 'freezerd.log')
        notify_path = os.path.join(self.tmpdir, 'notify')
        self._notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self._notify.bind(notify_path)
        if self.state_dir is None:
            self.state_dir = os.path.join(self.tmpdir, 'state')
            os.mkdir(self.state_dir)
        if self.runtime_dir is None:
            self.runtime_dir = os.path.join(self.tmpdir, 'run')
            os.mkdir(self.runtime_dir)
        user_wrapper = []
        if self.user is not None:
            gid = pwd.getpwuid(self.user).pw_gid
            os.chmod(self.tmpdir, 0o711)
            os.chmod(notify_path, 0o666)
            for d in (self.state_dir, self.runtime_dir):
                if os.path.dirname(d) == self.tmpdir:
                    os.chown(d, self.user, gid)
            user_wrapper = ['setpriv', f'--reuid={self.user}', f'--regid={gid}', '--clear-groups', '--']

        argv = self.wrapper + user_wrapper + FREEZERD_WRAPPER + [FREEZERD_BIN, f'--address={self.bus.address}'] + \
            ([f'--cgroup-root={self.cgroup_root}'] if self.cgroup_root is not None else []) + \
            [f'--config={self.config_path}', f'--runtime-dir={self.runtime_dir}',
             f'--state-dir={self.state_dir}'] + self.args
        env = dict(os.environ, NOTIFY_SOCKET=notify_path, **self.extra_env)
        env.pop('DBUS_SESSION_BUS_ADDRESS', None)
        env.pop('DBUS_SYSTEM_BUS_ADDRESS', None)
        print('# starting ' + ' '.join(argv), flush=True)
        with open(self.log_path, 'w') as log:
            # The log plays the journal (unless journal=False): freezerd prefixes "<N>"
            # priorities (warnings()) only to a stderr that $JOURNAL_STREAM names, as systemd
            # sets it for a service.
            if self.journal:
                st = os.fstat(log.fileno())
                env['JOURNAL_STREAM'] = f'{st.st_dev}:{st.st_ino}'
            else:
                env.pop('JOURNAL_STREAM', None)
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         env=env, preexec_fn=_child_setup(pdeathsig=signal.SIGTERM))
        self._pidfd = os.pidfd_open(self.proc.pid)
        loop().add_reader(self._notify, self._on_notify)
        loop().add_reader(self._pidfd, self._on_exit)
        self.wait_ready(0, timeout=self.ready_timeout)
        if self.connect:
            self.client = Client(self.bus.address)
            # One round trip through freezerd's loop: READY=1 arrives before sd_notify()
            # closes its socket in freezerd, so a count of freezerd's fds taken right after
            # READY could hold that socket (test-core-private-close, test-fault-fd-passing:
            # one fd more at the start than a moment later).  freezerd answers the Ping
            # only once main() returned from it to the loop.
            self.client.call_method(MANAGER_PATH, 'org.freedesktop.DBus.Peer', 'Ping')

    def _on_notify(self):
        data = self._notify.recv(65536)
        self.notifications.append(dict(line.split('=', 1) for line in data.decode(errors='replace').splitlines()
                                       if '=' in line))

    def _on_exit(self):
        loop().remove_reader(self._pidfd)
        self.exit_status = self.proc.wait()

    def ready_count(self):
        return sum(1 for n in self.notifications if n.get('READY') == '1')

    def wait_ready(self, count_before, timeout=None):
        """Wait until more than count_before READY=1 arrived; fail if freezerd exits first."""
        def ready():
            if self.exit_status is not None:
                fail(f'freezerd exited with status {self.exit_status} before READY=1')
            return self.ready_count() > count_before
        wait_for(ready, timeout=timeout, what='READY=1 from freezerd')

    def write_config(self, config):
        """Replace freezerd's configuration file (read at the start and at each reload())."""
        with open(self.config_path, 'w') as f:
            json.dump(config, f)

    def reload(self, timeout=None):
        """SIGHUP, then wait for the next READY=1."""
        n = self.ready_count()
        self.proc.send_signal(signal.SIGHUP)
        self.wait_ready(n, timeout)

    @property
    def pid(self):
        return self.proc.pid

    def log(self):
        try:
            with open(self.log_path, errors='replace') as f:
                return f.read()
        except (OSError, AttributeError):
            return ''

    def warnings(self, besides=None):
        """freezerd's log lines at warning level or worse (sd-daemon prefixes <0> to
        <4>; off the journal the words LOG_LINE_RE's level names), less those containing
        the text besides."""
        def serious(line):
            if self.journal:
                return line[:3] in ('<0>', '<1>', '<2>', '<3>', '<4>')
            m = LOG_LINE_RE.fullmatch(line)
            return m is not None and m.group('level') in ('emerg', 'alert', 'crit', 'error', 'warning')
        return [line for line in self.log().splitlines() if serious(line) and (besides is None or besides not in line)]

    def _print_log(self):
        _print_log('freezerd', self.log())

    # -- stop
    def stop(self, timeout=None):
        """SIGTERM and wait; returns the exit status (negative: killed by that signal)."""
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.proc is not None and self.exit_status is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                wait_for(lambda: self.exit_status is not None, timeout=timeout, what='freezerd to exit after SIGTERM')
            except TestFailure:
                self.proc.kill()
                self.exit_status = self.proc.wait()
                raise
        return self.exit_status

    def _cleanup(self):
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self._pidfd >= 0:
            loop().remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = -1
        if self._notify is not None:
            loop().remove_reader(self._notify)
            self._notify.close()
            self._notify = None
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None

    def __exit__(self, exc_type, exc, tb):
        with _signals_blocked():
            problem = None
            try:
                status = self.stop()
                if status != 0:
                    problem = f'freezerd exited with status {status} (expected 0)'
            except TestFailure as e:
                problem = str(e)
            if exc_type is not None or problem:
                self._print_log()
            self._cleanup()
        if problem and exc_type is None:
            fail(problem)
        return False


# ---- a PSI trigger of the test's own -----------------------------------------------------------------------

class RawPsiTrigger:
    """A pressure trigger armed by the test itself, the witness of the kernel's events
    next to freezerd's.  PSI's poll clears the event it reports, so a trigger fd must not
    sit in an epoll set that is itself polled (the loop's selector): a thread poll()s it
    alone and forwards each event through a pipe the loop watches.  start_text is the
    file as it read before arming; events holds (seconds since arming, the file's text
    when the loop took the event)."""

    def __init__(self, path, spec):
        self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        self.start_text = os.pread(self.fd, 4096, 0).decode()
        os.write(self.fd, spec.encode() + b'\0')
        self.events = []
        self.t0 = time.monotonic()
        self.rfd, self.wfd = os.pipe2(os.O_CLOEXEC)
        self.stop_r, self.stop_w = os.pipe2(os.O_CLOEXEC)
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()
        loop().add_reader(self.rfd, self._on_ready)

    def _watch(self):
        p = select.poll()
        p.register(self.fd, select.POLLPRI)
        p.register(self.stop_r, select.POLLIN)
        while True:
            for fd, ev in p.poll():
                if fd == self.stop_r:
                    return
                if ev & select.POLLPRI:
                    os.write(self.wfd, b'!')

    def _on_ready(self):
        for _ in os.read(self.rfd, 4096):
            self.events.append((time.monotonic() - self.t0, os.pread(self.fd, 4096, 0).decode()))

    def close(self):
        loop().remove_reader(self.rfd)
        os.write(self.stop_w, b'x')
        self.thread.join()
        for fd in (self.rfd, self.wfd, self.stop_r, self.stop_w, self.fd):
            os.close(fd)


# ---- batch journals ----------------------------------------------------------------------------------------

JOURNAL_RE = re.compile(r'journal-(\d+)\.json')


class CrashableDaemon(Daemon):
    """Daemon that may be SIGKILLed: then its exit is not a failure."""

    killed = False

    def sigkill(self):
        if not self.killed:
            self.killed = True
            os.kill(self.pid, signal.SIGKILL)

    def wait_dead(self):
        """The exit status (-SIGKILL), once freezerd died."""
        wait_for(lambda: self.exit_status is not None, what='freezerd to die of SIGKILL')
        return self.exit_status

    def __exit__(self, exc_type, exc, tb):
        if not self.killed:
            return super().__exit__(exc_type, exc, tb)
        with _signals_blocked():
            if exc_type is not None:
                self._print_log()
            self._cleanup()
        return False


def live_journals(runtime_dir):
    """The batch journal files of runtime_dir that hold a journal, sorted.  freezerd keeps
    its journal files as slots (daemon/journal.h): held open, written whole when a batch
    starts and emptied when it ends, so an empty one holds none."""
    out = []
    for name in sorted(os.listdir(runtime_dir)):
        if JOURNAL_RE.fullmatch(name):
            try:
                if os.path.getsize(os.path.join(runtime_dir, name)) > 0:
                    out.append(name)
            except FileNotFoundError:
                pass
    return out


def read_journal(runtime_dir, name):
    """The journal in runtime_dir/name, parsed; None if it holds none (a free slot, or one
    being written or emptied at this very moment)."""
    try:
        with open(os.path.join(runtime_dir, name)) as f:
            return json.load(f)
    except (FileNotFoundError, ValueError):
        return None


def tracked_roots(state_dir):
    """The roots <state_dir>/tracked.json keeps (its "tracked" array, in the file's order);
    None if there is no such file."""
    try:
        with open(os.path.join(state_dir, 'tracked.json')) as f:
            return json.load(f)['tracked']
    except FileNotFoundError:
        return None


def published_paths(client):
    """The paths of the groups freezerd publishes (ListGroups), sorted."""
    return sorted(p for p, _o, _s in client.call('ListGroups')[0])


# ---- scratch cgroups ----------------------------------------------------------------------------------------

ProcState = namedtuple('ProcState', 'pid state wchan')


def fd_count(pid):
    """The number of open fds of a process."""
    return len(os.listdir(f'/proc/{pid}/fd'))


def wait_fds_back(count, pid, before, noun='fd'):
    """Until count(pid), a count of some of freezerd's fds (what its connections hold), is
    before again: the connections a check made were dropped.  The message names the count
    (noun) and what it was when the wait began."""
    wait_for(lambda: count(pid) == before, poll=0.05,
             what=f"freezerd's {noun} count back to {before} (it has {count(pid)})")


def socket_fds(pid):
    """The sockets (as "socket:[INODE]") among a process's fds."""
    links = set()
    for fd in os.listdir(f'/proc/{pid}/fd'):
        try:
            links.add(os.readlink(f'/proc/{pid}/fd/{fd}'))
        except FileNotFoundError:  # closed meanwhile
            pass
    return {link for link in links if link.startswith('socket:')}


def auth_external():
    """What a raw client of the private socket sends first: the NUL byte and
    AUTH EXTERNAL with this process's uid (in hex digits of its decimal text)."""
    return b'\0AUTH EXTERNAL ' + str(os.getuid()).encode().hex().encode() + b'\r\n'


def connect_accepted(path, pid):
    """A raw AF_UNIX stream socket connected to path, once the process pid (freezerd)
    accepted it: a new socket among its fds (not a larger count: another connection
    may close meanwhile)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        before = socket_fds(pid)
        s.connect(path)
        wait_for(lambda: socket_fds(pid) - before, what='freezerd to accept the connection', poll=0.01)
    except BaseException:
        s.close()
        raise
    return s


def thread_count(pid):
    """The number of threads of a process."""
    return len(os.listdir(f'/proc/{pid}/task'))


def pressure_trigger_fd_count(pid):
    """How many fds freezerd has open read-write on pressure files: its triggers', and the removed
    triggers' that its watcher thread has yet to close (the readings' are read-only)."""
    n = 0
    for fd in os.listdir(f'/proc/{pid}/fd'):
        try:
            target = os.readlink(f'/proc/{pid}/fd/{fd}')
            if not (target.endswith('.pressure') or target.startswith('/proc/pressure/')):
                continue
            with open(f'/proc/{pid}/fdinfo/{fd}') as f:
                flags = int(re.search(r'^flags:\s+(\d+)', f.read(), re.M).group(1), 8)
            n += (flags & os.O_ACCMODE) == os.O_RDWR
        except (OSError, AttributeError):
            pass
    return n


def wait_pressure_trigger_fds(pid, n, what, timeout=None):
    """Until pressure_trigger_fd_count(pid) is n: freezerd's watcher thread closes a removed
    trigger's fd a moment after the removal (each close waits for an RCU grace period, which
    on some machines outlasts the calls that follow).  timeout: 5 s (times
    TIMEOUT_MULTIPLIER) unless given."""
    wait_for(lambda: pressure_trigger_fd_count(pid) == n, poll=0.02, what=what,
             timeout=5 * TIMEOUT_MULTIPLIER if timeout is None else timeout)


def anon_fd_items(pid, kind, prefix):
    """Lines starting with prefix (bytes) in the /proc/PID/fdinfo of each fd of a process
    that is an anon_inode:KIND ("[eventpoll]": epoll items, b'tfd:'; "inotify": watches,
    b'inotify wd:'); 0 once the process is gone, and an fd closed meanwhile counts none."""
    n = 0
    try:
        fds = os.listdir(f'/proc/{pid}/fd')
    except OSError:
        return 0
    for fd in fds:
        try:
            if os.readlink(f'/proc/{pid}/fd/{fd}') != f'anon_inode:{kind}':
                continue
            with open(f'/proc/{pid}/fdinfo/{fd}', 'rb') as f:
                n += sum(1 for line in f if line.startswith(prefix))
        except OSError:
            continue
    return n


def proc_uids(pid):
    """(real, effective, saved, filesystem) uid of a process (/proc/PID/status).  Read as
    bytes: the task's name there may be any bytes (prctl(PR_SET_NAME)), and a scan of every
    process on the machine must not stop at one that is not UTF-8.  OSError once the
    process is gone."""
    with open(f'/proc/{pid}/status', 'rb') as f:
        for line in f:
            if line.startswith(b'Uid:'):
                return tuple(int(x) for x in line.split()[1:5])
    raise ProcessLookupError(f'no Uid: line in /proc/{pid}/status')


def run_queue_wait(pid):
    """Seconds the process's main thread has waited for a CPU while runnable, in all
    (/proc/PID/schedstat, its second field)."""
    with open(f'/proc/{pid}/schedstat') as f:
        return int(f.read().split()[1]) / 1e9


def rss_kib(pid):
    """VmRSS of a process, in KiB."""
    with open(f'/proc/{pid}/status') as f:
        return next(int(line.split()[1]) for line in f if line.startswith('VmRSS:'))


def under_asan(pid):
    """Whether the process runs with AddressSanitizer, whose quarantine keeps freed memory
    resident by design (RSS says nothing about leaks there; LeakSanitizer checks those)."""
    with open(f'/proc/{pid}/maps') as f:
        return any('libasan' in line for line in f)


def proc_state(pid):
    """ProcState(pid, state letter from /proc/PID/status, /proc/PID/wchan), or None if gone."""
    try:
        # A task's name may be any bytes (prctl(PR_SET_NAME)), not UTF-8.
        with open(f'/proc/{pid}/status', errors='surrogateescape') as f:
            state = next(line.split()[1] for line in f if line.startswith('State:'))
        with open(f'/proc/{pid}/wchan') as f:
            wchan = f.read().strip()
    except (OSError, StopIteration):
        return None
    return ProcState(pid, state, wchan)


# A child that waits for ever in one of epoll_wait(), epoll_pwait(), epoll_pwait2(), on an
# epoll fd of its own, which it prints first, or in ppoll() on a pipe of its own, printing its
# reading end (waiting_syscalls()).
_WAIT_PROBE = r'''
import ctypes, os, select, sys
name = sys.argv[1]
fn = getattr(ctypes.CDLL(None, use_errno=True), name, None)
if fn is None:  # (epoll_pwait2(): glibc 2.35)
    sys.exit(3)
if name == 'ppoll':
    class PollFd(ctypes.Structure):
        _fields_ = [('fd', ctypes.c_int), ('events', ctypes.c_short), ('revents', ctypes.c_short)]
    r, w = os.pipe()
    print(r, flush=True)
    fn(ctypes.byref(PollFd(r, select.POLLIN)), 1, None, None)
else:
    ep = select.epoll()
    print(ep.fileno(), flush=True)
    timeout = {'epoll_wait': (-1,), 'epoll_pwait': (-1, None), 'epoll_pwait2': (None, None)}[name]
    fn(ep.fileno(), ctypes.create_string_buffer(64), 1, *timeout)
sys.exit(4)  # (returned: ENOSYS, a kernel without it)
'''
_waiting_numbers = {}


def waiting_syscalls(names):
    """The numbers /proc/PID/syscall shows for the calls names (of epoll_wait, epoll_pwait,
    epoll_pwait2, ppoll) on this machine (where glibc and the kernel have them): read once off a
    child that waits in each (_WAIT_PROBE), rather than a table for every architecture."""
    numbers = set()
    for name in names:
        if name not in _waiting_numbers:
            _waiting_numbers[name] = _waiting_syscall(name)
        if _waiting_numbers[name] is not None:
            numbers.add(_waiting_numbers[name])
    if not numbers:
        fail(f'no child waited in {", ".join(n + "()" for n in names)}')
    return numbers


def _waiting_syscall(name):
    """The number /proc/PID/syscall shows while a child waits in name(), None if it has none."""
    p = subprocess.Popen([sys.executable, '-c', _WAIT_PROBE, name], stdout=subprocess.PIPE, text=True)
    try:
        fd = p.stdout.readline().strip()

        def waiting():
            if p.poll() is not None:
                return 'none'
            try:
                f = open(f'/proc/{p.pid}/syscall').read().split()
            except OSError:  # (exited meanwhile: the next look says so)
                return False
            if len(f) <= 3:
                return False
            if name == 'ppoll':  # (nr, then the arguments: its pollfd, 1 of them, no timeout)
                return int(f[2], 16) == 1 and int(f[3], 16) == 0 and f[0]
            # (nr, then the arguments: its epoll fd, the events, maxevents 1)
            return int(f[1], 16) == int(fd) and int(f[3], 16) == 1 and f[0]

        if not fd:
            return None
        nr = wait_for(waiting, poll=0.001, what=f'a child to wait in {name}()')
        return None if nr == 'none' else nr
    finally:
        p.kill()
        p.wait()
        p.stdout.close()


def epoll_waits():
    """The numbers /proc/PID/syscall shows for epoll_wait(), epoll_pwait() and epoll_pwait2()
    (where glibc and the kernel have it) on this machine (where glibc makes epoll_wait() of
    epoll_pwait(), they are one)."""
    return waiting_syscalls(('epoll_wait', 'epoll_pwait', 'epoll_pwait2'))


def ppolls():
    """The number /proc/PID/syscall shows for ppoll() on this machine (a set, as epoll_waits()):
    where sd-bus waits (sd_bus_wait(), a blocking sd_bus_call())."""
    return waiting_syscalls(('ppoll',))


def unix_recv_queued(pid):
    """The bytes waiting in the receive queues of the unix sockets pid holds (ss -x): with
    freezerd stopped, that a call sent through dbus-daemon has reached freezerd's socket
    (dbus-daemon relays it when it gets to it: sent is not yet there)."""
    inodes = {link[len('socket:['):-1] for link in socket_fds(pid)}
    out = subprocess.run(['ss', '-x', '-a', '-n'], capture_output=True, text=True, check=True,
                         timeout=DEFAULT_TIMEOUT).stdout
    return sum(int(f[2]) for f in (line.split() for line in out.splitlines()[1:])
               if len(f) >= 6 and f[5] in inodes)


def stop_in_epoll_wait(pid):
    """SIGSTOP pid (freezerd) while it waits in epoll_wait() for its next loop turn, so that
    what comes meanwhile (a call, inotify events) is read together in one turn (the system
    call numbers: epoll_waits()).  Stopped in the middle of a turn, it would go on handling what it read
    first: stopped again until it is stopped waiting.  The caller sends SIGCONT."""
    numbers = epoll_waits()

    def stopped_waiting():
        os.kill(pid, signal.SIGSTOP)
        wait_for(lambda: open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0] == 'T',
                 poll=0.001, what='freezerd stopped')
        if open(f'/proc/{pid}/syscall').read().split()[0] in numbers:
            return True
        os.kill(pid, signal.SIGCONT)
        return False
    wait_for(stopped_waiting, poll=0.001, what='freezerd stopped in epoll_wait()')


def task_frozen(st):
    """Whether a ProcState shows a task parked in the cgroup v2 freezer trap."""
    return st is not None and st.state == 'S' and st.wchan in FROZEN_WCHANS


def _parse_keyed(text):
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(' ')
        out[k] = int(v) if v.lstrip('-').isdigit() else v
    return out


def _alive(pid):
    """Whether pid exists and is not a zombie."""
    st = proc_state(pid)
    return st is not None and st.state != 'Z'


def kill_cgroup_tree(root, timeout=None):
    """cgroup.kill the subtree, wait (inotify on cgroup.events) until it is empty, rmdir bottom-up.
    Returns a list of problems (empty if all went well)."""
    problems = []
    if not os.path.isdir(root):
        return problems
    events = os.path.join(root, 'cgroup.events')
    ino = Inotify()
    try:
        try:
            ino.add_watch(events, Inotify.IN_MODIFY)
        except OSError:
            pass
        try:
            with open(os.path.join(root, 'cgroup.kill'), 'w') as f:
                f.write('1')
        except OSError as e:
            problems.append(f'cgroup.kill {root}: {e}')
        deadline = time.monotonic() + (DEFAULT_TIMEOUT if timeout is None else timeout)
        sel = selectors.DefaultSelector()
        sel.register(ino.fd, selectors.EVENT_READ)
        while True:
            try:
                with open(events) as f:
                    populated = _parse_keyed(f.read()).get('populated', 0)
            except OSError:
                populated = 0
            if not populated:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                problems.append(f'{root} still populated after cgroup.kill')
                break
            if sel.select(remaining):
                ino.read()
        sel.close()
    finally:
        ino.close()
    for dirpath, _dirs, _files in os.walk(root, topdown=False):
        try:
            os.rmdir(dirpath)
        except OSError as e:
            problems.append(f'rmdir {dirpath}: {e}')
    return problems


def reap_stale():
    """Remove what earlier test runs that died (SIGKILL) left: scratch cgroups,
    fuse-hang mounts and temporary directories whose owning process is gone."""
    mnt = cgroup2_mount()
    if mnt:
        try:
            names = os.listdir(mnt)
        except OSError:
            names = []
        for name in names:
            m = re.fullmatch(re.escape(SCRATCH_PREFIX) + r'.*-(\d+)', name)
            if m and not _alive(int(m.group(1))) and os.path.isdir(os.path.join(mnt, name)):
                for p in kill_cgroup_tree(os.path.join(mnt, name)):
                    print(f'warning: {p}', file=sys.stderr)
    # Temporary directories of Bus, Daemon and FuseHang.  A FUSE one is unmounted and
    # removed with rmdir only: rmtree must never enter a mount that is still there.
    tmp = tempfile.gettempdir()
    for name in os.listdir(tmp):
        m = re.fullmatch(re.escape(TMP_PREFIX) + r'(bus|daemon|fuse)-(\d+)-.*', name)
        if not m or _alive(int(m.group(2))):
            continue
        d = os.path.join(tmp, name)
        if m.group(1) != 'fuse':
            shutil.rmtree(d, ignore_errors=True)
            continue
        mnt = os.path.join(d, 'mnt')
        try:
            umount2(mnt)
        except OSError:
            pass
        for x in (mnt, d):
            try:
                os.rmdir(x)
            except OSError:
                pass


SETTINGS_DIR = '/run/freezerd-tests'


class MachineSetting:
    """A machine-wide setting (a /proc/sys file) that a test lowers for a while.

    Taking it waits for an exclusive lock, so tests of other checkouts running at the
    same time take turns: each read the value another had lowered as its own "before"
    and put that back, and fs.epoll.max_user_watches was left at 97.  The value found
    is recorded in SETTINGS_DIR until release() puts it back, so that a run killed
    before its finally is mended by the next one, which writes the recorded value
    first.  .value is the value to put back."""

    def __init__(self, path, timeout=600):
        os.makedirs(SETTINGS_DIR, exist_ok=True)
        name = path.strip('/').replace('/', '.')
        self.path = path
        self._saved = os.path.join(SETTINGS_DIR, name + '.value')
        self._lock = open(os.path.join(SETTINGS_DIR, name + '.lock'), 'w')
        deadline = time.monotonic() + timeout * TIMEOUT_MULTIPLIER
        while True:
            try:
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    fail(f'{path} is held by another test run for more than {timeout} s')
                time.sleep(0.2)  # another run holds the lock: no event tells its release
        try:
            with open(self._saved) as f:
                self.value = int(f.read())
            print(f'# {path}: a run that died left it lowered: put back to {self.value}', flush=True)
            self._write(self.value)
        except FileNotFoundError:
            with open(path) as f:
                self.value = int(f.read())
            with open(self._saved + '.tmp', 'w') as f:
                f.write(str(self.value))
            os.rename(self._saved + '.tmp', self._saved)

    def _write(self, value):
        with open(self.path, 'w') as f:
            f.write(str(value))

    def put_back(self):
        """Write the value back now (release() still to come)."""
        self._write(self.value)

    def release(self):
        """Put the value back, forget it, and let the next run have the setting."""
        if self._lock.closed:
            return
        self._write(self.value)
        os.unlink(self._saved)
        self._lock.close()


class EventsLog:
    """The kernel's notifications of one group's cgroup.events as the test sees them:
    the file open and polled for EPOLLPRI (edge-triggered, as freezerd polls it) in an
    epoll set of its own, which the loop watches.  seen holds (time, frozen) for each
    notification, frozen as the file says when the loop took it.  A context manager.

    Polled, not watched with inotify: kernfs wakes a poller of the file inside the
    notification (kernfs_notify()), and so freezerd, but sends the inotify event from a
    work item (kernfs_notify_workfn()) that a kworker runs later (0.3-0.5 ms here on a
    loaded machine).  Through inotify, the test could see the notification after
    freezerd had answered it, and a freezerd that waited for it then looked first."""

    def __init__(self, scratch, relpath):
        self.scratch, self.relpath, self.seen = scratch, relpath, []
        self.together = False  # see wait_reply_and_frozen()
        self.fd = os.open(scratch.abspath(relpath, 'cgroup.events'), os.O_RDONLY | os.O_CLOEXEC)
        self.ep = select.epoll()
        self._frozen()  # kernfs reports a change since this fd's last read
        self.ep.register(self.fd, select.EPOLLPRI | select.EPOLLET)
        self.ep.poll(0)
        loop().add_reader(self.ep.fileno(), self._on_event)

    def _frozen(self):
        # A read through this fd also tells kernfs what it has seen (of->event).
        return _parse_keyed(os.pread(self.fd, 4096, 0).decode())['frozen']

    def _on_event(self):
        now = time.monotonic()
        if self.ep.poll(0):
            self.seen.append((now, self._frozen()))

    def discard_queued(self):
        """Drop what the kernel notified and the loop has not taken yet."""
        self.ep.poll(0)
        self._frozen()

    def first_frozen(self, since):
        """The time of the first notification at `since` or later that read frozen 1, or None."""
        return min((t for t, f in self.seen if f == 1 and t >= since), default=None)

    def wait_reply_and_frozen(self, call, since):
        """Wait until `call` (a PendingCall, or a function that says whether what is
        awaited came, e.g. a signal) is answered and a notification at `since`
        or later read frozen 1; returns (when the reply was seen, that notification's time).
        self.together then says whether one look of the loop found both waiting (the test
        was not running when they came, on a busy machine): which came first is not known
        then, and the times say nothing of it (the notification's is taken while the loop
        dispatches, the reply's after).  The loop is driven here, one look at a time."""
        done = getattr(call, 'done', call)
        deadline = time.monotonic() + DEFAULT_TIMEOUT
        t_reply = None
        self.together = False
        while True:
            had_note = self.first_frozen(since) is not None
            if t_reply is None and done():  # answered before this wait: only on entry
                t_reply = time.monotonic()
                self.together = had_note
            if t_reply is not None and had_note:
                return t_reply, self.first_frozen(since)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                fail(f'timed out waiting for the reply and the notification of {self.relpath} frozen')
            loop().run_once(remaining)
            if t_reply is None and done():
                t_reply = time.monotonic()
                self.together = not had_note and self.first_frozen(since) is not None

    def close(self):
        if self.fd >= 0:
            loop().remove_reader(self.ep.fileno())
            self.ep.close()
            os.close(self.fd)
            self.fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class HeldBackRounds:
    """Rounds that race a reply against the kernel's held-back notification of a group
    (CGROUP_FILE_NOTIFY_MIN_INTV).  A round is conclusive when the notification came
    `held_back` s or more after the round's start (else the kernel did not hold it back,
    and the round proves nothing); `first` counts the conclusive ones the reply won."""

    HOLDBACK_PERIOD = 0.002  # s: freezerd re-reads a held-back group at most this far apart

    def __init__(self, held_back):
        self.held_back = held_back
        self.conclusive = self.first = 0

    def add(self, label, since, t_reply, t_note, start='the call', note="the kernel's notification", reply='reply',
            together=False, cpu_wait=0.0, waiter='freezerd', first_look=False, tasks_wait=0.0):
        """Count one round started at `since`; print its figures; return whether it was conclusive.
        together: the test found the reply and the notification waiting at once
        (EventsLog.together), so it does not know which came first: not conclusive.
        cpu_wait: seconds freezerd's main thread waited for a CPU in the round
        (run_queue_wait()); a reply later than the notification by no more than that
        was held up by the machine's load, not by what freezerd waited for: not
        conclusive either.  waiter: whose wait cpu_wait is, for the figures.  first_look:
        freezerd found the group frozen already at its first look after the round's start
        (one signal said so with the flag): it waited for nothing, and a freezerd that
        waits for the notification does as well there; not conclusive.  tasks_wait: the
        longest a task of the group waited for a CPU in the round (run_queue_wait()): it
        froze no sooner, and a reply later than the notification that came within
        HOLDBACK_PERIOD of that was not late for what freezerd waited for (it reads a
        held-back group that often): not conclusive either."""
        held = t_note - since
        starved = t_reply >= t_note and cpu_wait >= t_reply - t_note
        froze_late = t_reply >= t_note and tasks_wait + self.HOLDBACK_PERIOD >= held
        print(f'# {label}: {reply} {1e3 * (t_reply - since):.1f} ms after {start}, '
              f'{note} {1e3 * held:.1f} ms after it' +
              (' (found together by the test: which came first is not known)' if together else '') +
              (' (freezerd found it frozen at its first look)' if first_look else '') +
              (f' ({waiter} waited {1e3 * cpu_wait:.1f} ms for a CPU meanwhile)' if starved else '') +
              (f' (a task waited {1e3 * tasks_wait:.1f} ms for a CPU: it froze late)' if froze_late else ''),
              flush=True)
        if held < self.held_back or together or starved or first_look or froze_late:
            return False
        self.conclusive += 1
        self.first += t_reply < t_note
        return True

    def won_enough(self):
        """The reply came first in every conclusive round, or in all but one of three or
        more: one reply late by a few ms of the host's scheduling on this kind of VM (a
        wake-up of freezerd's vCPU, whose p99 is several ms here, see the README's
        latency figures) is spared.  A freezerd that waits for the notification answers
        first in none."""
        return self.first == self.conclusive or (self.conclusive >= 3 and self.first == self.conclusive - 1)


class Echo:
    """A `cat` in a group: ping() proves the group runs (the echo comes back)."""

    def __init__(self, proc):
        self.proc = proc
        self.pid = proc.pid
        self.buf = b''
        self.n = 0
        os.set_blocking(proc.stdout.fileno(), False)
        loop().add_reader(proc.stdout, self._on_read)

    def _on_read(self):
        try:
            data = os.read(self.proc.stdout.fileno(), 4096)
        except BlockingIOError:
            return
        if not data:
            loop().remove_reader(self.proc.stdout)
        self.buf += data

    def send(self):
        """Write a ping without waiting; returns its token."""
        self.n += 1
        token = f'ping-{self.n}\n'.encode()
        os.write(self.proc.stdin.fileno(), token)
        return token

    def ping(self, timeout=None):
        token = self.send()
        wait_for(lambda: token in self.buf, timeout=timeout, what=f'an echo from pid {self.pid}')

    def answered(self, token):
        return token in self.buf

    def close(self):
        loop().remove_reader(self.proc.stdout)


class Scratch:
    """A scratch cgroup directly under the cgroup2 mount: freezerd-test-NAME-PID.

    Group paths ("relpath") are API-style: "/" is the scratch root, "/a/b" or "a/b"
    a group below it.  Cleanup always runs (exception, SIGTERM via run()): cgroup.kill
    of the whole scratch tree, wait for it to be empty, rmdir bottom-up."""

    def __init__(self, name=None):
        mnt = cgroup2_mount()
        if mnt is None:
            skip('no cgroup2 file system mounted')
        if name is None:
            name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
        self.name = re.sub(r'[^A-Za-z0-9_.-]', '_', name)
        self.mount = mnt
        self.root = os.path.join(mnt, f'{SCRATCH_PREFIX}{self.name}-{os.getpid()}')
        self.procs = []
        self.echoes = []
        self.before_cleanup = []  # callables run before cgroup.kill (FuseHang.release)

    def __enter__(self):
        reap_stale()
        if os.path.exists(self.root):
            kill_cgroup_tree(self.root)
        os.mkdir(self.root)
        try:
            if not os.path.exists(os.path.join(self.root, 'cgroup.freeze')):
                skip('the kernel has no cgroup v2 freezer (cgroup.freeze)')
            if not os.path.exists(os.path.join(self.root, 'cgroup.kill')):
                skip('the kernel has no cgroup.kill (Linux >= 5.14)')
            loop().watch(self.abspath('/', 'cgroup.events'))
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        with _signals_blocked():
            problems = self.cleanup()
        if problems and exc_type is None:
            fail('scratch cleanup: ' + '; '.join(problems))
        for p in problems:
            print(f'warning: scratch cleanup: {p}', file=sys.stderr)
        return False

    def cleanup(self):
        for fn in self.before_cleanup:
            fn()
        self.before_cleanup = []
        for e in self.echoes:
            e.close()
        problems = kill_cgroup_tree(self.root)
        for p in self.procs:
            for f in (p.stdin, p.stdout, p.stderr):
                if f is not None:
                    f.close()
            if p.poll() is None:
                p.kill()
                p.wait()
        self.procs = []
        return problems

    # -- paths
    def rel(self, relpath):
        """Normalize to "/" or "/a/b"."""
        parts = [p for p in relpath.split('/') if p]
        if any(p in ('.', '..') for p in parts):
            raise ValueError(f'bad group path {relpath!r}')
        return '/' + '/'.join(parts)

    def abspath(self, relpath, *file):
        p = self.rel(relpath)
        return os.path.join(self.root, p.lstrip('/'), *file) if p != '/' else os.path.join(self.root, *file)

    # -- groups
    def mkdir(self, relpath):
        """Create the group (and missing parents); watch each new cgroup.events.  Returns its directory."""
        path = '/'
        for part in self.rel(relpath).split('/')[1:]:
            path = path.rstrip('/') + '/' + part
            d = self.abspath(path)
            if not os.path.isdir(d):
                os.mkdir(d)
                loop().watch(os.path.join(d, 'cgroup.events'))
        return self.abspath(relpath)

    def require_pressure(self, relpath):
        """Skip (exit 77) unless the group (made) has a cpu.pressure: the kernel can have PSI
        (require('psi')) and still have it disabled for cgroups (cgroup_disable=pressure)."""
        if not os.path.exists(self.abspath(relpath, 'cpu.pressure')):
            skip('cgroups have no cpu.pressure (PSI disabled for cgroups)')

    # The files a delegated group hands over with its directory.  systemd's Delegate= chowns
    # cgroup.procs, cgroup.subtree_control and cgroup.threads of the top; the groups the
    # delegate then makes are its own, every file included.  The tests make every group as
    # root, so cgroup.freeze is chowned too, as the delegate's own groups would have it.
    DELEGATED_FILES = ('cgroup.procs', 'cgroup.freeze', 'cgroup.subtree_control', 'cgroup.threads')

    def delegate(self, relpath, uid, gid=None):
        """The group's directory and DELEGATED_FILES to uid (and gid, default uid)."""
        d = self.abspath(relpath)
        gid = uid if gid is None else gid
        os.chown(d, uid, gid)
        for f in self.DELEGATED_FILES:
            os.chown(os.path.join(d, f), uid, gid)

    def rmdir(self, relpath):
        os.rmdir(self.abspath(relpath))

    def exists(self, relpath):
        return os.path.isdir(self.abspath(relpath))

    def kill(self, relpath='/'):
        """SIGKILL everything in the group's subtree (cgroup.kill)."""
        self._write(relpath, 'cgroup.kill', '1')

    def _read(self, relpath, name):
        with open(self.abspath(relpath, name)) as f:
            return f.read()

    def _write(self, relpath, name, value):
        with open(self.abspath(relpath, name), 'w') as f:
            f.write(value)

    def read_events(self, relpath):
        """cgroup.events as a dict: {'populated': 0|1, 'frozen': 0|1}."""
        return _parse_keyed(self._read(relpath, 'cgroup.events'))

    def frozen(self, relpath):
        return self.read_events(relpath).get('frozen') == 1

    def populated(self, relpath):
        return self.read_events(relpath).get('populated') == 1

    def read_freeze(self, relpath):
        return int(self._read(relpath, 'cgroup.freeze'))

    def write_freeze(self, relpath, value):
        self._write(relpath, 'cgroup.freeze', str(int(value)))

    def wait_events(self, relpath, timeout=None, **expected):
        """Wait (inotify) until cgroup.events has every key=value given, e.g. frozen=1."""
        def match():
            ev = self.read_events(relpath)
            return all(ev.get(k) == v for k, v in expected.items())
        wait_for(match, timeout=timeout, what=f'{relpath} cgroup.events {expected}')

    # -- processes
    def spawn(self, relpath, argv, **popen_kw):
        """Start argv already inside the group (it joins in preexec_fn, before exec)."""
        self.mkdir(relpath)
        popen_kw.setdefault('stdin', subprocess.DEVNULL)
        popen_kw.setdefault('stdout', subprocess.DEVNULL)
        p = subprocess.Popen(argv, preexec_fn=_child_setup(self.abspath(relpath, 'cgroup.procs')), **popen_kw)
        self.procs.append(p)
        return p

    def spawn_sleepers(self, relpath, n):
        """n `sleep 1000000` processes in the group; returns their Popen objects."""
        return [self.spawn(relpath, ['sleep', '1000000']) for _ in range(n)]

    def spawn_echo(self, relpath):
        """A `cat` in the group whose echo proves the group runs (Echo.ping)."""
        e = Echo(self.spawn(relpath, ['cat'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0))
        self.echoes.append(e)
        return e

    def pids(self, relpath):
        """The processes directly in the group (cgroup.procs)."""
        return [int(x) for x in self._read(relpath, 'cgroup.procs').split()]

    def proc_states(self, relpath):
        """{pid: ProcState(pid, state, wchan)} of the processes directly in the group."""
        out = {}
        for pid in self.pids(relpath):
            st = proc_state(pid)
            if st is not None:
                out[pid] = st
        return out

    def all_tasks_frozen(self, relpath):
        states = self.proc_states(relpath)
        return bool(states) and all(task_frozen(s) for s in states.values())

    def no_task_frozen(self, relpath):
        return not any(task_frozen(s) for s in self.proc_states(relpath).values())

    def wait_tasks_frozen(self, relpath, frozen=True, timeout=None):
        """Wait until every process directly in the group is (frozen=True) or none is
        (frozen=False) in the freezer trap.  Polls briefly: right after the kernel reports
        "frozen 1" a task can still be on its way into schedule() (wchan "0")."""
        pred = (lambda: self.all_tasks_frozen(relpath)) if frozen else (lambda: self.no_task_frozen(relpath))
        wait_for(pred, timeout=timeout, poll=0.002,
                 what=f'every task of {relpath} to be {"in" if frozen else "out of"} the freezer trap: '
                      f'{self.proc_states(relpath)}')


def proc_cpu_ticks(pid):
    """utime + stime of a process (/proc/PID/stat), in clock ticks; OSError once it is gone."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return int(fields[11]) + int(fields[12])


# ---- FreezerState --------------------------------------------------------------------------------------------


def stays_list(message, sentence):
    """The paths of the list that follows the last `sentence` in message to its end, as
    freezectl finds it: ", "-separated, a path holding a '"' or the list's separators in
    double quotes (a '"' inside as \\"), then maybe " and N more".  Returns (paths, more),
    each quoted path unquoted (its \\" as '"', other escapes kept as they are: CG_QUOTE's),
    or (None, None) where no such list ends message."""
    found = (None, None)
    at = message.find(sentence)
    while at >= 0:
        parsed = _parse_stays(message[at + len(sentence):])
        if parsed[0] is not None:
            found = parsed
        at = message.find(sentence, at + 1)
    return found


def _parse_stays(text):
    paths, i, n = [], 0, len(text)
    while True:
        # freezerd's paths are absolute, as freezectl's stays_list() requires.
        if not text.startswith('/', i) and not text.startswith('"/', i):
            return None, None
        if i < n and text[i] == '"':
            j, p = i + 1, ''
            while j < n and text[j] != '"':
                if text[j] == '\\' and j + 1 < n:
                    p += text[j:j + 2] if text[j + 1] != '"' else '"'
                    j += 2
                else:
                    p += text[j]
                    j += 1
            if j >= n:
                return None, None
            paths.append(p)
            i = j + 1
        else:
            j = i
            while j < n and not text.startswith(', ', j) and not text.startswith(' and ', j):
                if text[j] == '"' or text.startswith(': ', j) or text.startswith('. ', j):
                    return None, None
                j += 1
            if j == i:
                return None, None
            paths.append(text[i:j])
            i = j
        if i == n:
            return paths, 0
        if text.startswith(', ', i):
            i += 2
            continue
        m = re.fullmatch(r' and ([0-9]+) more', text[i:])
        return (paths, int(m.group(1))) if m else (None, None)


def ancestors(path):
    """The ancestors of an API-style group path below the scratch root, outermost first:
    ancestors('/A/B/C') == ['/A', '/A/B']."""
    parts = [p for p in path.split('/') if p]
    return ['/' + '/'.join(parts[:i]) for i in range(1, len(parts))]


def derive_state(freeze, e_freeze, frozen):
    """The FreezerState of a group whose own flag is `freeze`, an ancestor's flag `e_freeze`,
    and whose cgroup.events says `frozen`."""
    if freeze:
        return 'frozen' if frozen else 'freezing'
    if e_freeze:
        return 'frozen-by-parent' if frozen else 'freezing-by-parent'
    return 'thawing' if frozen else 'running'


def kernel_states(sc, groups):
    """{path: FreezerState} of each group of the Scratch sc, derived from the kernel's
    cgroup.freeze and cgroup.events: what freezerd must say once it has settled."""
    flags = {p: sc.read_freeze(p) for p in set(groups).union(*(ancestors(p) for p in groups))}
    return {p: derive_state(flags[p], any(flags[a] for a in ancestors(p)), sc.frozen(p)) for p in groups}


class StateMirror:
    """freezerd's FreezerState of each group, as a subscribed client follows it: GetManagedObjects
    first, then PropertiesChanged."""

    def __init__(self, client, groups):
        self.groups = groups
        self.rec = client.record()
        self.state = {}
        for _obj, ifaces in client.managed_objects().items():
            if GROUP_IFACE in ifaces:
                self.state[ifaces[GROUP_IFACE]['Path']] = ifaces[GROUP_IFACE]['FreezerState']
        self.seen = 0

    def states(self):
        """{path: FreezerState, or None where none was heard of}, up to the last signal received."""
        sigs = self.rec.properties_changed(interface=GROUP_IFACE)
        for obj, _iface, changed, _inv in sigs[self.seen:]:
            if 'FreezerState' in changed:
                self.state[path_decode(GROUP_PREFIX, obj)] = changed['FreezerState']
        self.seen = len(sigs)
        return {p: self.state.get(p) for p in self.groups}


# ---- FUSE -----------------------------------------------------------------------------------------------------


class FuseHang:
    """tests/fuse-hang on a temporary directory: a FUSE mount that never answers, so a
    process touching MOUNT/x blocks in state D and its cgroup can never finish freezing.

    release() makes fuse-hang exit: the connection is aborted and blocked processes get
    ENOTCONN.  Exit: release, umount2(MNT_DETACH), remove the directories."""

    def __init__(self):
        self.proc = None
        self.tmpdir = None
        self.mountpoint = None

    def __enter__(self):
        require('fuse')
        reap_stale()
        self.tmpdir = tempfile.mkdtemp(prefix=f'{FUSE_TMP_PREFIX}{os.getpid()}-')
        self.mountpoint = os.path.join(self.tmpdir, 'mnt')
        os.mkdir(self.mountpoint)
        try:
            self.proc = subprocess.Popen([FUSE_HANG_BIN, self.mountpoint], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         preexec_fn=_child_setup(pdeathsig=signal.SIGTERM))
            sel = selectors.DefaultSelector()
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            ready = sel.select(DEFAULT_TIMEOUT)
            sel.close()
            line = self.proc.stdout.readline() if ready else b''
            if line != b'ready\n':
                err = b''
                if self.proc.poll() is not None:
                    err = self.proc.stderr.read()
                fail(f'fuse-hang did not get ready: {line!r} {err.decode(errors="replace")}')
        except BaseException:
            with _signals_blocked():
                self._cleanup()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        with _signals_blocked():
            self._cleanup()
        return False

    def release(self, timeout=None):
        """Stop answering nothing: fuse-hang exits (EOF on its stdin), blocked callers get ENOTCONN."""
        if self.proc is None:
            return
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        if _wait_pidfd_exit(self.proc, DEFAULT_TIMEOUT if timeout is None else timeout) is None:
            _stop_process(self.proc, signal.SIGTERM, timeout)

    def _cleanup(self):
        if self.proc is not None:
            self.release()
            for f in (self.proc.stdout, self.proc.stderr):
                f.close()
            self.proc = None
        if self.mountpoint:
            try:
                umount2(self.mountpoint)
            except OSError as e:
                if e.errno not in (errno.EINVAL, errno.ENOENT):
                    print(f'warning: {e}', file=sys.stderr)
            # Never rmtree: that would descend into a mount that is still there.
            for d in (self.mountpoint, self.tmpdir):
                try:
                    os.rmdir(d)
                except OSError as e:
                    print(f'warning: rmdir {d}: {e}', file=sys.stderr)
            self.mountpoint = None

    def spawn_stuck(self, scratch, relpath, argv=None, timeout=None):
        """Start `stat -f MOUNT` (statfs; or argv) in the group and wait until it blocks
        in state D.  Any number of them can block at once, each killable (see the module
        doc for why not `stat MOUNT/x`).  The scratch releases this FUSE server before
        its own cleanup kills the group."""
        if self.release not in scratch.before_cleanup:
            scratch.before_cleanup.append(self.release)
        p = scratch.spawn(relpath, argv or ['stat', '-f', self.mountpoint],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def stuck():
            st = proc_state(p.pid)
            if st is None or p.poll() is not None:
                fail(f'pid {p.pid} exited instead of blocking on the FUSE mount')
            # wchan reads "0" for an instant, while the task is still on the run queue.
            return st.state == 'D' and ('fuse' in st.wchan or st.wchan == 'd_alloc_parallel')
        # No event tells that a task went to sleep: poll, briefly.
        wait_for(stuck, timeout=timeout, what=f'pid {p.pid} to block in D on {self.mountpoint}', poll=0.005)
        return p


# ---- command-line tools ----------------------------------------------------------------------------------------


def json_object_arg(text):
    """An argparse type: a JSON object (e.g. --daemon-config, freezerd's configuration file)."""
    try:
        v = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f'not JSON: {e}')
    if not isinstance(v, dict):
        raise argparse.ArgumentTypeError('must be a JSON object')
    return v


def _print_log(what, text):
    if text and not text.endswith('\n'):
        text += '\n'
    print(f'--- {what} log ---\n{text}--- end of {what} log ---', file=sys.stderr, flush=True)


def _run_tool(argv, check, timeout, input=None):
    try:
        r = subprocess.run(argv, input=input, capture_output=True, text=True,
                           timeout=DEFAULT_TIMEOUT if timeout is None else timeout)
    except subprocess.TimeoutExpired:
        fail(f'{" ".join(argv)} did not finish in time')
    if check and r.returncode != 0:
        fail(f'{" ".join(argv)} exited {r.returncode}:\n{r.stdout}{r.stderr}')
    return r


def make_core_groups(sc, fuse):
    """The core tests' groups: /g (no process of its own), /g/h (one sleeper), /g/k (two
    sleepers), and /s, holding a task blocked on `fuse` (a FuseHang) so that /s cannot
    finish freezing."""
    sc.mkdir('/g/h')
    sc.mkdir('/g/k')
    sc.spawn_sleepers('/g/k', 2)
    sc.spawn_sleepers('/g/h', 1)
    fuse.spawn_stuck(sc, '/s')


def freezectl(*args, address=None, check=True, timeout=None, input=None, socket=None, prefix=()):
    """Run the built freezectl --address=ADDR ARGS... (with socket: --socket=SOCKET instead,
    freezerd's private socket); prefix: a command to run it under (e.g. setpriv ...).
    Returns the CompletedProcess (text)."""
    how = f'--socket={socket}' if socket else f'--address={_bus_address(address)}'
    return _run_tool([*prefix, FREEZECTL_BIN, how, *args], check, timeout, input)


class FreezectlRun:
    """The built freezectl --address=ADDR ARGS... in the background, input written to its
    stdin and closed at once: for a call that waits until the test ends it from outside (a
    Thaw, an Untrack).  finish() reads its stderr to the end and waits for its exit; as a
    context manager, it is killed on leaving if it still runs (a check that failed)."""

    def __init__(self, *args, address=None, input=None):
        self.proc = subprocess.Popen([FREEZECTL_BIN, f'--address={_bus_address(address)}', *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        try:
            self.proc.stdin.write(input or '')
            self.proc.stdin.close()
        except BaseException:
            self.close()
            raise

    def finish(self):
        """(exit status, stderr) once freezectl has exited (DEFAULT_TIMEOUT after its
        stderr's end); its stdout is read and dropped."""
        err = self.proc.stderr.read()
        self.proc.stdout.read()
        self.proc.wait(timeout=DEFAULT_TIMEOUT)
        return self.proc.returncode, err

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def busctl(*args, address=None, check=True, timeout=None):
    """Run busctl --address=ADDR ARGS...; returns the CompletedProcess (text)."""
    return _run_tool(['busctl', f'--address={_bus_address(address)}', *args], check, timeout)
