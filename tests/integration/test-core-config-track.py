#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A subtree both the configuration's "track" and a call ask for: a SIGHUP (or a
restart) whose configuration drops it keeps it tracked, as the call asked.

  /a (with /a/x) configured, then Track("/a") by a client
  /b looked up (GetGroup, which tracks it), then configured, then dropped
  /c configured only

Checks:
  * tracked.json holds /a and /b (what calls asked for), not /c.
  * SIGHUP with "track": ["/none"] (never made) keeps /a, /a/x and /b published (no
    InterfacesRemoved of them), logs that they stay, and drops /c.  freezerd
    dropped every root the configuration no longer named, Track()ed or not,
    and did not keep a configured root a client Track()ed in tracked.json.
  * A restart with the same state directory and that configuration tracks /a and /b.
  * Untrack("/a") drops it for good: gone from tracked.json too.
  * With "track": ["/"], a Freeze of /stuck (a task blocked on a FUSE mount that
    never answers, so it waits), then SIGHUP with "track": ["/pods"]: the
    Freeze fails with Cancelled, "no longer tracked (the configuration reload
    dropped / from "track")", its flag left at 1.  The message said "(Untrack
    of /)", an Untrack nobody made.  The debug log says "/stuck: no longer
    tracked", not "/stuck: removed": its cgroup exists.  Its message ends "Without
    ROLLBACK_ON_TIMEOUT the flags it wrote stay as asked: /stuck", as a Timeout's
    says they stay.
  * Back to "track": ["/"], an ApplyBatch freezing /b (empty, made while tracked:
    before /stuck in the model) and /stuck, /b frozen at once, then the same
    SIGHUP: the Cancelled names /stuck, the group it waited on, not /b, and the
    flags that stay, /b and /stuck.  (Session 46's build named /b and said
    nothing of them.)"""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

STAYS = '. Without ROLLBACK_ON_TIMEOUT the flags it wrote stay as asked: '


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with tempfile.TemporaryDirectory(prefix=f'{ft.TMP_PREFIX}state-{os.getpid()}-') as state_dir:
        run(state_dir)
    # The reload's cancel needs a group that cannot finish freezing (FUSE):
    # without /dev/fuse only that part is left out, not the checks above.
    ft.run_fuse_part(check_reload_cancels, 'a call cancelled by a reload')


def check_reload_cancels():
    with ft.Scratch('core-config-track-reload') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        sc.mkdir('/pods')
        sc.mkdir('/stuck')
        sc.spawn_sleepers('/stuck', 1)
        with ft.Daemon(bus, sc.root, config={'track': ['/']}, env={'FREEZERD_LOG_LEVEL': 'debug'}) as d:
            fuse.spawn_stuck(sc, '/stuck')
            c = d.client
            pending = c.call_async('Freeze', '/stuck', 60 * 1000000, 0)
            ft.check_equal(c.group_property('/stuck', 'FreezerState'), 'freezing', 'Freeze(/stuck) waits')
            d.write_config({'track': ['/pods']})
            d.reload()
            e = ft.expect_dbus_error(ft.ERROR_CANCELLED, pending.result)
            ft.check('/stuck is no longer tracked (the configuration reload dropped / from "track")' in e.message
                     and 'Untrack' not in e.message,
                     'SIGHUP dropping "/" from "track": the waiting Freeze fails with Cancelled naming the reload, '
                     'not an Untrack', repr(e.message))
            ft.check(e.message.endswith(STAYS + '/stuck'), '  ... and says its flag stays', repr(e.message))
            ft.check_equal(sc.read_freeze('/stuck'), 1, '  ... cgroup.freeze of /stuck stays 1, as written')
            ft.check_equal(ft.published_paths(c), ['/', '/pods'], '  ... /pods alone is tracked')
            lines = d.log().splitlines()
            ft.check(any('>/stuck: no longer tracked (' in line for line in lines)
                     and not any('>/stuck: removed (' in line for line in lines),
                     '  ... the debug log says "/stuck: no longer tracked", not "removed"',
                     [line for line in lines if '/stuck:' in line])
            sc.write_freeze('/stuck', 0)

            # A batch: the message names the group it waited on, not one frozen at once.
            d.write_config({'track': ['/']})
            d.reload()
            sc.mkdir('/b')  # made now: the model walks it before /stuck
            c.call('GetGroup', '/b')
            pending = c.call_async('ApplyBatch', [('/b', True), ('/stuck', True)], 'auto', 60 * 1000000, 0)
            ft.check_equal(c.group_property('/stuck', 'FreezerState'), 'freezing', 'ApplyBatch([/b, /stuck]) waits')
            ft.check_equal(c.group_property('/b', 'FreezerState'), 'frozen', '  ... /b is frozen')
            d.write_config({'track': ['/pods']})
            d.reload()
            e = ft.expect_dbus_error(ft.ERROR_CANCELLED, pending.result)
            ft.check(e.message.startswith('/stuck is no longer tracked (the configuration reload dropped / from '
                                          '"track") while waiting for it to freeze' + STAYS),
                     'SIGHUP dropping "/": the batch\'s Cancelled names /stuck, the group it waited on, then the '
                     'flags that stay', repr(e.message))
            ft.check_equal(sorted(e.message.split(STAYS, 1)[-1].split(', ')), ['/b', '/stuck'],
                           '  ... the flags named as staying')
            ft.check_equal((sc.read_freeze('/b'), sc.read_freeze('/stuck')), (1, 1), '  ... and both stay 1')
            sc.write_freeze('/stuck', 0)
            sc.write_freeze('/b', 0)
    print('# checked: a SIGHUP that drops a root cancels the calls waiting below it, naming the reload')


def run(state_dir):
    with ft.Scratch('core-config-track') as sc, ft.Bus() as bus:
        for g in ('/a/x', '/b', '/c'):
            sc.mkdir(g)
        with ft.Daemon(bus, sc.root, config={'track': ['/a', '/c']}, state_dir=state_dir) as d:
            c = d.client
            c.call('Track', '/a')
            c.call('GetGroup', '/b')
            d.write_config({'track': ['/a', '/b', '/c']})
            d.reload()
            ft.check_equal(ft.published_paths(c), ['/', '/a', '/a/x', '/b', '/c'], 'all three tracked')
            ft.check_equal(sorted(ft.tracked_roots(state_dir)), ['/a', '/b'],
                           'tracked.json holds what calls asked for (/a, /b), configured or not')

            rec = c.record()
            d.write_config({'track': ['/none']})
            d.reload()
            ft.check_equal(ft.published_paths(c), ['/', '/a', '/a/x', '/b'],
                           'SIGHUP with track [/none]: /a and /b, which calls asked for, stay; /c goes')
            ft.check_equal(sorted(o for o, _i in rec.interfaces_removed()), [ft.group_object('/c')],
                           '  ... InterfacesRemoved for /c alone')
            for p in ('/a', '/b'):
                ft.check(f'{p} is no longer in the configuration\'s "track", but stays tracked' in d.log(),
                         f'  ... the log says {p} stays', d.log()[-2000:])
            ft.check_equal(sorted(ft.tracked_roots(state_dir)), ['/a', '/b'], '  ... and tracked.json still holds them')

        # A restart: tracked.json brings them back, the configuration naming neither.
        with ft.Daemon(bus, sc.root, config={'track': ['/none']}, state_dir=state_dir) as d:
            c = d.client
            ft.check_equal(ft.published_paths(c), ['/', '/a', '/a/x', '/b'], 'a restart tracks /a and /b again')
            c.call('Untrack', '/a')
            ft.check_equal(ft.published_paths(c), ['/', '/b'], 'Untrack("/a") drops it')
            ft.check_equal(sorted(ft.tracked_roots(state_dir)), ['/b'], '  ... from tracked.json too')

        # Configured and in tracked.json: tracked once, and tracked.json keeps it.
        with ft.Daemon(bus, sc.root, config={'track': ['/b']}, state_dir=state_dir) as d:
            ft.check_equal(ft.published_paths(d.client), ['/', '/b'], 'a restart with /b configured and in tracked.json')
            ft.check_equal(sorted(ft.tracked_roots(state_dir)), ['/b'], '  ... tracked.json unchanged')
    print('# checked: SIGHUP and restart keep a configured root that a call asked for too')


ft.run(test)
