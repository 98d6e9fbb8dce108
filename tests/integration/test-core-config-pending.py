#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A configured track entry that does not exist yet is tracked once it is made.

freezerd starts with {"track": ["/pods", "/x/y", "/m/n", "/late", "/gone", "/q/z"]}
while only /q exists (a container manager that makes /pods after freezerd started).
Until session 32 such an entry was logged as missing once and never tracked.

Checks:
  * At start only "/" is listed; the log names each missing entry.
  * mkdir /pods: InterfacesAdded for /pods (waited for, no sleep), GetGroup works,
    the log says once that it is tracked now, and a Freeze/Thaw of it works; a
    group made below it right after is tracked as part of its subtree.
  * Nested: mkdir /x alone publishes nothing (/x is kept for its flag only);
    then mkdir /x/y publishes /x/y, which freezes.
  * mkdir -p /m/n in one go (/n may be made before freezerd watches /m): /m/n
    is published.
  * rmdir of the tracked /pods: InterfacesRemoved; mkdir /pods again: published
    again (it went back to waiting).
  * SIGHUP with /gone and /q/z dropped from the file (and /late kept): mkdir /gone
    and /q/z publishes neither, /q (kept before for /q/z) leaves the model ("/"'s
    Descendants), and mkdir /late after the reload is still tracked.
  * A subtree given to Track() (/t, kept in the state directory) and removed while
    freezerd was stopped waits after the restart (it was dropped with a warning):
    mkdir /t publishes it.
"Not published" is checked after a group made later below a tracked one came out:
freezerd reads the kernel's inotify events in order."""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

TRACK = ['/pods', '/x/y', '/m/n', '/late', '/gone', '/q/z']


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-config-pending') as sc, ft.Bus() as bus:
        sc.mkdir('/q')
        with ft.Daemon(bus, sc.root, config={'track': TRACK}) as d:
            c = d.client
            rec = c.record()

            def listed():
                return sorted(p for p, _o, _s in c.call('ListGroups')[0])

            def added(path):
                return ft.group_object(path) in [o for o, _i in rec.interfaces_added()]

            def removed(path):
                return ft.group_object(path) in [o for o, _i in rec.interfaces_removed()]

            def wait_added(path):
                rec.wait_for(lambda r: added(path), what=f'InterfacesAdded for {path}')

            ft.check_equal(listed(), ['/'], 'at start nothing configured exists: only "/" is listed')
            log = d.log()
            for p in TRACK:
                ft.check(f'{p} does not exist' in log, f'the log names the missing entry {p}', log)

            # A plain entry made after the start.
            sc.mkdir('/pods')
            wait_added('/pods')
            ft.check_equal(c.call('GetGroup', '/pods')[0], ft.group_object('/pods'), 'GetGroup("/pods") works')
            ft.check_equal(d.log().count('/pods was made: tracking it'), 1,
                           'the log says once that /pods is tracked now')
            sc.mkdir('/pods/a')
            wait_added('/pods/a')
            c.call('Freeze', '/pods', 0, 0)
            ft.check_equal((sc.read_freeze('/pods'), sc.frozen('/pods/a')), (1, True), 'Freeze of /pods works')
            c.call('Thaw', '/pods', 0, 0)
            ft.check_equal(sc.frozen('/pods'), False, 'Thaw of /pods works')

            # Nested: the intermediate group first.
            sc.mkdir('/x')
            sc.mkdir('/pods/s1')
            wait_added('/pods/s1')
            ft.check(not added('/x') and '/x' not in listed(), '/x alone is not published (kept for its flag)')
            sc.mkdir('/x/y')
            wait_added('/x/y')
            c.call('Freeze', '/x/y', 0, 0)
            ft.check_equal(sc.frozen('/x/y'), True, 'Freeze of /x/y works')
            c.call('Thaw', '/x/y', 0, 0)

            # Nested, in one go.
            os.makedirs(sc.abspath('/m/n'))
            wait_added('/m/n')
            ft.check('/m' not in listed(), '/m is not published')

            # A tracked entry removed goes back to waiting.
            sc.rmdir('/pods/a')
            sc.rmdir('/pods/s1')
            sc.rmdir('/pods')
            rec.wait_for(lambda r: removed('/pods'), what='InterfacesRemoved for /pods')
            rec.clear()
            sc.mkdir('/pods')
            wait_added('/pods')
            ft.check_equal(c.call('GetGroup', '/pods')[0], ft.group_object('/pods'), '/pods made again is tracked')
            log = d.log()
            ft.check('/pods, a tracked subtree, was removed: it is tracked again once it is made' in log and
                     log.count('/pods was made: tracking it') == 2, 'the log tells the removal and the new /pods',
                     log)

            # SIGHUP drops /gone and /q/z before they exist, keeps /late.
            before = c.group_property('/', 'Descendants')
            d.write_config({'track': ['/pods', '/x/y', '/m/n', '/late']})
            d.reload()
            ft.check_equal(c.group_property('/', 'Descendants'), before - 1,
                           'after the reload /q (kept for /q/z alone) left the model')
            rec.clear()
            sc.mkdir('/gone')
            sc.mkdir('/q/z')
            sc.mkdir('/late')
            sc.mkdir('/pods/s2')
            wait_added('/pods/s2')
            wait_added('/late')
            ft.check(not added('/gone') and not added('/q/z'), 'no InterfacesAdded for /gone or /q/z',
                     rec.interfaces_added())
            ft.check_equal(listed(), ['/', '/late', '/m/n', '/pods', '/pods/s2', '/x/y'],
                           'after the reload only the configured entries are listed')

        # A subtree given to Track() (kept in the state directory) that is gone at a
        # restart waits as well: it was dropped with a warning.
        state = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}pending-state-{os.getpid()}-')
        try:
            sc.mkdir('/t')
            with ft.Daemon(bus, sc.root, config={'track': ['/pods']}, state_dir=state) as d:
                d.client.call('Track', '/t')
            sc.rmdir('/t')
            with ft.Daemon(bus, sc.root, config={'track': ['/pods']}, state_dir=state) as d:
                ft.check('/t, tracked before the restart, does not exist now: it is tracked again once it is made'
                         in d.log(), 'the log says /t waits', d.log())
                rec = d.client.record()
                sc.mkdir('/t')
                rec.wait_for(lambda r: ft.group_object('/t') in [o for o, _i in r.interfaces_added()],
                             what='InterfacesAdded for /t')
                ft.check_equal(d.client.call('GetGroup', '/t')[0], ft.group_object('/t'),
                               '/t, tracked before the restart and made after it, is tracked')
        finally:
            shutil.rmtree(state, ignore_errors=True)
    print('# checked: missing track entries tracked once made (plain, nested in two steps and in one go, made '
          'again after an rmdir), SIGHUP drops waiting entries, a Track()ed subtree gone at a restart waits')


ft.run(test)
