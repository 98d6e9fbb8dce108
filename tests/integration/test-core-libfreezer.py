#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""libfreezer (the built libfreezer.so.0, loaded with ctypes) against freezerd.

  /g     (no process)  /g/h   one sleeper   /g/k   two sleepers
  /s     a task blocked on a FUSE mount that never answers

  Processes live in leaf groups only: Linux 6.18 reports a group that has both
  processes of its own and child cgroups "frozen 1" as soon as the children are
  frozen, before its own processes are (the upward propagation ignores the
  parent's own tasks), and clears it again when the next of its own tasks
  freezes; freezerd follows the kernel, so its reply would come early.

Checks:
  * freezer_open_address() on the private bus; on a dead address it fails with
    a negative errno and no handle.
  * freezer_get_group("/g") fills every field as the kernel has it.
  * With a state callback installed (freezer_set_state_callback), freezer_freeze("/g")
    returns 0 with the kernel at frozen 1; freezer_dispatch() (after the blocking
    call, then driven by freezer_get_fd() readability) calls back with ("/g",
    FROZEN, frozen=true) and ("/g/h", FROZEN_BY_PARENT, true).
  * Errors: -ENOENT / NoSuchGroup for a missing group, -EBUSY / FrozenByParent for
    /g/h (its message names /g), -EINVAL / InvalidArgs for flags 8, -ETIMEDOUT /
    org.freezerd.Freezer1.Error.Timeout (rolled back) for /s, -ENOENT / NotTracked
    for freezer_untrack() of /g/h (a group of the subtree tracked at "/", which its
    message names); the last error's name and message describe each failure.
  * freezer_list() lists every group with its object and state (as ListGroups).
  * freezer_thaw("/g") returns 0 with the kernel at frozen 0; the callback sees
    "running".
  * freezer_state_to_string / freezer_state_from_string round-trip.
  * freezer_open_private() on the daemon's RUNTIME_DIR/private: freeze, thaw and
    errors as on the bus; -ENOENT for a missing socket; the state callback (driven
    by freezer_get_fd() + freezer_dispatch()) reports /g frozen and running, the
    group callback a mkdir and an rmdir, straight from freezerd (the handle
    subscribed on its connection); with both callbacks removed (which also
    unsubscribes, checked in test-core-private) a freeze, thaw, mkdir and rmdir
    call neither.
  * freezer_set_state_callback() with no freezerd on the bus returns 0, and once a
    freezerd starts the handle subscribes to it: the callback sees its changes
    (freezerd sends GroupsChanged only while someone subscribed).
  * freezer_set_state_callback() while freezerd exits during its round trips (a stand-in
    that holds freezerd's bus name leaves the bus on SubscribeGroupStates, or on
    ListGroupIds after answering the subscription): 0 (it was -ECONNRESET), the callback
    stays installed, and once a freezerd starts the handle subscribes to it, as when none
    ran.  On a bus where freezerd is activatable (a service file whose Exec is /bin/true),
    the unsubscription sent after it left on ListGroupIds does not activate it (dbus-daemon
    logged "Activating service name='org.freezerd.Freezer1'").
  * freezer_open_*() failures set *ret to NULL (it was left as it was) and give the errno
    freezer.h lists: -ENOENT (no socket; freezer_open_user() with no user bus in the
    environment: was ENOMEDIUM), -ECONNREFUSED (a file, a stale socket), -ENAMETOOLONG
    (was E2BIG), -EINVAL for an address without a transport (was ECONNREFUSED), -EPROTO
    for freezerd's private socket as a bus (was EBADR), -ECONNRESET for a peer that hangs
    up (was EPIPE on the bus path), -EACCES for nobody on root's private socket; a signal
    during the handshake is no failure (it was -EINTR).
  * IRQ pressure of a group ("/" too): freezer_get_pressure() -EOPNOTSUPP (NotSupported),
    freezer_add_pressure_trigger() -EINVAL (InvalidArgs), as freezer.h says for each.
  * State cache: with a state callback and no group callback, a group removed and made
    again under the same path and frozen is reported (the removed group's stale "frozen"
    entry suppressed it).
  * freezer_set_resync_callback(): a bus handle hears daemon-exited and daemon-started
    across a restart, and its state callback then follows the new freezerd; a private
    handle hears disconnected when its freezerd stops, after which freezer_get_fd() fails with
    -ENOTCONN and the fd it gave is closed (freezer.h: the library closes it with the connection).
  * A blocking call (freezer_freeze(), freezerd stopped) while signals with a handler come: 0 (it
    was -EINTR with libsystemd before 253, the reply lost; freezer.h, "Signals"), and freezerd
    carries it out."""

import ctypes
import errno
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

STATES = ['running', 'freezing', 'frozen', 'thawing', 'freezing-by-parent', 'frozen-by-parent', 'unknown']


class Group(ctypes.Structure):
    _fields_ = [('path', ctypes.c_char_p), ('object', ctypes.c_char_p), ('state', ctypes.c_int),
                ('freeze', ctypes.c_bool), ('frozen', ctypes.c_bool), ('populated', ctypes.c_bool),
                ('descendants', ctypes.c_uint32), ('frozen_descendants', ctypes.c_uint32),
                ('frozen_usec', ctypes.c_uint64)]


CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_bool, ctypes.c_void_p)
GROUP_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_bool, ctypes.c_int,
                                  ctypes.c_void_p)
RESYNC_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
RESYNC_REASONS = ['daemon-exited', 'daemon-started', 'disconnected']
RESOURCE_IRQ = 3
FREEZER_NO_WAIT = 2


class PressureLine(ctypes.Structure):
    _fields_ = [('avg10', ctypes.c_double), ('avg60', ctypes.c_double), ('avg300', ctypes.c_double),
                ('total_usec', ctypes.c_uint64)]


class Pressure(ctypes.Structure):
    _fields_ = [('some', PressureLine), ('full', PressureLine)]


def libfreezer_path():
    return os.environ.get('LIBFREEZER_SO') or os.path.join(ft.BUILDDIR, 'client', 'libfreezer.so.0')


def asan_runtime(path):
    """The ASan runtime libfreezer at path was built with, or None."""
    try:
        out = subprocess.run(['ldd', path], capture_output=True, text=True, timeout=ft.DEFAULT_TIMEOUT).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'^\s*libasan\.so\S*\s+=>\s+(\S+)', out, re.M)
    return m.group(1) if m else None


def reexec_for_asan(path):
    """A library built with -fsanitize=address cannot be dlopen()ed into a python3 without the
    ASan runtime (ASan aborts the process).  Then run again with the runtime preloaded (and
    leak checking off: python's own allocations are not our business); the children this
    test starts (freezerd!) get the original environment back."""
    if os.environ.get('FREEZERD_TEST_ASAN_REEXEC'):
        os.environ.pop('LD_PRELOAD', None)
        orig = os.environ.pop('FREEZERD_TEST_ASAN_OPTIONS', None)
        if orig is None:
            os.environ.pop('ASAN_OPTIONS', None)
        else:
            os.environ['ASAN_OPTIONS'] = orig
        os.environ.pop('FREEZERD_TEST_ASAN_REEXEC')
        return
    runtime = asan_runtime(path)
    if not runtime:
        return
    env = dict(os.environ, LD_PRELOAD=runtime, FREEZERD_TEST_ASAN_REEXEC='1',
               ASAN_OPTIONS=os.environ.get('ASAN_OPTIONS', '') + ':detect_leaks=0')
    if 'ASAN_OPTIONS' in os.environ:
        env['FREEZERD_TEST_ASAN_OPTIONS'] = os.environ['ASAN_OPTIONS']
    print(f'# {path} uses ASan: running again with LD_PRELOAD={runtime}', flush=True)
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def open_lib(path):
    """The library at path (skipping the test where it is not built); run reexec_for_asan()
    first."""
    if not os.path.exists(path):
        ft.skip(f'{path} is not built')
    return ctypes.CDLL(path)


def bind(lib, sig, optional=False):
    """Each function of sig ({name: (restype, argtypes)}) typed in lib; with optional, one
    the library lacks (an older one) is left out."""
    for name, (res, args) in sig.items():
        fn = getattr(lib, name, None) if optional else getattr(lib, name)
        if fn is not None:
            fn.restype, fn.argtypes = res, args


def load():
    lib = open_lib(libfreezer_path())
    P = ctypes.c_void_p
    sig = {
        'freezer_open_address': (ctypes.c_int, [ctypes.POINTER(P), ctypes.c_char_p]),
        'freezer_open_private': (ctypes.c_int, [ctypes.POINTER(P), ctypes.c_char_p]),
        'freezer_open_user': (ctypes.c_int, [ctypes.POINTER(P)]),
        'freezer_close': (P, [P]),
        'freezer_last_error_name': (ctypes.c_char_p, [P]),
        'freezer_last_error_message': (ctypes.c_char_p, [P]),
        'freezer_freeze': (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64]),
        'freezer_thaw': (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64]),
        'freezer_untrack': (ctypes.c_int, [P, ctypes.c_char_p]),
        'freezer_get_group': (ctypes.c_int, [P, ctypes.c_char_p, ctypes.POINTER(Group)]),
        'freezer_group_clear': (None, [ctypes.POINTER(Group)]),
        'freezer_list': (ctypes.c_int, [P, ctypes.POINTER(ctypes.POINTER(Group)), ctypes.POINTER(ctypes.c_size_t)]),
        'freezer_group_array_free': (None, [ctypes.POINTER(Group), ctypes.c_size_t]),
        'freezer_state_to_string': (ctypes.c_char_p, [ctypes.c_int]),
        'freezer_state_from_string': (ctypes.c_int, [ctypes.c_char_p]),
        'freezer_get_fd': (ctypes.c_int, [P]),
        'freezer_dispatch': (ctypes.c_int, [P]),
        'freezer_set_state_callback': (ctypes.c_int, [P, CALLBACK, P]),
        'freezer_set_group_callback': (ctypes.c_int, [P, GROUP_CALLBACK, P]),
        'freezer_get_pressure': (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(Pressure)]),
        'freezer_add_pressure_trigger': (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_int, ctypes.c_bool,
                                                        ctypes.c_uint64, ctypes.c_uint64,
                                                        ctypes.POINTER(ctypes.c_uint32)]),
        # Since 0.4 (LIBFREEZER_0.4): check_resync() fails without it.
        'freezer_set_resync_callback': (ctypes.c_int, [P, RESYNC_CALLBACK, P]),
    }
    bind(lib, sig, optional=True)
    return lib


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    reexec_for_asan(libfreezer_path())
    lib = load()
    with ft.Scratch('core-libfreezer') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        ft.make_core_groups(sc, fuse)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            dead = ctypes.c_void_p()
            r = lib.freezer_open_address(ctypes.byref(dead), f'unix:path={d.tmpdir}/nothing'.encode())
            ft.check(r < 0 and not dead.value, 'freezer_open_address on a dead address fails', r)

            f = ctypes.c_void_p()
            r = lib.freezer_open_address(ctypes.byref(f), bus.address.encode())
            ft.check_equal(r, 0, 'freezer_open_address')
            fd = -1
            try:
                def err():
                    return ((lib.freezer_last_error_name(f) or b'').decode(),
                            (lib.freezer_last_error_message(f) or b'').decode())

                # ---- state strings
                ft.check_equal([lib.freezer_state_to_string(i).decode() for i in range(len(STATES))], STATES,
                               'freezer_state_to_string')
                ft.check_equal([lib.freezer_state_from_string(s.encode()) for s in STATES], list(range(len(STATES))),
                               'freezer_state_from_string')

                # ---- callback first, then the initial state
                events = []

                @CALLBACK
                def on_state(_f, path, state, frozen, _ud):
                    events.append((path.decode(), STATES[state] if 0 <= state < len(STATES) else state, frozen))
                ft.check_equal(lib.freezer_set_state_callback(f, on_state, None), 0, 'freezer_set_state_callback')
                fd = lib.freezer_get_fd(f)
                ft.check(fd >= 0, 'freezer_get_fd', fd)
                ft.loop().add_reader(fd, lambda: lib.freezer_dispatch(f))

                g = Group()
                ft.check_equal(lib.freezer_get_group(f, b'/g', ctypes.byref(g)), 0, 'freezer_get_group(/g)')
                ev = sc.read_events('/g')
                ft.check_equal((g.path, g.object, STATES[g.state], g.freeze, g.frozen, g.populated, g.descendants,
                                g.frozen_descendants),
                               (b'/g', ft.group_object('/g').encode(), 'running', False, ev['frozen'] == 1,
                                ev['populated'] == 1, 2, 0), 'freezer_get_group fields match the kernel')
                lib.freezer_group_clear(ctypes.byref(g))
                ft.check(g.path is None, 'freezer_group_clear zeroes the struct')

                # ---- freeze
                r = lib.freezer_freeze(f, b'/g', 0, 0)
                ft.check_equal(r, 0, 'freezer_freeze(/g)')
                ft.check_equal(sc.read_events('/g').get('frozen'), 1, 'the kernel says frozen 1 when it returns')
                lib.freezer_dispatch(f)  # signals queued during the blocking call
                ft.wait_for(lambda: all((p, s, True) in events for p, s in (
                    ('/g', 'frozen'), ('/g/h', 'frozen-by-parent'), ('/g/k', 'frozen-by-parent'))),
                    what='state callbacks for /g, /g/h and /g/k')
                ft.check(True, 'the callback reported /g frozen, /g/h and /g/k frozen-by-parent')
                ft.check_equal(lib.freezer_get_group(f, b'/g', ctypes.byref(g)), 0, 'freezer_get_group(/g)')
                ft.check_equal((STATES[g.state], g.freeze, g.frozen), ('frozen', True, True), 'get_group: frozen')
                lib.freezer_group_clear(ctypes.byref(g))

                # ---- errors
                for args, rc, name, word in (
                        ((b'/nope', 0, 0), -errno.ENOENT, ft.ERROR_NO_SUCH_GROUP, '/nope'),
                        ((b'/g', 0, 8), -errno.EINVAL, ft.ERROR_INVALID_ARGS, ''),
                        ((b'/s', 300000, ft.FLAG_ROLLBACK_ON_TIMEOUT), -errno.ETIMEDOUT, ft.ERROR_TIMEOUT, '/s')):
                    r = lib.freezer_freeze(f, *args)
                    n, m = err()
                    ft.check(r == rc and n == name and word in m, f'freezer_freeze{args}: {rc}, {name}', (r, n, m))
                ft.check_equal(sc.read_freeze('/s'), 0, 'the timed-out freeze of /s was rolled back')
                r = lib.freezer_thaw(f, b'/g/h', 0, 0)
                n, m = err()
                ft.check(r == -errno.EBUSY and n == ft.ERROR_FROZEN_BY_PARENT and '/g' in m.replace('/g/h', ''),
                         'freezer_thaw(/g/h): -EBUSY, FrozenByParent naming /g', (r, n, m))
                # /g/h exists, within the subtree tracked at "/": -ENOENT as for a missing group (freezer.h),
                # told apart by its name, NotTracked, whose message names that root.
                r = lib.freezer_untrack(f, b'/g/h')
                n, m = err()
                ft.check(r == -errno.ENOENT and n == ft.ERROR_NOT_TRACKED and '/g/h' in m and 'subtree at /:' in m,
                         'freezer_untrack(/g/h): -ENOENT, NotTracked naming /g/h and its root /', (r, n, m))
                ft.check_equal(c.call('GetGroup', '/g/h')[0], ft.group_object('/g/h'),
                               'the failed untrack left /g/h published')

                # ---- list
                arr = ctypes.POINTER(Group)()
                n = ctypes.c_size_t()
                ft.check_equal(lib.freezer_list(f, ctypes.byref(arr), ctypes.byref(n)), 0, 'freezer_list')
                got = sorted((arr[i].path.decode(), arr[i].object.decode(), STATES[arr[i].state])
                             for i in range(n.value))
                frozen = {arr[i].path.decode(): (STATES[arr[i].state], arr[i].frozen) for i in range(n.value)}
                lib.freezer_group_array_free(arr, n)
                ft.check_equal(got, sorted(tuple(x) for x in c.call('ListGroups')[0]), 'freezer_list equals ListGroups')
                ft.check(all(z == (s in ('frozen', 'frozen-by-parent', 'thawing')) for s, z in frozen.values()) and
                         frozen['/g'] == ('frozen', True),
                         'freezer_list fills in frozen as the state implies (it left it false)', frozen)

                # ---- thaw
                events.clear()
                ft.check_equal(lib.freezer_thaw(f, b'/g', 0, 0), 0, 'freezer_thaw(/g)')
                ft.check_equal(sc.read_events('/g').get('frozen'), 0, 'the kernel says frozen 0 when it returns')
                lib.freezer_dispatch(f)
                ft.wait_for(lambda: ('/g', 'running', False) in events, what='the callback for /g running')
                ft.check(True, 'the callback reported /g running')
                check_irq_pressure(lib, f)
            finally:
                if fd >= 0:
                    ft.loop().remove_reader(fd)
                lib.freezer_close(f)
            check_private(lib, sc, d)
            check_open_errors(lib, d, bus)
            check_cache_pruned(lib, sc, d, bus)
            check_blocking_signal(lib, sc, d)
        check_resubscribe(lib, sc, bus)
        check_exit_during_install(lib, sc, bus)
        check_unsubscribe_not_activating(lib)
        check_resync(lib, sc, bus)
    print('# checked: libfreezer open/get_group/freeze/thaw/list, errno and last-error mapping, state callback via '
          'get_fd + dispatch, freezer_open_private')


def check_private(lib, sc, d):
    """freezer_open_private(): calls work, and so do the callbacks (signals straight from freezerd)."""
    dead = ctypes.c_void_p()
    r = lib.freezer_open_private(ctypes.byref(dead), f'{d.runtime_dir}/nothing'.encode())
    ft.check(r == -errno.ENOENT and not dead.value, 'freezer_open_private on a missing socket: -ENOENT', r)
    f = ctypes.c_void_p()
    ft.check_equal(lib.freezer_open_private(ctypes.byref(f), f'{d.runtime_dir}/private'.encode()), 0,
                   'freezer_open_private')
    fd = -1
    try:
        events, groups = [], []

        @CALLBACK
        def on_state(_f, path, state, frozen, _ud):
            events.append((path.decode(), STATES[state] if 0 <= state < len(STATES) else state, frozen))

        @GROUP_CALLBACK
        def on_group(_f, path, added, _state, _ud):
            groups.append((path.decode(), added))

        ft.check_equal(lib.freezer_set_state_callback(f, on_state, None), 0,
                       'freezer_set_state_callback on a private handle')
        ft.check_equal(lib.freezer_set_group_callback(f, on_group, None), 0,
                       'freezer_set_group_callback on a private handle')
        fd = lib.freezer_get_fd(f)
        ft.loop().add_reader(fd, lambda: lib.freezer_dispatch(f))

        ft.check_equal(lib.freezer_freeze(f, b'/g', 0, 0), 0, 'freezer_freeze(/g) over the private socket')
        ft.check_equal(sc.read_events('/g').get('frozen'), 1, 'the kernel says frozen 1 when it returns')
        lib.freezer_dispatch(f)  # signals queued during the blocking call
        ft.wait_for(lambda: ('/g', 'frozen', True) in events, what='the private handle\'s callback: /g frozen')
        ft.check(True, 'the state callback of a private handle reported /g frozen')
        r = lib.freezer_freeze(f, b'/nope', 0, 0)
        ft.check_equal((r, (lib.freezer_last_error_name(f) or b'').decode()), (-errno.ENOENT, ft.ERROR_NO_SUCH_GROUP),
                       'errors over the private socket as on the bus')
        ft.check_equal(lib.freezer_thaw(f, b'/g', 0, 0), 0, 'freezer_thaw(/g) over the private socket')
        ft.check_equal(sc.read_events('/g').get('frozen'), 0, 'the kernel says frozen 0 when it returns')
        lib.freezer_dispatch(f)
        ft.wait_for(lambda: ('/g', 'running', False) in events, what='the private handle\'s callback: /g running')
        ft.check(True, 'the state callback of a private handle reported /g running')

        sc.mkdir('/g/new')
        ft.wait_for(lambda: ('/g/new', True) in groups, what='the private handle\'s group callback: /g/new added')
        sc.rmdir('/g/new')
        ft.wait_for(lambda: ('/g/new', False) in groups, what='the private handle\'s group callback: /g/new removed')
        ft.check(True, 'the group callback of a private handle reported a mkdir and an rmdir')

        ft.check_equal(lib.freezer_set_state_callback(f, CALLBACK(), None), 0, 'state callback removed')
        ft.check_equal(lib.freezer_set_group_callback(f, GROUP_CALLBACK(), None), 0, 'group callback removed')
        events.clear()
        groups.clear()
        # The unsubscriptions were sent before these calls: freezerd handles them in order.
        ft.check_equal(lib.freezer_freeze(f, b'/g', 0, 0), 0, 'freezer_freeze(/g) again')
        ft.check_equal(lib.freezer_thaw(f, b'/g', 0, 0), 0, 'freezer_thaw(/g) again')
        sc.mkdir('/g/new')
        sc.rmdir('/g/new')
        g = Group()
        ft.check_equal(lib.freezer_get_group(f, b'/g', ctypes.byref(g)), 0, 'a round trip after the changes')
        lib.freezer_group_clear(ctypes.byref(g))
        lib.freezer_dispatch(f)
        ft.check_equal((events, groups), ([], []), 'callbacks removed: nothing reported')
    finally:
        if fd >= 0:
            ft.loop().remove_reader(fd)
        lib.freezer_close(f)


def open_state_recorder(lib, bus):
    """A handle on the bus, and a state callback (not installed yet) that appends
    (path, state, frozen) to the list returned with it."""
    f = ctypes.c_void_p()
    ft.check_equal(lib.freezer_open_address(ctypes.byref(f), bus.address.encode()), 0, 'freezer_open_address')
    events = []

    @CALLBACK
    def on_state(_f, path, state, frozen, _ud):
        events.append((path.decode(), STATES[state] if 0 <= state < len(STATES) else state, frozen))
    return f, events, on_state


def wait_callback_follows(lib, f, c, events, what):
    """Until the state callback of handle f reports /g (changed through c): the handle
    subscribes when it sees freezerd's NameOwnerChanged, which no reply of ours orders."""
    def seen():
        c.call('Freeze', '/g', 0, 0)
        c.call('Thaw', '/g', 0, 0)
        lib.freezer_dispatch(f)
        return any(p == '/g' for p, _s, _fr in events)
    ft.wait_for(seen, what=what, poll=0.05)


def check_resubscribe(lib, sc, bus):
    """A state callback installed while no freezerd runs: no error; once freezerd starts, the
    handle subscribes (SubscribeGroups) and the callback sees its changes."""
    f, events, on_state = open_state_recorder(lib, bus)
    fd = -1
    try:
        ft.check_equal(lib.freezer_set_state_callback(f, on_state, None), 0,
                       'freezer_set_state_callback with no freezerd on the bus')
        fd = lib.freezer_get_fd(f)
        ft.loop().add_reader(fd, lambda: lib.freezer_dispatch(f))
        with ft.Daemon(bus, sc.root) as d:
            c = d.client

            wait_callback_follows(lib, f, c, events, 'the state callback after freezerd started')
            ft.check(True, 'the handle subscribed to the freezerd that started after it')
    finally:
        if fd >= 0:
            ft.loop().remove_reader(fd)
        lib.freezer_close(f)


def exiting_stand_in(bus, leave_on):
    """A thread that holds freezerd's bus name (taken before it returns), answers the calls
    before leave_on (SubscribeGroupStates) and leaves the bus on leave_on, unanswered."""
    from jeepney import MessageType, new_method_return
    from jeepney.bus_messages import message_bus
    from jeepney.io.blocking import open_dbus_connection

    conn = open_dbus_connection(bus.address, auth_timeout=ft.DEFAULT_TIMEOUT)
    reply = conn.send_and_get_reply(message_bus.RequestName(ft.BUS_NAME, 4), timeout=ft.DEFAULT_TIMEOUT)
    ft.check_equal(reply.body[0], 1, 'the stand-in owns the bus name')

    def run():
        try:
            deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
            while time.monotonic() < deadline:
                m = conn.receive(timeout=deadline - time.monotonic())
                if m.header.message_type != MessageType.method_call:
                    continue
                member = m.header.fields.get(ft.HeaderFields.member)
                if member == leave_on:
                    return
                conn.send(new_method_return(m))
        finally:
            conn.close()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def check_exit_during_install(lib, sc, bus):
    """freezerd exiting during freezer_set_state_callback()'s calls on the bus is as no
    freezerd running: 0, and the callback follows the freezerd that starts next."""
    for leave_on in ('SubscribeGroupStates', 'ListGroupIds'):
        what = f'freezerd exiting on {leave_on} during freezer_set_state_callback'
        f, events, on_state = open_state_recorder(lib, bus)
        fd = -1
        t = None
        try:
            t = exiting_stand_in(bus, leave_on)
            ft.check_equal(lib.freezer_set_state_callback(f, on_state, None), 0, what)
            t.join(timeout=ft.DEFAULT_TIMEOUT)
            ft.check(not t.is_alive(), f'{what}: the stand-in left the bus')
            fd = lib.freezer_get_fd(f)
            ft.loop().add_reader(fd, lambda: lib.freezer_dispatch(f))
            with ft.Daemon(bus, sc.root) as d:
                c = d.client

                wait_callback_follows(lib, f, c, events, f'{what}: the state callback after freezerd started')
                ft.check(True, f'{what}: the handle subscribed to the freezerd that started next')
        finally:
            if fd >= 0:
                ft.loop().remove_reader(fd)
            lib.freezer_close(f)


def check_unsubscribe_not_activating(lib):
    """freezerd leaving on ListGroupIds during freezer_set_state_callback(): the best-effort
    UnsubscribeGroupStates that follows is not auto-started, on a bus where freezerd is
    activatable (dbus/org.freezerd.Freezer1.service makes it so on the system bus)."""
    what = 'the unsubscription after freezerd left during freezer_set_state_callback'
    tmp = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}activation-{os.getpid()}-')
    try:
        with open(os.path.join(tmp, ft.BUS_NAME + '.service'), 'w') as out:
            out.write(f'[D-BUS Service]\nName={ft.BUS_NAME}\nExec=/bin/true\n')
        conf = os.path.join(tmp, 'bus.conf')
        with open(conf, 'w') as out:
            out.write('<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"\n'
                      ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n'
                      f'<busconfig><include>{ft.DBUS_TEST_CONF}</include><servicedir>{tmp}</servicedir>'
                      '</busconfig>\n')
        with ft.Bus(config=conf) as abus, ft.Client(abus.address, destination='org.freedesktop.DBus') as watcher:
            watcher.add_match(type='signal', sender='org.freedesktop.DBus', member='NameOwnerChanged')
            f, _events, on_state = open_state_recorder(lib, abus)
            closed = False
            try:
                # The handle's unique name: the last one to connect.
                ft.wait_for(lambda: any(s.member == 'NameOwnerChanged' and s.body[0].startswith(':') and
                                        not s.body[1] for s in watcher.signals),
                            what=f'{what}: the handle connected')
                name = [s.body[0] for s in watcher.signals if s.member == 'NameOwnerChanged' and not s.body[1]][-1]
                t = exiting_stand_in(abus, 'ListGroupIds')
                ft.check_equal(lib.freezer_set_state_callback(f, on_state, None), 0, what)
                t.join(timeout=ft.DEFAULT_TIMEOUT)
                ft.check(not t.is_alive(), f'{what}: the stand-in left the bus')
                # dbus-daemon handles a connection's messages before its end:
                # once the handle's name is gone, the unsubscription was handled.
                lib.freezer_close(f)
                closed = True
                ft.wait_for(lambda: any(s.member == 'NameOwnerChanged' and s.body[0] == name and not s.body[2]
                                        for s in watcher.signals),
                            what=f'{what}: the handle gone from the bus')
                log = abus.log()
                ft.check('Activating service' not in log, f'{what} does not activate freezerd', log)
            finally:
                if not closed:
                    lib.freezer_close(f)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# A child that opens a handle with libfreezer and prints "r ret-is-NULL": for
# what cannot be done in this process (another uid, another environment).
OPEN_CHILD = '''
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
fn = getattr(lib, sys.argv[2])
fn.restype = ctypes.c_int
h = ctypes.c_void_p(0xdead)
r = fn(ctypes.byref(h), *(a.encode() for a in sys.argv[3:]))
print(r, h.value is None)
'''


def open_in_child(fn, *args, prefix=(), env=None):
    path = libfreezer_path()
    env = dict(os.environ if env is None else env)
    runtime = asan_runtime(path)
    if runtime:
        env['LD_PRELOAD'] = runtime
        env['ASAN_OPTIONS'] = env.get('ASAN_OPTIONS', '') + ':detect_leaks=0'
    p = subprocess.run([*prefix, '/usr/bin/python3', '-c', OPEN_CHILD, path, fn, *args], capture_output=True,
                       text=True, timeout=ft.DEFAULT_TIMEOUT, env=env)
    ft.check(p.returncode == 0, f'the child running {fn}', p.stderr)
    r, is_null = p.stdout.split()
    return int(r), is_null == 'True'


def check_open_errors(lib, d, bus):
    """freezer_open_*() failures: *ret is NULL (it was left as it was), and the errno is the one freezer.h
    lists for the cause (sd-bus said EPIPE, E2BIG, EBADR, ENOMEDIUM or ECONNREFUSED for some)."""
    tmp = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}open-')
    listener = None
    try:
        def fails(fn, arg, want, what):
            h = ctypes.c_void_p(0xdead)  # anything but NULL: a failure must reset it
            r = getattr(lib, fn)(ctypes.byref(h), arg)
            ft.check((r, h.value) == (want, None), f'{fn}: {what}: {errno.errorcode[-want]} and *ret NULL',
                     (r, errno.errorcode.get(-r, r), h.value))

        fails('freezer_open_private', f'{tmp}/nothing'.encode(), -errno.ENOENT, 'no socket')
        open(f'{tmp}/file', 'w').close()
        fails('freezer_open_private', f'{tmp}/file'.encode(), -errno.ECONNREFUSED, 'a file, not a socket')
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(f'{tmp}/stale')
        stale.close()
        fails('freezer_open_private', f'{tmp}/stale'.encode(), -errno.ECONNREFUSED, 'a socket nobody listens on')
        fails('freezer_open_private', ('/' + 'x' * 200).encode(), -errno.ENAMETOOLONG,
              'a path too long for sockaddr_un (sd-bus: E2BIG)')
        fails('freezer_open_address', b'garbage', -errno.EINVAL,
              'an address without a transport (sd-bus: ECONNREFUSED)')
        fails('freezer_open_address', f'unix:path={tmp}/nothing'.encode(), -errno.ENOENT, 'no socket')
        fails('freezer_open_address', f'unix:path={d.runtime_dir}/private'.encode(), -errno.EPROTO,
              'freezerd\'s private socket is no bus (sd-bus: EBADR, from Hello)')
        ft.check_equal(lib.freezer_open_address(None, bus.address.encode()), -errno.EINVAL,
                       'freezer_open_address(NULL, ...): -EINVAL')

        # A peer that accepts and hangs up at once: sd-bus said EPIPE on the bus path (it wrote
        # first) and ECONNRESET on the private one (it read first).
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(f'{tmp}/closer')
        listener.listen(8)

        def hang_up():
            while True:
                try:
                    c, _ = listener.accept()
                except OSError:
                    return  # closed: the test is done with it
                c.close()
        threading.Thread(target=hang_up, daemon=True).start()
        fails('freezer_open_private', f'{tmp}/closer'.encode(), -errno.ECONNRESET, 'the peer hangs up')
        fails('freezer_open_address', f'unix:path={tmp}/closer'.encode(), -errno.ECONNRESET,
              'the peer hangs up (sd-bus: EPIPE)')

        # A signal during the handshake (a timer's, whose handler returns) is no failure: the open
        # goes on until the peer's answer, here its hang-up 0.5 s later.  It failed with -EINTR,
        # which freezer.h does not list, at the first signal.
        slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        slow.bind(f'{tmp}/slow-closer')
        slow.listen(8)

        def hang_up_late():
            c, _ = slow.accept()
            time.sleep(0.5)
            c.close()
        threading.Thread(target=hang_up_late, daemon=True).start()
        previous = signal.signal(signal.SIGALRM, lambda signum, frame: None)
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.1)
            fails('freezer_open_private', f'{tmp}/slow-closer'.encode(), -errno.ECONNRESET,
                  'a signal during the handshake, then the peer hangs up')
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            slow.close()

        env = {k: v for k, v in os.environ.items() if k not in ('DBUS_SESSION_BUS_ADDRESS', 'XDG_RUNTIME_DIR')}
        ft.check_equal(open_in_child('freezer_open_user', env=env), (-errno.ENOENT, True),
                       'freezer_open_user() with no user bus in the environment: -ENOENT (sd-bus: ENOMEDIUM)')
        if shutil.which('setpriv'):
            nobody = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']
            ft.check_equal(open_in_child('freezer_open_private', f'{d.runtime_dir}/private', prefix=nobody),
                           (-errno.EACCES, True), 'freezer_open_private() as nobody: -EACCES')
    finally:
        if listener is not None:
            listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        shutil.rmtree(tmp, ignore_errors=True)


def check_irq_pressure(lib, f):
    """IRQ pressure for a group: freezer_get_pressure() says -EOPNOTSUPP (NotSupported) and
    freezer_add_pressure_trigger() -EINVAL (InvalidArgs), as freezer.h documents each; "/" is a
    group here, not the system."""
    def err():
        return (lib.freezer_last_error_name(f) or b'').decode()
    p = Pressure()
    for path in (b'/g', b'/', b'/nope'):
        r = lib.freezer_get_pressure(f, path, RESOURCE_IRQ, ctypes.byref(p))
        ft.check_equal((r, err()), (-errno.EOPNOTSUPP, 'org.freezerd.Freezer1.Error.NotSupported'),
                       f'freezer_get_pressure({path.decode()}, IRQ): -EOPNOTSUPP, before the path is looked up')
    i = ctypes.c_uint32(7)
    for path in (b'/g', b'/'):
        r = lib.freezer_add_pressure_trigger(f, path, RESOURCE_IRQ, True, 100000, 2000000, ctypes.byref(i))
        ft.check_equal((r, err(), i.value), (-errno.EINVAL, ft.ERROR_INVALID_ARGS, 0),
                       f'freezer_add_pressure_trigger({path.decode()}, IRQ, full): -EINVAL, InvalidArgs')


def check_cache_pruned(lib, sc, d, bus):
    """With a state callback and no group callback, a removed group's state is forgotten: a group made
    again under its path and frozen is reported (the stale entry said "frozen" already, and the
    handle kept it until the cache held 65,536 entries)."""
    c = d.client
    f, events, on_state = open_state_recorder(lib, bus)
    fd = -1
    try:
        ft.check_equal(lib.freezer_set_state_callback(f, on_state, None), 0, 'freezer_set_state_callback')
        fd = lib.freezer_get_fd(f)
        ft.loop().add_reader(fd, lambda: lib.freezer_dispatch(f))

        def published(path):
            return any(p == path for p, _o, _s in c.call('ListGroups')[0])

        def freeze_and_see(what):
            events.clear()
            ft.check_equal(lib.freezer_freeze(f, b'/c', 0, 0), 0, f'freezer_freeze(/c), {what}')
            lib.freezer_dispatch(f)
            ft.wait_for(lambda: ('/c', 'frozen', True) in events, what=f'the state callback: /c frozen, {what}')
            ft.check(True, f'the state callback reported /c frozen, {what}')

        sc.mkdir('/c')
        ft.wait_for(lambda: published('/c'), what='freezerd to publish /c')
        freeze_and_see('the first /c')
        sc.rmdir('/c')
        ft.wait_for(lambda: not published('/c'), what='freezerd to drop /c')
        sc.mkdir('/c')
        ft.wait_for(lambda: published('/c'), what='freezerd to publish the new /c')
        freeze_and_see('the second /c (made again after an rmdir)')
    finally:
        if fd >= 0:
            ft.loop().remove_reader(fd)
        lib.freezer_close(f)
        if sc.exists('/c'):
            sc.rmdir('/c')


def in_ppoll(tid):
    """Whether thread tid of this process waits in ppoll(), where sd-bus waits for an answer (its
    number on this machine: ft.ppolls())."""
    try:
        with open(f'/proc/self/task/{tid}/syscall') as fp:
            return fp.read().split()[0] in ft.ppolls()
    except (OSError, IndexError):
        return False


def sigalrm_pending(tid):
    """Whether a SIGALRM sent to thread tid of this process waits to be delivered."""
    try:
        with open(f'/proc/self/task/{tid}/status') as fp:
            for line in fp:
                if line.startswith('SigPnd:'):
                    return bool(int(line.split()[1], 16) & (1 << (signal.SIGALRM - 1)))
    except OSError:
        pass
    return False


def interrupted_in_ppoll(fn, stopped_pid, signals=3):
    """fn() in this (the main) thread while a helper thread sends it SIGALRM, whose handler
    returns, each time it waits in ppoll() (up to signals times, each once the one before was
    delivered), then resumes stopped_pid (SIGCONT).  Returns fn()'s
    result and how many signals came."""
    ft.ppolls()  # (probed here, not in the helper thread while fn() runs)
    main = threading.main_thread()
    done = threading.Event()
    sent = []

    def wait_while(cond):
        deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
        while not done.is_set() and cond() and time.monotonic() < deadline:
            time.sleep(0.001)

    def interrupt():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        try:
            for _ in range(signals):
                wait_while(lambda: not in_ppoll(main.native_id))
                if done.is_set() or not in_ppoll(main.native_id):
                    break
                signal.pthread_kill(main.ident, signal.SIGALRM)
                sent.append(True)
                wait_while(lambda: sigalrm_pending(main.native_id))
        finally:
            os.kill(stopped_pid, signal.SIGCONT)

    previous = signal.signal(signal.SIGALRM, lambda signum, frame: None)
    t = threading.Thread(target=interrupt, daemon=True)
    t.start()
    try:
        result = fn()
    finally:
        done.set()
        t.join()
        signal.signal(signal.SIGALRM, previous)
    return result, len(sent)


def check_blocking_signal(lib, sc, d):
    """A blocking call and a signal the program handles (freezer.h, "Signals"): the call waits on
    (with libsystemd before 253 it failed with -EINTR as the signal came), and freezerd carries it
    out."""
    f = ctypes.c_void_p()
    ft.check_equal(lib.freezer_open_private(ctypes.byref(f), f'{d.runtime_dir}/private'.encode()), 0,
                   'freezer_open_private')
    try:
        os.kill(d.pid, signal.SIGSTOP)
        r, n = interrupted_in_ppoll(lambda: lib.freezer_freeze(f, b'/g/k', 0, FREEZER_NO_WAIT), d.pid)
        name = (lib.freezer_last_error_name(f) or b'').decode()
        ft.check(n > 0 and r == 0, 'freezer_freeze() with signals coming: 0 (it was -EINTR)', (r, name, n))
        sc.wait_events('/g/k', frozen=1)
        ft.check(True, f'freezerd carried the freeze out (the call returned {r})')
        ft.check_equal(lib.freezer_thaw(f, b'/g/k', 0, 0), 0, 'freezer_thaw(/g/k)')
    finally:
        lib.freezer_close(f)


def fd_closed(fd, ino):
    """Whether fd, which was the socket with inode ino, is closed (or names another file: the
    number may be reused since)."""
    try:
        return os.fstat(fd).st_ino != ino
    except OSError as e:
        return e.errno == errno.EBADF


def check_resync(lib, sc, bus):
    """freezer_set_resync_callback(): a bus handle hears freezerd exit and start again (and its state
    callback works with the new daemon); a private handle hears its connection end."""
    ft.check(getattr(lib, 'freezer_set_resync_callback', None) is not None,
             'libfreezer exports freezer_set_resync_callback (0.4)')
    f = ctypes.c_void_p()
    fd = -1
    resyncs, events = [], []

    @RESYNC_CALLBACK
    def on_resync(_f, reason, _ud):
        resyncs.append(RESYNC_REASONS[reason] if 0 <= reason < len(RESYNC_REASONS) else reason)

    @CALLBACK
    def on_state(_f, path, state, frozen, _ud):
        events.append((path.decode(), STATES[state] if 0 <= state < len(STATES) else state, frozen))
    try:
        with ft.Daemon(bus, sc.root) as d:
            ft.check_equal(lib.freezer_open_address(ctypes.byref(f), bus.address.encode()), 0,
                           'freezer_open_address')
            ft.check_equal(lib.freezer_set_state_callback(f, on_state, None), 0, 'freezer_set_state_callback')
            ft.check_equal(lib.freezer_set_resync_callback(f, on_resync, None), 0, 'freezer_set_resync_callback')
            fd = lib.freezer_get_fd(f)
            ft.loop().add_reader(fd, lambda: lib.freezer_dispatch(f))
            d.stop()
            ft.wait_for(lambda: resyncs == ['daemon-exited'], what='the resync callback: daemon-exited')
            ft.check(True, 'freezerd stopped: the resync callback said daemon-exited')
        with ft.Daemon(bus, sc.root) as d:
            ft.wait_for(lambda: resyncs == ['daemon-exited', 'daemon-started'],
                        what='the resync callback: daemon-started')
            ft.check(True, 'freezerd started again: the resync callback said daemon-started')
            events.clear()
            d.client.call('Freeze', '/g', 0, 0)
            ft.wait_for(lambda: ('/g', 'frozen', True) in events, what='the state callback from the new freezerd')
            ft.check(True, 'the state callback reports the new freezerd\'s changes')
            d.client.call('Thaw', '/g', 0, 0)
            ft.loop().remove_reader(fd)
            fd = -1
            lib.freezer_close(f)
            f = ctypes.c_void_p()

            resyncs.clear()
            ft.check_equal(lib.freezer_open_private(ctypes.byref(f), f'{d.runtime_dir}/private'.encode()), 0,
                           'freezer_open_private')
            ft.check_equal(lib.freezer_set_resync_callback(f, on_resync, None), 0,
                           'freezer_set_resync_callback on a private handle')
            ft.check_equal(lib.freezer_set_state_callback(f, on_state, None), 0, 'freezer_set_state_callback')
            fd = lib.freezer_get_fd(f)
            ino = os.fstat(fd).st_ino
            results = []

            def dispatch():
                r = lib.freezer_dispatch(f)
                results.append(r)
                if r < 0:
                    ft.loop().remove_reader(fd)
            ft.loop().add_reader(fd, dispatch)
            d.stop()
            ft.wait_for(lambda: resyncs == ['disconnected'] and any(r < 0 for r in results),
                        what='the private handle\'s resync callback: disconnected')
            ft.check(True, 'freezerd stopped: the private handle\'s resync callback said disconnected, '
                     'freezer_dispatch() failed')
            # freezer.h: the library closed the fd with the connection, before freezer_close().
            ft.check_equal((lib.freezer_get_fd(f), fd_closed(fd, ino)), (-errno.ENOTCONN, True),
                           'after the loss freezer_get_fd() fails with -ENOTCONN, and the fd it gave is closed')
            fd = -1
    finally:
        if fd >= 0:
            ft.loop().remove_reader(fd)
        lib.freezer_close(f)


if __name__ == '__main__':  # test-core-libfreezer-async imports the loader
    ft.run(test)
