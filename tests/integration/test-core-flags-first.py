#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A call refused for its flags or its order has done nothing: it has not tracked the
paths it names either.

A path outside the tracked subtrees is tracked when a call resolves it (README, "Who
may do what"), for good (tracked.json).  A client that probes whether freezerd knows a
flag passes it and reads InvalidArgs "Unknown flags 0x..." (README, "D-Bus API":
"nothing done"); the paths came before the flags, and such a probe tracked them.

  "track": ["/t"]
  /t/a     tracked
  /u/x     outside the tracked subtrees (a sleeper)
  /v/y     outside too

Checks, each refused with InvalidArgs and followed by: ListGroups and the Groups
property unchanged (no /u, /u/x or /v), no InterfacesAdded, tracked.json unchanged:
  * busctl call Freeze stt /u/x 0 64 (unknown flag 0x40), Thaw with flag 0x10,
    Freeze with 0x8 (SKIP_MISSING, ApplyBatch's);
  * ApplyBatch [(/u/x, true)] with flag 0x40, with order "sideways", and
    [(/v/y, true), (/u/x, true)] with RECURSIVE | 0x10 through busctl;
  * FreezeExcept(/u, [/u/x]) with RECURSIVE (not FreezeExcept's) and with 0x40;
    FreezeExcept(/t, [/u/x]) and (/t, [t-u/]): an exclusion not below the top,
    refused before its path is looked up; FreezeExcept(/u, [/v/y]) and (/u, [/nonexistent]):
    the top outside the tracked subtrees is not tracked either (InvalidArgs, NoSuchGroup);
    FreezeExcept(/t/cgroup.procs, [/u/x]): the top's own InvalidPath, not the exclusion's;
    FreezeExcept(/t, [/u/cgroup.procs]): the file's InvalidPath, as its lookup says;
    FreezeExcept(/u, 4,097 exclusions) and ApplyBatch of 65,537 requests for /u/x: the
    limits, checked before the first path is looked up, their messages ending
    "; nothing was written" as the other refusals of a batch do.
  * Then, as a control, GetGroup(/u) tracks /u (published, InterfacesAdded)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'busctl')
    with ft.Scratch('core-flags-first') as sc, ft.Bus() as bus:
        sc.mkdir('/t/a')
        sc.spawn_sleepers('/u/x', 1)
        sc.mkdir('/v/y')
        sc.mkdir('/t-u')
        with ft.Daemon(bus, sc.root, config={'track': ['/t']}) as d:
            c = d.client
            rec = c.record()
            before = ft.published_paths(c)
            ft.check_equal(before, ['/', '/t', '/t/a'], 'published at start')
            roots_before = ft.tracked_roots(d.state_dir)

            def nothing_tracked(what):
                ft.check_equal(ft.published_paths(c), before, f'{what}: nothing more published')
                ft.check_equal(c.manager_property('Groups'), len(before), f'{what}: Groups unchanged')
                ft.check_equal(rec.interfaces_added(), [], f'{what}: no InterfacesAdded')
                ft.check_equal(ft.tracked_roots(d.state_dir), roots_before, f'{what}: tracked.json unchanged')
                ft.check_equal(sc.read_freeze('/u/x'), 0, f'{what}: /u/x not written')

            def refused_busctl(what, *args, contains):
                r = ft.busctl('call', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, *args, check=False)
                ft.check(r.returncode != 0 and contains in r.stderr, f'{what}: busctl fails saying {contains!r}',
                         (r.returncode, r.stderr))
                nothing_tracked(what)

            def refused(what, method, *args, contains):
                e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, c.call, method, *args)
                ft.check(contains in e.message, f'{what}: the error says {contains!r}', e.message)
                nothing_tracked(what)

            refused_busctl('Freeze with 0x40', 'Freeze', 'stt', '/u/x', '0', '64', contains='Unknown flags 0x40')
            refused_busctl('Thaw with 0x10', 'Thaw', 'stt', '/u/x', '0', '16', contains='Unknown flags 0x10')
            refused_busctl('Freeze with SKIP_MISSING', 'Freeze', 'stt', '/u/x', '0', '8',
                           contains='0x8 SKIP_MISSING applies to ApplyBatch only')
            refused('ApplyBatch with 0x40', 'ApplyBatch', [('/u/x', True)], 'auto', 0, 0x40,
                    contains='Unknown flags 0x40')
            refused('ApplyBatch with order "sideways"', 'ApplyBatch', [('/u/x', True)], 'sideways', 0, 0,
                    contains='Unknown order "sideways"')
            refused_busctl('ApplyBatch RECURSIVE with 0x10', 'ApplyBatch', 'a(sb)stt', '2', '/v/y', 'true', '/u/x',
                           'true', 'auto', '0', str(ft.FLAG_RECURSIVE | 0x10), contains='Unknown flags 0x10')
            refused('FreezeExcept with RECURSIVE', 'FreezeExcept', '/u', ['/u/x'], 0, ft.FLAG_RECURSIVE,
                    contains='0x4 RECURSIVE applies to Freeze, Thaw and ApplyBatch only')
            refused('FreezeExcept with 0x40', 'FreezeExcept', '/u', ['/u/x'], 0, 0x40, contains='Unknown flags 0x40')
            refused('FreezeExcept of /t excluding /u/x', 'FreezeExcept', '/t', ['/u/x'], 0, 0,
                    contains='Excluded group /u/x is not below /t')
            refused('FreezeExcept of /t excluding /t-u (a sibling whose name begins like it)', 'FreezeExcept', '/t',
                    ['t-u/'], 0, 0, contains='Excluded group /t-u is not below /t')

            refused('FreezeExcept of /u excluding /v/y', 'FreezeExcept', '/u', ['/v/y'], 0, 0,
                    contains='Excluded group /v/y is not below /u')
            e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, c.call, 'FreezeExcept', '/u', ['/nonexistent'], 0, 0)
            ft.check('/nonexistent does not exist' in e.message, 'FreezeExcept of /u excluding /nonexistent: '
                     'NoSuchGroup names it', e.message)
            nothing_tracked('FreezeExcept of /u excluding /nonexistent')
            e = ft.expect_dbus_error(ft.ERROR_INVALID_PATH, c.call, 'FreezeExcept', '/t/cgroup.procs', ['/u/x'], 0, 0)
            ft.check('/t/cgroup.procs is not a cgroup directory' in e.message,
                     'FreezeExcept of a file (/t/cgroup.procs): its own error first, not the exclusion\'s', e.message)
            nothing_tracked('FreezeExcept of /t/cgroup.procs')
            e = ft.expect_dbus_error(ft.ERROR_INVALID_PATH, c.call, 'FreezeExcept', '/t', ['/u/cgroup.procs'], 0, 0)
            ft.check('/u/cgroup.procs is not a cgroup directory' in e.message,
                     'FreezeExcept of /t excluding a file outside it: the file\'s InvalidPath, as its lookup says',
                     e.message)
            nothing_tracked('FreezeExcept of /t excluding /u/cgroup.procs')
            # A refused batch must say that it wrote nothing, as the refusals for a group
            # freezerd does not follow do: the whole message.
            for what, method, args, message in (
                    ('FreezeExcept of /u with 4,097 exclusions', 'FreezeExcept', ('/u', ['/u/x'] * 4097, 0, 0),
                     'At most 4096 exclusions; nothing was written'),
                    ('ApplyBatch of 65,537 requests', 'ApplyBatch', ([('/u/x', True)] * 65537, 'auto', 0, 0),
                     'A batch holds at most 65536 requests; nothing was written')):
                e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, c.call, method, *args)
                ft.check_equal(e.message, message, f'{what}: the message')
                nothing_tracked(what)

            # The control: the same path resolved by a call that is not refused is tracked.
            c.call('GetGroup', '/u')
            ft.check_equal(ft.published_paths(c), ['/', '/t', '/t/a', '/u', '/u/x'],
                           'GetGroup(/u) tracks /u (the path the refused calls named)')
            ft.wait_for(lambda: ft.group_object('/u') in [o for o, _i in rec.interfaces_added()],
                        what='InterfacesAdded of /u')
    print('# checked: Freeze, Thaw, ApplyBatch and FreezeExcept refused for their flags or order track nothing')


ft.run(test)
