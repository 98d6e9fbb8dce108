#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezectl's read-only commands (status, tree, pressure, watch) look a group up with
LookupGroup(TRANSIENT): a group outside the tracked subtrees is tracked only while the
command runs.

  /t (the "track" setting); /f, /f/g; /w

Until session 47 they used GetGroup, which made freezerd track the group for good (kept
in tracked.json across restarts), and listed every group first to print a note saying
so ("freezerd now tracks /f ... freezectl untrack /f ends that").

  * `freezectl status /f`, over the bus and over the private socket: its status,
    nothing on stderr; once it exited, /f is untracked (InterfacesRemoved, ListGroups),
    and tracked.json never lists it.  So for `tree /f` (which shows g below /f) and
    `pressure /f`.
  * `freezectl watch /w` keeps /w tracked while it runs (ListGroups once it printed
    its watching line), not in tracked.json; SIGKILLed, /w is untracked.  So with a
    pressure trigger (--trigger=cpu:some:100ms:2s, where the kernel has PSI), ended
    with SIGINT: the trigger is added on /w's object, not through GetGroup, which
    would track /w for good.
  * With a freezerd that answers LookupGroup UnknownMethod, as one before it
    (FREEZERD_TEST_NO_LOOKUP_GROUP): `freezectl status /f` falls back to GetGroup and
    says so in the note, as before; /f stays tracked, in tracked.json."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def listed(d, path):
    return path in ft.published_paths(d.client)


def kept(d, path):
    return path in (ft.tracked_roots(d.state_dir) or [])


def note(path):
    return (f'freezectl: note: freezerd now tracks {path} and the groups below it, also after it restarts (a '
            'group outside the tracked subtrees is tracked when a command looks it up): freezectl untrack '
            f'{path} ends that\n')


def wait_removed(rec, path, what):
    obj = ft.group_object(path)
    rec.wait_for(lambda r: any(o == obj for o, _i in r.interfaces_removed()),
                 what=f'{what}: {path} untracked once freezectl exited')


def check_looks(d):
    rec = d.client.record(subscribe=False)
    private = os.path.join(d.runtime_dir, 'private')
    for how, kw in (('bus', {}), ('private socket', {'socket': private})):
        rec.clear()
        r = ft.freezectl('status', '/f', **kw)
        ft.check(r.stderr == '' and any(ln.split() == ['Path:', '/f'] for ln in r.stdout.splitlines()),
                 f'{how}: freezectl status /f: its status, nothing on stderr', (r.stdout, r.stderr))
        wait_removed(rec, '/f', f'{how}: status')
        ft.check(not listed(d, '/f') and not kept(d, '/f'), f'{how}: status /f exited: /f not tracked',
                 (ft.published_paths(d.client), ft.tracked_roots(d.state_dir)))

    rec.clear()
    r = ft.freezectl('tree', '/f')
    ft.check(r.stderr == '' and r.stdout.startswith('/f ') and '─g ' in r.stdout,
             'freezectl tree /f: the tree with /f/g, nothing on stderr',
             (r.stdout, r.stderr))
    wait_removed(rec, '/f', 'tree')
    ft.check(not listed(d, '/f') and not kept(d, '/f'), 'tree /f exited: /f not tracked')

    rec.clear()
    r = ft.freezectl('pressure', '/f', check=False)
    ft.check('note:' not in r.stderr, 'freezectl pressure /f: no note', r.stderr)
    wait_removed(rec, '/f', 'pressure')
    ft.check(not listed(d, '/f') and not kept(d, '/f'), 'pressure /f exited: /f not tracked')

    watch(d, rec, [], signal.SIGKILL, 'watch /w, killed')
    if os.path.exists('/proc/pressure/cpu'):
        # Its trigger is added on /w's object, not through GetGroup (which would track
        # /w for good), and removed at its exit (SIGINT).
        watch(d, rec, ['--trigger=cpu:some:100ms:2s'], signal.SIGINT, 'watch --trigger=... /w, SIGINT')
    else:
        print('# not run: watch with a pressure trigger (no /proc/pressure)')


def watch(d, rec, opts, sig, what):
    rec.clear()
    p, _ = ft.start_watch(d.bus.address, [*opts, '/w'], what)
    try:
        ft.check(listed(d, '/w') and not kept(d, '/w'), f'{what}: while it runs, /w listed, not in tracked.json')
    finally:
        ft._stop_process(p, sig)
        err = p.stderr.read()
        p.stdout.close()
        p.stderr.close()
    ft.check('note:' not in err, f'{what}: no note', err)
    wait_removed(rec, '/w', what)
    ft.check(not listed(d, '/w') and not kept(d, '/w'), f'{what}: exited, /w not tracked')

def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    with ft.Scratch('core-freezectl-lookup') as sc, ft.Bus() as bus:
        for p in ('/t', '/f/g', '/w'):
            sc.mkdir(p)
        with ft.Daemon(bus, sc.root, config={'track': ['/t']}) as d:
            check_looks(d)
            ft.check_equal(d.warnings(), [], 'freezerd warnings')

        with ft.Daemon(bus, sc.root, config={'track': ['/t']}, env={'FREEZERD_TEST_NO_LOOKUP_GROUP': '1'}) as d:
            r = ft.freezectl('status', '/f')
            ft.check(any(ln.split() == ['Path:', '/f'] for ln in r.stdout.splitlines()) and r.stderr == note('/f'),
                     'a freezerd without LookupGroup: freezectl status /f falls back to GetGroup, with the note',
                     (r.stdout, r.stderr))
            ft.check(listed(d, '/f') and kept(d, '/f'), '  ... and /f stays tracked, in tracked.json',
                     (ft.published_paths(d.client), ft.tracked_roots(d.state_dir)))
            d.client.call('Untrack', '/f')


if __name__ == '__main__':
    ft.run(test)
