#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""libfreezer's blocking calls while a signal the program handles comes every millisecond
(SIGALRM from setitimer(), with a handler that returns, as a container manager's SIGCHLD
or a timer would): freezer.h, "Signals".

  /g     (no process)  /g/h   one sleeper   /g/k   two sleepers

With libsystemd before 253 (Debian 12 has 252) sd_bus_call() gave up its wait with -EINTR
at the first such signal: the blocking calls failed with -EINTR (System.Error.EINTR)
although freezerd carried them out, and their answers were lost.  Now every call waits on
until its reply, or its method-call timeout:

  * On a bus handle, with the timer running from before the callbacks are installed:
    freezer_set_state_callback() and freezer_set_group_callback() (bus matches, waited
    for) return 0; then, for 15 rounds, freezer_freeze("/g") (waits for the kernel),
    freezer_get_group(), freezer_add_pressure_trigger() and
    freezer_remove_pressure_trigger(), freezer_thaw("/g"), freezer_apply_batch() (freeze,
    then thaw /g/k), freezer_freeze_except("/g", ["/g/h"]), freezer_track(),
    freezer_list() each succeed with the kernel and the reply agreeing; a group /g/nI made
    and removed in each round, and a freezer_thaw_async() sent before the blocking calls,
    whose replies and signals arrive while those wait.
  * Callbacks run only from freezer_dispatch(), never inside a blocking call: the group
    callback sees /g/n0, /g/n1, ... added in that order, removed in that order, each
    added before it is removed, the state
    callback /g frozen and running, each async callback runs once, with error 0; a
    freezer_get_group() from the group callback succeeds (or finds the group gone); after a
    blocking call freezer_get_timeout() says "now" while anything it read waits for
    freezer_dispatch().
  * On freezerd's private socket: freeze, get_group and thaw as on the bus.
  * The deadline holds, freezerd stopped (SIGSTOP): freezer_get_group() fails with
    -ETIMEDOUT and org.freedesktop.DBus.Error.Timeout once the method-call timeout
    (SYSTEMD_BUS_TIMEOUT=2) passed, without signals (it waited for ever: sd-bus says 0
    for the step that times a call out) and with them (not before, with -EINTR);
    freezer_freeze("/g/k", 1 s) so after 1 s + 5 s, with signals; freezerd, continued,
    carries the freeze out."""

import contextlib
import ctypes
import errno
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

base = ft.load_test_module('test-core-libfreezer')

STATES = base.STATES
ROUNDS = 15
RESOURCE_CPU = 0
TIMEOUT_NAME = 'org.freedesktop.DBus.Error.Timeout'


class Request(ctypes.Structure):
    _fields_ = [('path', ctypes.c_char_p), ('freeze', ctypes.c_bool)]


class Result(ctypes.Structure):
    _fields_ = [('id', ctypes.c_uint64), ('error', ctypes.c_int), ('error_name', ctypes.c_char_p),
                ('error_message', ctypes.c_char_p), ('writes', ctypes.c_uint32), ('skipped', ctypes.c_uint32),
                ('frozen', ctypes.POINTER(ctypes.c_char_p))]


CALL_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(Result), ctypes.c_void_p)


def load():
    lib = base.load()
    P, U32, U64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64
    sig = {
        'freezer_apply_batch': [P, ctypes.POINTER(Request), ctypes.c_size_t, ctypes.c_int, U64, U64,
                                ctypes.POINTER(U32), ctypes.POINTER(U32)],
        'freezer_freeze_except': [P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, U64, U64,
                                  ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p))],
        'freezer_remove_pressure_trigger': [P, ctypes.c_char_p, U32],
        'freezer_track': [P, ctypes.c_char_p],
        'freezer_thaw_async': [P, ctypes.c_char_p, U64, U64, CALL_CALLBACK, P, ctypes.POINTER(U64)],
        'freezer_get_timeout': [P, ctypes.POINTER(U64)],
    }
    for name, args in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = ctypes.c_int, args
    lib.freezer_strv_free.restype, lib.freezer_strv_free.argtypes = None, [ctypes.POINTER(ctypes.c_char_p)]
    return lib


class Timer:
    """SIGALRM every millisecond, with a handler that returns.  count: how many came (python's
    C-level handler writes a byte to the wakeup fd for each; its own handler runs only between
    bytecodes, once for all that came during a call)."""

    def __enter__(self):
        self.count = 0
        self.rfd, self.wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.previous_fd = signal.set_wakeup_fd(self.wfd, warn_on_full_buffer=False)
        self.previous = signal.signal(signal.SIGALRM, lambda _signum, _frame: None)
        signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
        return self

    def drain(self):
        while True:
            try:
                b = os.read(self.rfd, 65536)
            except BlockingIOError:
                return
            if not b:
                return
            self.count += len(b)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        self.drain()
        signal.signal(signal.SIGALRM, self.previous)
        signal.set_wakeup_fd(self.previous_fd)
        os.close(self.rfd)
        os.close(self.wfd)
        return False


class Recorder:
    """The handle's callbacks, each noting whether it ran from freezer_dispatch()."""

    def __init__(self, lib, f):
        self.lib, self.f = lib, f
        self.in_dispatch = False
        self.outside = []
        self.states = []
        self.groups = []
        self.calls = []
        self.nested = []

        @base.CALLBACK
        def on_state(_f, path, state, frozen, _ud):
            self.note('state', path)
            self.states.append((path.decode(), STATES[state]))

        @base.GROUP_CALLBACK
        def on_group(_f, path, added, _state, _ud):
            self.note('group', path)
            self.groups.append((path.decode(), bool(added)))
            if added:
                # A blocking call from a callback waits on through signals, too (sd-bus runs
                # none of these inside itself, where no call could wait).
                g = base.Group()
                r = self.lib.freezer_get_group(self.f, path, ctypes.byref(g))
                self.nested.append((path.decode(), r, g.path))
                self.lib.freezer_group_clear(ctypes.byref(g))

        @CALL_CALLBACK
        def on_call(_f, res, _ud):
            self.note('call', res.contents.id)
            self.calls.append((res.contents.id, res.contents.error))
        self.on_state, self.on_group, self.on_call = on_state, on_group, on_call

    def note(self, what, detail):
        if not self.in_dispatch:
            self.outside.append((what, detail))

    def dispatch(self):
        self.in_dispatch = True
        try:
            while True:
                r = self.lib.freezer_dispatch(self.f)
                if r < 0:
                    ft.check(False, 'freezer_dispatch', r)
                if r <= 0:
                    return
        finally:
            self.in_dispatch = False


def error_name(lib, f):
    return (lib.freezer_last_error_name(f) or b'').decode()


def check_call(lib, f, what, r, expected=0):
    ft.check(r == expected, f'{what}: {expected} with signals coming', (r, error_name(lib, f)))


def rounds_on_bus(lib, sc, bus):
    f = ctypes.c_void_p()
    ft.check_equal(lib.freezer_open_address(ctypes.byref(f), bus.address.encode()), 0, 'freezer_open_address')
    rec = Recorder(lib, f)
    try:
        with Timer() as timer:
            check_call(lib, f, 'freezer_set_state_callback', lib.freezer_set_state_callback(f, rec.on_state, None))
            check_call(lib, f, 'freezer_set_group_callback', lib.freezer_set_group_callback(f, rec.on_group, None))
            ok = True
            for i in range(ROUNDS):
                ok = one_round(lib, sc, f, rec, i) and ok
                if not ok:
                    break
            ft.check(ok, f'{ROUNDS} rounds of blocking calls, every one as it should be')
        n_signals = timer.count
        ft.check(n_signals > ROUNDS, 'SIGALRM came while the calls waited', n_signals)
        expected = [x for i in range(ROUNDS) for x in ((f'/g/n{i}', True), (f'/g/n{i}', False))]

        def groups_done():
            rec.dispatch()
            return len([g for g in rec.groups if g[0].startswith('/g/n')]) >= len(expected)
        ft.wait_for(groups_done, what='the group callbacks for /g/n*')
        # freezerd may tell of /g/nI+1 made before /g/nI removed, the two so close.
        got = [g for g in rec.groups if g[0].startswith('/g/n')]
        ft.check(sorted(got) == sorted(expected) and
                 [g for g in got if g[1]] == [g for g in expected if g[1]] and
                 [g for g in got if not g[1]] == [g for g in expected if not g[1]] and
                 all(got.index((p, True)) < got.index((p, False)) for p, _ in expected),
                 'the group callback: /g/n0, /g/n1, ... added in order, removed in order, each added before '
                 'removed', got)

        # freezer_get_group() and freezer_list() tell the handle the states, too: a signal that says
        # what they said already is not reported (freezer.h), so not every change is.
        def state_done():
            rec.dispatch()
            return {'frozen', 'running'} <= {s for p, s in rec.states if p == '/g'}
        ft.wait_for(state_done, what='the state callback: /g frozen and running')
        ft.check(True, 'the state callback saw /g frozen and running')
        ft.check_equal(sorted(e for _id, e in rec.calls), [0] * ROUNDS, 'each async call completed once, with 0')
        ft.check(len(rec.nested) == ROUNDS and
                 all(r == 0 and gp == p.encode() or r == -errno.ENOENT for p, r, gp in rec.nested),
                 'freezer_get_group() from the group callback: 0 (or -ENOENT for a group removed since)',
                 rec.nested)
        ft.check_equal(rec.outside, [], 'no callback ran outside freezer_dispatch()')
    finally:
        lib.freezer_close(f)


def one_round(lib, sc, f, rec, i):
    """One round of blocking calls; False (said) on the first that fails."""
    def ok(what, r, expected=0):
        if r != expected:
            ft.check(False, f'round {i}: {what}: {expected}', (r, error_name(lib, f)))
        return r == expected

    call_id = ctypes.c_uint64()
    if not ok('freezer_thaw_async(/g/h)', lib.freezer_thaw_async(f, b'/g/h', 0, 0, rec.on_call, None,
                                                                  ctypes.byref(call_id))):
        return False
    sc.mkdir(f'/g/n{i}')
    g = base.Group()
    if not ok('freezer_get_group(/g/nI)', lib.freezer_get_group(f, f'/g/n{i}'.encode(), ctypes.byref(g))):
        return False
    lib.freezer_group_clear(ctypes.byref(g))
    if not ok('freezer_freeze(/g)', lib.freezer_freeze(f, b'/g', 0, 0)):
        return False
    if not ok('/g frozen 1 in the kernel', sc.read_events('/g').get('frozen'), 1):
        return False
    # What the calls read meanwhile (the async reply, signals) waits for freezer_dispatch().
    due = ctypes.c_uint64(1)
    if not ok('freezer_get_timeout() says now', (lib.freezer_get_timeout(f, ctypes.byref(due)), due.value),
              (1, 0)):
        return False
    if not ok('freezer_get_group(/g)', lib.freezer_get_group(f, b'/g', ctypes.byref(g))):
        return False
    state = STATES[g.state]
    lib.freezer_group_clear(ctypes.byref(g))
    if not ok('freezer_get_group(/g): frozen', state, 'frozen'):
        return False
    trigger = ctypes.c_uint32()
    if not ok('freezer_add_pressure_trigger', lib.freezer_add_pressure_trigger(
            f, None, RESOURCE_CPU, False, 1000000, 2000000, ctypes.byref(trigger))):
        return False
    if not ok('freezer_remove_pressure_trigger', lib.freezer_remove_pressure_trigger(f, None, trigger.value)):
        return False
    rec.dispatch()
    if not ok('freezer_thaw(/g)', lib.freezer_thaw(f, b'/g', 0, 0)):
        return False
    if not ok('/g frozen 0 in the kernel', sc.read_events('/g').get('frozen'), 0):
        return False
    writes, skipped = ctypes.c_uint32(), ctypes.c_uint32()
    for freeze in (True, False):
        req = (Request * 1)(Request(b'/g/k', freeze))
        if not ok(f'freezer_apply_batch(/g/k {freeze})', (lib.freezer_apply_batch(
                f, req, 1, 0, 0, 0, ctypes.byref(writes), ctypes.byref(skipped)), writes.value), (0, 1)):
            return False
    exclude = (ctypes.c_char_p * 1)(b'/g/h')
    frozen = ctypes.POINTER(ctypes.c_char_p)()
    r = lib.freezer_freeze_except(f, b'/g', exclude, 1, 0, 0, ctypes.byref(frozen))
    paths = []
    if r >= 0:
        paths = [frozen[k].decode() for k in range(r)]
        lib.freezer_strv_free(frozen)
    if not ok('freezer_freeze_except(/g, [/g/h])', (r, sorted(paths)), (2, ['/g/k', f'/g/n{i}'])):
        return False
    for p in (b'/g/k', f'/g/n{i}'.encode()):
        if not ok(f'freezer_thaw({p.decode()})', lib.freezer_thaw(f, p, 0, 0)):
            return False
    if not ok('freezer_track(/g)', lib.freezer_track(f, b'/g')):
        return False
    arr, n = ctypes.POINTER(base.Group)(), ctypes.c_size_t()
    if not ok('freezer_list', lib.freezer_list(f, ctypes.byref(arr), ctypes.byref(n))):
        return False
    listed = {arr[k].path.decode() for k in range(n.value)}
    lib.freezer_group_array_free(arr, n)
    if not ok('freezer_list names /g/k', '/g/k' in listed, True):
        return False
    sc.rmdir(f'/g/n{i}')
    rec.dispatch()
    return True


def on_private(lib, sc, d):
    f = ctypes.c_void_p()
    ft.check_equal(lib.freezer_open_private(ctypes.byref(f), f'{d.runtime_dir}/private'.encode()), 0,
                   'freezer_open_private')
    try:
        g = base.Group()
        with Timer() as timer:
            results = []
            for _ in range(ROUNDS):
                results.append(lib.freezer_freeze(f, b'/g', 0, 0))
                results.append(lib.freezer_get_group(f, b'/g', ctypes.byref(g)))
                results.append(STATES[g.state])
                lib.freezer_group_clear(ctypes.byref(g))
                results.append(lib.freezer_thaw(f, b'/g', 0, 0))
        n_signals = timer.count
        ft.check_equal(results, [0, 0, 'frozen', 0] * ROUNDS,
                       'private socket: freeze, get_group, thaw with signals coming')
        ft.check(n_signals > 0, 'SIGALRM came while the calls waited', n_signals)
    finally:
        lib.freezer_close(f)


def deadline(lib, sc, d, bus):
    # The method-call timeout of the calls without one of their own: sd-bus reads it once per
    # connection, at its first call.
    saved = os.environ.get('SYSTEMD_BUS_TIMEOUT')
    os.environ['SYSTEMD_BUS_TIMEOUT'] = '2'
    f = ctypes.c_void_p()
    try:
        ft.check_equal(lib.freezer_open_address(ctypes.byref(f), bus.address.encode()), 0, 'freezer_open_address')
        ft.check_equal(lib.freezer_track(f, b'/g'), 0, 'freezer_track(/g)')
    finally:
        if saved is None:
            os.environ.pop('SYSTEMD_BUS_TIMEOUT')
        else:
            os.environ['SYSTEMD_BUS_TIMEOUT'] = saved
    g = base.Group()
    os.kill(d.pid, signal.SIGSTOP)
    try:
        results = []
        for timer_on in (False, True):
            with Timer() if timer_on else contextlib.nullcontext() as timer:
                t0 = time.monotonic()
                r = lib.freezer_get_group(f, b'/g', ctypes.byref(g))
                results.append((r, error_name(lib, f), time.monotonic() - t0, timer.count if timer else None))
            if timer:
                results[-1] = results[-1][:3] + (timer.count,)
        with Timer() as timer:
            t0 = time.monotonic()
            r = lib.freezer_freeze(f, b'/g/k', 1000000, 0)
            results.append((r, error_name(lib, f), time.monotonic() - t0))
    finally:
        os.kill(d.pid, signal.SIGCONT)
    try:
        for (r, name, elapsed, n), what in zip(results[:2], ('without signals', 'with signals coming')):
            ft.check(r == -errno.ETIMEDOUT and name == TIMEOUT_NAME and elapsed >= 1.9,
                     f'freezer_get_group() with freezerd stopped, {what}: -ETIMEDOUT (Timeout) after the '
                     'method-call timeout (SYSTEMD_BUS_TIMEOUT=2)', (r, name, round(elapsed, 3)))
        ft.check(results[1][3] > 100, 'SIGALRM came while freezer_get_group() waited', results[1][3])
        r, name, elapsed = results[2]
        ft.check(r == -errno.ETIMEDOUT and name == TIMEOUT_NAME and elapsed >= 5.9,
                 'freezer_freeze(1 s) with freezerd stopped: -ETIMEDOUT (Timeout) after its method-call timeout '
                 '(6 s), with signals coming', (r, name, round(elapsed, 3)))
        ft.check(timer.count > 100, 'SIGALRM came while freezer_freeze() waited', timer.count)
        sc.wait_events('/g/k', frozen=1)
        ft.check(True, 'freezerd, continued, carried the freeze out')
        ft.check_equal(lib.freezer_thaw(f, b'/g/k', 0, 0), 0, 'freezer_thaw(/g/k)')
    finally:
        lib.freezer_close(f)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    base.reexec_for_asan(base.libfreezer_path())
    lib = load()
    with ft.Scratch('core-libfreezer-signals') as sc, ft.Bus() as bus:
        sc.mkdir('/g/h')
        sc.mkdir('/g/k')
        sc.spawn_sleepers('/g/k', 2)
        sc.spawn_sleepers('/g/h', 1)
        with ft.Daemon(bus, sc.root) as d:
            rounds_on_bus(lib, sc, bus)
            on_private(lib, sc, d)
            deadline(lib, sc, d, bus)
    print('# checked: blocking calls wait on through handled signals (bus, private socket), callbacks only from '
          'freezer_dispatch() and in order, the method-call timeout still ends a call')


if __name__ == '__main__':
    ft.run(test)
