#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""libfreezer built with its test hooks (FREEZER_TEST_HOOKS: libfreezer-test-hooks.so, loaded with
ctypes) against freezerd on a bus that refuses SubscribeGroupStates, as an older freezerd does
(AccessDenied, taken as UnknownMethod would be): the handle follows GroupsChanged.

  * A state callback installed with no freezerd running; once one starts, the handle's
    SubscribeGroupStates is refused, and that reply cannot be queued (the hook: as without
    memory).  freezer_dispatch() fails with -ENOMEM once, and the next one falls back to
    SubscribeGroups as the refusal says: the callback reports /g frozen.  (It loaded the Ids
    and read the states instead, never subscribing: no change was ever reported.)
  * With that freezerd, a GroupsChanged dropped (the hook, as past the handle's queue) and
    the reply of the states read for it lost: the retry is due at once (the fallback had
    left the retries' delay at 10 ms: due 10 ms later; a restart of freezerd, below,
    resets the delay anyway).
  * freezerd restarted, and that reply lost again: the retry is due at once, as for
    a first loss.
  * freezerd started under a state callback, its SubscribeGroupStates answered NoMemory (the
    hook), /g frozen before the retry, whose subscription is refused (its reply kept, or
    lost too): the handle falls back to SubscribeGroups and reports /g frozen, the states
    read after that subscription.  (The fallback read nothing, and no GroupsChanged told of
    a change made before it: /g frozen was never reported.)
  * A send of the state callback's subscription within a dispatch that sd-bus cannot queue
    (ENOBUFS, the hooks): the AddMatch of GroupStatesChanged after a restart of freezerd
    (the handle had fallen back to GroupsChanged), the fallback's AddMatch after a refusal,
    and that AddMatch sent by the retry of a fallback whose refusal's reply was lost.
    freezer_dispatch() says -ENOMEM, the send is retried, and /g frozen after it is
    reported, then a thaw.  (The first two were lost for good: no -ENOMEM, no change ever
    reported; the third said -ENOBUFS, which ends freezectl watch.)
  * An older freezerd (a stand-in that holds its bus name, refuses SubscribeGroupStates with
    UnknownMethod and lists /g frozen) started under a state callback, its answer to the
    fallback's SubscribeGroups a shortage (NoMemory, or the bus' LimitsExceeded):
    freezer_dispatch() says -ENOMEM once, SubscribeGroups is sent again, and the states are
    read (ListGroups) only after it is answered: /g frozen reported.  (SubscribeGroups went
    without a reply handler, ListGroups right after it: the refusal was never seen, the
    handle believed it was subscribed, and no change was ever reported.)  Answered
    AccessDenied (a bus policy refusing it too), or UnknownMethod: freezer_dispatch() fails
    once with -EACCES (-EBADR), the last error the refusal (its name, and its message),
    nothing more is sent (no ListGroups before a later call of the handle reaches the
    stand-in).  (The refusal was never seen; then, in 0.6.5 as first made, its D-Bus error
    was dropped, the last error derived from the errno: "Permission denied",
    System.Error.EBADR.)
  * With that stand-in and a group callback too, the refusal (AccessDenied) followed by a
    shortage answering the group callback's list (its reply lost), both handled by one
    dispatch: freezer_dispatch() fails with -EACCES, the refusal its last error, and the
    list is sent again.  (The loss replaced the refusal: -ENOMEM, the refusal never said.)
  * With that stand-in too slow to answer SubscribeGroups before sd-bus' method-call timeout
    (SYSTEMD_BUS_TIMEOUT=1; 25 s by default): SubscribeGroups is sent again, no
    freezer_dispatch() fails, the states are read after its answer: /g frozen reported.
    (The timeout was taken for a refusal: -ETIMEDOUT, nothing read, freezectl watch ended
    "refused" by a freezerd that may well have subscribed it.)
  * With that stand-in, a ListGroups in flight (sent for a GroupStatesChanged dropped, the
    hook, after the refusal's reply was lost, the hook) when the fallback subscribes: the
    states are read again after the subscription's answer, /g frozen between the two
    reported.  (The older read was taken for it: /g reported running, never frozen.)
  * freezectl watch, that stand-in taking the bus name under it (after a freezerd it
    watched exited, or as the first one: watch had waited for it), its SubscribeGroups
    answered AccessDenied: watch says "freezerd refused to report state changes after it
    restarted" (started) with the refusal, and exits 1.  (It said "lost the connection to
    the bus", which was fine.)
  * freezectl watch built with the hooks (freezectl-test-hooks, the count from
    FREEZER_TEST_FAIL_RELOAD_REPLIES), freezerd restarted under it, the first reply of a
    reload after the start lost (its new subscription's or its group list's, whichever
    comes first): watch warns "out of memory, some changes may be reported late" and
    goes on (it said "lost the connection to the bus: Cannot allocate memory" and exited):
    a freeze of /g after that is printed.
  * The same with every reply of a reload lost (a lasting shortage): over
    1.5 s watch warns once, and sleeps between the retries, which back off: it used little
    CPU time.  (The retries came as fast as freezerd answered, watch warned on each, some
    thousand lines, and spun.)  With four replies lost in a row, watch warns once, says
    "out of memory N times in a row" once 5 s passed without another, and prints a
    change.
  * freezectl-test-hooks watch, freezerd restarted under it, the reply of its new
    subscription taken for freezerd's NoMemory (the hook, FREEZER_TEST_NOMEM_SUBSCRIPTIONS):
    watch warns once and goes on, the subscription is sent again, and a freeze of /g after
    that is printed.  (The NoMemory was taken for "freezerd exited again": no Ids loaded,
    no warning, no change printed until the next start.)
  * On a bus where freezerd is activatable (a service file whose Exec is /bin/true), a group
    callback whose every list lacks the memory for its table (the hook): its retry backs
    off, and freezerd stops.  Handled before the retry is due, the NameOwnerChanged drops
    the retry (freezer_get_timeout() no longer says its time); and a retry due before the
    NameOwnerChanged is handled, sent by the dispatch that handles it, is not auto-started.
    dbus-daemon never activates freezerd.  (The retry survived the NameOwnerChanged, and
    went out auto-started: dbus-daemon ran the service's Exec.)"""

import ctypes
import errno
import os
import re
import shutil
import sys
import signal
import subprocess
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

base = ft.load_test_module('test-core-libfreezer')

CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_bool, ctypes.c_void_p)
GROUP_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_bool, ctypes.c_int,
                                  ctypes.c_void_p)
RESYNC_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
RESYNC_DAEMON_EXITED = 0  # FREEZER_RESYNC_DAEMON_EXITED
RESYNC_DAEMON_STARTED = 1  # FREEZER_RESYNC_DAEMON_STARTED
RUNNING = 0  # FREEZER_STATE_RUNNING
FROZEN = 2  # FREEZER_STATE_FROZEN

DENY_GROUP_STATES = '''        <policy context="default">
                <deny send_destination="org.freezerd.Freezer1" send_interface="org.freezerd.Freezer1.Manager"
                      send_member="SubscribeGroupStates"/>
        </policy>
</busconfig>'''


def load():
    path = os.environ.get('LIBFREEZER_HOOKS_SO') or os.path.join(ft.BUILDDIR, 'tests', 'libfreezer-test-hooks.so')
    base.reexec_for_asan(path)
    lib = base.open_lib(path)
    P = ctypes.c_void_p
    base.bind(lib, {
        'freezer_open_address': (ctypes.c_int, [ctypes.POINTER(P), ctypes.c_char_p]),
        'freezer_close': (P, [P]),
        'freezer_set_state_callback': (ctypes.c_int, [P, CALLBACK, P]),
        'freezer_dispatch': (ctypes.c_int, [P]),
        'freezer_get_timeout': (ctypes.c_int, [P, ctypes.POINTER(ctypes.c_uint64)]),
        'freezer_set_group_callback': (ctypes.c_int, [P, GROUP_CALLBACK, P]),
        'freezer_set_resync_callback': (ctypes.c_int, [P, RESYNC_CALLBACK, P]),
        'freezer_last_error_name': (ctypes.c_char_p, [P]),
        'freezer_last_error_message': (ctypes.c_char_p, [P]),
        'freezer_thaw': (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64]),
    })
    return lib


def hook(lib, name):
    return ctypes.c_uint.in_dll(lib, name)


def now_usec():
    """CLOCK_MONOTONIC in µs: the clock of freezer_get_timeout()."""
    return time.monotonic_ns() // 1000


def dispatch_timed(lib, f, timeouts):
    """freezer_dispatch(); after an -ENOMEM (a reply lost in that dispatch), what
    freezer_get_timeout() says at once, and the µs from the start of the dispatch to
    then, appended to timeouts."""
    start = now_usec()
    r = lib.freezer_dispatch(f)
    if r == -errno.ENOMEM:
        t = ctypes.c_uint64()
        ret = lib.freezer_get_timeout(f, ctypes.byref(t))
        timeouts.append((ret, t.value, now_usec() - start))
    return r


def check_due_at_once(timeouts, what):
    """The retry of the reply lost is due at once: freezer_get_timeout() says 0.  With the
    backoff's first delay (10 ms) the retry would be due 10 ms after the loss, which came
    after the dispatch began: freezer_get_timeout() would say that time, not 0, if it was
    asked within 10 ms of the start of the dispatch.  Asked later (a loaded machine), the
    two are not told apart: said, not failed."""
    ft.check_equal([(r, t) for r, t, _ in timeouts], [(1, 0)],
                   f'{what}: the retry is due at once (freezer_get_timeout() says 0)')
    if timeouts and timeouts[0][2] >= 10 * 1000:
        print(f'# {what}: freezer_get_timeout() asked {timeouts[0][2]} µs after the dispatch began: '
              'at once not told from 10 ms')


def check_after_fallback(lib, f, c, events):
    """With the same freezerd (no restart, which drops the retries and their delay): a
    GroupsChanged dropped (the hook, as past the queue's bound), and the reply of the
    states read for it lost: the retry is due at once."""
    what = 'after the fallback, a GroupsChanged dropped and the reply of its states read lost'
    results = []
    timeouts = []
    # Settled: the signals of the checks before dispatched (their last Thaw's too), so
    # that the one dropped is the Freeze's below.
    c.call('Thaw', '/g', 0, 0)
    ft.wait_for(lambda: lib.freezer_dispatch(f) == 0 and events and events[-1][:2] == ('/g', RUNNING), poll=0.05,
                what=f'{what}: /g reported running')
    events.clear()
    hook(lib, 'freezer_test_drop_signals').value = 1
    hook(lib, 'freezer_test_fail_reload_replies').value = 1
    c.call('Freeze', '/g', 0, 0)

    def seen():
        results.append(dispatch_timed(lib, f, timeouts))
        return ('/g', FROZEN, True) in events and -errno.ENOMEM in results
    ft.wait_for(seen, what=f'{what}: -ENOMEM, and the state callback reports /g frozen', poll=0.05)
    ft.check_equal(hook(lib, 'freezer_test_drop_signals').value, 0, f'{what}: the hook dropped the signal')
    ft.check_equal(hook(lib, 'freezer_test_fail_reload_replies').value, 0, f'{what}: the hook failed the reply')
    ft.check_equal(results.count(-errno.ENOMEM), 1, f'{what}: freezer_dispatch() said -ENOMEM once')
    check_due_at_once(timeouts, what)
    c.call('Thaw', '/g', 0, 0)


def open_handle(lib, address):
    """A libfreezer handle on the bus at address (freezer_open_address()), checked."""
    f = ctypes.c_void_p()
    ft.check_equal(lib.freezer_open_address(ctypes.byref(f), address.encode()), 0, 'freezer_open_address')
    return f


def state_recorder(events):
    """A state callback appending (path, state, frozen) to events; the caller keeps it
    referenced while the handle may call it."""
    @CALLBACK
    def on_state(_f, path, state, frozen, _ud):
        events.append((path.decode(), state, frozen))
    return on_state


def open_state_handle(lib, address):
    """open_handle() with a state_recorder() installed before any freezerd runs:
    (handle, the events list, the callback to keep referenced)."""
    f = open_handle(lib, address)
    events = []
    on_state = state_recorder(events)
    ft.check_equal(lib.freezer_set_state_callback(f, on_state, None), 0,
                   'freezer_set_state_callback with no freezerd')
    return f, events, on_state


def dispatch_until_frozen(lib, f, events, what):
    """freezer_dispatch() until the state callback reports /g frozen: what each call
    returned, for the caller's checks of the errors said on the way."""
    results = []

    def seen():
        results.append(lib.freezer_dispatch(f))
        return ('/g', FROZEN, True) in events
    ft.wait_for(seen, poll=0.05, what=f'{what}: the state callback reports /g frozen')
    return results


def check_thaw_reported(lib, f, c, events, what):
    """/g thawed by c's Thaw: the state callback reports it running (after events' present
    end), the handle following the subscription it fell back to."""
    n = len(events)
    c.call('Thaw', '/g', 0, 0)
    ft.wait_for(lambda: lib.freezer_dispatch(f) >= 0 and ('/g', RUNNING, False) in events[n:], poll=0.05,
                what=what)


def activatable_bus_conf(tmp):
    """A bus configuration (in tmp) where freezerd is activatable, its Exec /bin/true."""
    with open(os.path.join(tmp, ft.BUS_NAME + '.service'), 'w') as out:
        out.write(f'[D-BUS Service]\nName={ft.BUS_NAME}\nExec=/bin/true\n')
    conf = os.path.join(tmp, 'activatable.conf')
    with open(conf, 'w') as out:
        out.write('<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"\n'
                  ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n'
                  f'<busconfig><include>{ft.DBUS_TEST_CONF}</include><servicedir>{tmp}</servicedir>'
                  '</busconfig>\n')
    return conf


def group_retry_backing_off(lib, f, what):
    """Dispatches until the group list's retry (every list lost, the hook) is due 0.5 s later
    or more (its reply lost, not in flight: sd-bus' timeout for the call, 25 s, is later
    than the longest delay, 1 s): its time."""
    t = ctypes.c_uint64()

    def later():
        lib.freezer_dispatch(f)
        n = now_usec()
        return lib.freezer_get_timeout(f, ctypes.byref(t)) == 1 and n + 500 * 1000 <= t.value <= n + 1100 * 1000
    ft.wait_for(later, poll=0.005, what=f'{what}: the group list\'s retry backing off past 0.5 s')
    return t.value


def check_group_retry_not_activating(lib, sc, tmp):
    what = 'the group callback\'s list retry, freezerd stopped'
    with ft.Bus(config=activatable_bus_conf(tmp)) as abus, \
            ft.Client(abus.address, destination='org.freedesktop.DBus') as watcher:
        watcher.add_match(type='signal', sender='org.freedesktop.DBus', member='NameOwnerChanged')
        f = open_handle(lib, abus.address)
        resyncs = []

        @GROUP_CALLBACK
        def on_group(_f, _path, _added, _state, _ud):
            pass

        @RESYNC_CALLBACK
        def on_resync(_f, reason, _ud):
            resyncs.append(reason)
        closed = False
        try:
            ft.wait_for(lambda: any(s.member == 'NameOwnerChanged' and s.body[0].startswith(':') and
                                    not s.body[1] for s in watcher.signals), what=f'{what}: the handle connected')
            name = [s.body[0] for s in watcher.signals if s.member == 'NameOwnerChanged' and not s.body[1]][-1]
            ft.check_equal(lib.freezer_set_resync_callback(f, on_resync, None), 0, 'freezer_set_resync_callback')
            hook(lib, 'freezer_test_fail_group_lists').value = 1000

            # The NameOwnerChanged handled before the retry is due: the retry is dropped.
            with ft.Daemon(abus, sc.root) as d:
                ft.check_equal(lib.freezer_set_group_callback(f, on_group, None), 0, 'freezer_set_group_callback')
                due = group_retry_backing_off(lib, f, what)
                d.stop()
            ft.wait_for(lambda: lib.freezer_dispatch(f) >= 0 and RESYNC_DAEMON_EXITED in resyncs, poll=0.005,
                        what=f'{what}: the handle saw freezerd exit')
            t = ctypes.c_uint64()
            r = lib.freezer_get_timeout(f, ctypes.byref(t))
            if now_usec() < due:
                ft.check(not (r == 1 and t.value <= due),
                         f'{what}: the NameOwnerChanged dropped the retry (freezer_get_timeout: {r}, {t.value}, '
                         f'the retry was due at {due})')
            else:
                print(f'# {what}: the exit handled after the retry was due (a loaded machine): not checked')
            # Past the retry's time: a retry left would go out now.
            ft.wait_for(lambda: lib.freezer_dispatch(f) >= 0 and now_usec() > due + 50 * 1000, poll=0.01,
                        what=f'{what}: past the retry\'s time')

            # A retry due before the NameOwnerChanged is handled: sent first, by the dispatch
            # that handles it.
            resyncs.clear()
            with ft.Daemon(abus, sc.root) as d:
                due = group_retry_backing_off(lib, f, what)
                d.stop()
            ft.wait_for(lambda: now_usec() > due, poll=0.01, what=f'{what}: the retry due')
            lib.freezer_dispatch(f)
            ft.wait_for(lambda: lib.freezer_dispatch(f) >= 0 and RESYNC_DAEMON_EXITED in resyncs, poll=0.005,
                        what=f'{what}: the handle saw freezerd exit again')
            hook(lib, 'freezer_test_fail_group_lists').value = 0
            # dbus-daemon handles a connection's messages before its end: once the
            # handle's name is gone, every list it sent was handled.
            lib.freezer_close(f)
            closed = True
            ft.wait_for(lambda: any(s.member == 'NameOwnerChanged' and s.body[0] == name and not s.body[2]
                                    for s in watcher.signals), what=f'{what}: the handle gone from the bus')
            log = abus.log()
            ft.check('Activating service' not in log, f'{what}: freezerd not activated', log)
        finally:
            hook(lib, 'freezer_test_fail_group_lists').value = 0
            if not closed:
                lib.freezer_close(f)


def check_fallback_reply_lost(lib, sc, bus):
    what = 'SubscribeGroupStates refused, its reply lost'
    f, events, on_state = open_state_handle(lib, bus.address)
    results = []
    try:
        ctypes.c_uint.in_dll(lib, 'freezer_test_fail_reload_replies').value = 1
        with ft.Daemon(bus, sc.root) as d:
            c = d.client

            def seen():
                results.append(lib.freezer_dispatch(f))
                if ('/g', FROZEN, True) in events:
                    return True
                c.call('Freeze', '/g', 0, 0)
                c.call('Thaw', '/g', 0, 0)
                results.append(lib.freezer_dispatch(f))
                return ('/g', FROZEN, True) in events
            ft.wait_for(seen, what=f'{what}: the state callback reports /g frozen', poll=0.05)
            ft.check(True, f'{what}: the handle fell back to SubscribeGroups, the callback reports /g')
            ft.check_equal(results.count(-errno.ENOMEM), 1, f'{what}: freezer_dispatch() said -ENOMEM once')
            ft.check(all(r >= 0 or r == -errno.ENOMEM for r in results), f'{what}: no other error', results)
            ft.check_equal(ctypes.c_uint.in_dll(lib, 'freezer_test_fail_reload_replies').value, 0,
                           f'{what}: the hook failed the reply')
            check_after_fallback(lib, f, c, events)
        # A later loss after another start is retried at once too (the restart drops the
        # retries and their delay; check_after_fallback() checks the fallback's end of it).
        what = 'SubscribeGroupStates refused again after a restart, its reply lost again'
        events.clear()
        results.clear()
        timeouts = []
        ctypes.c_uint.in_dll(lib, 'freezer_test_fail_reload_replies').value = 1
        with ft.Daemon(bus, sc.root) as d:
            c = d.client

            def seen():
                results.append(dispatch_timed(lib, f, timeouts))
                if ('/g', FROZEN, True) in events:
                    return True
                c.call('Freeze', '/g', 0, 0)
                c.call('Thaw', '/g', 0, 0)
                return False
            ft.wait_for(seen, what=f'{what}: the state callback reports /g frozen', poll=0.05)
            ft.check_equal(results.count(-errno.ENOMEM), 1, f'{what}: freezer_dispatch() said -ENOMEM once')
            check_due_at_once(timeouts, what)
    finally:
        lib.freezer_close(f)


def check_retried_fallback(lib, sc, bus, lose_reply):
    """freezerd started under a state callback, the reply of its SubscribeGroupStates taken
    for freezerd's NoMemory (the hook): not subscribed until the retry.  /g frozen meanwhile
    (a Freeze call: with cgroup.freeze written directly instead, /g was reported once without
    the fix, by a later GroupsChanged naming it).  The retry's subscription is
    refused (the bus policy, as an older freezerd), that reply kept or (lose_reply) lost
    too, and the handle falls back to SubscribeGroups: the state callback reports /g frozen,
    read after the subscription as the compact path reads the states after the Ids.  (The
    fallback read nothing: freezerd sent no GroupsChanged for a change made before the
    subscription, and /g frozen was never reported.)  A thaw after it is reported too."""
    what = ('a retried SubscribeGroupStates refused' + (', its reply lost,' if lose_reply else '') +
            ' /g frozen before the retry')
    f, events, on_state = open_state_handle(lib, bus.address)
    try:
        hook(lib, 'freezer_test_nomem_subscriptions').value = 1
        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            try:
                # The NoMemory handled: that dispatch says -ENOMEM, the retry is for the next one.
                ft.wait_for(lambda: lib.freezer_dispatch(f) == -errno.ENOMEM, poll=0.05,
                            what=f'{what}: -ENOMEM for the subscription\'s NoMemory')
                ft.check_equal(hook(lib, 'freezer_test_nomem_subscriptions').value, 0,
                               f'{what}: the hook took the reply for NoMemory')
                c.call('Freeze', '/g', 0, 0)
                sc.wait_events('/g', frozen=1)
                ft.wait_for(lambda: c.group_property('/g', 'FreezerState') == 'frozen', poll=0.05,
                            what=f'{what}: freezerd has /g frozen')
                if lose_reply:
                    hook(lib, 'freezer_test_fail_reload_replies').value = 1

                results = dispatch_until_frozen(lib, f, events, what)
                ft.check(all(r >= 0 or r == -errno.ENOMEM for r in results), f'{what}: no other error', results)
                ft.check_equal(results.count(-errno.ENOMEM), 1 if lose_reply else 0,
                               f'{what}: freezer_dispatch() said -ENOMEM for the lost reply only')
                ft.check_equal(hook(lib, 'freezer_test_fail_reload_replies').value, 0,
                               f'{what}: the hook failed the reply')
                # Followed on: GroupsChanged, the fallback's subscription.
                check_thaw_reported(lib, f, c, events, f'{what}: then a thaw reported')
            finally:
                sc.write_freeze('/g', 0)
    finally:
        hook(lib, 'freezer_test_nomem_subscriptions').value = 0
        hook(lib, 'freezer_test_fail_reload_replies').value = 0
        lib.freezer_close(f)


def check_fallback_at_once(lib, sc, bus):
    """freezerd started under a state callback on a bus that refuses SubscribeGroupStates,
    answered at once (no hook): /g frozen by another client from the resync callback
    (DAEMON_STARTED), after the SubscribeGroupStates went out and before its refusal is
    handled, when the fallback's SubscribeGroups is sent.  No GroupsChanged tells of that
    change: the state callback reports /g frozen only because the states are read after
    the fallback's subscription.  (They were read there only after a retried
    subscription; /g frozen was never reported.)"""
    what = 'a SubscribeGroupStates refused at once, /g frozen before the fallback'
    f = open_handle(lib, bus.address)
    events = []
    box = {}
    on_state = state_recorder(events)

    @RESYNC_CALLBACK
    def on_resync(_f, reason, _ud):
        if reason == RESYNC_DAEMON_STARTED and 'c' in box and 'frozen' not in box:
            box['c'].call('Freeze', '/g', 0, 0)
            box['frozen'] = True
    try:
        ft.check_equal(lib.freezer_set_state_callback(f, on_state, None), 0,
                       'freezer_set_state_callback with no freezerd')
        ft.check_equal(lib.freezer_set_resync_callback(f, on_resync, None), 0, 'freezer_set_resync_callback')
        with ft.Daemon(bus, sc.root) as d:
            box['c'] = d.client
            try:
                ft.wait_for(lambda: lib.freezer_dispatch(f) >= 0 and box.get('frozen'), poll=0.05,
                            what=f'{what}: freezerd started, /g frozen from the resync callback')
                ft.wait_for(lambda: lib.freezer_dispatch(f) >= 0 and ('/g', FROZEN, True) in events, poll=0.05,
                            what=f'{what}: the state callback reports /g frozen')
                check_thaw_reported(lib, f, box['c'], events, f'{what}: then a thaw reported')
            finally:
                sc.write_freeze('/g', 0)
    finally:
        lib.freezer_close(f)


def check_fallback_send_nobufs(lib, sc, bus, where):
    """A send of the state callback's subscription within a dispatch that sd-bus cannot queue
    (ENOBUFS, its write queue full: the hooks freezer_test_fail_reload_sends and
    freezer_test_reload_send_errno), where:
      'resubscribe': the AddMatch of GroupStatesChanged, sent again after freezerd
        restarted under a handle that had fallen back to GroupsChanged;
      'fallback': the fallback's AddMatch of GroupsChanged, the SubscribeGroupStates after
        a start refused (the hook set by the resync callback, after that call was sent);
      'fallback-retry': the same, sent by the retry of a fallback whose refusal's reply
        was lost (the hook freezer_test_fail_reload_replies).
    freezer_dispatch() says -ENOMEM for it (and for the lost reply), nothing else, the send
    is retried, and /g frozen after the -ENOMEM is reported (the states read after the
    subscription: a gap), then a thaw.  (The first two were lost for good, as any failure
    but -ENOMEM: no -ENOMEM, not subscribed, no change ever reported; the third said
    -ENOBUFS, which freezectl watch takes as fatal.)"""
    what = f'{where}: its send failing with ENOBUFS'
    f = open_handle(lib, bus.address)
    events = []
    results = []
    armed = []
    on_state = state_recorder(events)

    def arm():
        hook(lib, 'freezer_test_reload_send_errno').value = errno.ENOBUFS
        hook(lib, 'freezer_test_fail_reload_sends').value = 1
        armed.append(True)

    @RESYNC_CALLBACK
    def on_resync(_f, reason, _ud):
        # DAEMON_STARTED: told after the subscription was sent (on_daemon_owner_changed()).
        if where == 'fallback' and reason == RESYNC_DAEMON_STARTED and not armed:
            arm()
    try:
        sc.write_freeze('/g', 0)
        ft.check_equal(lib.freezer_set_resync_callback(f, on_resync, None), 0, 'freezer_set_resync_callback')
        if where == 'resubscribe':
            with ft.Daemon(bus, sc.root) as d:
                ft.check_equal(lib.freezer_set_state_callback(f, on_state, None), 0,
                               f'{what}: freezer_set_state_callback')
                # Following GroupsChanged (the SubscribeGroupStates refused, at the
                # installation or, if freezerd had no name yet, after its start): the
                # restart's AddMatch is GroupStatesChanged's, sent anew.
                def following():
                    lib.freezer_dispatch(f)
                    if ('/g', FROZEN, True) not in events:
                        d.client.call('Freeze', '/g', 0, 0)
                        d.client.call('Thaw', '/g', 0, 0)
                        lib.freezer_dispatch(f)
                    return ('/g', FROZEN, True) in events
                ft.wait_for(following, poll=0.05, what=f'{what}: /g frozen reported before the restart')
                ft.wait_for(lambda: lib.freezer_dispatch(f) >= 0 and events[-1][:2] == ('/g', RUNNING), poll=0.05,
                            what=f'{what}: /g thawed reported before the restart')
                events.clear()
                arm()
        else:
            ft.check_equal(lib.freezer_set_state_callback(f, on_state, None), 0,
                           f'{what}: freezer_set_state_callback with no freezerd')
            if where == 'fallback-retry':
                hook(lib, 'freezer_test_fail_reload_replies').value = 1
        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            try:
                def lost():
                    results.append(lib.freezer_dispatch(f))
                    return results[-1] < 0
                ft.wait_for(lost, poll=0.05, what=f'{what}: freezer_dispatch() fails')
                if where == 'fallback-retry':
                    ft.check_equal(results[-1], -errno.ENOMEM, f'{what}: -ENOMEM for the refusal\'s lost reply')
                    arm()
                    ft.wait_for(lost, poll=0.05, what=f'{what}: freezer_dispatch() fails again')
                ft.check_equal(results[-1], -errno.ENOMEM, f'{what}: -ENOMEM for the send sd-bus could not queue')
                ft.check_equal(hook(lib, 'freezer_test_fail_reload_sends').value, 0, f'{what}: the hook failed a send')
                hook(lib, 'freezer_test_reload_send_errno').value = 0
                # Made in the gap, before the send's retry: no GroupsChanged tells of it.
                c.call('Freeze', '/g', 0, 0)

                def seen():
                    results.append(lib.freezer_dispatch(f))
                    return ('/g', FROZEN, True) in events
                ft.wait_for(seen, poll=0.05, what=f'{what}: the state callback reports /g frozen')
                ft.check(all(r >= 0 or r == -errno.ENOMEM for r in results), f'{what}: no other error', results)
                ft.check_equal(results.count(-errno.ENOMEM), 2 if where == 'fallback-retry' else 1,
                               f'{what}: freezer_dispatch() said -ENOMEM once for each loss')
                check_thaw_reported(lib, f, c, events, f'{what}: then a thaw reported (GroupsChanged followed)')
            finally:
                sc.write_freeze('/g', 0)
    finally:
        hook(lib, 'freezer_test_fail_reload_sends').value = 0
        hook(lib, 'freezer_test_reload_send_errno').value = 0
        hook(lib, 'freezer_test_fail_reload_replies').value = 0
        lib.freezer_close(f)


UNANSWERED = 'unanswered'


class OlderStandIn:
    """A thread holding freezerd's bus name (taken before __enter__ returns), as a freezerd
    without GroupStatesChanged: SubscribeGroupStates refused (UnknownMethod), each
    SubscribeGroups answered with the next of answers (an error name, or None: subscribed;
    UNANSWERED: never answered, its call recorded with '?'; subscribed once they run out),
    ListGroups listing /g with the next of states (the last one once they run out), any
    other call answered empty.  self.calls: the members
    called, in order, an error answer's with '!'.  With go (an Event), SubscribeGroupStates
    sets self.held and is answered once go is set, a GroupStatesChanged emitted after the
    refusal.  With ids_after (an error name), the first ListGroupIds (the group callback's
    list) is answered with it only after SubscribeGroups' answer, right after it: the
    SubscribeGroups that comes sets self.subscribe_held and is answered once
    self.subscribe_go is set, and self.ids_sent is set once both answers are sent."""

    def __init__(self, bus, answers, states=('frozen',), go=None, ids_after=None):
        from jeepney.bus_messages import message_bus
        from jeepney.io.blocking import open_dbus_connection

        self.answers = list(answers)
        self.states = list(states)
        self.go = go
        self.held = threading.Event()
        self.ids_after = ids_after
        self.ids_held = None
        self.subscribe_held = threading.Event()
        self.subscribe_go = threading.Event()
        self.ids_sent = threading.Event()
        self.calls = []
        self.stop = threading.Event()
        self.conn = open_dbus_connection(bus.address, auth_timeout=ft.DEFAULT_TIMEOUT)
        reply = self.conn.send_and_get_reply(message_bus.RequestName(ft.BUS_NAME, 4), timeout=ft.DEFAULT_TIMEOUT)
        ft.check_equal(reply.body[0], 1, 'the stand-in owns freezerd\'s bus name')
        self.thread = threading.Thread(target=self.run, daemon=True)

    def answer(self, m):
        from jeepney import MessageType, new_error, new_method_return

        if m.header.message_type != MessageType.method_call:
            return
        member = m.header.fields.get(ft.HeaderFields.member)
        error = None
        if member == 'ListGroupIds' and self.ids_after and self.ids_held is None and not self.ids_sent.is_set():
            self.ids_held = m  # answered after SubscribeGroups'
            return
        if member == 'SubscribeGroups' and self.ids_held is not None:
            self.subscribe_held.set()
            self.subscribe_go.wait(timeout=ft.DEFAULT_TIMEOUT)
        if member == 'SubscribeGroupStates':
            error = 'org.freedesktop.DBus.Error.UnknownMethod'
        elif member == 'SubscribeGroups' and self.answers:
            error = self.answers.pop(0)
            if error == UNANSWERED:  # subscribed, but the answer never comes (too slow)
                self.calls.append(member + '?')
                return
        if member == 'SubscribeGroupStates' and self.go:
            self.held.set()
            self.go.wait(timeout=ft.DEFAULT_TIMEOUT)
        self.calls.append(member + ('!' if error else ''))
        if error:
            self.conn.send(new_error(m, error, 's', (f'{member} refused by the stand-in',)))
        elif member == 'ListGroups':
            state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            self.conn.send(new_method_return(m, 'a(sos)', ([('/g', ft.group_object('/g'), state)],)))
        else:
            self.conn.send(new_method_return(m))
        if member == 'SubscribeGroups' and self.ids_held is not None:
            held, self.ids_held = self.ids_held, None
            self.calls.append('ListGroupIds!')
            self.conn.send(new_error(held, self.ids_after, 's', ('ListGroupIds refused by the stand-in',)))
            self.ids_sent.set()
        if member == 'SubscribeGroupStates' and self.go:
            from jeepney import DBusAddress, new_signal
            self.conn.send(new_signal(DBusAddress(ft.MANAGER_PATH, interface=ft.MANAGER_IFACE), 'GroupStatesChanged',
                                      'atauauau', ([], [], [], [])))

    def run(self):
        while not self.stop.is_set():
            try:
                m = self.conn.receive(timeout=0.1)
            except TimeoutError:
                continue
            self.answer(m)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=ft.DEFAULT_TIMEOUT)
        self.conn.close()


def check_fallback_subscription_refused(lib, bus, answer):
    """An older freezerd (OlderStandIn) started under a state callback, its answer to the
    fallback's SubscribeGroups answer.  A shortage (NoMemory, the bus' LimitsExceeded):
    -ENOMEM once, SubscribeGroups sent again, the states read after its answer, /g frozen
    reported.  Another refusal (AccessDenied): freezer_dispatch() fails with -EACCES once,
    the last error its name, no ListGroups."""
    what = f'the fallback\'s SubscribeGroups answered {answer.rsplit(".", 1)[-1]}'
    refusals = {'org.freedesktop.DBus.Error.AccessDenied': -errno.EACCES,
                'org.freedesktop.DBus.Error.UnknownMethod': -errno.EBADR}
    shortage = answer not in refusals
    f, events, on_state = open_state_handle(lib, bus.address)
    try:
        with OlderStandIn(bus, [answer]) as s:
            if shortage:
                results = dispatch_until_frozen(lib, f, events, what)
                ft.check_equal(results.count(-errno.ENOMEM), 1, f'{what}: freezer_dispatch() said -ENOMEM once')
                ft.check(all(r >= 0 or r == -errno.ENOMEM for r in results), f'{what}: no other error', results)
                ft.check_equal(s.calls, ['SubscribeGroupStates!', 'SubscribeGroups!', 'SubscribeGroups', 'ListGroups'],
                               f'{what}: subscribed again, the states read after its answer')
            else:
                results = []

                def failed():
                    results.append(lib.freezer_dispatch(f))
                    return results[-1] < 0
                ft.wait_for(failed, poll=0.05, what=f'{what}: freezer_dispatch() fails')
                ft.check_equal(results[-1], refusals[answer],
                               f'{what}: freezer_dispatch() says -{errno.errorcode[-refusals[answer]]}')
                ft.check_equal(lib.freezer_last_error_name(f), answer.encode(), f'{what}: the last error')
                ft.check_equal(lib.freezer_last_error_message(f), b'SubscribeGroups refused by the stand-in',
                               f'{what}: the last error\'s message, the refusal\'s')
                # The handle's messages reach the stand-in in order: a ListGroups sent
                # before this call came before it.
                ft.check_equal(lib.freezer_thaw(f, b'/g', 0, 0), 0, f'{what}: a call through the handle')
                ft.check_equal(s.calls, ['SubscribeGroupStates!', 'SubscribeGroups!', 'Thaw'],
                               f'{what}: nothing read, nothing sent again')
                ft.check(lib.freezer_dispatch(f) >= 0, f'{what}: said once')
    finally:
        lib.freezer_close(f)


def check_fallback_refusal_then_list_lost(lib, bus):
    """An older freezerd (OlderStandIn) started under a state and a group callback: its
    answer to the fallback's SubscribeGroups AccessDenied, and right after it its answer to
    the group callback's list a shortage (NoMemory: that reply lost, listed again), both read
    by a blocking call (freezer_thaw()) and handled by the next dispatch, in that order.
    freezer_dispatch() fails with -EACCES, the last error the refusal, and the list is sent
    again all the same.  (The loss replaced the refusal's errno: -ENOMEM was said, the
    refusal never, and the state callback heard of nothing more, unsaid.)"""
    what = 'the fallback\'s SubscribeGroups refused, then the group list\'s reply lost'
    f, events, on_state = open_state_handle(lib, bus.address)

    @GROUP_CALLBACK
    def on_group(_f, _path, _added, _state, _ud):
        pass
    results = []
    try:
        ft.check_equal(lib.freezer_set_group_callback(f, on_group, None), 0,
                       f'{what}: freezer_set_group_callback with no freezerd')
        with OlderStandIn(bus, ['org.freedesktop.DBus.Error.AccessDenied'],
                          ids_after='org.freedesktop.DBus.Error.NoMemory') as s:
            ft.wait_for(lambda: lib.freezer_dispatch(f) >= 0 and s.subscribe_held.is_set(), poll=0.05,
                        what=f'{what}: the fallback\'s SubscribeGroups sent to the stand-in')
            s.subscribe_go.set()
            ft.check(s.ids_sent.wait(timeout=ft.DEFAULT_TIMEOUT), f'{what}: the stand-in answered both')
            # Its reply comes after both: its wait queues them, for the next dispatch.
            ft.check_equal(lib.freezer_thaw(f, b'/g', 0, 0), 0, f'{what}: a blocking call meanwhile')

            def failed():
                results.append(lib.freezer_dispatch(f))
                return results[-1] < 0
            ft.wait_for(failed, poll=0.05, what=f'{what}: freezer_dispatch() fails')
            ft.check_equal((results[-1], lib.freezer_last_error_name(f), lib.freezer_last_error_message(f)),
                           (-errno.EACCES, b'org.freedesktop.DBus.Error.AccessDenied',
                            b'SubscribeGroups refused by the stand-in'),
                           f'{what}: freezer_dispatch() says the refusal (-EACCES, its name and message)')
            ft.wait_for(lambda: lib.freezer_dispatch(f) >= 0 and 'ListGroupIds' in s.calls, poll=0.05,
                        what=f'{what}: the group list sent again')
            ft.check_equal([c for c in s.calls if c.startswith('Subscribe')],
                           ['SubscribeGroupStates!', 'SubscribeGroups!'], f'{what}: nothing subscribed again')
    finally:
        lib.freezer_close(f)


def check_fallback_subscription_timed_out(lib, bus):
    """An older freezerd (OlderStandIn) started under a state callback, too slow to answer
    the fallback's SubscribeGroups before sd-bus' method-call timeout (SYSTEMD_BUS_TIMEOUT=1
    for the handle; 25 s by default): SubscribeGroups is sent again, freezer_dispatch() fails
    with nothing, the states are read after its answer, /g frozen reported.  (That timeout
    was taken for a refusal: freezer_dispatch() said -ETIMEDOUT, as a policy's AccessDenied,
    nothing read, freezectl watch ended "refused" by a freezerd that may have subscribed.)"""
    what = 'the fallback\'s SubscribeGroups timed out by sd-bus'
    events = []
    results = []
    on_state = state_recorder(events)
    # sd-bus reads it once per connection, at its first call.
    saved = os.environ.get('SYSTEMD_BUS_TIMEOUT')
    os.environ['SYSTEMD_BUS_TIMEOUT'] = '1'
    try:
        f = open_handle(lib, bus.address)
        ft.check_equal(lib.freezer_set_state_callback(f, on_state, None), 0,
                       'freezer_set_state_callback with no freezerd')
    finally:
        if saved is None:
            os.environ.pop('SYSTEMD_BUS_TIMEOUT')
        else:
            os.environ['SYSTEMD_BUS_TIMEOUT'] = saved
    try:
        with OlderStandIn(bus, [UNANSWERED]) as s:
            def seen():
                results.append(lib.freezer_dispatch(f))
                return ('/g', FROZEN, True) in events or (results[-1] < 0 and results[-1] != -errno.ENOMEM)
            ft.wait_for(seen, poll=0.05, what=f'{what}: the state callback reports /g frozen, or a failure')
            ft.check(all(r >= 0 for r in results), f'{what}: freezer_dispatch() fails with nothing',
                     (results[-3:], lib.freezer_last_error_name(f)))
            ft.check(('/g', FROZEN, True) in events, f'{what}: the state callback reports /g frozen', events)
            ft.check_equal(s.calls, ['SubscribeGroupStates!', 'SubscribeGroups?', 'SubscribeGroups', 'ListGroups'],
                           f'{what}: subscribed again, the states read after its answer')
    finally:
        lib.freezer_close(f)


def check_fallback_read_in_flight(lib, bus):
    """An older freezerd (OlderStandIn) started under a state callback; during a blocking
    call (freezer_thaw()) the reply of the refusal of SubscribeGroupStates is lost (the
    hook) and a GroupStatesChanged dropped (the hook), which sends a ListGroups: in flight
    when the next dispatch but one falls back to SubscribeGroups.  The stand-in lists /g
    running to it, frozen to every ListGroups after: /g frozen before the subscription,
    which no GroupsChanged tells.  The state callback reports /g frozen: the states are read
    again after the subscription is answered.  (The ListGroups in flight, older than the
    subscription, was taken for the read after it: /g reported running, never frozen.)"""
    what = 'a ListGroups in flight when the fallback subscribes'
    f, events, on_state = open_state_handle(lib, bus.address)
    go = threading.Event()
    try:
        hook(lib, 'freezer_test_fail_reload_replies').value = 1
        hook(lib, 'freezer_test_drop_signals').value = 1
        with OlderStandIn(bus, [], states=('running', 'frozen'), go=go) as s:
            try:
                ft.wait_for(lambda: lib.freezer_dispatch(f) >= 0 and s.held.is_set(), poll=0.05,
                            what=f'{what}: SubscribeGroupStates sent to the stand-in')
            finally:
                go.set()
            ft.check_equal(lib.freezer_thaw(f, b'/g', 0, 0), 0, f'{what}: a blocking call meanwhile')
            ft.check_equal(hook(lib, 'freezer_test_fail_reload_replies').value, 0, f'{what}: the hook lost the reply')
            ft.check_equal(hook(lib, 'freezer_test_drop_signals').value, 0, f'{what}: the hook dropped the signal')
            results = dispatch_until_frozen(lib, f, events, what)
            ft.check_equal(results.count(-errno.ENOMEM), 1, f'{what}: freezer_dispatch() said -ENOMEM once')
            ft.check(all(r >= 0 or r == -errno.ENOMEM for r in results), f'{what}: no other error', results)
            ft.check_equal(s.calls, ['SubscribeGroupStates!', 'Thaw', 'ListGroups', 'SubscribeGroups', 'ListGroups'],
                           f'{what}: the states read again after the subscription')
    finally:
        hook(lib, 'freezer_test_fail_reload_replies').value = 0
        hook(lib, 'freezer_test_drop_signals').value = 0
        lib.freezer_close(f)


WARNING = 'freezectl: watch: out of memory, some changes may be reported late'


def hooks_bin(what):
    """freezectl-test-hooks, or None (said) where it is not built."""
    path = os.environ.get('FREEZECTL_HOOKS_BIN') or os.path.join(ft.BUILDDIR, 'client', 'freezectl-test-hooks')
    if not os.path.exists(path):
        print(f'# {path} is not built: {what} not checked', flush=True)
        return None
    return path


class Watch:
    """freezectl-test-hooks watch on bus, the hook failing n reload replies (and taking
    nomem_subscriptions of its subscriptions for freezerd's NoMemory), its output lines
    read into out and err as they come; ended (SIGINT) on exit."""

    def __init__(self, path, bus, n, nomem_subscriptions=0):
        env = dict(os.environ, FREEZER_TEST_FAIL_RELOAD_REPLIES=str(n),
                   FREEZER_TEST_NOMEM_SUBSCRIPTIONS=str(nomem_subscriptions))
        self.out, self.err = [], []
        self.p = subprocess.Popen([path, f'--address={bus.address}', 'watch'], env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.threads = [threading.Thread(target=self.reader, args=(self.p.stdout, self.out), daemon=True),
                        threading.Thread(target=self.reader, args=(self.p.stderr, self.err), daemon=True)]
        for t in self.threads:
            t.start()

    @staticmethod
    def reader(stream, into):
        for line in iter(stream.readline, b''):
            into.append(line.decode(errors='replace'))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
            try:
                self.p.wait(timeout=ft.DEFAULT_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        for t in self.threads:
            t.join(timeout=ft.DEFAULT_TIMEOUT)

    def wait_watching(self, what):
        ft.wait_for(lambda: any('watching' in line for line in self.out) or self.p.poll() is not None, poll=0.05,
                    what=f'{what}: the watching line')

    def wait_warning(self, what):
        ft.wait_for(lambda: any('out of memory' in line for line in self.err) or self.p.poll() is not None,
                    poll=0.05, what=f'{what}: the warning')

    def warnings(self):
        return sum(line.rstrip('\n') == WARNING for line in self.err)


def watch_goes_on_after_restart(sc, bus, what, lost, nomem_subscriptions, printed):
    """freezectl-test-hooks watch over a freezerd restarted under it, the hooks losing lost
    reload replies and answering nomem_subscriptions subscriptions NoMemory: watch warns
    once, goes on, and prints a change of /g made after the warning (printed: what that
    check says).  Returns watch's stderr, or None without the hooks' build."""
    path = hooks_bin(what)
    if not path:
        return None
    with ft.Daemon(bus, sc.root) as d, Watch(path, bus, lost, nomem_subscriptions=nomem_subscriptions) as w:
        p, out, err = w.p, w.out, w.err
        w.wait_watching(what)
        d.stop()
        with ft.Daemon(bus, sc.root) as d2:
            c = d2.client
            w.wait_warning(what)
            ft.check(p.poll() is None and w.warnings() == 1, f'{what}: the warning, and watch goes on',
                     (p.poll(), out, err))
            n = len(out)

            def seen():
                if p.poll() is not None:
                    return True
                c.call('Freeze', '/g', 0, 0)
                c.call('Thaw', '/g', 0, 0)
                return any('/g' in line for line in out[n:])
            ft.wait_for(seen, poll=0.05, what=f'{what}: /g frozen printed')
            ft.check(p.poll() is None and any('/g' in line for line in out[n:]),
                     f'{what}: {printed}', (p.poll(), out[n:], err))
    return err


def check_watch_goes_on(sc, bus):
    what = 'freezectl watch, the reply of its subscription to a restarted freezerd lost'
    err = watch_goes_on_after_restart(sc, bus, what, 1, 0, 'a change after the warning printed')
    if err is not None:
        ft.check(not any('lost the connection' in line for line in err), f'{what}: no "lost the connection"',
                 err)


def check_watch_subscription_nomem(sc, bus):
    what = 'freezectl watch, its subscription to a restarted freezerd answered NoMemory'
    watch_goes_on_after_restart(sc, bus, what, 0, 1, 'subscribed again, a change printed')


WINDOW = 1.5  # seconds


def check_watch_lasting_shortage(sc, bus):
    what = 'freezectl watch, every reply of its reloads after freezerd restarted lost'
    path = hooks_bin(what)
    if not path:
        return
    # As many as never run out: at a round trip each (the retries without a pause) 1000
    # took a fraction of the window.
    with ft.Daemon(bus, sc.root) as d, Watch(path, bus, 10**6) as w:
        w.wait_watching(what)
        d.stop()
        with ft.Daemon(bus, sc.root):
            w.wait_warning(what)
            t0, c0 = time.monotonic(), ft.proc_cpu_ticks(w.p.pid)
            time.sleep(WINDOW)  # a window to count warnings and measure CPU time in, not a wait for an event
            ticks, wall = ft.proc_cpu_ticks(w.p.pid) - c0, time.monotonic() - t0
            ft.check(w.p.poll() is None, f'{what}: watch goes on', w.err[-5:])
            warnings = w.warnings()
            print(f'# {warnings} warnings, {ticks} ticks of CPU time in {wall:.1f} s', flush=True)
            # A retry at once, then after 10 ms, doubling up to 1 s: a handful of round trips,
            # each far below a tick even under a sanitizer.  Spinning took most of the window.
            limit = int(wall * os.sysconf('SC_CLK_TCK') / 10)
            ft.check(ticks <= limit, f'{what}: watch mostly slept ({ticks} ticks of CPU time in {wall:.1f} s, '
                     f'at most {limit})')
            ft.check(warnings == 1, f'{what}: warned once in {wall:.1f} s', (warnings, w.err[:5]))
    ft.check(not any('lost the connection' in line for line in w.err), f'{what}: no "lost the connection"',
             w.err[-5:])


def check_watch_run_ends(sc, bus):
    what = 'freezectl watch, four replies of its reloads after freezerd restarted lost'
    path = hooks_bin(what)
    if not path:
        return
    # Replies lost during one blocking call (the catch-up's freezer_list() after the
    # restart) are said by one -ENOMEM.
    end = re.compile(r'freezectl: watch: out of memory ([234]) times in a row, none for 5 s since')
    with ft.Daemon(bus, sc.root) as d, Watch(path, bus, 4) as w:
        w.wait_watching(what)
        d.stop()
        with ft.Daemon(bus, sc.root) as d2:
            ft.wait_for(lambda: any(end.fullmatch(line.rstrip('\n')) for line in w.err) or w.p.poll() is not None,
                        timeout=ft.DEFAULT_TIMEOUT + 5, poll=0.1, what=f'{what}: the end of the run said')
            ft.check(w.p.poll() is None and w.warnings() == 1 and len(w.err) == 2 and
                     end.fullmatch(w.err[1].rstrip('\n')),
                     f'{what}: one warning, then "out of memory N times in a row, none for 5 s since"',
                     (w.p.poll(), w.err))
            n = len(w.out)

            def seen():
                if w.p.poll() is not None:
                    return True
                d2.client.call('Freeze', '/g', 0, 0)
                d2.client.call('Thaw', '/g', 0, 0)
                return any('/g' in line for line in w.out[n:])
            ft.wait_for(seen, poll=0.05, what=f'{what}: /g frozen printed')
            ft.check(w.p.poll() is None, f'{what}: a change printed after', w.err)


def check_watch_fallback_refused(sc, bus, restarted):
    """freezectl watch, an older freezerd (OlderStandIn) taking the bus name under it (after a
    freezerd it watched exited, or as the first one, watch having waited for it), the
    fallback's SubscribeGroups answered AccessDenied: watch says that freezerd refused to
    report state changes, with the refusal's message, and exits 1.  (It said "lost the
    connection to the bus", which was fine.)"""
    what = f'freezectl watch, SubscribeGroups refused by a freezerd that {"re" if restarted else ""}started'
    answer = 'org.freedesktop.DBus.Error.AccessDenied'
    want = (f'freezectl: watch: freezerd refused to report state changes after it '
            f'{"restarted" if restarted else "started"}: AccessDenied: SubscribeGroups refused by the stand-in')
    with Watch(ft.FREEZECTL_BIN, bus, 0) as w:
        if restarted:
            with ft.Daemon(bus, sc.root):
                w.wait_watching(what)
        else:
            ft.wait_for(lambda: any('not running' in line for line in w.err) or w.p.poll() is not None, poll=0.05,
                        what=f'{what}: watch waits for freezerd')
        with OlderStandIn(bus, [answer]) as s:
            try:
                w.p.wait(timeout=ft.DEFAULT_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
            for t in w.threads:
                t.join(timeout=ft.DEFAULT_TIMEOUT)
            ft.check(w.p.poll() == 1, f'{what}: watch exits 1', (w.p.poll(), w.out, w.err))
            ft.check('SubscribeGroups!' in s.calls, f'{what}: the stand-in refused SubscribeGroups', s.calls)
    ft.check(w.err and w.err[-1].rstrip('\n') == want, f'{what}: what watch says', w.err)
    ft.check(not any('lost the connection' in line for line in w.err), f'{what}: no "lost the connection"', w.err)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    lib = load()
    with ft.Scratch('core-libfreezer-hooks') as sc:
        sc.mkdir('/g')
        tmp = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}hooks-conf-')
        try:
            path = os.path.join(tmp, 'deny-group-states.conf')
            with open(ft.DBUS_TEST_CONF) as conf:
                text = conf.read()
            with open(path, 'w') as out:
                out.write(text.replace('</busconfig>', DENY_GROUP_STATES))
            with ft.Bus(config=path) as bus:
                check_fallback_reply_lost(lib, sc, bus)
                check_fallback_at_once(lib, sc, bus)
                check_retried_fallback(lib, sc, bus, False)
                check_retried_fallback(lib, sc, bus, True)
                for where in ('resubscribe', 'fallback', 'fallback-retry'):
                    check_fallback_send_nobufs(lib, sc, bus, where)
            check_group_retry_not_activating(lib, sc, tmp)
            with ft.Bus() as bus:
                for answer in ('org.freedesktop.DBus.Error.NoMemory', 'org.freedesktop.DBus.Error.LimitsExceeded',
                               'org.freedesktop.DBus.Error.AccessDenied', 'org.freedesktop.DBus.Error.UnknownMethod'):
                    check_fallback_subscription_refused(lib, bus, answer)
                check_fallback_refusal_then_list_lost(lib, bus)
                check_fallback_subscription_timed_out(lib, bus)
                check_fallback_read_in_flight(lib, bus)
                check_watch_fallback_refused(sc, bus, False)
                check_watch_fallback_refused(sc, bus, True)
                check_watch_goes_on(sc, bus)
                check_watch_subscription_nomem(sc, bus)
                check_watch_lasting_shortage(sc, bus)
                check_watch_run_ends(sc, bus)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print('# checked: a lost reply of a refused SubscribeGroupStates falls back to SubscribeGroups; '
          'a shortage answering the fallback\'s SubscribeGroups is retried, another refusal said; '
          'a fallback (at once, or after a retried subscription) reports a change made before it; '
          'a subscription\'s send sd-bus cannot queue is retried with -ENOMEM; '
          'a group list\'s retry does not bus-activate a freezerd that stopped; freezectl watch goes on after freezer_dispatch()\'s -ENOMEM, warns once and sleeps while replies '
          'stay lost')


if __name__ == '__main__':
    ft.run(test)
