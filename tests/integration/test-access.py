#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Who may do what: real calls from other uids (issue 5, "Who may do what").

Groups (U = nobody, U2 = daemon or another system user; "owned" means the
directory, cgroup.procs, cgroup.freeze, cgroup.subtree_control and cgroup.threads
chowned to the uid: what systemd's Delegate= hands over, plus cgroup.freeze, which
a group the delegate made itself would have as its own):

  /own        U       /own/a U   /own/a/x U (a sleeper)   /own/b U
                      /own/rc root (root's child inside U's subtree)
  /foreign    root    (a sleeper)
  /other      U2
  /own2       U       not tracked
  /foreign2   root    not tracked
freezerd tracks /own, /foreign and /other.

U and U2 must exist in the user database: dbus-daemon looks up the groups of
every uid that connects and drops a connection whose uid it cannot resolve.

The unprivileged clients are `setpriv --reuid=U --regid=U --clear-groups`
running a small jeepney client (AGENT) that takes calls as JSON lines; one more
runs with only its effective uid changed (`--euid=U`, real uid 0), to show that
the decision follows the effective uid the bus reports.

Checked, as U:
  * reads: ListGroups, GetGroup of a tracked group and of "/" (not tracked here:
    always an object, tracking nothing), Get/GetAll of a foreign group,
    GetManagedObjects, Introspect, the Manager's properties;
  * Freeze/Thaw/Group.Freeze of /foreign, of /own/rc: AccessDenied naming the path
    (and not the owner), cgroup.freeze unchanged; of its own groups: done (kernel
    frozen, then running); Freeze of root's "/foreign/ s" and GetGroup of the
    untracked "/foreign2/ s": AccessDenied naming the path in double quotes (it was
    bare: "/foreign/ s" read as "/foreign/" and "s");
  * RECURSIVE over /own (which holds root's /own/rc): a freeze refused whole, a thaw
    done while /own/rc's flag is 0 (nothing to write there) and refused whole while root
    froze it; likewise with root's /own/rodd\xff, which freezerd does not follow (it
    was refused at flag 0 too), the error naming it in double quotes below U's "/own/sp "
    (it was bare, read as two paths); over /own/a: done; a RECURSIVE thaw naming root's
    running /foreign or /own/rc (Thaw, Group.Thaw, ApplyBatch, also one whose named
    /own/rc a later request's /own decides): refused, as without RECURSIVE;
  * ApplyBatch mixing an owned and a foreign group (either order): refused whole,
    nothing written; an all-owned batch: done; RECURSIVE batch over /own: refused;
  * FreezeExcept whose cover holds /own/rc: refused, nothing written; one whose
    cover is all U's: done; FreezeExcept of /foreign: refused; with an excluded
    group frozen (its own flag, or an ancestor's): AccessDenied still comes first,
    then, with a cover that is all U's, InvalidArgs (own flag) or FrozenByParent;
  * argument errors come before AccessDenied: bad flags, bad order, a missing or
    malformed path, an exclusion outside the top, on foreign groups;
  * GetGroup, Freeze, Track of /foreign2 (untracked, root's): AccessDenied and it
    stays untracked; GetGroup and Track of /own2 (U's): tracked; Untrack of /own2
    and of /own: done; Untrack of /foreign: refused, still tracked;
  * a pressure trigger on /own: added and removed; on /foreign: AccessDenied; a
    system-wide trigger: added and removed; invalid trigger arguments on /foreign:
    InvalidArgs; sub-2-s windows: refused to U (reported, informational, when
    freezerd itself lacks CAP_SYS_RESOURCE and refuses them to root too); with
    256 triggers over four other connections of U, a fifth connection's first
    is refused with LimitsExceeded, while root's is not;
as U2: /own refused, /other done; with euid U and real uid 0: /foreign refused,
/own/b done; as root: everything above allowed (mixed batch, /own/rc, /foreign,
Track and Untrack of /foreign2, a trigger on /foreign); root over the private socket
with its messages naming U as their sender (a field nothing checks there): still
root, not the uid freezerd has cached for that name.

Then the system bus policy (dbus/org.freezerd.Freezer1.conf, included into a
minimal system-type bus configuration with the system bus's default-deny rules):
freezerd (root) owns the name; U may call the Manager and Group interfaces,
Properties, Introspectable, Peer and ObjectManager, but is refused by the bus for
another interface and for owning the name."""

import json
import os
import pwd
import resource
import selectors
import signal
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402
from jeepney import DBusAddress, HeaderFields, new_method_call  # noqa: E402


def _uid(name):
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return None


U = _uid('nobody')
U2 = next((u for u in map(_uid, ('daemon', 'bin', 'sys', 'games', 'man')) if u not in (None, 0, U)), None)
ERROR_ACCESS_DENIED = 'org.freedesktop.DBus.Error.AccessDenied'
ERROR_LIMITS_EXCEEDED = ft.ERROR_LIMITS_EXCEEDED
OWNED = ['/own', '/own/a', '/own/a/x', '/own/b', '/own2']
ROOTS = ['/own/rc', '/foreign', '/foreign2']
# root's, named with a space at the start: AccessDenied puts them in double quotes
SPACED = ['/foreign/ s', '/foreign2/ s']
ALL = ['/own', '/own/a', '/own/a/x', '/own/b', '/own/rc', '/foreign', '/other', '/own2', '/foreign2']
WINDOW = 2_000_000
THRESHOLD = 100_000

# The unprivileged client: one JSON request a line on stdin, one JSON answer a line on stdout.
AGENT = textwrap.dedent('''
    import json, os, sys
    from jeepney import DBusAddress, MessageType, HeaderFields, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    def plain(v):
        if isinstance(v, (tuple, list)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, bytes):
            return list(v)
        return v

    conn = open_dbus_connection(sys.argv[1])
    print(json.dumps({'ready': True, 'euid': os.geteuid(), 'uid': os.getuid(), 'name': conn.unique_name}),
          flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        args = req['args']
        if req['sig'].startswith('a(sb)'):  # JSON has no tuples: ApplyBatch's structs
            args = [[tuple(x) for x in args[0]]] + args[1:]
        msg = new_method_call(DBusAddress(req['path'], req['dest'], req['iface']), req['member'],
                              req['sig'] or None, tuple(args))
        reply = conn.send_and_get_reply(msg, timeout=req['timeout'])
        if reply.header.message_type == MessageType.error:
            out = {'error': reply.header.fields.get(HeaderFields.error_name, '?'),
                   'message': reply.body[0] if reply.body else ''}
        else:
            out = {'ok': plain(reply.body)}
        print(json.dumps(out), flush=True)
''')


class Agent:
    """A D-Bus client running as another uid (setpriv), driven over a pipe."""

    def __init__(self, address, setpriv_args, what):
        self.what = what
        self.proc = subprocess.Popen(['setpriv', *setpriv_args, sys.executable, '-c', AGENT, address],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        hello = self._read()
        self.euid = hello['euid']
        self.uid = hello['uid']
        self.unique_name = hello['name']

    def _read(self, timeout=None):
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        ready = sel.select(ft.DEFAULT_TIMEOUT * 3 if timeout is None else timeout)
        sel.close()
        line = self.proc.stdout.readline() if ready else ''
        if not line:
            ft.fail(f'{self.what}: the client said nothing (exit status {self.proc.poll()})')
        return json.loads(line)

    def send_method(self, path, iface, member, sig='', args=(), dest=ft.BUS_NAME):
        """The call, without waiting for its answer (result())."""
        self.proc.stdin.write(json.dumps({'path': path, 'iface': iface, 'member': member, 'sig': sig,
                                          'args': list(args), 'dest': dest,
                                          'timeout': ft.DEFAULT_TIMEOUT * 2}) + '\n')

    def result(self):
        out = self._read()
        if 'error' in out:
            raise ft.DBusError(out['error'], out['message'])
        return out['ok']

    def call_method(self, path, iface, member, sig='', args=(), dest=ft.BUS_NAME):
        self.send_method(path, iface, member, sig, args, dest)
        return self.result()

    def call(self, member, *args):
        return self.call_method(ft.MANAGER_PATH, ft.MANAGER_IFACE, member,
                                ft.METHOD_SIGNATURES[(ft.MANAGER_IFACE, member)], args)

    def group_call(self, path, member, *args):
        return self.call_method(ft.group_object(path), ft.GROUP_IFACE, member,
                                ft.METHOD_SIGNATURES[(ft.GROUP_IFACE, member)], args)

    def get(self, obj, iface, name):
        v = self.call_method(obj, ft.PROPERTIES_IFACE, 'Get', 'ss', (iface, name))[0]
        return v[1] if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) else v

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            if ft._wait_pidfd_exit(self.proc, ft.DEFAULT_TIMEOUT) is None:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def as_user(address, uid, what=None):
    return Agent(address, [f'--reuid={uid}', f'--regid={uid}', '--clear-groups'], what or f'uid {uid}')


TRIGGERS_PER_CLIENT = 64
TRIGGERS_PER_UID = 256


def check_uid_trigger_cap(bus, u, root, pid):
    """All the connections of one uid but root together hold at most 256 triggers, and
    never more than a quarter of those freezerd keeps (a quarter of its RLIMIT_NOFILE,
    1,024 at most): root is not bound by U's."""
    nofile = resource.prlimit(pid, resource.RLIMIT_NOFILE)[0]
    per_uid = min(TRIGGERS_PER_UID, min(1024, max(16, nofile // 4)) // 4)
    agents = [as_user(bus.address, U, f'U, connection {i}') for i in range(-(-per_uid // TRIGGERS_PER_CLIENT))]
    try:
        left = per_uid
        for a in agents:
            for _ in range(min(left, TRIGGERS_PER_CLIENT)):
                a.call('AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)
            left -= min(left, TRIGGERS_PER_CLIENT)
        e = ft.expect_dbus_error(ERROR_LIMITS_EXCEEDED, u.call, 'AddPressureTrigger', 'cpu', 'some', THRESHOLD,
                                 WINDOW)
        ft.check('one user' in e.message, f'U: a trigger beyond {per_uid} over its connections is refused '
                 'on a connection that has none', e.message)
        rid = root.call('AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
        ft.check(rid > 0, 'root is not bound by U\'s triggers', rid)
        root.call('RemovePressureTrigger', rid)
    finally:
        for a in agents:
            a.close()


def denied(fn, *args, path, what=None):
    """fn(*args) fails with AccessDenied naming path, and naming no uid."""
    e = ft.expect_dbus_error(ERROR_ACCESS_DENIED, fn, *args)
    print(f'#   {e.message}', flush=True)
    ft.check(path in e.message, f'{what or args}: the error names {path}', e.message)
    names = [pwd.getpwuid(U).pw_name, pwd.getpwuid(U2).pw_name, str(U), 'uid', 'owned by']
    ft.check(not any(n in e.message for n in names), f'{what or args}: the error names no uid or user', e.message)
    return e


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    if subprocess.run(['setpriv', '--help'], capture_output=True).returncode != 0:
        ft.skip('no setpriv (util-linux)')
    if U is None or U2 is None:
        ft.skip('no user "nobody", or no second system user, in the user database')
    tmo = int(ft.DEFAULT_TIMEOUT * 1e6)
    R = ft.FLAG_RECURSIVE
    with ft.Scratch('access') as sc:
        for g in ALL:
            sc.mkdir(g)
        for g in SPACED:
            sc.mkdir(g)
        for g in OWNED:
            sc.delegate(g, U)
        sc.delegate('/other', U2)
        sc.spawn_sleepers('/own/a/x', 1)
        sc.spawn_sleepers('/foreign', 1)
        pressure = os.path.exists('/proc/pressure/cpu') and os.path.exists(sc.abspath('/own', 'cpu.pressure'))

        def flags(paths=ALL):
            return {g: sc.read_freeze(g) for g in paths}

        all_zero = {g: 0 for g in ALL}

        with ft.Bus() as bus:
            bus.open_to_other_uids()
            with ft.Daemon(bus, sc.root, config={'track': ['/own', '/foreign', '/other']}) as d, \
                    as_user(bus.address, U) as u:
                root = d.client
                ft.check_equal((u.uid, u.euid), (U, U), 'the client runs as U')

                def tracked():
                    return {p for p, _o, _s in root.call('ListGroups')[0]}

                def groups_count():
                    return root.manager_property('Groups')

                # -- reads
                listed = {p for p, _o, _s in u.call('ListGroups')[0]}
                ft.check({'/own', '/own/rc', '/foreign', '/other'} <= listed, 'U: ListGroups', listed)
                ft.check_equal(u.call('GetGroup', '/foreign')[0], ft.group_object('/foreign'), 'U: GetGroup /foreign')
                before = tracked()
                ft.check_equal(u.call('GetGroup', '/')[0], ft.group_object('/'), 'U: GetGroup / ("/" not tracked)')
                ft.check_equal(tracked(), before, 'U: GetGroup / tracked nothing')
                ft.check_equal(u.get(ft.group_object('/foreign'), ft.GROUP_IFACE, 'FreezerState'), 'running',
                               'U: Get FreezerState of /foreign')
                props = u.call_method(ft.group_object('/foreign'), ft.PROPERTIES_IFACE, 'GetAll', 's',
                                      (ft.GROUP_IFACE,))[0]
                ft.check('Freeze' in props and 'Path' in props, 'U: GetAll of /foreign', sorted(props))
                objs = u.call_method(ft.MANAGER_PATH, ft.OBJECT_MANAGER_IFACE, 'GetManagedObjects')[0]
                ft.check(ft.group_object('/foreign') in objs, 'U: GetManagedObjects')
                xml = u.call_method(ft.MANAGER_PATH, 'org.freedesktop.DBus.Introspectable', 'Introspect')[0]
                ft.check('org.freezerd.Freezer1.Manager' in xml, 'U: Introspect')
                ft.check(u.get(ft.MANAGER_PATH, ft.MANAGER_IFACE, 'Version'), 'U: Version')

                # -- single groups
                n0 = groups_count()
                denied(u.call, 'Freeze', '/foreign', tmo, 0, path='/foreign')
                denied(u.call, 'Thaw', '/foreign', tmo, 0, path='/foreign')
                denied(u.group_call, '/foreign', 'Freeze', tmo, 0, path='/foreign', what='Group.Freeze /foreign')
                denied(u.group_call, '/foreign', 'Thaw', tmo, 0, path='/foreign', what='Group.Thaw /foreign')
                denied(u.call, 'Freeze', '/own/rc', tmo, 0, path='/own/rc')
                denied(u.call, 'Freeze', '/other', tmo, 0, path='/other')
                ft.check_equal(flags(), all_zero, 'nothing was written')
                ft.check_equal(sc.read_events('/foreign')['frozen'], 0, '/foreign runs')
                e = denied(u.call, 'Freeze', '/foreign/ s', tmo, 0, path='"/foreign/ s"')
                ft.check_equal(e.message, 'Not allowed to freeze or thaw "/foreign/ s": only root and the owner of its '
                               'cgroup.freeze may; nothing was written', 'Freeze "/foreign/ s": the message')
                ft.check_equal(sc.read_freeze('/foreign/ s'), 0, '"/foreign/ s" was not written')

                u.call('Freeze', '/own/a/x', tmo, 0)
                ft.check_equal((sc.read_freeze('/own/a/x'), sc.read_events('/own/a/x')['frozen']), (1, 1),
                               'U froze its /own/a/x (kernel frozen)')
                u.call('Thaw', '/own/a/x', tmo, 0)
                ft.check_equal((sc.read_freeze('/own/a/x'), sc.read_events('/own/a/x')['frozen']), (0, 0),
                               'U thawed its /own/a/x')
                u.group_call('/own/b', 'Freeze', tmo, 0)
                ft.check_equal(sc.read_freeze('/own/b'), 1, 'U: Group.Freeze of /own/b')
                u.group_call('/own/b', 'Thaw', tmo, 0)
                ft.check_equal(sc.read_freeze('/own/b'), 0, 'U: Group.Thaw of /own/b')

                # -- RECURSIVE
                denied(u.call, 'Freeze', '/own', tmo, R, path='/own/rc', what='Freeze /own RECURSIVE')
                ft.check_equal(flags(), all_zero, 'refused RECURSIVE: nothing was written')
                # A group of root's whose flag would not change needs no permission: U's
                # "thaw everything below /own" works while root's /own/rc runs (it was
                # refused), and is refused, writing nothing, while root froze it.
                u.call('Freeze', '/own/b', tmo, 0)
                u.group_call('/own', 'Thaw', tmo, R)
                ft.check_equal(flags(), all_zero, 'U: Group.Thaw /own RECURSIVE with root\'s /own/rc running: done')
                ft.check_equal(tuple(u.call('ApplyBatch', [('/own', False)], 'auto', tmo, R)),
                               (0, len([g for g in ALL if g.startswith('/own/') or g == '/own'])),
                               'U: ApplyBatch [thaw /own] RECURSIVE with root\'s /own/rc running: all skipped')
                u.call('Freeze', '/own/b', tmo, 0)
                sc.write_freeze('/own/rc', 1)
                ft.wait_for(lambda: root.group_property('/own/rc', 'Freeze'), what='freezerd to see root\'s flag on /own/rc')
                denied(u.group_call, '/own', 'Thaw', tmo, R, path='/own/rc',
                       what='Group.Thaw /own RECURSIVE with /own/rc frozen by root')
                ft.check_equal(sc.read_freeze('/own/b'), 1, 'refused: /own/b still frozen')
                sc.write_freeze('/own/rc', 0)
                ft.wait_for(lambda: not root.group_property('/own/rc', 'Freeze'), what='freezerd to see /own/rc thawed')
                u.call('Thaw', '/own/b', tmo, 0)
                ft.check_equal(flags(), all_zero, 'and all thawed again')
                # So is a group of root's that freezerd does not follow (for its name; the
                # RECURSIVE thaw clears those too): its flag 0 needs no permission (the
                # thaw was refused naming it), set by root it refuses the thaw whole.
                rodd = os.fsencode(sc.abspath('/own')) + b'/rodd\xff'
                os.mkdir(rodd)
                root.call('ListGroups')  # a round trip after freezerd read the IN_CREATE
                u.call('Freeze', '/own/b', tmo, 0)
                u.group_call('/own', 'Thaw', tmo, R)
                ft.check_equal(flags(), all_zero, 'U: Group.Thaw /own RECURSIVE with root\'s unfollowed '
                                                  '/own/rodd\\xff running: done')
                u.call('Freeze', '/own/b', tmo, 0)
                with open(rodd + b'/cgroup.freeze', 'w') as f:
                    f.write('1')
                denied(u.group_call, '/own', 'Thaw', tmo, R, path='/own/rodd\\xff',
                       what='Group.Thaw /own RECURSIVE with /own/rodd\\xff frozen by root')
                ft.check_equal(sc.read_freeze('/own/b'), 1, 'refused: /own/b still frozen')
                os.rmdir(rodd)
                u.call('Thaw', '/own/b', tmo, 0)
                ft.check_equal(flags(), all_zero, 'and all thawed again')
                # The same below U's group whose name holds a literal backslash: the path
                # names it with that backslash doubled, as every quoted path has it (its
                # "\x0a" read as an escaped newline).
                sc.mkdir('/own/bs\\x0a')
                sc.delegate('/own/bs\\x0a', U)
                rodd = os.fsencode(sc.abspath('/own/bs\\x0a')) + b'/rodd\xff'
                os.mkdir(rodd)
                with open(rodd + b'/cgroup.freeze', 'w') as f:
                    f.write('1')
                root.call('ListGroups')  # a round trip after freezerd read the IN_CREATE
                denied(u.group_call, '/own/bs\\x0a', 'Thaw', tmo, R, path='/own/bs\\\\x0a/rodd\\xff',
                       what='Group.Thaw /own/bs\\x0a RECURSIVE with its /rodd\\xff frozen by root')
                with open(rodd + b'/cgroup.freeze', 'w') as f:
                    f.write('0')
                os.rmdir(rodd)
                os.rmdir(sc.abspath('/own/bs\\x0a'))
                # Below U's group whose name ends with a space: the path in double quotes, as
                # one path (bare, "/own/sp /rodd\\xff" read as two).
                sc.mkdir('/own/sp ')
                sc.delegate('/own/sp ', U)
                rodd = os.fsencode(sc.abspath('/own/sp ')) + b'/rodd\xff'
                os.mkdir(rodd)
                with open(rodd + b'/cgroup.freeze', 'w') as f:
                    f.write('1')
                root.call('ListGroups')  # a round trip after freezerd read the IN_CREATE
                denied(u.group_call, '/own/sp ', 'Thaw', tmo, R, path='"/own/sp /rodd\\xff"',
                       what='Group.Thaw "/own/sp " RECURSIVE with its /rodd\\xff frozen by root')
                with open(rodd + b'/cgroup.freeze', 'w') as f:
                    f.write('0')
                os.rmdir(rodd)
                os.rmdir(sc.abspath('/own/sp '))
                # The group a RECURSIVE call names must pass even when its flag would not
                # change, as without RECURSIVE ("Who may do what"): thawing root's running
                # /foreign or /own/rc is refused, not a success that wrote nothing.
                denied(u.call, 'Thaw', '/foreign', tmo, R, path='/foreign', what='Thaw /foreign RECURSIVE')
                denied(u.group_call, '/foreign', 'Thaw', tmo, R, path='/foreign',
                       what='Group.Thaw /foreign RECURSIVE')
                denied(u.call, 'Thaw', '/own/rc', tmo, R, path='/own/rc', what='Thaw /own/rc RECURSIVE')
                denied(u.call, 'ApplyBatch', [('/foreign', False)], 'auto', tmo, R, path='/foreign',
                       what='ApplyBatch [thaw /foreign] RECURSIVE')
                # Also where a later request's subtree decides the named group's flag.
                denied(u.call, 'ApplyBatch', [('/own/rc', False), ('/own', False)], 'auto', tmo, R,
                       path='/own/rc', what='ApplyBatch [thaw /own/rc, thaw /own] RECURSIVE')
                ft.check_equal(flags(), all_zero, 'refused RECURSIVE thaws of named groups: nothing was written')
                u.call('Freeze', '/own/a', tmo, R)
                ft.check_equal(flags(['/own/a', '/own/a/x']), {'/own/a': 1, '/own/a/x': 1},
                               'U: Freeze /own/a RECURSIVE')
                u.call('Thaw', '/own/a', tmo, R)
                ft.check_equal(flags(), all_zero, 'U: Thaw /own/a RECURSIVE')

                # -- ApplyBatch
                denied(u.call, 'ApplyBatch', [('/own/a', True), ('/foreign', True)], 'auto', tmo, 0,
                       path='/foreign', what='ApplyBatch [/own/a, /foreign]')
                denied(u.call, 'ApplyBatch', [('/foreign', True), ('/own/a', True)], 'top-down', tmo, 0,
                       path='/foreign', what='ApplyBatch [/foreign, /own/a]')
                denied(u.call, 'ApplyBatch', [('/own/b', True), ('/own/rc', False)], 'auto', tmo, 0,
                       path='/own/rc', what='ApplyBatch [/own/b, thaw /own/rc]')
                denied(u.call, 'ApplyBatch', [('/own', True)], 'auto', tmo, R, path='/own/rc',
                       what='ApplyBatch [/own] RECURSIVE')
                ft.check_equal(flags(), all_zero, 'refused batches: nothing was written')
                ft.check_equal(tuple(u.call('ApplyBatch', [('/own/a', True), ('/own/b', True)], 'auto', tmo, 0)),
                               (2, 0), 'U: ApplyBatch of its own groups')
                ft.check_equal(flags(['/own/a', '/own/b']), {'/own/a': 1, '/own/b': 1}, 'both flags set')
                u.call('ApplyBatch', [('/own/a', False), ('/own/b', False)], 'auto', tmo, 0)
                ft.check_equal(flags(), all_zero, 'U: and thawed')

                # -- FreezeExcept
                denied(u.call, 'FreezeExcept', '/own', ['/own/a'], tmo, 0, path='/own/rc',
                       what='FreezeExcept /own but /own/a')
                denied(u.call, 'FreezeExcept', '/foreign', [], tmo, 0, path='/foreign')
                ft.check_equal(flags(), all_zero, 'refused FreezeExcept: nothing was written')
                cover = u.call('FreezeExcept', '/own', ['/own/rc'], tmo, 0)[0]
                ft.check_equal(sorted(cover), ['/own/a', '/own/b'], 'U: FreezeExcept /own but /own/rc')
                u.call('ApplyBatch', [(p, False) for p in cover], 'auto', tmo, 0)
                ft.check_equal(flags(), all_zero, 'and thawed')

                # -- FreezeExcept with an excluded group frozen: the groups' state is checked after
                # access (the XML's "Order of checks"), so a cover holding root's /own/rc is refused
                # first; with a cover that is all U's, the state error follows.
                root.call('Freeze', '/own/b', tmo, 0)
                denied(u.call, 'FreezeExcept', '/own', ['/own/a/x', '/own/b'], tmo, 0, path='/own/rc',
                       what='FreezeExcept /own but /own/a/x and the frozen /own/b')
                e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, u.call, 'FreezeExcept', '/own', ['/own/b', '/own/rc'],
                                         tmo, 0)
                ft.check('/own/b' in e.message and 'its own cgroup.freeze is 1' in e.message,
                         'U: then InvalidArgs, /own/b\'s own flag', e.message)
                root.call('Thaw', '/own/b', tmo, 0)
                root.call('Freeze', '/own/a', tmo, 0)
                denied(u.call, 'FreezeExcept', '/own', ['/own/a/x'], tmo, 0, path='/own/rc',
                       what='FreezeExcept /own but /own/a/x, which the frozen /own/a freezes')
                e = ft.expect_dbus_error(ft.ERROR_FROZEN_BY_PARENT, u.call, 'FreezeExcept', '/own',
                                         ['/own/a/x', '/own/rc'], tmo, 0)
                ft.check('/own/a/x' in e.message and 'ancestor /own/a' in e.message,
                         'U: then FrozenByParent naming /own/a', e.message)
                root.call('Thaw', '/own/a', tmo, 0)
                ft.check_equal(flags(), all_zero, 'FreezeExcept of frozen exclusions: nothing was written')

                # -- argument errors first
                ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, u.call, 'Freeze', '/foreign', tmo, 1 << 7)
                ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, u.group_call, '/foreign', 'Freeze', tmo, 1 << 7)
                ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, u.call, 'Freeze', '/nope', tmo, 0)
                ft.expect_dbus_error(ft.ERROR_INVALID_PATH, u.call, 'Freeze', '/foreign/../own', tmo, 0)
                ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, u.call, 'ApplyBatch', [('/foreign', True)], 'sideways',
                                     tmo, 0)
                ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, u.call, 'ApplyBatch',
                                     [('/foreign', True), ('/nope', True)], 'auto', tmo, 0)
                ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, u.call, 'ApplyBatch', [], 'auto', tmo, 0)
                ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, u.call, 'FreezeExcept', '/foreign', ['/own/a'], tmo, 0)
                ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, u.call, 'FreezeExcept', '/own', ['/own/a'], tmo, 1 << 2)
                ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, u.call, 'Track', '/nope')
                ft.expect_dbus_error(ft.ERROR_INVALID_PATH, u.call, 'Track', 'a//b')
                ft.expect_dbus_error(ft.ERROR_NOT_TRACKED, u.call, 'Untrack', '/own/a')
                ft.check_equal(flags(), all_zero, 'argument errors: nothing was written')

                # -- tracking
                denied(u.call, 'GetGroup', '/foreign2', path='/foreign2')
                denied(u.call, 'Freeze', '/foreign2', tmo, 0, path='/foreign2', what='Freeze untracked /foreign2')
                denied(u.call, 'ApplyBatch', [('/own/a', True), ('/foreign2', True)], 'auto', tmo, 0,
                       path='/foreign2', what='ApplyBatch with untracked /foreign2')
                denied(u.call, 'Track', '/foreign2', path='/foreign2')
                e = denied(u.call, 'GetGroup', '/foreign2/ s', path='"/foreign2/ s"')
                ft.check(e.message.startswith('"/foreign2/ s" lies outside the tracked subtrees'),
                         'GetGroup "/foreign2/ s": the message names it in double quotes', e.message)
                ft.check('/foreign2' not in tracked() and groups_count() == n0,
                         'U could not make freezerd track /foreign2', tracked())
                denied(u.call, 'Untrack', '/foreign', path='/foreign')
                ft.check('/foreign' in tracked(), '/foreign is still tracked')
                ft.check_equal(u.call('GetGroup', '/own2')[0], ft.group_object('/own2'),
                               'U: GetGroup of its untracked /own2 tracks it')
                ft.check('/own2' in tracked(), '/own2 is tracked now')
                u.call('Untrack', '/own2')
                ft.check('/own2' not in tracked(), 'U: Untrack /own2')
                ft.check_equal(u.call('Track', '/own2')[0], ft.group_object('/own2'), 'U: Track /own2')
                u.call('Freeze', '/own2', tmo, 0)
                u.call('Thaw', '/own2', tmo, 0)
                u.call('Untrack', '/own2')
                ft.check_equal(flags(), all_zero, 'tracking: nothing was written')

                # -- pressure triggers
                if pressure:
                    tid = u.group_call('/own', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
                    ft.check(tid > 0, 'U: a trigger on /own', tid)
                    u.group_call('/own', 'RemovePressureTrigger', tid)
                    denied(u.group_call, '/foreign', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW,
                           path='/foreign', what='AddPressureTrigger on /foreign')
                    ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, u.group_call, '/foreign', 'AddPressureTrigger',
                                         'bogus', 'some', THRESHOLD, WINDOW)
                    sid = u.call('AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
                    ft.check(sid > 0, 'U: a system-wide trigger', sid)
                    u.call('RemovePressureTrigger', sid)
                    # Root's trigger on /foreign, which U can neither see removed nor remove.
                    rid = root.group_call('/foreign', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
                    ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, u.group_call, '/foreign', 'RemovePressureTrigger',
                                         rid)
                    root.group_call('/foreign', 'RemovePressureTrigger', rid)
                    # Sub-2-s windows: for root only.
                    try:
                        rid = root.group_call('/own', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, 1_000_000)[0]
                        root.group_call('/own', 'RemovePressureTrigger', rid)
                        root_short = True
                    except ft.DBusError:
                        root_short = False
                    e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, u.group_call, '/own', 'AddPressureTrigger',
                                             'cpu', 'some', THRESHOLD, 1_000_000)
                    ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, u.call, 'AddPressureTrigger',
                                         'cpu', 'some', THRESHOLD, 1_000_000)
                    if root_short:
                        ft.check('other than root' in e.message, 'U: a 1-s window is refused for its uid', e.message)
                    else:
                        print('# freezerd lacks CAP_SYS_RESOURCE: 1-s windows are refused to root too '
                              f'({e.message})', flush=True)
                    check_uid_trigger_cap(bus, u, root, d.pid)
                else:
                    print('# no pressure stall information: trigger checks left out', flush=True)

                # -- SKIP_MISSING: U's /own/gone, removed a moment ago (freezerd has not
                # read its IN_DELETE), its flag never written by freezerd (the owner's
                # lookup opens it by path, and finds nothing): left out, as for root,
                # not NoSuchGroup from the access check.  The call is in freezerd's socket
                # before it goes on (stopped in epoll_wait(): see test-batch-vanished).
                def skip_missing_raced(flags):
                    """U's ApplyBatch([/own/a, /own/gone], flags) sent while freezerd is stopped,
                    after /own/gone (in the model) was removed: its reply."""
                    sc.mkdir('/own/gone')
                    sc.delegate('/own/gone', U)
                    root.call('GetGroup', '/own/gone')  # in the model
                    ft.stop_in_epoll_wait(d.pid)
                    try:
                        sc.rmdir('/own/gone')
                        queued = ft.unix_recv_queued(d.pid)
                        u.send_method(ft.MANAGER_PATH, ft.MANAGER_IFACE, 'ApplyBatch', 'a(sb)stt',
                                      ([('/own/a', True), ('/own/gone', True)], 'auto', tmo, flags))
                        ft.wait_for(lambda: ft.unix_recv_queued(d.pid) > queued, poll=0.001,
                                    what='the call waits in freezerd\'s socket')
                    finally:
                        os.kill(d.pid, signal.SIGCONT)
                    return tuple(u.result())

                what = 'U: ApplyBatch([/own/a, /own/gone], SKIP_MISSING), /own/gone removed a moment ago'
                ft.check_equal(skip_missing_raced(1 << 3), (1, 1), f'{what}: /own/a written, /own/gone skipped')
                ft.check_equal(sc.read_freeze('/own/a'), 1, f'{what}: /own/a set')
                root.call('Thaw', '/own/a', tmo, 0)
                # (freezerd has read the removal before /own/gone is made again)
                ft.wait_for(lambda: '/own/gone' not in {p for p, _o, _s in root.call('ListGroups')[0]},
                            what='/own/gone gone from the model')

                # The same with RECURSIVE: the named group, let through as gone by the
                # check before the expansion, is left out of the expanded batch too.
                what = 'U: ApplyBatch([/own/a, /own/gone], SKIP_MISSING|RECURSIVE), /own/gone removed a moment ago'
                ft.check_equal(skip_missing_raced((1 << 3) | ft.FLAG_RECURSIVE), (2, 1),
                               f'{what}: /own/a, /own/a/x written, /own/gone skipped')
                ft.check_equal((sc.read_freeze('/own/a'), sc.read_freeze('/own/a/x')), (1, 1),
                               f'{what}: /own/a, /own/a/x set')
                root.call('Thaw', '/own/a', tmo, ft.FLAG_RECURSIVE)

                # -- another uid, and an effective uid alone
                with as_user(bus.address, U2) as u2:
                    denied(u2.call, 'Freeze', '/own/a', tmo, 0, path='/own/a', what='U2: Freeze /own/a')
                    denied(u2.call, 'Track', '/own2', path='/own2', what='U2: Track /own2')
                    u2.call('Freeze', '/other', tmo, 0)
                    ft.check_equal(sc.read_freeze('/other'), 1, 'U2 froze its /other')
                    u2.call('Thaw', '/other', tmo, 0)
                with Agent(bus.address, [f'--euid={U}', f'--egid={U}', '--clear-groups'], 'euid U') as ue:
                    ft.check_equal((ue.uid, ue.euid), (0, U), 'the second client has real uid 0, effective U')
                    denied(ue.call, 'Freeze', '/foreign', tmo, 0, path='/foreign', what='euid U: Freeze /foreign')
                    ue.call('Freeze', '/own/b', tmo, 0)
                    ft.check_equal(sc.read_freeze('/own/b'), 1, 'euid U froze /own/b')
                    ue.call('Thaw', '/own/b', tmo, 0)
                ft.check_equal(flags(), all_zero, 'other uids: all thawed')

                # -- root: everywhere
                ft.check_equal(tuple(root.call('ApplyBatch', [('/own/a', True), ('/foreign', True), ('/own/rc', True)],
                                               'auto', tmo, 0)), (3, 0), 'root: a mixed batch')
                ft.check_equal(sc.read_events('/foreign')['frozen'], 1, '/foreign frozen by root')
                root.call('Thaw', '/own', tmo, R)
                root.call('Thaw', '/foreign', tmo, 0)
                root.call('Freeze', '/own', tmo, R)
                root.call('Thaw', '/own', tmo, R)
                root.call('FreezeExcept', '/own', ['/own/a'], tmo, 0)
                root.call('Thaw', '/own', tmo, R)
                ft.check_equal(root.call('Track', '/foreign2')[0], ft.group_object('/foreign2'), 'root: Track /foreign2')
                root.call('Untrack', '/foreign2')
                if pressure:
                    rid = root.group_call('/other', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
                    root.group_call('/other', 'RemovePressureTrigger', rid)
                ft.check_equal(flags(), all_zero, 'root: all thawed')

                # -- the private socket: a message naming U's unique name as its sender is not U's
                # (no bus daemon vouches for that field there; U's uid is in freezerd's cache by now)
                private = os.path.join(d.runtime_dir, 'private')
                with ft.Client(f'unix:path={private}', direct=True) as p:
                    msg = new_method_call(DBusAddress(ft.MANAGER_PATH, ft.BUS_NAME, ft.MANAGER_IFACE), 'Freeze',
                                          ft.METHOD_SIGNATURES[(ft.MANAGER_IFACE, 'Freeze')], ('/foreign', tmo, 0))
                    msg.header.fields[HeaderFields.sender] = u.unique_name
                    serial = next(p.conn.outgoing_serial)
                    p.conn.send(msg, serial=serial)
                    ft.PendingCall(p, serial, 'Freeze /foreign naming U as sender').result(ft.DEFAULT_TIMEOUT)
                    ft.check_equal(sc.read_events('/foreign')['frozen'], 1, 'root\'s private connection naming U as '
                                   'its sender froze /foreign (its own uid counts, not the cached one of that name)')
                    p.call('Thaw', '/foreign', tmo, 0)
                ft.check_equal(flags(), all_zero, 'all thawed')

                # -- U may drop its own tracked subtree (config-tracked or not)
                u.call('Untrack', '/own')
                ft.check('/own' not in tracked(), 'U: Untrack /own')
                root.call('Track', '/own')

        # -- the system bus policy
        with tempfile.TemporaryDirectory(prefix=f'{ft.TMP_PREFIX}daemon-{os.getpid()}-') as tmp:
            conf = os.path.join(tmp, 'system-like.conf')
            with open(conf, 'w') as f:
                f.write(SYSTEM_LIKE_CONF.format(policy=os.path.join(ft.SRCDIR, 'dbus', 'org.freezerd.Freezer1.conf')))
            with ft.Bus(config=conf) as bus:
                bus.open_to_other_uids()
                with ft.Daemon(bus, sc.root, config={'track': ['/own', '/foreign']}) as d, \
                        as_user(bus.address, U, 'U on a system-like bus') as u:
                    ft.check(u.get(ft.MANAGER_PATH, ft.MANAGER_IFACE, 'Version'), 'policy: U may read properties')
                    u.call_method(ft.MANAGER_PATH, 'org.freedesktop.DBus.Introspectable', 'Introspect')
                    u.call_method(ft.MANAGER_PATH, 'org.freedesktop.DBus.Peer', 'Ping')
                    u.call_method(ft.MANAGER_PATH, ft.OBJECT_MANAGER_IFACE, 'GetManagedObjects')
                    ft.check(True, 'policy: U may use Introspectable, Peer, ObjectManager')
                    u.call('Freeze', '/own/b', tmo, 0)
                    u.group_call('/own/b', 'Thaw', tmo, 0)
                    ft.check_equal(sc.read_freeze('/own/b'), 0, 'policy: U may call Manager and Group methods')
                    denied(u.call, 'Freeze', '/foreign', tmo, 0, path='/foreign', what='policy: freezerd decides')
                    e = ft.expect_dbus_error(ERROR_ACCESS_DENIED, u.call_method, ft.MANAGER_PATH,
                                             'org.freezerd.Freezer1.Nope', 'Freeze')
                    ft.check('/foreign' not in e.message and 'nothing was' not in e.message,
                             'policy: the bus refuses another interface', e.message)
                    e = ft.expect_dbus_error(ERROR_ACCESS_DENIED, u.call_method, '/org/freedesktop/DBus',
                                             'org.freedesktop.DBus', 'RequestName', 'su', (ft.BUS_NAME, 0),
                                             'org.freedesktop.DBus')
                    ft.check(True, 'policy: U may not own org.freezerd.Freezer1')
                    ft.check_equal(d.client.call_method('/org/freedesktop/DBus', 'org.freedesktop.DBus',
                                                        'GetNameOwner', 's', (ft.BUS_NAME,),
                                                        destination='org.freedesktop.DBus')[0] != '', True,
                                   'policy: root (freezerd) owns the name')
                    ft.check_equal(flags(), all_zero, 'policy: nothing left frozen')


# The system bus's default rules (as in dbus's system.conf) plus freezerd's policy.
SYSTEM_LIKE_CONF = '''<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
    <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"
          send_member="UpdateActivationEnvironment"/>
  </policy>
  <include>{policy}</include>
</busconfig>
'''

ft.run(test)
