#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A call refused before it writes sends no signal: it changed nothing.

Its lookups may track paths outside the tracked subtrees, and its refusal undoes that
(test-core-refused-untracks).  The groups above what they added saw their Descendants
(and FrozenDescendants) go up and back down, and the Manager's Groups too: each was
marked changed, and a subscriber got PropertiesChanged, GroupsChanged and
GroupStatesChanged of "/" and the Groups property, all with the values they had before
the call.

  "track": ["/t1"]
  /other/x   a sleeper, outside; /other/y outside, its cgroup.freeze owned by nobody
  /o/a/b/c   outside, nested
  /f/x       outside, frozen (its own cgroup.freeze 1)
  /q         outside, in no model

A client subscribed to every signal (Subscribe, SubscribeGroupStates) makes each refused
call, then a group in /t1 (a fence: its InterfacesAdded comes turns after the refused
call's signals would, and its own signals end with the Manager's Groups); nothing may
arrive before the fence's InterfacesAdded:
  * ApplyBatch [(/other/x, 1), (/other/missing, 1)]: NoSuchGroup;
  * ApplyBatch [(/o/a/b, 1), (/o, 1), (/missing, 1)]: nested new roots;
  * ApplyBatch [(/f/x, 0), (/missing, 0)]: a frozen new root (FrozenDescendants of "/");
  * Freeze(/q/missing): NoSuchGroup, after the lookup added /q to the model part-way;
  * FreezeExcept(/other, [/other/missing]): NoSuchGroup;
  * as nobody, ApplyBatch [(/other/y, 1), (/other/x, 1)]: AccessDenied for /other/x;
  * with /o/a/b Track()ed: ApplyBatch [(/o/a/f...)] below /o, then /o, then (/missing, 1).
An accepted call keeps its signals: ApplyBatch [(/other/x, 0)] (nothing to write) sends
the InterfacesAdded of /other/x before its reply, then "/"'s Descendants (PropertiesChanged,
GroupsChanged, GroupStatesChanged) and the Manager's Groups with the new values.

The undo takes off only what the refused call did (call_marks_undo()); a change it did
not make is still sent, with the value the group has:
  * marked before the call, in the same loop turn: an accepted ApplyBatch [(/k/x, 0)]
    (tracks /k/x) and a refused ApplyBatch [(/o/a/b, 1), (/missing, 1)], sent together
    through the private socket while freezerd was stopped in epoll_wait(), handled in
    one turn: "/"'s Descendants (+2) and the Manager's Groups (+1) are sent, once, with
    the values after the accepted call (before, if the undo had taken off every mark of
    the groups whose counts came back, they would not be);
  * moved by kernel events read in the middle of the call: FreezeExcept("/", [/t1/b,
    /w/x]) with /w/x outside and frozen by its own flag (InvalidArgs), sent while freezerd
    was stopped, after /t1/b was removed and made again and /t1/extraN made: its lookup of
    /w/x noted "/", then /t1/b's removal, unread, made it read the events and start over
    (call_again_if_remade()); "/"'s Descendants (+1, /t1/extraN) and the Groups (+1) are
    sent, though the undo took /w and /w/x off again.  freezerd may read the removal
    first (an event of its own on the way when it was stopped): tried again (up to 5
    times) until its debug log says that it handled the call again."""

import os
import pwd
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ERROR_ACCESS_DENIED = 'org.freedesktop.DBus.Error.AccessDenied'
WATCHED = ('PropertiesChanged', 'GroupsChanged', 'GroupStatesChanged', 'InterfacesAdded', 'InterfacesRemoved')
REMADE_LINE = '/t1/b: removed and made again, its removal not read yet: the call starts over'


def values(signals, obj, name):
    """The values name took in the PropertiesChanged of obj among signals (as fence() gives them)."""
    return [ft._unvariant(body[1][name]) for path, member, body in signals
            if path == obj and member == 'PropertiesChanged' and name in body[1]]


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    nobody = pwd.getpwnam('nobody').pw_uid
    with ft.Scratch('core-refused-signals') as sc, ft.Bus() as bus:
        sc.mkdir('/t1/a')
        sc.spawn_sleepers('/other/x', 1)
        sc.mkdir('/other/y')
        sc.mkdir('/o/a/b/c')
        sc.mkdir('/o/a/f')
        sc.mkdir('/f/x')
        sc.write_freeze('/f/x', 1)
        sc.mkdir('/q')
        sc.mkdir('/t1/b')
        sc.mkdir('/k/x')
        sc.mkdir('/w/x')
        sc.write_freeze('/w/x', 1)
        for g in ('/other', '/other/y'):
            os.chown(sc.abspath(g, 'cgroup.freeze'), nobody, nobody)
        with ft.Daemon(bus, sc.root, config={'track': ['/t1']}, env={'FREEZERD_LOG_LEVEL': 'debug'}) as d:
            c = d.client
            u = ft.client_as_nobody(bus)
            rec = c.record()
            c.call('SubscribeGroupStates')
            n_fences = [0]

            def fence():
                """A group made in /t1: the signals that came before its InterfacesAdded.  Its own
                follow that in the same turn, the Manager's Groups last: taken along."""
                n_fences[0] += 1
                path = f'/t1/fence{n_fences[0]}'
                obj = ft.group_object(path)
                sc.mkdir(path)

                def at():
                    signals = rec.signals
                    added = [i for i, s in enumerate(signals) if s.member == 'InterfacesAdded' and s.body[0] == obj]
                    for j in range(added[0] + 1 if added else len(signals), len(signals)):
                        s = signals[j]
                        if s.path == ft.MANAGER_PATH and s.member == 'PropertiesChanged' and 'Groups' in s.body[1]:
                            return added[0], j
                    return None

                i, j = rec.wait_for(lambda r: at(), what=f'InterfacesAdded of {path}, then Groups') and at()
                before = rec.signals[:i]
                rec.start += j + 1
                return [(s.path, s.member, s.body) for s in before if s.member in WATCHED]

            fence()  # what the start and the subscriptions sent

            def refused(what, error, fn, *args):
                ft.expect_dbus_error(error, fn, *args)
                ft.check_equal(fence(), [], f'{what}: refused, no signal')

            refused('ApplyBatch [/other/x, /other/missing]', ft.ERROR_NO_SUCH_GROUP, c.call, 'ApplyBatch',
                    [('/other/x', True), ('/other/missing', True)], 'auto', 0, 0)
            refused('ApplyBatch [/o/a/b, /o, /missing]', ft.ERROR_NO_SUCH_GROUP, c.call, 'ApplyBatch',
                    [('/o/a/b', True), ('/o', True), ('/missing', True)], 'auto', 0, 0)
            refused('ApplyBatch [thaw /f/x (frozen), /missing]', ft.ERROR_NO_SUCH_GROUP, c.call, 'ApplyBatch',
                    [('/f/x', False), ('/missing', False)], 'auto', 0, 0)
            refused('Freeze(/q/missing)', ft.ERROR_NO_SUCH_GROUP, c.call, 'Freeze', '/q/missing', 0, 0)
            refused('FreezeExcept(/other, [/other/missing])', ft.ERROR_NO_SUCH_GROUP, c.call, 'FreezeExcept',
                    '/other', ['/other/missing'], 0, 0)
            if u:
                refused('ApplyBatch as nobody [/other/y, /other/x]', ERROR_ACCESS_DENIED, u.call, 'ApplyBatch',
                        [('/other/y', True), ('/other/x', True)], 'auto', 0, 0)
            else:
                print('# no user nobody: the AccessDenied case is left out')
            c.call('Track', '/o/a/b')
            fence()
            refused('with /o/a/b tracked: ApplyBatch [/o/a/f, /o, /missing]', ft.ERROR_NO_SUCH_GROUP, c.call,
                    'ApplyBatch', [('/o/a/f', True), ('/o', True), ('/missing', True)], 'auto', 0, 0)
            c.call('Untrack', '/o/a/b')
            fence()

            # Accepted: its signals as ever.
            root_obj = ft.group_object('/')
            n_root = c.group_property('/', 'Descendants')
            n_groups = c.manager_property('Groups')
            ft.check_equal(c.call('ApplyBatch', [('/other/x', False)], 'auto', 0, 0), (0, 1),
                           'ApplyBatch [thaw /other/x]: nothing to write, succeeds')
            ft.check_equal([o for o, _i in rec.interfaces_added()], [ft.group_object('/other/x')],
                           '  ... InterfacesAdded of /other/x, before the reply')
            ft.check_equal(c.group_property('/', 'Descendants'), n_root + 2, '  ... "/" has /other and /other/x more')
            rec.wait_for(lambda r: r.property_values(root_obj, 'Descendants') == [n_root + 2] and
                         r.property_values(ft.MANAGER_PATH, 'Groups') == [n_groups + 1] and
                         r.group_values('/', 'Descendants') == [n_root + 2] and
                         any(s.member == 'GroupStatesChanged' for s in r.signals),
                         what='PropertiesChanged of "/" and of Groups, GroupsChanged, GroupStatesChanged')
            fence()

            with ft.Client(f'unix:path={os.path.join(d.runtime_dir, "private")}', direct=True) as priv:
                # Marked before the refused call, in its loop turn: kept.
                n_root = c.group_property('/', 'Descendants')
                n_groups = c.manager_property('Groups')
                ft.stop_in_epoll_wait(d.pid)
                try:
                    accepted = priv.call_async('ApplyBatch', [('/k/x', False)], 'auto', 0, 0)
                    refused_call = priv.call_async('ApplyBatch', [('/o/a/b', True), ('/missing', True)], 'auto', 0, 0)
                finally:
                    os.kill(d.pid, signal.SIGCONT)
                ft.check_equal(accepted.result(), (0, 1), 'ApplyBatch [thaw /k/x] in the same turn: succeeds')
                ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, refused_call.result)
                got = fence()
                what = 'an accepted ApplyBatch [/k/x] and a refused [/o/a/b, /missing] in one turn'
                ft.check_equal([body[0] for _p, member, body in got if member == 'InterfacesAdded'],
                               [ft.group_object('/k/x')], f'{what}: InterfacesAdded of /k/x alone')
                ft.check_equal(values(got, ft.group_object('/'), 'Descendants'), [n_root + 2],
                               f'{what}: "/"\'s Descendants sent, with /k and /k/x')
                ft.check_equal(values(got, ft.MANAGER_PATH, 'Groups'), [n_groups + 1],
                               f'{what}: the Manager\'s Groups sent, with /k/x')

                # Moved by the kernel's events read in the middle of the refused call: kept.
                for attempt in range(5):
                    n_root = c.group_property('/', 'Descendants')
                    n_groups = c.manager_property('Groups')
                    n_remade = d.log().count(REMADE_LINE)
                    extra = f'/t1/extra{attempt}'
                    ft.stop_in_epoll_wait(d.pid)
                    try:
                        sc.rmdir('/t1/b')
                        sc.mkdir('/t1/b')
                        sc.mkdir(extra)
                        call = priv.call_async('FreezeExcept', '/', ['/t1/b', '/w/x'], 0, 0)
                    finally:
                        os.kill(d.pid, signal.SIGCONT)
                    e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, call.result)
                    got = fence()
                    if d.log().count(REMADE_LINE) > n_remade:
                        break
                    print(f'# the removal of /t1/b was read before the call, again: {e.message}', flush=True)
                else:
                    ft.fail('FreezeExcept(/, [/t1/b, /w/x]): the removal of /t1/b was read before the call in 5 tries')
                what = f'FreezeExcept(/, [/t1/b, /w/x]) refused, started over after reading {extra}\'s mkdir'
                ft.check('Cannot keep /w/x running' in e.message, f'{what}: the error names /w/x', e.message)
                ft.check(not [body[0] for _p, member, body in got
                              if member == 'InterfacesAdded' and body[0].startswith(ft.group_object('/w'))],
                         f'{what}: no InterfacesAdded of /w or /w/x', got)
                ft.check_equal(values(got, ft.group_object('/'), 'Descendants'), [n_root + 1],
                               f'{what}: "/"\'s Descendants sent, with {extra}')
                ft.check_equal(values(got, ft.MANAGER_PATH, 'Groups'), [n_groups + 1],
                               f'{what}: the Manager\'s Groups sent, with {extra}')
            if u:
                u.close()
    print('# checked: a refused call sends no signal, an accepted one its own, and the changes it did not '
          'make are sent')


ft.run(test)
