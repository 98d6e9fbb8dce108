#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""LookupGroup(path, flags): with TRANSIENT (bit 0), a group outside the tracked
subtrees is tracked while its caller stays, never kept in tracked.json.

  /t (the "track" setting), /t/in; /o, /o/a; /p; /q, /q/x; /r; /s; /v

Until session 47 the only lookup was GetGroup, which tracks a group outside the
tracked subtrees for good: `freezectl status PATH` changed what freezerd follows,
across restarts.

  * busctl's LookupGroup("/o", 1) answers /o's object; busctl exits, and /o leaves
    ListGroups (its InterfacesRemoved comes); tracked.json never lists it.
  * Two connections that stay hold /o (one of them through /o/a, and twice): /o and /o/a
    are listed while either is there; once the first left (its NameOwnerChanged seen,
    so freezerd read it before the ListGroups that follows), still; once the second
    left, neither.  tracked.json never lists them.
  * Track("/p") after a transient lookup of /p: /p stays after its holder left, and
    tracked.json has it.  GetGroup of /q/x after a transient lookup of /q: /q goes with
    its holder, /q/x stays, tracked for good (tracked.json).
  * A flag other than bit 0: InvalidArgs naming it, nothing tracked; flags 0: as
    GetGroup, tracked for good.
  * A path within the tracked subtrees (/t/in): the object GetGroup answers, and
    nothing goes when the caller leaves.
  * Over the private socket: the connection holds /s; closing it drops /s.
  * nobody's transient lookup of root's /v: AccessDenied (Track's rule), nothing
    tracked.
  * A reload whose "track" lacks a transient root (/w) keeps it while it is held; one
    that names it makes it the configuration's: it stays after its holder left.
  * freezerd logged no warning.
  * With /dev/fuse: a Freeze waiting on a group of a transient root (/c/stuck, called
    on its object: no lookup for good) fails with Cancelled naming the transient
    lookup once the root's last holder left."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

TRANSIENT = 1
ERROR_ACCESS_DENIED = 'org.freedesktop.DBus.Error.AccessDenied'


def listed(d, path):
    return path in ft.published_paths(d.client)


def kept(d, path):
    return path in (ft.tracked_roots(d.state_dir) or [])


def wait_removed(rec, path, what):
    obj = ft.group_object(path)
    rec.wait_for(lambda r: any(o == obj for o, _i in r.interfaces_removed()), what=what)


def left(watcher, client, what):
    """Close client and wait until the bus said its name left: freezerd, which follows
    that name, has the NameOwnerChanged queued before any later call of ours."""
    name = client.unique_name
    client.close()
    ft.wait_for(lambda: any(s.member == 'NameOwnerChanged' and s.body[0] == name and not s.body[2]
                            for s in watcher.signals), what=what)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-lookup-transient') as sc, ft.Bus() as bus:
        for p in ('/t/in', '/o/a', '/p', '/q/x', '/r', '/s', '/v'):
            sc.mkdir(p)
        with ft.Daemon(bus, sc.root, config={'track': ['/t']}) as d, \
                ft.Client(bus.address, destination='org.freedesktop.DBus') as watcher:
            watcher.add_match(type='signal', sender='org.freedesktop.DBus', member='NameOwnerChanged')
            rec = d.client.record(subscribe=False)

            # busctl: its name leaves as it exits.
            r = ft.busctl('call', ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, 'LookupGroup', 'st', '/o',
                          str(TRANSIENT))
            ft.check(ft.group_object('/o') in r.stdout, 'busctl LookupGroup /o TRANSIENT answers its object',
                     r.stdout)
            wait_removed(rec, '/o', '/o untracked once busctl left')
            ft.check(not listed(d, '/o') and not listed(d, '/o/a'), 'busctl left: /o and /o/a unlisted')
            ft.check(not kept(d, '/o'), 'tracked.json never lists /o', ft.tracked_roots(d.state_dir))

            # Two holders, one of them twice and through a group in it.
            h1 = ft.Client(bus.address)
            h2 = ft.Client(bus.address)
            ft.check_equal(h1.call('LookupGroup', '/o', TRANSIENT)[0], ft.group_object('/o'), 'h1 holds /o')
            ft.check_equal(h2.call('LookupGroup', '/o/a', TRANSIENT)[0], ft.group_object('/o/a'),
                           'h2 holds /o through /o/a')
            ft.check_equal(h2.call('LookupGroup', '/o', TRANSIENT)[0], ft.group_object('/o'), 'h2 asks again')
            ft.check(listed(d, '/o') and listed(d, '/o/a'), 'held: /o and /o/a listed')
            ft.check(not kept(d, '/o'), 'held: tracked.json lacks /o', ft.tracked_roots(d.state_dir))
            left(watcher, h1, 'h1 left')
            ft.check(listed(d, '/o') and listed(d, '/o/a'), 'h1 left, h2 holds: /o and /o/a still listed')
            rec.clear()
            left(watcher, h2, 'h2 left')
            wait_removed(rec, '/o', '/o untracked once h2 left')
            ft.check(not listed(d, '/o') and not listed(d, '/o/a'), 'both left: /o and /o/a unlisted')
            ft.check(not kept(d, '/o'), 'tracked.json never lists /o', ft.tracked_roots(d.state_dir))

            # Made permanent meanwhile.
            h = ft.Client(bus.address)
            h.call('LookupGroup', '/p', TRANSIENT)
            h.call('LookupGroup', '/q', TRANSIENT)
            ft.check(not kept(d, '/p'), '/p held: tracked.json lacks it', ft.tracked_roots(d.state_dir))
            d.client.call('Track', '/p')
            ft.check_equal(d.client.call('GetGroup', '/q/x')[0], ft.group_object('/q/x'), 'GetGroup /q/x')
            ft.check(kept(d, '/p') and kept(d, '/q/x') and not kept(d, '/q'),
                     'tracked.json: /p and /q/x, not /q', ft.tracked_roots(d.state_dir))
            rec.clear()
            left(watcher, h, 'the holder of /p and /q left')
            wait_removed(rec, '/q', '/q untracked once its holder left')
            ft.check(listed(d, '/p') and listed(d, '/q/x') and not listed(d, '/q'),
                     'its holder left: /p (Track) and /q/x (GetGroup) stay, /q goes', ft.published_paths(d.client))
            ft.check(kept(d, '/p') and kept(d, '/q/x'), 'tracked.json still has /p and /q/x',
                     ft.tracked_roots(d.state_dir))

            # Flags.
            e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, d.client.call, 'LookupGroup', '/r', 3)
            ft.check('0x2' in e.message, 'flags 3: InvalidArgs naming 0x2', e.message)
            ft.check(not listed(d, '/r'), 'refused for its flags: /r not tracked')
            ft.check_equal(d.client.call('LookupGroup', '/r', 0)[0], ft.group_object('/r'), 'flags 0: /r')
            ft.check(kept(d, '/r'), 'flags 0 tracks /r for good, as GetGroup', ft.tracked_roots(d.state_dir))

            # Within the tracked subtrees.
            h = ft.Client(bus.address)
            ft.check_equal(h.call('LookupGroup', '/t/in', TRANSIENT)[0], d.client.call('GetGroup', '/t/in')[0],
                           'TRANSIENT of /t/in: what GetGroup answers')
            left(watcher, h, 'the caller of /t/in left')
            ft.check(listed(d, '/t/in') and listed(d, '/t'), 'nothing of /t went with that caller')

            # The private socket: its connection holds.
            p = ft.Client(f'unix:path={os.path.join(d.runtime_dir, "private")}', direct=True)
            ft.check_equal(p.call('LookupGroup', '/s', TRANSIENT)[0], ft.group_object('/s'), 'private: /s')
            ft.check(listed(d, '/s') and not kept(d, '/s'), 'private: /s listed, not in tracked.json')
            rec.clear()
            p.close()
            wait_removed(rec, '/s', '/s untracked once the private connection closed')
            ft.check(not listed(d, '/s') and not kept(d, '/s'), 'private connection closed: /s gone')

            # Track's access rule.
            u = ft.client_as_nobody(bus)
            if u is None:
                print('# no user "nobody": the access check is skipped', flush=True)
            else:
                with u:
                    e = ft.expect_dbus_error(ERROR_ACCESS_DENIED, u.call, 'LookupGroup', '/v', TRANSIENT)
                    ft.check('/v' in e.message, 'nobody: AccessDenied naming /v', e.message)
                    ft.check(not listed(d, '/v'), 'nobody refused: /v not tracked')
            # Reloads.
            h = ft.Client(bus.address)
            sc.mkdir('/w')
            h.call('LookupGroup', '/w', TRANSIENT)
            d.reload()
            ft.check(listed(d, '/w'), 'a reload whose "track" lacks the transient /w keeps it while held')
            d.write_config({'track': ['/t', '/w']})
            d.reload()
            left(watcher, h, 'the holder of /w left')
            ft.check(listed(d, '/w'), '/w configured meanwhile: it stays after its holder left')
            d.write_config({'track': ['/t']})
            d.reload()
            ft.check(not listed(d, '/w'), 'dropped from "track" again: /w goes as a configured root')
            ft.check_equal(d.warnings(), [], 'freezerd warnings')
    ft.run_fuse_part(check_cancelled, 'a call cancelled by a transient root that goes')


def check_cancelled():
    with ft.Scratch('core-lookup-transient-cancel') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        sc.mkdir('/t')
        sc.mkdir('/c/stuck')
        sc.spawn_sleepers('/c/stuck', 1)
        with ft.Daemon(bus, sc.root, config={'track': ['/t']}) as d:
            fuse.spawn_stuck(sc, '/c/stuck')
            h = ft.Client(bus.address)
            h.call('LookupGroup', '/c', TRANSIENT)
            pending = d.client.group_call_async('/c/stuck', 'Freeze', 60 * 1000000, 0)
            ft.check_equal(d.client.group_property('/c/stuck', 'FreezerState'), 'freezing',
                           'Freeze of /c/stuck waits')
            h.close()
            e = ft.expect_dbus_error(ft.ERROR_CANCELLED, pending.result)
            ft.check(e.message.startswith('/c/stuck is no longer tracked (/c was tracked for a transient lookup, '
                                          'whose last client left) while waiting for it to freeze'),
                     'the holder of /c left: the waiting Freeze fails with Cancelled naming it', repr(e.message))
            ft.check(not ft.tracked_roots(d.state_dir), 'tracked.json lists nothing',
                     ft.tracked_roots(d.state_dir))
            sc.write_freeze('/c/stuck', 0)


if __name__ == '__main__':
    ft.run(test)
