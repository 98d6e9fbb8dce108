#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""libfreezer's state callback follows GroupStatesChanged (groups by Id) where freezerd
has it, and GroupsChanged where it does not.

  /t{0..19}/g{0..49}  (1,020 groups)   /p  one sleeper

Checks:
  * Compact on the bus: with a state callback installed, a freeze of /p sends
    GroupStatesChanged (a recorder on the bus, subscribed to nothing, sees it:
    signals are broadcast) and no GroupsChanged; the callback reports /p frozen and
    running again, once each (and no state twice in a row).
  * A storm: one ApplyBatch freezing the 20 top groups; the callback reports each of
    the 1,020 groups exactly once, /t* frozen and /t*/g* frozen-by-parent, after
    freezer_list() (so that only changes are reported); the thaw likewise (running).
  * A group made after the callback (its Id from InterfacesAdded) and frozen is
    reported; removed and made again (a new Id under the same path), likewise.
  * A restart of freezerd: a group made while none ran (only ListGroupIds() gives its
    Id) is reported when frozen by the new freezerd, and so is an old one.  With the
    handle not dispatched meanwhile, and another client subscribed so that the new
    freezerd broadcasts the freeze of such a group before the handle has subscribed
    again: the handle reads that signal while it reloads the Ids, holds it, and
    reports the group frozen once the list is in, with no later change to help.
    More of them than it holds (1,201 signals read during the reload, past its 1,024):
    it drops them, reads every group's state once the Ids are in, and reports what
    changed (/q2, frozen by the last signal, reported frozen; /q's last report is its
    state).
  * The private socket: the same with freezer_open_private() (no match rules: the
    handle subscribed on its connection).  Through a relay that records the bytes
    between a handle and freezerd: with the state and the group callbacks both
    installed, the handle calls SubscribeGroupStates (twice: one per callback) and
    never SubscribeGroups, and no GroupsChanged reaches it (the group callback's
    subscription brought a storm's GroupsChanged for nothing before).
  * Fallback: on a bus whose policy refuses SubscribeGroupStates (as a freezerd
    without it answers UnknownMethod), freezer_set_state_callback() still returns 0,
    the handle subscribes to GroupsChanged instead (the recorder sees it, and no
    GroupStatesChanged), and the callback reports /p frozen.
  * The same decided anew at each start of freezerd: a handle following
    GroupStatesChanged, the bus's policy then changed to refuse it
    (ReloadConfig) and freezerd restarted: the handle falls back to GroupsChanged
    and reports on; the policy changed back and freezerd restarted again: it
    follows GroupStatesChanged again.

"None arrived" is checked behind a signal of the same emission: freezerd sends a
turn's GroupsChanged before its GroupStatesChanged, so once the latter has come, the
former of that turn would have too (and the other way round, a GroupsChanged is
followed by nothing from that turn but GroupStatesChanged, which nobody asked for)."""

import contextlib
import ctypes
import os
import selectors
import shutil
import socket
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

base = ft.load_test_module('test-core-libfreezer')

TOPS = [f'/t{i}' for i in range(20)]
LEAVES = [f'{t}/g{j}' for t in TOPS for j in range(50)]
STORM = TOPS + LEAVES

DENY_GROUP_STATES = '''        <policy context="default">
                <deny send_destination="org.freezerd.Freezer1" send_interface="org.freezerd.Freezer1.Manager"
                      send_member="SubscribeGroupStates"/>
        </policy>
</busconfig>'''


class Handle:
    """A libfreezer handle with a state callback recording (path, state, frozen), dispatched
    whenever its fd is readable."""

    def __init__(self, lib, opener, address):
        self.lib = lib
        self.f = ctypes.c_void_p()
        self.events = []
        self.fd = -1
        ft.check_equal(opener(ctypes.byref(self.f), address.encode()), 0, f'opening a handle on {address}')

        @base.CALLBACK
        def on_state(_f, path, state, frozen, _ud):
            s = base.STATES[state] if 0 <= state < len(base.STATES) else state
            self.events.append((path.decode(), s, bool(frozen)))
        self.on_state = on_state

    def install(self, what):
        ft.check_equal(self.lib.freezer_set_state_callback(self.f, self.on_state, None), 0,
                       f'freezer_set_state_callback, {what}')
        self.fd = self.lib.freezer_get_fd(self.f)
        ft.loop().add_reader(self.fd, self.dispatch)

    def dispatch(self):
        # Past its bound freezer_dispatch() leaves the rest in memory: call it while it says so.
        while self.lib.freezer_dispatch(self.f) >= 64:
            pass

    def list(self):
        arr = ctypes.POINTER(base.Group)()
        n = ctypes.c_size_t()
        ft.check_equal(self.lib.freezer_list(self.f, ctypes.byref(arr), ctypes.byref(n)), 0, 'freezer_list')
        self.lib.freezer_group_array_free(arr, n)

    def wait(self, want, what):
        """Waits until every (path, state, frozen) of want was reported."""
        want = set(want)
        ft.wait_for(lambda: (self.dispatch(), want <= set(self.events))[1], timeout=ft.DEFAULT_TIMEOUT, poll=0.02,
                    what=f'the state callback: {what}')

    def pause(self):
        """Stop dispatching: what arrives waits in the socket."""
        ft.loop().remove_reader(self.fd)

    def resume(self):
        ft.loop().add_reader(self.fd, self.dispatch)
        self.dispatch()

    def close(self):
        if self.fd >= 0:
            ft.loop().remove_reader(self.fd)
            self.fd = -1
        self.lib.freezer_close(self.f)


def members(rec):
    return [s.member for s in rec.signals if s.member in ('GroupsChanged', 'GroupStatesChanged')]


def wait_member(rec, member, what):
    rec.wait_for(lambda r: member in members(r), timeout=ft.DEFAULT_TIMEOUT, what=f'{what}: {member} on the bus')


def check_follows(c, h, rec, want, what):
    """A freeze and thaw of /p reported by the handle, through want (GroupStatesChanged or
    GroupsChanged): rec, on the bus, sees want and not the other (which, of the same turn,
    would have come before GroupStatesChanged, or be the only one asked for)."""
    other = 'GroupsChanged' if want == 'GroupStatesChanged' else 'GroupStatesChanged'
    freeze_p(c, h, what)
    wait_member(rec, want, what)
    ft.check(other not in members(rec), f'{what}: the handle follows {want}, no {other} comes', members(rec))


def freeze_p(c, h, what):
    """Freezes and thaws /p; the callback says frozen, then running, once each."""
    h.events.clear()
    c.call('Freeze', '/p', 0, 0)
    h.wait([('/p', 'frozen', True)], f'{what}: /p frozen')
    c.call('Thaw', '/p', 0, 0)
    h.wait([('/p', 'running', False)], f'{what}: /p running')
    # A sleeper takes a moment to freeze: "freezing" may come first, but no state twice in a row.
    got = [e for e in h.events if e[0] == '/p']
    ft.check(got.count(('/p', 'frozen', True)) == 1 and got.count(('/p', 'running', False)) == 1 and
             all(a != b for a, b in zip(got, got[1:])), f'{what}: /p reported frozen and running once each', got)


def check_storm(c, h, what):
    h.list()
    h.events.clear()
    reply = c.call('ApplyBatch', [(t, True) for t in TOPS], 'auto', 0, 0)
    ft.check_equal(list(reply), [len(TOPS), 0], f'{what}: ApplyBatch freezing the 20 top groups')
    want = [(t, 'frozen', True) for t in TOPS] + [(p, 'frozen-by-parent', True) for p in LEAVES]
    h.wait(want, f'{what}: the storm, every group')
    storm = [e for e in h.events if e[0] in set(STORM)]
    ft.check_equal(sorted(storm), sorted(want), f'{what}: each of the {len(STORM)} groups reported once, frozen')
    h.events.clear()
    c.call('ApplyBatch', [(t, False) for t in TOPS], 'auto', 0, 0)
    want = [(p, 'running', False) for p in STORM]
    h.wait(want, f'{what}: the thaw, every group')
    storm = [e for e in h.events if e[0] in set(STORM)]
    ft.check_equal(sorted(storm), sorted(want), f'{what}: each group reported once, running')


def published(c, path):
    return any(p == path for p, _o, _s in c.call('ListGroups')[0])


def check_new_groups(sc, c, h, what):
    for n in ('first', 'second'):
        sc.mkdir('/n')
        ft.wait_for(lambda: published(c, '/n'), what=f'freezerd to publish /n ({n})')
        h.events.clear()
        c.call('Freeze', '/n', 0, 0)
        h.wait([('/n', 'frozen', True)], f'{what}: the {n} /n, made after the callback, frozen')
        ft.check(True, f'{what}: the {n} /n (its Id from InterfacesAdded) reported frozen')
        c.call('Thaw', '/n', 0, 0)
        h.wait([('/n', 'running', False)], f'{what}: the {n} /n running')
        sc.rmdir('/n')
        ft.wait_for(lambda: not published(c, '/n'), what='freezerd to drop /n')


def check_bus(lib, sc, bus, d):
    c = d.client
    rec = ft.Client(bus.address)
    h = Handle(lib, lib.freezer_open_address, bus.address)
    try:
        r = rec.record(subscribe=False)
        h.install('on the bus')
        check_follows(c, h, r, 'GroupStatesChanged', 'bus')
        check_storm(c, h, 'bus')
        check_new_groups(sc, c, h, 'bus')
        ft.check('GroupsChanged' not in members(r), 'bus: still no GroupsChanged', members(r))
    finally:
        h.close()
        rec.close()
    return h


def check_restart(lib, sc, bus, root):
    h = Handle(lib, lib.freezer_open_address, bus.address)
    try:
        with ft.Daemon(bus, root) as d:
            h.install('before a restart')
            freeze_p(d.client, h, 'before the restart')
        sc.mkdir('/r')  # while no freezerd runs: only ListGroupIds() of the next one has its Id
        with ft.Daemon(bus, root) as d:
            c = d.client

            # The handle loads the new freezerd's Ids when it sees its NameOwnerChanged, which
            # no reply of ours orders: freeze and thaw /r until the callback tells.
            def seen():
                c.call('Freeze', '/r', 0, 0)
                c.call('Thaw', '/r', 0, 0)
                h.dispatch()
                return ('/r', 'frozen', True) in h.events
            ft.wait_for(seen, what='the state callback: /r, made while no freezerd ran', poll=0.05)
            ft.check(True, 'restart: /r, made while no freezerd ran, reported by the new freezerd\'s signals')
            h.wait([('/r', 'running', False)], 'restart: /r running after the last thaw')
            freeze_p(c, h, 'after the restart')
    finally:
        h.close()
        if sc.exists('/r'):
            sc.rmdir('/r')


@contextlib.contextmanager
def restarted_while_paused(lib, sc, bus, root, what, groups):
    """A handle installed under one freezerd, then not dispatched while groups are made
    and a new freezerd starts with another client subscribed (so it broadcasts
    GroupStatesChanged before the handle has subscribed again).  Yields (h, d): what the
    body does before h.resume() reaches the handle during its reload of the Ids."""
    h = Handle(lib, lib.freezer_open_address, bus.address)
    witness = None
    try:
        with ft.Daemon(bus, root):
            h.install(what)
        h.pause()
        for p in groups:
            sc.mkdir(p)
        with ft.Daemon(bus, root) as d:
            witness = ft.Client(bus.address)
            witness.call('SubscribeGroupStates')
            yield h, d
    finally:
        h.close()
        if witness is not None:
            witness.close()
        for p in groups:
            if sc.exists(p):
                sc.rmdir(p)


def check_held(lib, sc, bus, root):
    with restarted_while_paused(lib, sc, bus, root, 'before a restart, for the held signals', ['/q']) as (h, d):
        d.client.call('Freeze', '/q', 0, 0)
        h.events.clear()
        h.resume()
        h.wait([('/q', 'frozen', True)], 'the held GroupStatesChanged: /q frozen')
        ft.check(True, 'a GroupStatesChanged read while the handle reloaded the Ids was held and reported '
                 '(/q, made while no freezerd ran, frozen)')
        d.client.call('Thaw', '/q', 0, 0)
        h.wait([('/q', 'running', False)], 'after the reload: /q running')


HELD_FLOOD = 1200  # GroupStatesChanged sent while the handle reloads the Ids: more than it holds (1,024)


def check_held_lost(lib, sc, bus, root):
    with restarted_while_paused(lib, sc, bus, root, 'before a restart, for more signals than it holds',
                                ['/q', '/q2']) as (h, d):
        # One GroupStatesChanged per call (an empty group freezes and thaws inside
        # the write), /q's last one "running"; /q2's freeze comes after all of them.
        for i in range(HELD_FLOOD):
            d.client.call('Thaw' if i % 2 else 'Freeze', '/q', 0, 0)
        d.client.call('Freeze', '/q2', 0, 0)
        h.events.clear()
        h.resume()
        h.wait([('/q2', 'frozen', True)], f'after {HELD_FLOOD + 1} signals held and lost: /q2 frozen')
        q = [e for e in h.events if e[0] == '/q']
        ft.check(not q or q[-1] == ('/q', 'running', False),
                 f'after the lost signals, /q\'s last report is its state (running): {q[-3:]}')
        ft.check(True, f'{HELD_FLOOD + 1} GroupStatesChanged read while the handle reloaded the Ids, more than '
                 'it holds: dropped, and the states read again (/q2 frozen, /q running)')
        d.client.call('Thaw', '/q2', 0, 0)
        h.wait([('/q2', 'running', False)], 'after the reread: /q2 running')


def check_private(lib, sc, d):
    h = Handle(lib, lib.freezer_open_private, f'{d.runtime_dir}/private')
    try:
        h.install('on the private socket')
        freeze_p(d.client, h, 'private socket')
        check_storm(d.client, h, 'private socket')
        check_new_groups(sc, d.client, h, 'private socket')
    finally:
        h.close()


class Relay:
    """A Unix socket at path whose one connection is relayed to target (freezerd's private
    socket), recording both directions' bytes.  freezerd sees the relay's credentials
    (root), which are the test's."""

    def __init__(self, path, target):
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(1)
        self.target = target
        self.to_server, self.to_client = bytearray(), bytearray()
        self.lock = threading.Lock()
        self.stop_r, self.stop_w = os.pipe()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        sel = selectors.DefaultSelector()
        sel.register(self.listener, selectors.EVENT_READ)
        sel.register(self.stop_r, selectors.EVENT_READ)
        client = server = None
        try:
            while True:
                for key, _ev in sel.select():
                    if key.fileobj == self.stop_r:
                        return
                    if key.fileobj is self.listener:
                        client, _ = self.listener.accept()
                        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                        server.connect(self.target)
                        sel.register(client, selectors.EVENT_READ)
                        sel.register(server, selectors.EVENT_READ)
                        continue
                    data = key.fileobj.recv(1 << 20)
                    if not data:
                        return
                    other, log = (server, self.to_server) if key.fileobj is client else (client, self.to_client)
                    with self.lock:
                        log += data
                    other.sendall(data)
        finally:
            for x in (client, server):
                if x is not None:
                    x.close()

    def seen(self):
        with self.lock:
            return bytes(self.to_server), bytes(self.to_client)

    def close(self):
        os.write(self.stop_w, b'x')
        self.thread.join(timeout=ft.DEFAULT_TIMEOUT)
        self.listener.close()
        os.close(self.stop_r)
        os.close(self.stop_w)


def check_private_relay(lib, sc, d):
    tmp = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}relay-')
    relay = Relay(os.path.join(tmp, 'relay'), f'{d.runtime_dir}/private')
    h = Handle(lib, lib.freezer_open_private, os.path.join(tmp, 'relay'))
    try:
        groups = []

        @base.GROUP_CALLBACK
        def on_group(_f, path, added, _state, _ud):
            groups.append((path.decode(), bool(added)))
        h.install('through the relay')
        ft.check_equal(lib.freezer_set_group_callback(h.f, on_group, None), 0, 'freezer_set_group_callback, relay')
        freeze_p(d.client, h, 'relay')
        check_storm(d.client, h, 'relay')
        sc.mkdir('/n')
        ft.wait_for(lambda: (h.dispatch(), ('/n', True) in groups)[1], what='the group callback: /n added (relay)')
        sc.rmdir('/n')
        ft.wait_for(lambda: (h.dispatch(), ('/n', False) in groups)[1], what='the group callback: /n removed (relay)')
        up, down = relay.seen()
        ft.check_equal((up.count(b'SubscribeGroupStates\x00'), up.count(b'SubscribeGroups\x00')), (2, 0),
                       'relay: the state and the group callbacks each called SubscribeGroupStates, '
                       'neither SubscribeGroups')
        ft.check(b'GroupStatesChanged\x00' in down and b'GroupsChanged\x00' not in down,
                 f'relay: GroupStatesChanged and no GroupsChanged reached the handle ({len(down)} bytes from freezerd '
                 'for a freeze and a thaw of /p, a storm and its thaw, a mkdir and an rmdir)')
    finally:
        h.close()
        relay.close()
        shutil.rmtree(tmp, ignore_errors=True)


def write_conf(path, deny):
    with open(ft.DBUS_TEST_CONF) as f:
        conf = f.read()
    if deny:
        conf = conf.replace('</busconfig>', DENY_GROUP_STATES)
    with open(path + '.new', 'w') as f:
        f.write(conf)
    os.rename(path + '.new', path)


def reload_bus(c):
    """dbus-daemon reads its configuration again and replies once it has."""
    c.call_method('/org/freedesktop/DBus', 'org.freedesktop.DBus', 'ReloadConfig', destination='org.freedesktop.DBus')


def check_switch_at_restart(lib, sc):
    tmp = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}states-switch-')
    path = os.path.join(tmp, 'bus.conf')
    write_conf(path, deny=False)
    try:
        with ft.Bus(config=path) as bus:
            rec_client = ft.Client(bus.address)
            h = Handle(lib, lib.freezer_open_address, bus.address)
            try:
                r = rec_client.record(subscribe=False)
                for n, deny in enumerate((False, True, False)):
                    what = f'start {n + 1}, SubscribeGroupStates {"refused" if deny else "allowed"}'
                    write_conf(path, deny)
                    reload_bus(rec_client)
                    with ft.Daemon(bus, sc.root) as d:
                        if n == 0:
                            h.install(what)
                        r.clear()

                        # The handle subscribes once it sees freezerd's NameOwnerChanged, which no reply
                        # of ours orders: freeze and thaw /p until the callback tells.
                        def seen():
                            h.events.clear()
                            d.client.call('Freeze', '/p', 0, 0)
                            d.client.call('Thaw', '/p', 0, 0)
                            h.dispatch()
                            return ('/p', 'frozen', True) in h.events
                        ft.wait_for(seen, poll=0.05, what=f'the state callback: /p frozen ({what})')

                        # And the last thaw's report, before freeze_p() counts reports afresh:
                        # one after the last frozen.  (A running of /p before it, the states
                        # read after a refused subscription reporting it as its first mention,
                        # passed for it, and the thaw's came among freeze_p()'s.)
                        def thawed():
                            h.dispatch()
                            p = [e for e in h.events if e[0] == '/p']
                            last = max(i for i, e in enumerate(p) if e == ('/p', 'frozen', True))
                            return ('/p', 'running', False) in p[last + 1:]
                        ft.wait_for(thawed, poll=0.02, what=f'the state callback: {what}: /p running after the first '
                                                            'freeze')
                        r.clear()
                        check_follows(d.client, h, r, 'GroupsChanged' if deny else 'GroupStatesChanged', what)
            finally:
                h.close()
                rec_client.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_fallback(lib, sc):
    tmp = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}states-conf-')
    try:
        path = os.path.join(tmp, 'deny-group-states.conf')
        write_conf(path, deny=True)
        with ft.Bus(config=path) as bus, ft.Daemon(bus, sc.root) as d:
            c = d.client
            ft.expect_dbus_error('org.freedesktop.DBus.Error.AccessDenied', c.call, 'SubscribeGroupStates')
            rec = ft.Client(bus.address)
            h = Handle(lib, lib.freezer_open_address, bus.address)
            try:
                r = rec.record(subscribe=False)
                h.install('with SubscribeGroupStates refused')
                check_follows(c, h, r, 'GroupsChanged', 'fallback')
                check_storm(c, h, 'fallback')
            finally:
                h.close()
                rec.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    base.reexec_for_asan(base.libfreezer_path())
    lib = base.load()
    with ft.Scratch('libfreezer-states') as sc:
        for p in STORM + ['/p']:
            sc.mkdir(p)
        sc.spawn_sleepers('/p', 1)
        with ft.Bus() as bus:
            with ft.Daemon(bus, sc.root) as d:
                check_bus(lib, sc, bus, d)
                check_private(lib, sc, d)
                check_private_relay(lib, sc, d)
            check_restart(lib, sc, bus, sc.root)
            check_held(lib, sc, bus, sc.root)
            check_held_lost(lib, sc, bus, sc.root)
        check_fallback(lib, sc)
        check_switch_at_restart(lib, sc)
    print('# checked: libfreezer\'s state callback on GroupStatesChanged (bus, private socket, a storm over '
          '1,020 groups, new groups, a restart) and its fallback to GroupsChanged')


if __name__ == '__main__':
    ft.run(test)
