#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Track and Untrack with nested tracked subtrees, and the root's group object.

  /pods/a/x (a sleeper)   /pods/b   /pods/c   /q/r   /q/s

A. Default configuration (tracks "/").  After each step ListGroups, the objects of
   GetManagedObjects and the Groups property are exactly the expected set, and the
   InterfacesAdded / InterfacesRemoved of the step are exactly the groups that came
   or went:
   1. Track("/pods/a"): nothing changes.
   2. Untrack("/"): "/" (always an object), /pods/a, /pods/a/x stay; /pods, /pods/b,
      /pods/c, /q, /q/r, /q/s go.  /pods stays in the model for its flag: a write of
      its cgroup.freeze behind freezerd's back makes /pods/a frozen-by-parent.
      `freezectl status` (of "/") works and tracks nothing.  A group made below the
      untracked /pods is not published, one made below /pods/a is.
   3. Untrack("/pods/a/x") and of /pods/a/typo, which does not exist: NotTracked, the
      first naming its root /pods/a, the second saying that it does not exist.
      Untrack("/pods/a"): only "/" is left.
   4. Untrack("/pods") and Untrack("/"): neither is a tracked subtree any more:
      NotTracked ("not a tracked root, nor in a tracked subtree"), nothing changes;
      freezectl untrack says "untrack" and "freezectl track" where freezerd's
      message says Untrack() and Track().
   5. Track("/"): every group that exists is published again (InterfacesAdded for
      each but "/", which never went).
B. {"track": ["/pods/a", "/q/r"]} ("/" not tracked):
   * ListGroups: "/", /pods/a and below, /q/r;
   * GetGroup("/") gives the root's object and tracks nothing; `freezectl status`
     and `freezectl --json status` show "/" (its Descendants: the groups freezerd
     keeps below it, the untracked ancestors /pods and /q included);
   * Freeze("/") is refused as the cgroup root (InvalidPath), tracking nothing;
   * FreezeExcept("/", ["/pods/a/x"]) and Freeze/Thaw("/", RECURSIVE) write the flags
     of tracked groups only: /pods and /q, which hold groups freezerd does not
     track, keep cgroup.freeze 0 and /pods/b, /q/s run;
   * Track("/") publishes the rest, Untrack("/") takes it back;
   * `freezectl status /q/s` tracks /q/s only while it runs (LookupGroup TRANSIENT), with
     nothing on stderr and nothing in the state directory (until session 47 for good,
     with a note naming `freezectl untrack`); `freezectl track /q/s` tracks it, kept in
     the state directory; `freezectl untrack /q/s` drops it from both (exit 0, silent),
     again fails (exit 1, one line), `freezectl track /q/s` tracks it again;
   * `freezectl --json track` and `untrack` print [{"path", "result"}] as freeze and
     thaw do, "failed" with "error" and "message" (they printed nothing);
   * `freezectl tree`, `pressure` and `watch` of /q/s track it while they run, as status;
     `freeze`, `thaw` and `batch` for good; `freezectl --help` says so of all of them in
     one sentence (it named some in two places, each a different list);
   * on a bus whose policy denies ListGroups (GetGroup and Get allowed), status of a
     tracked and of an untracked group still shows it, without the note (it failed:
     "cannot get status of /q/s: AccessDenied"); tree says the listing's failure.
No step writes a cgroup.freeze but those named."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ['/pods', '/pods/a', '/pods/a/x', '/pods/b', '/pods/c', '/q', '/q/r', '/q/s']


def decoded(objects):
    return sorted(ft.path_decode(ft.GROUP_PREFIX, o) for o in objects)


class Steps:
    """Checks of what freezerd publishes, step after step."""

    def __init__(self, c):
        self.c = c
        self.rec = c.record()

    def listed(self):
        return sorted(p for p, _o, _s in self.c.call('ListGroups')[0])

    def check(self, what, expect, added=(), removed=()):
        expect = sorted(expect)
        ft.check_equal(self.listed(), expect, f'{what}: ListGroups')
        managed = self.c.managed_objects()
        objs = [o for o in managed if o.startswith(ft.GROUP_PREFIX + '/')]
        ft.check_equal(decoded(objs), expect, f'{what}: the objects of GetManagedObjects')
        ft.check_equal(self.c.manager_property('Groups'), len(expect), f'{what}: Groups')
        # Sent before the reply of the call that caused them: here already.
        ft.check_equal(decoded(o for o, _i in self.rec.interfaces_added()), sorted(added),
                       f'{what}: InterfacesAdded')
        # Each carries the group as it is once the call is done: a group announced
        # by Track before its subtree was scanned had partial counts, which a plain
        # ObjectManager client (no PropertiesChanged subscribed) would keep.
        gone = [o for o, _i in self.rec.interfaces_removed()]
        for o, ifaces in self.rec.interfaces_added():
            if o in gone:
                continue  # added and removed again (a transient lookup's): nothing to compare with
            props, now = ifaces.get(ft.GROUP_IFACE, {}), managed.get(o, {}).get(ft.GROUP_IFACE, {})
            keys = ('Descendants', 'FrozenDescendants', 'FreezerState', 'Populated')
            ft.check_equal({k: props.get(k) for k in keys}, {k: now.get(k) for k in keys},
                           f'{what}: InterfacesAdded of {ft.path_decode(ft.GROUP_PREFIX, o)} has its final values')
        ft.check_equal(decoded(o for o, _i in self.rec.interfaces_removed()), sorted(removed),
                       f'{what}: InterfacesRemoved')
        self.rec.clear()


def status(d, *args):
    return ft.freezectl(*args, 'status', socket=os.path.join(d.runtime_dir, 'private'), check=False)


def wait_dropped(s, path, what):
    """Wait until freezerd untracked path (its InterfacesRemoved): a read-only freezectl
    command's transient lookup, once its connection is gone."""
    obj = ft.group_object(path)
    s.rec.wait_for(lambda r: obj in [o for o, _i in r.interfaces_removed()],
                   what=f'{what}: {path} untracked once freezectl exited')


def watch_until_watching(*args):
    """freezectl watch ARGS until its watching line, then SIGINT: its CompletedProcess."""
    what = f'freezectl watch {" ".join(args)}'
    p, line = ft.start_watch(ft._bus_address(None), args, what)
    ft._stop_process(p, signal.SIGINT)
    ft.check_equal(p.returncode, 0, f'{what}: exit 0 on SIGINT')
    return subprocess.CompletedProcess(p.args, p.returncode, line + p.stdout.read(), p.stderr.read())


def saved_tracked(d):
    """The subtrees freezerd keeps tracked beyond its configuration (STATE_DIR/tracked.json)."""
    try:
        with open(os.path.join(d.state_dir, 'tracked.json')) as f:
            return json.load(f).get('tracked', [])
    except FileNotFoundError:
        return []


def check_list_denied(sc):
    """A bus whose policy denies ListGroups but lets GetGroup and Get through: status and
    pressure of a tracked group, and of an untracked one, still show it (they failed,
    "cannot get status of /q/s: AccessDenied", since they list before the lookup to say
    whether it tracks PATH); that note is left out, not knowable.  tree, which shows the
    listing, says the listing's failure."""
    with open(ft.DBUS_TEST_CONF) as f:
        conf = f.read()
    deny = (f'<deny send_destination="{ft.BUS_NAME}" send_interface="{ft.MANAGER_IFACE}" '
            'send_member="ListGroups"/>\n        </policy>')
    changed = conf.replace('</policy>', deny, 1)
    ft.check(changed != conf, 'a bus configuration that denies ListGroups')
    tmp = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}nolist-{os.getpid()}-')
    try:
        path = os.path.join(tmp, 'bus.conf')
        with open(path, 'w') as f:
            f.write(changed)
        with ft.Bus(config=path) as bus, ft.Daemon(bus, sc.root, config={'track': ['/pods/a', '/q/r']}):
            r = ft.freezectl('list', address=bus.address, check=False)
            ft.check(r.returncode == 1 and 'AccessDenied' in r.stderr,
                     'freezectl list on that bus: exit 1, AccessDenied', (r.returncode, r.stderr))
            for p in ('/pods/a/x', '/q/s'):
                r = ft.freezectl('status', p, address=bus.address, check=False)
                ft.check(r.returncode == 0 and r.stderr == '' and
                         any(ln.split() == ['Path:', p] for ln in r.stdout.splitlines()),
                         f'freezectl status {p} with ListGroups denied: exit 0, its status, nothing on stderr',
                         (r.returncode, r.stdout, r.stderr))
                r = ft.freezectl('--json', 'status', p, address=bus.address, check=False)
                ft.check(r.returncode == 0 and json.loads(r.stdout or 'null').get('path') == p,
                         f'freezectl --json status {p} with ListGroups denied', (r.returncode, r.stdout, r.stderr))
            r = ft.freezectl('tree', '/q/r', address=bus.address, check=False)
            ft.check(r.returncode == 1 and r.stderr.startswith('freezectl: cannot show tree of /q/r: AccessDenied'),
                     'freezectl tree /q/r with ListGroups denied: the listing\'s failure', (r.returncode, r.stderr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    tmo = int(ft.DEFAULT_TIMEOUT * 1e6)
    with ft.Scratch('core-track') as sc, ft.Bus() as bus:
        for g in GROUPS:
            sc.mkdir(g)
        sc.spawn_sleepers('/pods/a/x', 1)

        def flags(groups):
            return {g: sc.read_freeze(g) for g in groups}

        # ---- A. nested tracked subtrees
        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            s = Steps(c)
            s.check('start', ['/'] + GROUPS)

            ft.check_equal(c.call('Track', '/pods/a')[0], ft.group_object('/pods/a'), 'Track("/pods/a")')
            s.check('Track("/pods/a") inside the tracked "/"', ['/'] + GROUPS)

            c.call('Untrack', '/')
            kept = ['/', '/pods/a', '/pods/a/x']
            s.check('Untrack("/") with /pods/a tracked', kept,
                    removed=['/pods', '/pods/b', '/pods/c', '/q', '/q/r', '/q/s'])

            # /pods is kept for its flag: its write reaches /pods/a.
            sc.write_freeze('/pods', 1)
            for g in ('/pods/a', '/pods/a/x'):
                s.rec.wait_for(lambda r: r.group_values(g, 'FreezerState')[-1:] == ['frozen-by-parent'],
                               what=f'{g} frozen-by-parent after a write of /pods behind freezerd\'s back')
            ft.check_equal((sc.read_freeze('/pods/a'), sc.frozen('/pods/a/x')), (0, True),
                           'the kernel: /pods/a/x frozen by /pods')
            sc.write_freeze('/pods', 0)
            s.rec.wait_for(lambda r: r.group_values('/pods/a/x', 'FreezerState')[-1:] == ['running'],
                           what='/pods/a/x running again')
            s.rec.clear()

            r = status(d)
            ft.check(r.returncode == 0 and any(ln.split() == ['Path:', '/'] for ln in r.stdout.splitlines()),
                     'freezectl status with "/" untracked: the root', r.stdout + r.stderr)
            ft.check_equal(c.call('GetGroup', '/')[0], ft.group_object('/'), 'GetGroup("/")')
            s.check('status and GetGroup of "/"', kept)

            # New groups: below the untracked /pods not published, below /pods/a published.
            # The inotify events come in order: by the second InterfacesAdded, the first mkdir was seen.
            sc.mkdir('/pods/d')
            sc.mkdir('/pods/a/y')
            s.rec.wait_for(lambda r: ft.group_object('/pods/a/y') in [o for o, _i in r.interfaces_added()],
                           what='InterfacesAdded of /pods/a/y')
            kept.append('/pods/a/y')
            s.check('mkdir /pods/d and /pods/a/y', kept, added=['/pods/a/y'])

            e = ft.expect_dbus_error(ft.ERROR_NOT_TRACKED, c.call, 'Untrack', '/pods/a/x')
            ft.check('/pods/a/x is not a tracked root, only a group of the tracked subtree at /pods/a' in e.message,
                     'Untrack("/pods/a/x"): NotTracked, naming its root /pods/a', e.message)
            ft.check(e.message.endswith(': Untrack() that root (see Track() and the "track" setting)'),
                     '  ... and sending the caller to Untrack() and Track()', e.message)
            # freezectl says its commands for freezerd's methods.
            r = ft.freezectl('untrack', '/pods/a/x', check=False)
            ft.check_equal((r.returncode, r.stderr), (1, 'freezectl: cannot untrack /pods/a/x: NotTracked: /pods/a/x is '
                                                         'not a tracked root, only a group of the tracked subtree at '
                                                         '/pods/a: untrack that root (see \'freezectl track\' and the '
                                                         '"track" setting)\n'),
                           'freezectl untrack /pods/a/x: its commands, not the methods')
            # A path that names nothing (a typo) is not "a group of" the subtree: that
            # message would send the caller off to untrack the whole of /pods/a.
            e = ft.expect_dbus_error(ft.ERROR_NOT_TRACKED, c.call, 'Untrack', '/pods/a/typo')
            ft.check_equal(e.message, '/pods/a/typo is not a tracked root, and does not exist (in the tracked '
                                      'subtree at /pods/a)', 'Untrack("/pods/a/typo"): NotTracked, saying it '
                                                             'does not exist')
            r = ft.freezectl('untrack', '/pods/a/typo', check=False)
            ft.check_equal((r.returncode, r.stderr), (1, 'freezectl: cannot untrack /pods/a/typo: NotTracked: '
                                                         '/pods/a/typo is not a tracked root, and does not exist '
                                                         '(in the tracked subtree at /pods/a)\n'),
                           'freezectl untrack /pods/a/typo: exit 1, the same in one line')
            # A name ending in white space in double quotes, as NoSuchGroup's: "/pods/a/typo
            # is not ..." hid it.
            e = ft.expect_dbus_error(ft.ERROR_NOT_TRACKED, c.call, 'Untrack', '/pods/a/typo ')
            ft.check_equal(e.message, '"/pods/a/typo " is not a tracked root, and does not exist (in the tracked '
                                      'subtree at /pods/a)', 'Untrack("/pods/a/typo "): the path in double quotes')
            s.check('Untrack of a path that does not exist', kept)
            # A file of a group is no group either.
            e = ft.expect_dbus_error(ft.ERROR_NOT_TRACKED, c.call, 'Untrack', '/pods/a/cgroup.procs')
            ft.check_equal(e.message, '/pods/a/cgroup.procs is not a tracked root, and is no group (in the tracked '
                                      'subtree at /pods/a)', 'Untrack("/pods/a/cgroup.procs"): NotTracked, saying '
                                                             'it is no group')
            s.check('Untrack of a file', kept)
            c.call('Untrack', '/pods/a')
            s.check('Untrack("/pods/a")', ['/'], removed=['/pods/a', '/pods/a/x', '/pods/a/y'])

            # NotTracked, saying so (it was NoSuchGroup, which read as if the group did not exist).
            for p in ('/pods', '/'):
                e = ft.expect_dbus_error(ft.ERROR_NOT_TRACKED, c.call, 'Untrack', p)
                ft.check(f'{p} is not a tracked root, nor in a tracked subtree' in e.message,
                         f'Untrack("{p}"): not a tracked root', e.message)
                r = ft.freezectl('untrack', p, check=False)
                ft.check_equal((r.returncode, r.stderr),
                               (1, f'freezectl: cannot untrack {p}: NotTracked: {p} is not a tracked root, nor in a '
                                   'tracked subtree (see \'freezectl track\' and the "track" setting)\n'),
                               f'freezectl untrack {p}: its command, not the method')
            s.check('Untrack of what is no longer tracked', ['/'])

            ft.check_equal(c.call('Track', '/')[0], ft.group_object('/'), 'Track("/")')
            everything = GROUPS + ['/pods/a/y', '/pods/d']
            s.check('Track("/")', ['/'] + everything, added=everything)
            ft.check_equal(flags(everything), {g: 0 for g in everything}, 'A: no cgroup.freeze was written')

        # ---- B. "/" not tracked
        with ft.Daemon(bus, sc.root, config={'track': ['/pods/a', '/q/r']}) as d:
            c = d.client
            s = Steps(c)
            tracked = ['/', '/pods/a', '/pods/a/x', '/pods/a/y', '/q/r']
            s.check('track ["/pods/a", "/q/r"]', tracked)

            ft.check_equal(c.call('GetGroup', '/')[0], ft.group_object('/'), 'GetGroup("/") with "/" untracked')
            ft.check_equal(c.get_property(ft.group_object('/'), ft.GROUP_IFACE, 'Path'), '/', 'its Path')
            r = status(d)
            ft.check(r.returncode == 0 and any(ln.split() == ['Path:', '/'] for ln in r.stdout.splitlines()),
                     'freezectl status with "/" untracked', r.stdout + r.stderr)
            r = status(d, '--json')
            ft.check_equal(r.returncode, 0, 'freezectl --json status: exit 0')
            st = json.loads(r.stdout)
            ft.check_equal((st['path'], st['state'], st['descendants']), ('/', 'running', 6),
                           'freezectl --json status: "/", running, 6 descendants (with /pods and /q)')
            s.check('GetGroup and status of "/"', tracked)

            e = ft.expect_dbus_error(ft.ERROR_INVALID_PATH, c.call, 'Freeze', '/', tmo, 0)
            ft.check('cgroup root' in e.message, 'Freeze("/"): refused as the cgroup root', e.message)
            s.check('Freeze("/")', tracked)

            got = c.call('FreezeExcept', '/', ['/pods/a/x'], tmo, 0)[0]
            ft.check_equal(sorted(got), ['/pods/a/y', '/q/r'], 'FreezeExcept("/", ["/pods/a/x"]): tracked groups')
            ft.check_equal(flags(GROUPS + ['/pods/a/y']),
                           {g: int(g in ('/pods/a/y', '/q/r')) for g in GROUPS + ['/pods/a/y']},
                           'FreezeExcept: only the flags of /pods/a/y and /q/r are set')
            ft.check_equal((sc.frozen('/pods/b'), sc.frozen('/q/s'), sc.frozen('/pods/a/x')), (False, False, False),
                           'FreezeExcept: /pods/b, /q/s (untracked) and /pods/a/x run')
            c.call('ApplyBatch', [(g, False) for g in got], 'auto', tmo, 0)

            c.call('Freeze', '/', tmo, ft.FLAG_RECURSIVE)
            mine = ['/pods/a', '/pods/a/x', '/pods/a/y', '/q/r']
            ft.check_equal(flags(GROUPS + ['/pods/a/y']), {g: int(g in mine) for g in GROUPS + ['/pods/a/y']},
                           'Freeze("/", RECURSIVE): the flags of the tracked groups only')
            ft.check_equal((sc.frozen('/pods/b'), sc.frozen('/q/s')), (False, False), '/pods/b and /q/s run')
            c.call('Thaw', '/', tmo, ft.FLAG_RECURSIVE)
            ft.check_equal(flags(GROUPS + ['/pods/a/y']), {g: 0 for g in GROUPS + ['/pods/a/y']},
                           'Thaw("/", RECURSIVE): every flag 0')
            s.check('FreezeExcept and RECURSIVE from "/"', tracked)

            c.call('Track', '/')
            rest = ['/pods', '/pods/b', '/pods/c', '/pods/d', '/q', '/q/s']
            s.check('Track("/") with "/" untracked', tracked + rest, added=rest)
            c.call('Untrack', '/')
            s.check('Untrack("/") again', tracked, removed=rest)
            ft.check_equal(flags(GROUPS), {g: 0 for g in GROUPS}, 'B: every cgroup.freeze is 0')

            # freezectl status of an untracked path tracks it only while it runs
            # (LookupGroup TRANSIENT: until session 47 for good, with a note); freezectl
            # track tracks it for good (the state directory keeps it), untrack ends that.
            r = ft.freezectl('status', '/q/s')
            ft.check(r.stderr == '' and any(ln.split() == ['Path:', '/q/s'] for ln in r.stdout.splitlines()),
                     'freezectl status /q/s: its status, no note', (r.stdout, r.stderr))
            wait_dropped(s, '/q/s', 'freezectl status /q/s')
            s.check('freezectl status /q/s tracked it while it ran', tracked, added=['/q/s'], removed=['/q/s'])
            ft.check('/q/s' not in saved_tracked(d), '  ... never in the state directory', saved_tracked(d))
            ft.freezectl('track', '/q/s')
            s.check('freezectl track /q/s', tracked + ['/q/s'], added=['/q/s'])
            for p in ('/q/s', '/pods/a/x', '/pods/a', '/'):
                r = ft.freezectl('status', p)
                ft.check_equal(r.stderr, '', f'freezectl status {p}, tracked already: no note')
            s.check('status of tracked groups', tracked + ['/q/s'])
            ft.check('/q/s' in saved_tracked(d), 'and freezerd keeps it in its state directory', saved_tracked(d))
            r = ft.freezectl('untrack', '/q/s')
            ft.check_equal((r.stdout, r.stderr), ('', ''), 'freezectl untrack /q/s prints nothing')
            s.check('freezectl untrack /q/s', tracked, removed=['/q/s'])
            ft.check('/q/s' not in saved_tracked(d), 'and it is gone from the state directory', saved_tracked(d))
            r = ft.freezectl('untrack', '/q/s', check=False)
            ft.check(r.returncode == 1 and len(r.stderr.splitlines()) == 1 and
                     'cannot untrack /q/s: NotTracked: /q/s is not a tracked root' in r.stderr,
                     'freezectl untrack of a subtree not tracked: exit 1, one line saying NotTracked',
                     (r.returncode, r.stderr))
            ft.freezectl('track', '/q/s')
            s.check('freezectl track /q/s', tracked + ['/q/s'], added=['/q/s'])
            ft.freezectl('untrack', '/q/s')
            s.check('freezectl untrack /q/s again', tracked, removed=['/q/s'])

            # --json: one object per path, as freeze and thaw print (it printed nothing).
            for verb in ('track', 'untrack'):
                r = ft.freezectl('--json', verb, '/q/s')
                ft.check_equal(json.loads(r.stdout or 'null'), [{'path': '/q/s', 'result': 'done'}],
                               f'freezectl --json {verb} /q/s: [{{"path", "result": "done"}}]')
            r = ft.freezectl('--json', 'untrack', '/q/s', '/q/r', check=False)
            out = json.loads(r.stdout) if r.stdout else None
            ft.check(r.returncode == 1 and isinstance(out, list) and len(out) == 1 and
                     out[0].get('path') == '/q/s' and out[0].get('result') == 'failed' and
                     out[0].get('error', '').startswith('org.freezerd.Freezer1.Error.') and out[0].get('message'),
                     'freezectl --json untrack of a subtree not tracked: exit 1, one "failed" object with error and '
                     'message, and it stops there', (r.returncode, r.stdout))
            ft.check_equal(s.listed(), sorted(tracked), 'freezectl --json track and untrack /q/s: ListGroups')
            s.rec.clear()

            # So does every other command given a PATH, as --help says (which
            # named status, tree, pressure and watch in one place, and status,
            # watch, freeze and thaw in another).
            batch = json.dumps([{'path': '/q/s', 'freeze': False}])
            # The read-only ones only while they run (session 47: they tracked it for good,
            # with a note); the others were asked to change the group: for good.
            for args, given in ((['tree', '/q/s'], None), (['pressure', '/q/s'], None), (['watch', '/q/s'], None),
                                (['thaw', '/q/s'], None), (['batch', '-'], batch), (['freeze', '/q/s'], None)):
                r = watch_until_watching(*args[1:]) if args[0] == 'watch' else ft.freezectl(*args, input=given)
                ft.check_equal(r.stderr, '', f'freezectl {" ".join(args)}: nothing on stderr')
                if args[0] in ('tree', 'pressure', 'watch'):
                    wait_dropped(s, '/q/s', f'freezectl {" ".join(args)}')
                    s.check(f'freezectl {" ".join(args)} tracked /q/s while it ran', tracked, added=['/q/s'],
                            removed=['/q/s'])
                    ft.check('/q/s' not in saved_tracked(d), '  ... never in the state directory',
                             saved_tracked(d))
                    continue
                if args[0] == 'freeze':  # announced running, then frozen
                    ft.check('/q/s' in s.listed(), 'freezectl freeze /q/s tracks /q/s')
                    ft.freezectl('thaw', '/q/s')
                    s.rec.clear()
                else:
                    s.check(f'freezectl {" ".join(args)} tracks /q/s', tracked + ['/q/s'], added=['/q/s'])
                ft.freezectl('untrack', '/q/s')
                s.check(f'freezectl untrack /q/s after {args[0]}', tracked, removed=['/q/s'])
            ft.check_equal(flags(GROUPS), {g: 0 for g in GROUPS}, 'B: every cgroup.freeze is 0 again')
            text = ' '.join(ft.freezectl('--help').stdout.split())
            ft.check(re.search(r'Every command given a PATH outside the tracked subtrees makes freezerd track the '
                               r'group\'s subtree: freeze \(its --except= paths too\), thaw and batch \(the paths '
                               r'of its requests\) for good, as track does \(untrack ends that\); status, tree, '
                               r'pressure and watch, which only look, only while they run', text) and
                     text.count('tracks it') == 0,
                     'freezectl --help names every command that tracks, in one place',
                     [x for x in text.split('. ') if 'track' in x])

            # A NotTracked that ends with a path is freezerd's as it is, even where the
            # path ends as the message freezectl translates does (it rewrote the path).
            odd = '/w is not a tracked root, nor in a tracked subtree (see Track() and the "track" setting'
            sc.mkdir(odd)
            c.call('Track', odd)
            r = ft.freezectl('untrack', odd + '/typo', check=False)
            ft.check_equal((r.returncode, r.stderr),
                           (1, f'freezectl: cannot untrack {odd}/typo: NotTracked: {odd}/typo is not a tracked '
                               f'root, and does not exist (in the tracked subtree at {odd})\n'),
                           'freezectl untrack of a path below a root whose name ends as a NotTracked: the path as '
                           'it is')
            c.call('Untrack', odd)

        check_list_denied(sc)
    print('# checked: Track/Untrack of nested subtrees (ListGroups, GetManagedObjects, Groups, InterfacesAdded/'
          'Removed at each step), an untracked ancestor\'s flag, the root object under any track setting')


ft.run(test)
