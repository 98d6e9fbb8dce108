#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Malformed paths, missing groups and bad flags are refused, and nothing is written.

  /g     one sleeper      /g/h   (empty)

Checks (each error's message names the path it is about):
  * InvalidPath for "/g/../g", "/g/./h", "..", "/..", "g//h", "" (Freeze, Thaw,
    GetGroup), for "/g/cgroup.procs" (a file, not a cgroup), and for Freeze /
    Thaw of "/" (the root cannot be frozen), also through the root's group object.
    (cgroupfs has no symlinks, so RESOLVE_NO_SYMLINKS is not exercised here.)
  * NoSuchGroup for "/missing", "/g/missing/deeper" (Freeze, Thaw, GetGroup, Track)
    and for the group object of a missing group.
  * NoSuchGroup for " /missing", "/missing ", "/g/ h", " " (Freeze, Thaw, GetGroup,
    Track, an exclusion of FreezeExcept): the message names the path normalized, in
    double quotes ('"/ /missing" does not exist', which read "/ /missing does not
    exist"); FreezeExcept's exclusion "missing" is "/missing", as its lookup says (it
    said "missing").  freezectl's line names " /missing" so too ("/ /missing" was
    bare), and a file system path ending in a space still gets its hint.
  * Groups "/p ", "/p / b", "/q " that exist: Thaw("/p / b") while "/p " is frozen
    fails with FrozenByParent naming both in double quotes (freezectl's line too),
    as does FreezeExcept("/", ["/p / b"]) then; FreezeExcept("/p ", ["/q "]) and
    FreezeExcept("/p / b", ["/p "]) fail with 'Excluded group "/q " is not below
    "/p "' (each path bare before, which read "/p" and "/ b").
  * org.freedesktop.DBus.Error.InvalidArgs for flags 8, 16 and 1<<63 (Freeze,
    Thaw, Group.Freeze).
  * After all of these every cgroup.freeze is still 0 and FreezerState "running".
  * A path without the leading "/" is accepted: Freeze("g") freezes /g.
  * Huge arguments: the error quotes the first 96 and the last 160 bytes of each, each
    cut on a character, then " (N bytes)" (until session 35 the first 256 bytes):
    Freeze of a 1 MB path, ApplyBatch with a 1 MB order, a pressure trigger with a
    200 kB resource, NoSuchGroup for a 3 kB path (until session 34 the order and the
    resource came back whole, a 1 MB message); a path of 3000 "é" gets its InvalidPath
    (until session 34 the cut fell inside a character, sd-bus could not send the
    error, and the call went unanswered).
  * Calls on object paths of no object (on the bus and on the private socket): a
    missing group's of 3 kB and of 60 kB, one below a group, one outside freezerd's
    prefix: Group.Freeze, Get, GetAll, Introspect, an unknown method each get
    UnknownObject, the path quoted as above (until session 35 sd-bus's message quoted
    the whole object path, 60 kB).  Peer.Ping there is still answered, and a group
    whose object path is 439 bytes long still answers Get, GetAll, and UnknownMethod.
    A call on an object path over 64 kB is dropped by sd-bus unanswered (README): the
    connection serves on."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def check_huge(c):
    for what, arg, err, call in (
            ('Freeze of a 1 MB path', '/' + 'a' * (1 << 20), ft.ERROR_INVALID_PATH,
             lambda a: c.call('Freeze', a, 0, 0)),
            ('GetGroup of "/g/" and 3000 "é"', '/g/' + 'é' * 3000, ft.ERROR_INVALID_PATH,
             lambda a: c.call('GetGroup', a)),
            ('Track of a missing 2 kB path', '/g/missing' + ('/' + 'c' * 20) * 100, ft.ERROR_NO_SUCH_GROUP,
             lambda a: c.call('Track', a)),
            ('ApplyBatch with a 1 MB order', 'x' * (1 << 20), ft.ERROR_INVALID_ARGS,
             lambda a: c.call('ApplyBatch', [('/g', True)], a, 0, 0)),
            ('AddPressureTrigger of a 200 kB resource', 'é' * 100000, None,
             lambda a: c.call('AddPressureTrigger', a, 'some', 100000, 2000000))):
        try:  # (not expect_dbus_error(), whose check would print the argument)
            call(arg)
            ft.fail(f'{what} succeeded')
        except ft.DBusError as x:
            e = x
        ft.check(err is None or e.name == err, f'{what}: {err or "an error"}', e.name)
        size = len(arg.encode())
        ft.check(len(e.message.encode()) < ft.QUOTE_MAX + 200 and ft.quoted(arg) in e.message
                 and f' ({size} bytes)' in e.message,
                 f'{what}: the message quotes the start and the end of it, and its size '
                 f'({len(e.message.encode())} bytes)',
                 repr(e.message[:100] + ' ... ' + e.message[-100:]))


def check_spaced_groups(sc, c, bus):
    """Groups that exist, named with white space at an end: the errors about them
    (FrozenByParent, an exclusion not below the top) put each path in double quotes
    too."""
    c.call('Freeze', '/p ', 0, 0)
    e = ft.expect_dbus_error(ft.ERROR_FROZEN_BY_PARENT, c.call, 'Thaw', '/p / b', 0, 0)
    ft.check_equal(e.message, '"/p / b": its own flag is 0, but it is still frozen by "/p "',
                   'Thaw("/p / b") under the frozen "/p ": the message')
    r = ft.freezectl('thaw', '/p / b', address=bus.address, check=False)
    ft.check_equal((r.returncode, r.stderr),
                   (3, 'freezectl: cannot thaw "/p / b": FrozenByParent: "/p / b": its own flag is 0, but it '
                       'is still frozen by "/p "\n'), 'freezectl thaw "/p / b": both name them alike')
    e = ft.expect_dbus_error(ft.ERROR_FROZEN_BY_PARENT, c.call, 'FreezeExcept', '/', ['/p / b'], 0, 0)
    ft.check_equal(e.message, 'Cannot keep "/p / b" running: its ancestor "/p " freezes it (cgroup.freeze 1 there); '
                   'thaw "/p " first; nothing was written', 'FreezeExcept("/", ["/p / b"]): the message')
    c.call('Thaw', '/p ', 0, 0)
    for top, x in (('/p ', '/q '), ('/p / b', '/p ')):
        e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, c.call, 'FreezeExcept', top, [x], 0, 0)
        ft.check_equal(e.message, f'Excluded group "{x}" is not below "{top}"',
                       f'FreezeExcept({top!r}, [{x!r}]): the message')
    ft.check_equal((sc.read_freeze('/p '), sc.read_freeze('/p / b'), sc.read_freeze('/q ')), (0, 0, 0),
                   'nothing stays written below "/p " or in "/q "')


def check_unknown_objects(c, where):
    """Calls on object paths of no object: sd-bus's UnknownObject quoted the whole path."""
    long_group = '/g/' + 'b' * 200 + '/' + 'c' * 200
    for obj in (ft.GROUP_PREFIX + '/' + 'a' * 3000, ft.GROUP_PREFIX + '/' + 'x' * 60000,
                ft.group_object('/g/missing' + '/' + 'd' * 250), ft.group_object(long_group) + '/below',
                '/elsewhere/' + 'e' * 3000):
        for what, iface, member, sig, body in (
                ('Group.Freeze', ft.GROUP_IFACE, 'Freeze', 'tt', (0, 0)),
                ('Get', ft.PROPERTIES_IFACE, 'Get', 'ss', (ft.GROUP_IFACE, 'Path')),
                ('GetAll', ft.PROPERTIES_IFACE, 'GetAll', 's', (ft.GROUP_IFACE,)),
                ('Introspect', 'org.freedesktop.DBus.Introspectable', 'Introspect', None, ()),
                ('an unknown method', ft.GROUP_IFACE, 'NoSuchMethod', None, ())):
            desc = f'{where}: {what} on a {len(obj)}-byte object path of no object'
            try:
                c.call_method(obj, iface, member, sig, body)
                ft.fail(f'{desc} succeeded')
            except ft.DBusError as x:
                e = x
            ft.check(e.name == 'org.freedesktop.DBus.Error.UnknownObject' and
                     len(e.message.encode()) < ft.QUOTE_MAX + 200 and ft.quoted(obj) in e.message,
                     f'{desc}: UnknownObject, quoting the start and the end of the path and its size '
                     f'({len(e.message.encode())} bytes)', f'{e.name}: {e.message[:100]!r} ... {e.message[-100:]!r}')
    # What freezerd answers itself is only what sd-bus would not have found.
    obj = ft.GROUP_PREFIX + '/' + 'a' * 3000
    c.call_method(obj, 'org.freedesktop.DBus.Peer', 'Ping')
    ft.check(True, f'{where}: Peer.Ping on a {len(obj)}-byte object path of no object is answered')
    obj = ft.group_object(long_group)
    ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'Path'), long_group,
                   f'{where}: Path of the group with a {len(obj)}-byte object path')
    ft.check_equal(c.get_all(obj, ft.GROUP_IFACE)['Path'], long_group, f'{where}: GetAll of it')
    try:  # (not expect_dbus_error(), whose check would print the path)
        c.call_method(obj, ft.GROUP_IFACE, 'NoSuchMethod')
        ft.fail(f'{where}: an unknown method of it succeeded')
    except ft.DBusError as x:
        e = x
    ft.check(e.name == 'org.freedesktop.DBus.Error.UnknownMethod' and len(e.message) < ft.QUOTE_MAX,
             f'{where}: an unknown method of it: UnknownMethod, a short message', f'{e.name}: {e.message!r}')
    # Over 64 kB sd-bus's reader finds the message invalid and drops it: freezerd never
    # sees the call, and cannot answer it (README, "Errors").  The connection serves on.
    obj = ft.GROUP_PREFIX + '/' + 'a' * 70000
    dropped = c.send_call(obj, ft.GROUP_IFACE, 'Freeze', 'tt', (0, 0))
    ft.check_equal(c.call('GetGroup', '/g')[0], ft.group_object('/g'),
                   f'{where}: a call after one on a {len(obj)}-byte object path')
    print(f'# {where}: the call on the {len(obj)}-byte object path was '
          f'{"answered" if dropped.done() else "dropped by sd-bus, unanswered"}')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    with ft.Scratch('core-paths') as sc, ft.Bus() as bus:
        sc.mkdir('/g/h')
        sc.mkdir('/g/' + 'b' * 200 + '/' + 'c' * 200)
        sc.mkdir('/p / b')
        sc.mkdir('/q ')
        sc.spawn_sleepers('/g', 1)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client

            def refused(err, fn, *args, name_in_message=None):
                e = ft.expect_dbus_error(err, fn, *args)
                if name_in_message:
                    ft.check(name_in_message in e.message, f'  ... the message names {name_in_message!r}',
                             repr(e.message))

            for p in ('/g/../g', '/g/./h', '..', '/..', 'g//h', ''):
                for m in ('Freeze', 'Thaw'):
                    refused(ft.ERROR_INVALID_PATH, c.call, m, p, 0, 0, name_in_message=p or None)
                refused(ft.ERROR_INVALID_PATH, c.call, 'GetGroup', p)
            # Each malformed path gets its own reason.  (NUL bytes and invalid UTF-8
            # cannot travel in a D-Bus string at all: the bus refuses them; the
            # validator's handling of them is unit-tested in test-cgroup-util.)
            for p, reason in (('/x' + ('/' + 'x' * 200) * 25, 'PATH_MAX'), ('/' + 'y' * 300, 'NAME_MAX'),
                              ('/g/a\x01b', 'control character'), ('/g\nh', 'control character'),
                              ('g//h', "empty component"), ('/g/../g', "'..'")):
                e = ft.expect_dbus_error(ft.ERROR_INVALID_PATH, c.call, 'Freeze', p, 0, 0)
                ft.check(reason in e.message, f'  ... the reason says {reason!r}', repr(e.message[:120]))
            ft.check_equal(sc.read_freeze('/g'), 0, 'none of the refused calls wrote /g')
            refused(ft.ERROR_INVALID_PATH, c.call, 'Freeze', '/g/cgroup.procs', 0, 0,
                    name_in_message='/g/cgroup.procs')
            refused(ft.ERROR_INVALID_PATH, c.call, 'GetGroup', '/g/cgroup.procs')
            for m in ('Freeze', 'Thaw'):
                refused(ft.ERROR_INVALID_PATH, c.call, m, '/', 0, 0)
                refused(ft.ERROR_INVALID_PATH, c.group_call, '/', m, 0, 0)

            for p in ('/missing', '/g/missing/deeper'):
                for m in ('Freeze', 'Thaw'):
                    refused(ft.ERROR_NO_SUCH_GROUP, c.call, m, p, 0, 0, name_in_message=p)
                refused(ft.ERROR_NO_SUCH_GROUP, c.call, 'GetGroup', p, name_in_message=p)
                refused(ft.ERROR_NO_SUCH_GROUP, c.call, 'Track', p, name_in_message=p)
            # White space at the start or end of a name, which a reader does not see:
            # the path as freezerd normalizes it (" /missing" is "/ /missing"), in
            # double quotes; and an exclusion of FreezeExcept outside its top (its
            # early check) as its lookup names it, normalized.
            for p, shown in ((' /missing', '"/ /missing"'), ('/missing ', '"/missing "'), ('/g/ h', '"/g/ h"'),
                             (' ', '"/ "'), ('missing', '/missing'),
                             # A '"' inside the double quotes as \" (backslashes are doubled): the
                             # bare ones are the quotes (it read '"/ /a"b" does not exist').  A path
                             # that reads as itself stays bare, '"' and all, as freezectl's.
                             (' /a"b', r'"/ /a\"b"'), ('/a" ', r'"/a\" "'), ('/a\\" ', r'"/a\\\" "'),
                             ('/q"x', '/q"x')):
                for m in ('Freeze', 'Thaw'):
                    e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, c.call, m, p, 0, 0)
                    ft.check_equal(e.message, f'{shown} does not exist', f'{m}({p!r}): the message')
                for m in ('GetGroup', 'Track'):
                    e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, c.call, m, p)
                    ft.check_equal(e.message, f'{shown} does not exist', f'{m}({p!r}): the message')
                e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, c.call, 'FreezeExcept', '/g', [p], 0, 0)
                ft.check_equal(e.message, f'{shown} does not exist', f'FreezeExcept("/g", [{p!r}]): the message')
            # freezectl's words name it alike, and its hint for a file system path given
            # as PATH still comes.
            r = ft.freezectl('freeze', ' /missing', address=bus.address, check=False)
            ft.check_equal((r.returncode, r.stderr), (1, 'freezectl: cannot freeze "/ /missing": NoSuchGroup: '
                                                         '"/ /missing" does not exist\n'), 'freezectl freeze " /missing"')
            r = ft.freezectl('freeze', ' /a"b', address=bus.address, check=False)
            ft.check_equal((r.returncode, r.stderr), (1, r'freezectl: cannot freeze "/ /a\"b": NoSuchGroup: '
                                                         r'"/ /a\"b" does not exist' '\n'),
                           'freezectl freeze \' /a"b\': both name it alike')
            # A path that holds freezerd's "flags it wrote stay" sentence is no such list
            # (its words run on to " does not exist"): freezectl leaves them as they are.
            odd = '/x. Without ROLLBACK_ON_TIMEOUT the flags it wrote stay as asked: etc'
            r = ft.freezectl('freeze', odd, address=bus.address, check=False)
            ft.check_equal((r.returncode, r.stderr), (1, f'freezectl: cannot freeze {odd}: NoSuchGroup: {odd} does '
                                                         'not exist\n'),
                           'freezectl freeze of a missing path holding the stays sentence: not rewritten')
            r = ft.freezectl('freeze', sc.root + '/g ', address=bus.address, check=False)
            ft.check(r.returncode == 1 and f'NoSuchGroup: "{sc.root}/g " does not exist (PATH names a cgroup relative '
                     "to freezerd's cgroup root" in r.stderr,
                     'freezectl freeze of a file system path ending in a space: quoted, with its hint', r)
            ft.check_equal(sc.read_freeze('/g'), 0, 'none of these wrote /g')
            check_spaced_groups(sc, c, bus)
            try:
                c.group_call('/missing', 'Freeze', 0, 0)
                ft.fail('Group.Freeze on the object of a missing group succeeded')
            except ft.DBusError as e:
                ft.check(e.name in (ft.ERROR_NO_SUCH_GROUP, 'org.freedesktop.DBus.Error.UnknownObject',
                                    'org.freedesktop.DBus.Error.UnknownMethod'),
                         f'Group.Freeze on the object of a missing group fails ({e.name})', e)

            for flags in (8, 16, 1 << 63):
                refused(ft.ERROR_INVALID_ARGS, c.call, 'Freeze', '/g', 0, flags)
                refused(ft.ERROR_INVALID_ARGS, c.call, 'Thaw', '/g', 0, flags)
                refused(ft.ERROR_INVALID_ARGS, c.group_call, '/g', 'Freeze', 0, flags)

            ft.check_equal((sc.read_freeze('/g'), sc.read_freeze('/g/h')), (0, 0), 'nothing was written')
            ft.check_equal((c.group_property('/g', 'FreezerState'), c.group_property('/g/h', 'FreezerState')),
                           ('running', 'running'), 'both groups are running')

            check_huge(c)
            check_unknown_objects(c, 'bus')
            with ft.Client(f'unix:path={os.path.join(d.runtime_dir, "private")}', direct=True) as p:
                check_unknown_objects(p, 'private socket')
            ft.check_equal(sc.read_freeze('/g'), 0, 'the calls with huge arguments wrote nothing')

            c.call('Freeze', 'g', 0, 0)
            ft.check_equal(sc.read_events('/g').get('frozen'), 1, 'Freeze("g") (no leading "/") froze /g')
            ft.check_equal(c.call('GetGroup', 'g/h')[0], ft.group_object('/g/h'), 'GetGroup("g/h")')
            c.call('Thaw', 'g', 0, 0)
            ft.check_equal(sc.read_events('/g').get('frozen'), 0, 'Thaw("g")')
    print('# checked: InvalidPath (.., ., empty components, "", a file, "/"), NoSuchGroup, InvalidArgs for unknown '
          'flags, nothing written; a relative path is accepted')


ft.run(test)
