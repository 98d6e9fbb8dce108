#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""libfreezer's calls that do not block (freezer_*_async()), loaded with ctypes, against
freezerd on the bus and on its private socket.

  /g     (no process)  /g/h   one sleeper   /g/k   two sleepers
  /s     a task blocked on a FUSE mount that never answers: /s cannot finish freezing

The callbacks run from freezer_dispatch(), driven by freezer_get_fd() readability
in the test's own loop, as a program with an event loop would drive them.  For each
handle (bus, then private socket):

  * freezer_freeze_async("/s", 1 s, ROLLBACK) and freezer_freeze_async("/g") both
    return at once with ids; neither callback runs inside the _async() call.  /g's
    callback comes first, with error 0 and the kernel at frozen 1, while /s's is
    still outstanding (it can only end with the daemon's 1 s timeout): a stuck call
    holds up no other.  Then /s's: -ETIMEDOUT, org.freezerd.Freezer1.Error.Timeout,
    and the kernel's /s flag back at 0 (rolled back).
  * freezer_apply_batch_async() (thaw /g, freeze /g/k): writes 2, skipped 0 in the
    result; the kernel agrees.
  * freezer_freeze_except_async("/g", ["/g/h"]): the result lists /g/k alone.
  * A missing group: the callback gets -ENOENT, NoSuchGroup, a message naming it;
    the handle's last error is left as it was.
  * Refused before sending (a path that is not UTF-8, an unknown order): the
    _async() call fails with -EINVAL and the handle's last error; no callback.
  * freezer_cancel_call(): 0 for a call in flight, -ENOENT the second time; the
    daemon still carries the call out (the kernel's /s flag goes to 1 and, after
    the timeout, back to 0) and its reply, processed before a later call's (one
    connection keeps the order), calls nothing.
  * freezer_get_timeout(): with a call of timeout T in flight, a deadline between
    now and now + T + 5 s (the method-call timeout); with nothing in flight and
    nothing queued, none (0, UINT64_MAX).
client/example-async (the example in C) on the private socket, freezing /s (1 s
timeout) and /g, and at the bus --address= names (1.5 s: a fraction was read as 0, and
there was no --address=), and there at 1500ms (a unit): /g is done first, the loop ticks
while /s waits, /s fails with the daemon's Timeout, and the example exits 1.  A --timeout=
that is no DURATION as freezectl reads it ("abc", "-1", "5x", "0x10", "1e3", "inf", ...)
exits 2, saying so (strtod() read "0x10" as 16 s); one out of range says that.
On a private handle, the loop functions: freezer_wait() right after a blocking call
whose signals were queued returns > 0 at once (it said 0, "timeout"); a call of about
26 MB (65,536 requests of 413-byte paths), sent while freezerd is stopped (SIGSTOP) so
that it cannot drain the socket as fast, leaves freezer_get_events() with POLLOUT, and
a loop polling for those events gets its reply (one polling for POLLIN alone never
wrote the rest); freezer_close() from the group callback ends the callbacks, and
freezer_dispatch() returns 0 having freed the handle (no use after free under ASan).
Then, on a private handle: a call in flight when freezerd is killed completes with
-ECONNRESET; freezer_close() with calls in flight runs no callback, and the daemon
still carries both out; five calls in flight when freezerd is killed all complete within
two freezer_dispatch() calls (it took one per call).  freezer_close() with a call in
flight waits for a stopped freezerd to take it also while signals wait in the handle's
memory (it closed at once then), and freezer_get_events() says POLLIN then (it said 0).  On a bus handle, freezerd killed with a call in flight: the
call gets -ECONNRESET and org.freedesktop.DBus.Error.Disconnected (the bus's NoReply
read -ETIMEDOUT).  freezer_close() on the bus with a call in flight, freezerd stopped and
signals (with a handler) coming while it waits for freezerd: freezerd takes the call once
it goes on (a signal ended the wait, and freezerd refused the call of a caller gone).
freezer_dispatch() is bounded: with 300 InterfacesAdded waiting on a private handle's
socket, one call runs at most FREEZER_DISPATCH_MAX (64) callbacks, after which
freezer_get_timeout() says now and freezer_wait() returns at once; the rest come over
further calls, each bounded (it used to run them all in one call, and under a steady
flood of signals never returned)."""

import array
import ctypes
import errno
import fcntl
import os
import select
import signal
import socket
import subprocess
import sys
import termios
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

base = ft.load_test_module('test-core-libfreezer')

ROLLBACK = 1
NO_WAIT = 2
TIMEOUT_ERROR = 'org.freezerd.Freezer1.Error.Timeout'
UINT64_MAX = 2**64 - 1


class Result(ctypes.Structure):
    _fields_ = [('id', ctypes.c_uint64), ('error', ctypes.c_int), ('error_name', ctypes.c_char_p),
                ('error_message', ctypes.c_char_p), ('writes', ctypes.c_uint32), ('skipped', ctypes.c_uint32),
                ('frozen', ctypes.POINTER(ctypes.c_char_p))]


class Request(ctypes.Structure):
    _fields_ = [('path', ctypes.c_char_p), ('freeze', ctypes.c_bool)]


CALL_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(Result), ctypes.c_void_p)


def load():
    lib = base.load()
    P, U64 = ctypes.c_void_p, ctypes.c_uint64
    tail = [CALL_CALLBACK, P, ctypes.POINTER(U64)]
    sig = {
        'freezer_freeze_async': [P, ctypes.c_char_p, U64, U64] + tail,
        'freezer_thaw_async': [P, ctypes.c_char_p, U64, U64] + tail,
        'freezer_apply_batch_async': [P, ctypes.POINTER(Request), ctypes.c_size_t, ctypes.c_int, U64, U64] + tail,
        'freezer_freeze_except_async': [P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                        U64, U64] + tail,
        'freezer_cancel_call': [P, U64],
        'freezer_get_timeout': [P, ctypes.POINTER(U64)],
        'freezer_get_events': [P],
        'freezer_wait': [P, U64],
    }
    for name, args in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = ctypes.c_int, args
    return lib


class Handle:
    """One libfreezer handle in the test's loop, collecting the results of its calls by id."""

    def __init__(self, lib, f):
        self.lib, self.f = lib, f
        self.results = {}
        self.in_submit = False
        self.callback_in_submit = False
        self.dispatch_errors = []

        @CALL_CALLBACK
        def on_done(_f, res, _ud):
            r = res.contents
            frozen = None
            if r.frozen:
                frozen, i = [], 0
                while r.frozen[i] is not None:
                    frozen.append(r.frozen[i].decode())
                    i += 1
            if self.in_submit:
                self.callback_in_submit = True
            self.results[r.id] = dict(error=r.error, name=(r.error_name or b'').decode(),
                                      message=(r.error_message or b'').decode(), writes=r.writes,
                                      skipped=r.skipped, frozen=frozen)
        self.on_done = on_done  # keep the ctypes thunk alive
        self.fd = lib.freezer_get_fd(f)
        ft.check(self.fd >= 0, 'freezer_get_fd', self.fd)
        ft.loop().add_reader(self.fd, self.dispatch)

    def dispatch(self):
        r = self.lib.freezer_dispatch(self.f)
        if r < 0:
            self.dispatch_errors.append(r)
            ft.loop().remove_reader(self.fd)

    def submit(self, fn, *args):
        """Call freezer_*_async(); returns (r, id)."""
        call_id = ctypes.c_uint64(12345)
        self.in_submit = True
        try:
            r = getattr(self.lib, fn)(self.f, *args, self.on_done, None, ctypes.byref(call_id))
        finally:
            self.in_submit = False
        return r, call_id.value

    def start(self, fn, *args):
        r, call_id = self.submit(fn, *args)
        ft.check_equal(r, 0, f'{fn}{args[:1]} returns 0')
        ft.check(call_id != 0 and call_id not in self.results, f'{fn} gives a new id', call_id)
        return call_id

    def wait(self, call_id, what, timeout=None):
        ft.wait_for(lambda: call_id in self.results, timeout=timeout, what=f'the callback of {what}')
        return self.results[call_id]

    def last_error(self):
        return ((self.lib.freezer_last_error_name(self.f) or b'').decode(),
                (self.lib.freezer_last_error_message(self.f) or b'').decode())

    def close(self):
        if self.fd >= 0 and not self.dispatch_errors:
            ft.loop().remove_reader(self.fd)
        self.fd = -1
        self.lib.freezer_close(self.f)


def watch_freeze(sc, relpath):
    ft.loop().watch(sc.abspath(relpath, 'cgroup.freeze'))


def check_handle(lib, sc, f, label):
    h = Handle(lib, f)
    try:
        watch_freeze(sc, '/s')
        for g in ('/g', '/g/k', '/g/h'):
            ft.loop().watch(sc.abspath(g, 'cgroup.events'))

        # ---- two calls in flight; the stuck one holds up nothing
        id_s = h.start('freezer_freeze_async', b'/s', 1 * 1000000, ROLLBACK)
        id_g = h.start('freezer_freeze_async', b'/g', 0, 0)
        ft.check(not h.callback_in_submit and not h.results, f'{label}: no callback runs inside the _async() calls',
                 h.results)
        t = ctypes.c_uint64()
        now = time.monotonic()
        ft.check_equal(lib.freezer_get_timeout(f, ctypes.byref(t)), 1, f'{label}: freezer_get_timeout with calls '
                       'in flight')
        ft.check(now < t.value / 1e6 <= now + 1 + 5 + 1, f'{label}: the deadline is within the calls\' method-call '
                 'timeout (1 s + 5 s)', (t.value / 1e6 - now))
        res = h.wait(id_g, 'Freeze /g')
        ft.check_equal((res['error'], res['name']), (0, ''), f'{label}: Freeze /g succeeded')
        ft.check_equal(sc.read_events('/g').get('frozen'), 1, f'{label}: the kernel says /g frozen 1 at its callback')
        ft.check(id_s not in h.results, f'{label}: Freeze /s (stuck) is still in flight when /g\'s callback runs')
        ft.check_equal(sc.read_freeze('/s'), 1, f'{label}: freezerd wrote /s meanwhile')
        res = h.wait(id_s, 'Freeze /s', timeout=1 + ft.DEFAULT_TIMEOUT)
        ft.check_equal((res['error'], res['name']), (-errno.ETIMEDOUT, TIMEOUT_ERROR),
                       f'{label}: Freeze /s timed out')
        ft.check('/s' in res['message'], f'{label}: the message names /s', res['message'])
        ft.check_equal(sc.read_freeze('/s'), 0, f'{label}: /s rolled back')

        # ---- a batch
        reqs = (Request * 2)(Request(b'/g', False), Request(b'/g/k', True))
        id_b = h.start('freezer_apply_batch_async', reqs, 2, 0, 0, 0)
        res = h.wait(id_b, 'ApplyBatch')
        ft.check_equal((res['error'], res['writes'], res['skipped'], res['frozen']), (0, 2, 0, None),
                       f'{label}: ApplyBatch result: writes 2, skipped 0')
        ft.check_equal((sc.read_events('/g').get('frozen'), sc.read_events('/g/k').get('frozen'),
                        sc.read_events('/g/h').get('frozen')), (0, 1, 0),
                       f'{label}: the kernel: /g thawed, /g/k frozen, /g/h running')

        # ---- FreezeExcept
        excl = (ctypes.c_char_p * 1)(b'/g/h')
        id_e = h.start('freezer_freeze_except_async', b'/g', excl, 1, 0, 0)
        res = h.wait(id_e, 'FreezeExcept')
        ft.check_equal((res['error'], res['frozen']), (0, ['/g/k']), f'{label}: FreezeExcept froze /g/k alone')
        ft.check_equal(sc.read_events('/g/h').get('frozen'), 0, f'{label}: /g/h keeps running')

        # ---- a daemon error goes to the callback, not to the handle's last error
        before = h.last_error()
        id_n = h.start('freezer_thaw_async', b'/nope', 0, 0)
        res = h.wait(id_n, 'Thaw /nope')
        ft.check_equal((res['error'], res['name']), (-errno.ENOENT, ft.ERROR_NO_SUCH_GROUP),
                       f'{label}: a missing group: -ENOENT, NoSuchGroup')
        ft.check('/nope' in res['message'], f'{label}: the message names /nope', res['message'])
        ft.check_equal(h.last_error(), before, f'{label}: the handle\'s last error is left alone')

        # ---- refused before sending
        r, call_id = h.submit('freezer_freeze_async', b'/\xff', 0, 0)
        ft.check_equal((r, call_id), (-errno.EINVAL, 0), f'{label}: a path that is not UTF-8: -EINVAL, no id')
        ft.check_equal(h.last_error(), (ft.ERROR_INVALID_ARGS, 'The path is not valid UTF-8'),
                       f'{label}: ... and the handle\'s last error says so')
        r, call_id = h.submit('freezer_apply_batch_async', reqs, 2, 7, 0, 0)
        ft.check_equal((r, call_id), (-errno.EINVAL, 0), f'{label}: an unknown order: -EINVAL, no id')

        # ---- cancel: the daemon carries the call out, the callback never runs
        n_results = len(h.results)
        id_c = h.start('freezer_freeze_async', b'/s', 1 * 1000000, ROLLBACK)
        ft.check_equal(lib.freezer_cancel_call(f, id_c), 0, f'{label}: freezer_cancel_call of a call in flight')
        ft.check_equal(lib.freezer_cancel_call(f, id_c), -errno.ENOENT, f'{label}: ... and again: -ENOENT')
        ft.check_equal(lib.freezer_cancel_call(f, id_g), -errno.ENOENT, f'{label}: of a completed call: -ENOENT')
        ft.wait_for(lambda: sc.read_freeze('/s') == 1, what='freezerd to write /s')
        ft.wait_for(lambda: sc.read_freeze('/s') == 0, timeout=1 + ft.DEFAULT_TIMEOUT,
                    what='freezerd to roll /s back after its timeout')
        id_t = h.start('freezer_thaw_async', b'/g/k', 0, 0)
        h.wait(id_t, 'Thaw /g/k')
        ft.check(id_c not in h.results and len(h.results) == n_results + 1,
                 f'{label}: the cancelled call\'s reply (before the later one\'s) called nothing', h.results.keys())

        # ---- nothing in flight, nothing queued: no deadline
        ft.check_equal((lib.freezer_get_timeout(f, ctypes.byref(t)), t.value), (0, UINT64_MAX),
                       f'{label}: freezer_get_timeout with nothing in flight')
        ft.check_equal(h.dispatch_errors, [], f'{label}: freezer_dispatch never failed')
    finally:
        h.close()


def check_example(sc, d, bus):
    """The C example runs the same loop a caller would write, with poll(): over the private
    socket, and at the bus --address= names with a --timeout= of a fraction of a second
    (the example had no --address=, and read "0.5" as 0, freezerd's default) and of units
    ("1500ms"); its --timeout= is freezectl's DURATION (duration.c), anything else a usage
    error: "abc" (read as 0) and "-1" (2^64 - 1) once, and what strtod() took, "0x10",
    "1e3", "inf", "nan" (not 16 s and 1000 s for the first two).  Out of range (below
    1 us, above 2^64 - 1 us) is said so."""
    exe = os.path.join(ft.BUILDDIR, 'client', 'example-async')
    if not os.path.exists(exe):
        ft.fail(f'{exe} is not built')
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(ft.BUILDDIR, 'client'))
    for bad, why in (('abc', 'invalid duration'), ('-1', 'invalid duration'), ('', 'invalid duration'),
                     ('5x', 'invalid duration'), ('nan', 'invalid duration'), ('inf', 'invalid duration'),
                     ('1e400', 'invalid duration'), ('1e3', 'invalid duration'), ('0x10', 'invalid duration'),
                     ('2min 3', 'invalid duration'), ('0.0000001', 'duration out of range'),
                     ('18446744073709551616us', 'duration out of range')):
        p = subprocess.run([exe, f'--address={bus.address}', f'--timeout={bad}', '/g'], capture_output=True,
                           text=True, timeout=ft.DEFAULT_TIMEOUT, env=env)
        ft.check(p.returncode == 2 and p.stdout == '' and f'--timeout={bad}: {why}' in p.stderr,
                 f'example-async --timeout={bad}: exit 2, {why}', (p.returncode, p.stdout, p.stderr))
    ft.check_equal(sc.read_freeze('/g'), 0, 'example-async froze nothing on a bad --timeout=')
    for how, timeout in ((f'--private={d.runtime_dir}/private', '1'), (f'--address={bus.address}', '1.5'),
                         (f'--address={bus.address}', '1500ms')):
        check_example_run(sc, exe, env, how, timeout)


def check_example_run(sc, exe, env, how, timeout):
    p = subprocess.run([exe, how, f'--timeout={timeout}', '/s', '/g'], capture_output=True,
                       text=True, timeout=1 + ft.DEFAULT_TIMEOUT, env=env)
    lines = p.stdout.splitlines()
    ft.check_equal(p.returncode, 1, 'example-async exits 1 (/s failed)')
    results = [ln for ln in lines if not ln.startswith('(')]
    ft.check_equal([ln.split(':', 1)[0] for ln in results], ['/g', '/s'], 'example-async: /g answered before /s')
    ft.check(results[0] == '/g: done' and 'org.freezerd.Freezer1.Error.Timeout' in results[1],
             'example-async: /g done, /s timed out', lines)
    g_at, s_at = lines.index(results[0]), lines.index(results[1])
    ft.check(any(ln.startswith('(the loop is free') for ln in lines[g_at:s_at]),
             'example-async: the loop ticked while /s was in flight', lines)
    ft.check_equal(sc.read_freeze('/s'), 1, '/s stays written (no rollback asked)')
    sc.write_freeze('/s', 0)
    sc.write_freeze('/g', 0)


def open_private(lib, d):
    """A handle on freezerd d's private socket (a c_void_p)."""
    f = ctypes.c_void_p()
    ft.check_equal(lib.freezer_open_private(ctypes.byref(f), f'{d.runtime_dir}/private'.encode()), 0,
                   'freezer_open_private')
    return f


def check_lost_connection(lib, sc, bus):
    """A private handle whose freezerd dies: the call in flight ends with -ECONNRESET;
    freezer_close() with a call in flight runs no callback."""
    d = ft.Daemon(bus, sc.root)
    with d:
        f = open_private(lib, d)
        h = Handle(lib, f)
        try:
            id_s = h.start('freezer_freeze_async', b'/s', 60 * 1000000, ROLLBACK)
            ft.wait_for(lambda: sc.read_freeze('/s') == 1, what='freezerd to write /s')
            d.proc.send_signal(signal.SIGKILL)
            res = h.wait(id_s, 'Freeze /s after freezerd was killed')
            ft.check_equal(res['error'], -errno.ECONNRESET, 'a lost connection: the call in flight gets -ECONNRESET')
            ft.check(res['name'] != '', 'with an error name', res)
        finally:
            h.close()
        d.stop()
        d.exit_status = 0  # killed on purpose
    sc.write_freeze('/s', 0)

    with ft.Daemon(bus, sc.root) as d:
        f = open_private(lib, d)
        h = Handle(lib, f)
        h.start('freezer_freeze_async', b'/s', 1 * 1000000, ROLLBACK)
        h.start('freezer_freeze_async', b'/g', 0, 0)
        h.close()  # with both in flight
        ft.wait_for(lambda: sc.read_freeze('/s') == 0 and sc.read_freeze('/g') == 1 and sc.frozen('/g'),
                    timeout=1 + ft.DEFAULT_TIMEOUT, what='freezerd to finish both calls')
        ft.check_equal(h.results, {}, 'freezer_close() with calls in flight ran no callback')
        ft.check_equal(ft.freezectl('thaw', '/g', address=bus.address).returncode, 0, 'freezectl thaw /g')

    # Several calls in flight when freezerd dies: all of them complete in the freezer_dispatch() that
    # sees the loss (or the next one, which fails), as freezer.h says.  sd-bus answers them one per
    # sd_bus_process(), returning 0 after each: freezer_dispatch() took that for "nothing more to do"
    # and ran one callback per call, returning 0 ("nothing to do") although it had run one.
    n_calls = 5
    d = ft.Daemon(bus, sc.root)
    with d:
        f = open_private(lib, d)
        h = Handle(lib, f)
        ft.loop().remove_reader(h.fd)  # dispatched by hand below
        try:
            ids = [h.start('freezer_freeze_async', b'/s', 60 * 1000000, 0) for _ in range(n_calls)]
            ft.wait_for(lambda: sc.read_freeze('/s') == 1, what='freezerd to write /s')
            d.proc.send_signal(signal.SIGKILL)
            ready, _, _ = select.select([h.fd], [], [], ft.DEFAULT_TIMEOUT)
            ft.check(ready, 'the private handle\'s fd is readable once freezerd is killed')
            returns = [lib.freezer_dispatch(f) for _ in range(2)]
            ft.check_equal(sorted(h.results), sorted(ids), f'all {n_calls} calls in flight completed within two '
                           f'freezer_dispatch() calls (they returned {returns})')
            ft.check(all(r['error'] == -errno.ECONNRESET for r in h.results.values()),
                     '... each with -ECONNRESET', h.results)
            ft.check(returns[0] < 0 or returns[1] < 0, 'and one of the two freezer_dispatch() calls failed', returns)
        finally:
            lib.freezer_close(f)
        d.stop()
        d.exit_status = 0  # killed on purpose
    sc.write_freeze('/s', 0)


def check_loop_api(lib, sc, d):
    """freezer_wait() after a blocking call, freezer_close() from a callback, and a call larger
    than the socket takes at once, on a private handle."""
    f = open_private(lib, d)
    states = []

    @base.CALLBACK
    def on_state(_f, path, state, frozen, _ud):
        states.append(path.decode())
    ft.check_equal(lib.freezer_set_state_callback(f, on_state, None), 0, 'freezer_set_state_callback')
    ft.check_equal(lib.freezer_freeze(f, b'/g/h', 0, 0), 0, 'freezer_freeze(/g/h), blocking')
    t0 = time.monotonic()
    r = lib.freezer_wait(f, 5 * 1000000)
    took = time.monotonic() - t0
    ft.check(r > 0 and took < 2, 'freezer_wait() right after it: > 0 at once (the signals read during the call '
             'are queued; it used to say 0, "timeout")', (r, took))
    ft.check(lib.freezer_dispatch(f) > 0 and '/g/h' in states, 'and freezer_dispatch() runs the state callback',
             states)
    ft.check_equal(lib.freezer_thaw(f, b'/g/h', 0, 0), 0, 'freezer_thaw(/g/h)')
    lib.freezer_dispatch(f)

    # A call of about 26 MB: sd-bus writes what the socket takes and keeps the rest for
    # freezer_dispatch(), which a loop polling for POLLIN alone never ran (a day's wait).
    n = 65536
    path = ('/nope/' + 'a' * 200 + '/' + 'b' * 200).encode()
    reqs = (Request * n)(*([Request(path, True)] * n))
    results = []

    @CALL_CALLBACK
    def on_done(_f, res, _ud):
        results.append((res.contents.error, (res.contents.error_name or b'').decode()))
    call_id = ctypes.c_uint64()
    # freezerd is stopped while the call is sent: a daemon reading on the other CPU can
    # drain the socket as fast as the call is written, and then it all goes out at once.
    os.kill(d.pid, signal.SIGSTOP)
    try:
        ft.check_equal(lib.freezer_apply_batch_async(f, reqs, n, 0, 0, 0, on_done, None, ctypes.byref(call_id)),
                       0, f'freezer_apply_batch_async() of {n} requests of {len(path)}-byte paths')
        fd = lib.freezer_get_fd(f)
        events = lib.freezer_get_events(f)
    finally:
        os.kill(d.pid, signal.SIGCONT)
    ft.check(events > 0 and events & select.POLLOUT, 'freezer_get_events(): POLLOUT, the call is not written out',
             events)
    deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
    saw_pollout = False
    while not results and time.monotonic() < deadline:
        events = lib.freezer_get_events(f)
        saw_pollout = saw_pollout or bool(events & select.POLLOUT)
        p = select.poll()
        p.register(fd, events)
        p.poll(1000)
        ft.check(lib.freezer_dispatch(f) >= 0, 'freezer_dispatch()')
    ft.check_equal(results, [(-errno.ENOENT, ft.ERROR_NO_SUCH_GROUP)],
                   'a loop polling for freezer_get_events() gets the reply (NoSuchGroup: no such path)')

    # freezer_close() from a callback: nothing more is called back, the handle goes when
    # freezer_dispatch() returns (under AddressSanitizer: no use after free).
    closed = []

    @base.GROUP_CALLBACK
    def on_group(handle, path, added, _state, _ud):
        closed.append(path.decode())
        lib.freezer_close(handle)
    ft.check_equal(lib.freezer_set_group_callback(f, on_group, None), 0, 'freezer_set_group_callback')
    lib.freezer_set_state_callback(f, base.CALLBACK(), None)
    sc.mkdir('/g/new1')
    sc.mkdir('/g/new2')
    deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
    while not closed and time.monotonic() < deadline:
        p = select.poll()
        p.register(fd, select.POLLIN)
        p.poll(100)
        r = lib.freezer_dispatch(f)
        ft.check(r >= 0, 'freezer_dispatch()', r)
    ft.check_equal((closed, r), (['/g/new1'], 0), 'freezer_close() from the group callback: one callback, then '
                   'freezer_dispatch() returns 0 and frees the handle')
    os.rmdir(sc.abspath('/g/new1'))
    os.rmdir(sc.abspath('/g/new2'))


CLOSE_STALL = 5.0  # CLOSE_STALL_USEC in client/libfreezer.c
CLOSE_PING = 25.0  # on the bus, the round trip to freezerd at close waits at most sd-bus's call timeout
# check_close_flush(): the send buffer its handles' sockets get (the kernel doubles it), and
# a batch some 4 times what such a socket holds.  sd-bus asks for 8 MB (SO_SNDBUFFORCE:
# 16.5 MB held), which took a 26 MB batch to pass, and freezerd took 15-21 s over that on
# the bus under AddressSanitizer on a loaded 2-CPU machine (its realloc() copies sd-bus'
# read buffer, the whole message's size, at each read): near the 25 s after which the
# close's round trip gives up (CLOSE_PING) on a correct freezerd.  Here 4 MB: 0.2 s.
CLOSE_SNDBUF = 512 * 1024
CLOSE_BATCH = 10240  # requests of 413 bytes


def big_batch(n=65536):
    """n requests (for no group: NoSuchGroup) of 413-byte paths: by default about 26 MB,
    more than the socket holds."""
    path = ('/nope/' + 'a' * 200 + '/' + 'b' * 200).encode()
    return (Request * n)(*([Request(path, True)] * n)), n


def close_in_thread(lib, f, limit):
    """freezer_close(f) in a thread (ctypes lets go of the GIL): its time, or None if it had not
    returned after limit seconds (then the caller must unblock it)."""
    done = []

    def run():
        t0 = time.monotonic()
        lib.freezer_close(f)
        done.append(time.monotonic() - t0)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(limit)
    return (done[0] if done else None), t


def check_close_queued(lib, sc, d):
    """freezer_close() with a call in flight makes sure freezerd takes it also when messages wait
    in the handle's memory (signals a blocking call read): it waits while freezerd is stopped.  It
    took sd_bus_get_events()'s 0 (no POLLIN while messages are queued) for a lost connection and
    closed at once, and freezerd, dropping the connection at its first failed reply, could lose a
    call queued behind."""
    groups = [f'/g/q{i}' for i in range(10)]
    f = open_private(lib, d)

    @base.GROUP_CALLBACK
    def on_group(_f, _path, _added, _state, _ud):
        pass
    ft.check_equal(lib.freezer_set_group_callback(f, on_group, None), 0, 'freezer_set_group_callback')
    ignore = CALL_CALLBACK(lambda _f, _res, _ud: None)
    t = None
    try:
        for g in groups:
            sc.mkdir(g)
        ft.wait_for(lambda: set(groups) <= {p for p, _, _ in d.client.call('ListGroups')[0]},
                    what='freezerd to publish the new groups (their InterfacesAdded sent to the handle)')
        g = base.Group()
        ft.check_equal(lib.freezer_get_group(f, b'/g', ctypes.byref(g)), 0, 'a blocking call reads the signals')
        lib.freezer_group_clear(ctypes.byref(g))
        until = ctypes.c_uint64(1)
        ft.check_equal((lib.freezer_get_timeout(f, ctypes.byref(until)), until.value), (1, 0),
                       'messages wait in memory (freezer_get_timeout says now)')
        ft.check(lib.freezer_get_events(f) & select.POLLIN, 'freezer_get_events() says POLLIN then too, as freezer.h '
                 'does (sd-bus asks for nothing while messages wait in memory: it said 0)', lib.freezer_get_events(f))
        ft.check_equal(lib.freezer_freeze_async(f, b'/g/k', 0, NO_WAIT, ignore, None, None), 0,
                       'freezer_freeze_async(/g/k, NO_WAIT)')
        os.kill(d.pid, signal.SIGSTOP)
        try:
            took, t = close_in_thread(lib, f, 1.0)
        finally:
            os.kill(d.pid, signal.SIGCONT)
        t.join()
        ft.check(took is None, 'freezer_close() with a call in flight waits for the stopped freezerd to take it, '
                 'messages queued in memory or not', took)
        ft.wait_for(lambda: sc.read_freeze('/g/k') == 1, what='freezerd to carry out the Freeze before the close')
    finally:
        if t is None:
            lib.freezer_close(f)
        d.client.call('Thaw', '/g/k', 0, 0)
        for g in groups:
            os.rmdir(sc.abspath(g))


def check_close_flush(lib, sc, d, bus, label):
    """freezer_close() sends the calls still queued, waits for a peer that reads, and gives up on
    one that reads nothing (it used sd_bus_flush_close_unref(), which waited for ever then); a
    call cancelled right before the close is carried out too.
    label 'private socket': the peer is freezerd; 'bus': dbus-daemon."""
    reqs, n = big_batch(CLOSE_BATCH)
    ignore = CALL_CALLBACK(lambda _f, _res, _ud: None)
    call_id = ctypes.c_uint64()
    peer = d.pid if label == 'private socket' else bus.proc.pid

    def open_handle():
        f = ctypes.c_void_p()
        if label == 'private socket':
            r = lib.freezer_open_private(ctypes.byref(f), f'{d.runtime_dir}/private'.encode())
        else:
            r = lib.freezer_open_address(ctypes.byref(f), bus.address.encode())
        ft.check_equal(r, 0, f'{label}: open a handle')
        # A smaller socket, that a batch of a few MB fills (see CLOSE_SNDBUF); queue()
        # checks that it does.
        with socket.socket(fileno=os.dup(lib.freezer_get_fd(f))) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, CLOSE_SNDBUF)
        return f

    def check_close_at_once(f, when):
        """freezer_close(f) with freezerd stopped returns at once."""
        os.kill(d.pid, signal.SIGSTOP)
        try:
            took, t = close_in_thread(lib, f, CLOSE_PING + ft.DEFAULT_TIMEOUT)
        finally:
            os.kill(d.pid, signal.SIGCONT)
        if took is None:
            t.join()
        ft.check(took is not None and took < 1.0, f'{label}: freezer_close() {when} returns at once, freezerd stopped',
                 took)

    def queue(f, what):
        ft.check_equal(lib.freezer_apply_batch_async(f, reqs, n, 0, 0, 0, ignore, None, ctypes.byref(call_id)), 0,
                       f'{label}: freezer_apply_batch_async() of {n} requests, {what}')
        ft.check_equal(lib.freezer_freeze_async(f, b'/g/k', 0, NO_WAIT, ignore, None, ctypes.byref(call_id)), 0,
                       f'{label}: and freezer_freeze_async(/g/k, NO_WAIT) behind it')
        ft.check(lib.freezer_get_events(f) & select.POLLOUT, f'{label}: both are still queued in the handle')

    # A 26 MB call and then Freeze /g/k without waiting, both queued (the peer stopped while
    # they are, or it drains the socket as fast as they are written), and freezer_close()
    # with the peer reading again, without a freezer_dispatch(): freezerd gets both.
    f = open_handle()
    os.kill(peer, signal.SIGSTOP)
    try:
        queue(f, 'the peer stopped')
    finally:
        os.kill(peer, signal.SIGCONT)
    # (freezerd takes 0.5 s over a 26 MB call on the bus, 15-21 s under AddressSanitizer:
    # see CLOSE_SNDBUF.)
    took, t = close_in_thread(lib, f, CLOSE_PING + ft.DEFAULT_TIMEOUT)
    if took is None:
        t.join()
    ft.check(took is not None and took < CLOSE_PING, f'{label}: freezer_close() with the peer reading returns '
             'once all is sent (and, on the bus, freezerd has taken it)', took)
    ft.wait_for(lambda: sc.read_freeze('/g/k') == 1, what='freezerd to carry out the Freeze queued before the close')
    d.client.call('Thaw', '/g/k', 0, 0)

    # The peer stopped: the socket fills and nothing more goes; freezer_close() gives up after
    # CLOSE_STALL seconds in which the peer took nothing, and the Freeze behind the big call is
    # never sent.
    f = open_handle()
    os.kill(peer, signal.SIGSTOP)
    try:
        queue(f, 'the peer stopped')
        took, t = close_in_thread(lib, f, CLOSE_STALL + ft.DEFAULT_TIMEOUT)
    finally:
        os.kill(peer, signal.SIGCONT)
    if took is None:
        t.join()  # it returns once the peer reads again
    ft.check(took is not None and CLOSE_STALL - 0.5 <= took < CLOSE_STALL + ft.DEFAULT_TIMEOUT,
             f'{label}: freezer_close() with the peer stopped gives up after {CLOSE_STALL:g} s (it waited for '
             'ever)', took)
    ft.check_equal(d.client.call('GetGroup', '/g/k')[0], ft.group_object('/g/k'),
                   f'{label}: freezerd serves calls (the half-sent call and the closed connection harm nothing)')
    ft.check_equal(sc.read_freeze('/g/k'), 0, f'{label}: the Freeze queued behind it was never sent: /g/k stays '
                   'thawed')

    # A call cancelled (freezer_cancel_call(): freezerd carries it out all the same) and the
    # handle closed at once, five times: freezerd takes it.  On the bus, the build before
    # counted only the calls it followed, so its close did not make sure freezerd had the
    # caller's uid before it left: freezerd refused the call ("it left the bus"), every time.
    for i in range(5):
        f = open_handle()
        ft.check_equal(lib.freezer_freeze_async(f, b'/g/k', 0, NO_WAIT, ignore, None, ctypes.byref(call_id)), 0,
                       f'{label}: freezer_freeze_async(/g/k, NO_WAIT), round {i}')
        ft.check_equal(lib.freezer_cancel_call(f, call_id), 0, f'{label}: freezer_cancel_call() of it')
        lib.freezer_close(f)
        ft.wait_for(lambda: sc.read_freeze('/g/k') == 1,
                    what=f'{label}: freezerd to carry out the Freeze cancelled and closed (round {i})')
        d.client.call('Thaw', '/g/k', 0, 0)
    ft.check(True, f'{label}: a call cancelled right before the close is carried out (5 of 5)')

    # A call cancelled and since answered (a later call's reply came, and replies come in
    # order): no longer in flight, so the close waits for nobody, not even a stopped freezerd
    # (the first fix kept a cancel in mind for good: 25 s on the bus).
    f = open_handle()
    answered = []
    on_thaw = CALL_CALLBACK(lambda _f, _res, _ud: answered.append(True))
    ft.check_equal(lib.freezer_freeze_async(f, b'/g/k', 0, NO_WAIT, ignore, None, ctypes.byref(call_id)), 0,
                   f'{label}: freezer_freeze_async(/g/k, NO_WAIT), to cancel')
    ft.check_equal(lib.freezer_cancel_call(f, call_id), 0, f'{label}: freezer_cancel_call() of it')
    ft.check_equal(lib.freezer_thaw_async(f, b'/g/k', 0, NO_WAIT, on_thaw, None, ctypes.byref(call_id)), 0,
                   f'{label}: and freezer_thaw_async(/g/k, NO_WAIT) behind it')
    deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
    while not answered and time.monotonic() < deadline:
        lib.freezer_wait(f, 100000)
        lib.freezer_dispatch(f)
    ft.check(answered, f'{label}: the thaw behind the cancelled call was answered')
    check_close_at_once(f, 'after a cancelled call was answered')

    # Nothing in flight: the close waits for nobody, not even a stopped freezerd (where waiting
    # for it to read on, or a round trip to it, would take the whole bound).
    check_close_at_once(open_handle(), 'with no call in flight')


def check_close_signal(lib, sc, d, bus):
    """freezer_close() on the bus, with a call in flight, waits for freezerd to answer a Ping (so
    that freezerd has the caller's uid, and takes the call, before the caller leaves) also when a
    signal the program handles comes meanwhile: sd-bus before v253 fails the Ping with -EINTR then,
    and the close went on at once; freezerd, stopped, later refused the call of a caller gone from
    the bus, and /g/k stayed thawed.  The signals come while freezer_close() waits in ppoll(), and
    freezerd goes on only after them."""
    ignore = CALL_CALLBACK(lambda _f, _res, _ud: None)
    call_id = ctypes.c_uint64()
    f = ctypes.c_void_p()
    ft.check_equal(lib.freezer_open_address(ctypes.byref(f), bus.address.encode()), 0, 'freezer_open_address')
    os.kill(d.pid, signal.SIGSTOP)
    try:
        ft.check_equal(lib.freezer_freeze_async(f, b'/g/k', 0, NO_WAIT, ignore, None, ctypes.byref(call_id)), 0,
                       'freezer_freeze_async(/g/k, NO_WAIT), freezerd stopped')
    except BaseException:
        os.kill(d.pid, signal.SIGCONT)
        raise
    _, n = base.interrupted_in_ppoll(lambda: lib.freezer_close(f), d.pid)
    ft.check(n > 0, 'signals came while freezer_close() waited for freezerd', n)
    sc.wait_events('/g/k', frozen=1)
    ft.check(True, 'a signal during freezer_close() does not end its wait: freezerd takes the call in flight')
    d.client.call('Thaw', '/g/k', 0, 0)


def check_bus_daemon_exit(lib, sc, bus):
    """A bus handle whose freezerd exits with a call in flight: -ECONNRESET (the bus says
    NoReply, which read -ETIMEDOUT as if the kernel had not confirmed)."""
    d = ft.Daemon(bus, sc.root)
    with d:
        f = ctypes.c_void_p()
        ft.check_equal(lib.freezer_open_address(ctypes.byref(f), bus.address.encode()), 0, 'freezer_open_address')
        h = Handle(lib, f)
        try:
            id_s = h.start('freezer_freeze_async', b'/s', 60 * 1000000, 0)
            ft.wait_for(lambda: sc.read_freeze('/s') == 1, what='freezerd to write /s')
            d.proc.send_signal(signal.SIGKILL)
            res = h.wait(id_s, 'Freeze /s after freezerd was killed')
            ft.check_equal((res['error'], res['name']), (-errno.ECONNRESET, 'org.freedesktop.DBus.Error.Disconnected'),
                           'bus handle, freezerd gone: the call in flight gets -ECONNRESET, Disconnected')
        finally:
            h.close()
        d.stop()
        d.exit_status = 0  # killed on purpose
    sc.write_freeze('/s', 0)


DISPATCH_MAX = 64  # FREEZER_DISPATCH_MAX


def socket_queued(fd):
    """Bytes waiting to be read on the handle's socket (FIONREAD)."""
    buf = array.array('i', [0])
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return buf[0]


def check_dispatch_bound(lib, sc, d):
    """freezer_dispatch() under a flood: with hundreds of signals waiting on a private handle's socket,
    one call runs at most FREEZER_DISPATCH_MAX messages' callbacks and returns; freezer_get_timeout()
    then says "now" and freezer_wait() returns at once; further calls deliver the rest, each bounded.
    (It used to run them all, and under a steady flood never returned.)"""
    n = 300
    f = open_private(lib, d)
    made = []
    try:
        added = []

        @base.GROUP_CALLBACK
        def on_group(_f, path, is_added, _state, _ud):
            if is_added:
                added.append(path.decode())
        ft.check_equal(lib.freezer_set_group_callback(f, on_group, None), 0, 'freezer_set_group_callback')
        fd = lib.freezer_get_fd(f)
        for i in range(n):
            sc.mkdir(f'/g/flood{i}')
            made.append(f'/g/flood{i}')
        ft.wait_for(lambda: sum(1 for p, _o, _s in d.client.call('ListGroups')[0] if p.startswith('/g/flood')) == n,
                    what=f'freezerd to publish the {n} groups')
        # Its InterfacesAdded went out with them; wait until they have all arrived (the amount
        # waiting on the socket stops growing), none read yet.
        last = [-1]

        def settled():
            q = socket_queued(fd)
            same, last[0] = q == last[0], q
            return same and q > 0
        ft.wait_for(settled, what='the signals to arrive on the handle\'s socket', poll=0.1)

        r = lib.freezer_dispatch(f)
        first = len(added)
        ft.check(0 < first <= DISPATCH_MAX and r >= DISPATCH_MAX,
                 f'one freezer_dispatch() with {n} signals waiting: at most {DISPATCH_MAX} callbacks, returns '
                 f'>= {DISPATCH_MAX} (before 0.4 it ran them all)', (first, r))
        t = ctypes.c_uint64(12345)
        ft.check_equal((lib.freezer_get_timeout(f, ctypes.byref(t)), t.value), (1, 0),
                       'after it stopped at the bound: freezer_get_timeout() says now')
        ft.check(lib.freezer_wait(f, 0) > 0, 'and freezer_wait() returns > 0 at once')
        calls = 1
        while len(added) < n and calls < 10 * n:
            before = len(added)
            r = lib.freezer_dispatch(f)
            ft.check(r >= 0 and len(added) - before <= DISPATCH_MAX, 'each freezer_dispatch() stays bounded',
                     (r, len(added) - before))
            calls += 1
        ft.check_equal(sorted(added), sorted(made), f'all {n} groups reported, over {calls} calls')
        ft.check(calls >= (n + DISPATCH_MAX - 1) // DISPATCH_MAX, f'at least {n} / {DISPATCH_MAX} calls', calls)
        while lib.freezer_dispatch(f) >= DISPATCH_MAX:
            pass
        ft.check_equal((lib.freezer_get_timeout(f, ctypes.byref(t)), t.value), (0, UINT64_MAX),
                       'once drained: no deadline again')
    finally:
        lib.freezer_close(f)
        for p in reversed(made):
            sc.rmdir(p)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    base.reexec_for_asan(base.libfreezer_path())
    lib = load()
    with ft.Scratch('core-libfreezer-async') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        ft.make_core_groups(sc, fuse)

        with ft.Daemon(bus, sc.root) as d:
            f = ctypes.c_void_p()
            ft.check_equal(lib.freezer_open_address(ctypes.byref(f), bus.address.encode()), 0,
                           'freezer_open_address')
            check_handle(lib, sc, f, 'bus')
            sc.write_freeze('/g', 0)
            f = open_private(lib, d)
            check_handle(lib, sc, f, 'private socket')
            sc.write_freeze('/g', 0)
            check_example(sc, d, bus)
            sc.write_freeze('/g', 0)
            check_loop_api(lib, sc, d)
            check_dispatch_bound(lib, sc, d)
            check_close_queued(lib, sc, d)
            check_close_flush(lib, sc, d, bus, 'private socket')
            check_close_flush(lib, sc, d, bus, 'bus')
            check_close_signal(lib, sc, d, bus)
        check_lost_connection(lib, sc, bus)
        check_bus_daemon_exit(lib, sc, bus)
    print('# checked: freezer_freeze/thaw/apply_batch/freeze_except_async on the bus and the private socket, '
          'replies out of order, cancel, get_timeout, a lost connection, close with calls in flight')


if __name__ == '__main__':
    ft.run(test)
