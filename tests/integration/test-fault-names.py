#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Groups whose names D-Bus cannot carry.  The kernel takes any bytes but '/'
and NUL in a cgroup's name, so whoever may mkdir in a delegated subtree can
make one that is not UTF-8, holds a noncharacter (sd-bus refuses U+FFFF in a
string) or a control character.  freezerd does not follow such groups: their
paths would go into every listing, reply and signal that names them, and
sd-bus refuses to build those messages.

  /pods/a            a sleeper
  /pods/b            a sleeper
  /pods/bad\\xff      (not UTF-8), made before freezerd starts, a sleeper
  /pods/nc\\uffff     (a noncharacter), made before freezerd starts
  /pods/ctl\\x01      (a control character), made while freezerd runs

Checks:
  * freezerd is ready; ListGroups, GetManagedObjects and `freezectl list`
    work and hold /pods, /pods/a, /pods/b and none of the odd groups; "/pods"
    counts 2 descendants;
  * the log names each odd group once, escaped, with a warning, also after
    Track() of "/pods" and "/" looked again for the groups they lack;
  * FreezeExcept("/pods", ["/pods/a"]) fails with NotSupported, writing
    nothing, naming an odd sibling (escaped) and saying to freeze /pods whole;
    `freezectl freeze /pods --except=/pods/a` exits 1 with it (at first the
    reply could not be built and the caller waited for ever, its writes made;
    then it replied [/pods/b], the odd siblings left running);
  * the odd group is named by its whole path, quoted as one: below "/sp ",
    "/qt\\"x " and for a name " lead\\xff" in double quotes, below a 302-byte
    parent cut as one path with its whole length, below "/" as "/rt\\xff"
    (before, the parent was quoted alone and "/name" put after it);
  * FreezeExcept("/q", ["/q/keep"]) replies [/q/other]: odd groups inside
    the excluded subtree and inside the cover are no matter;
  * Thaw("/pods", RECURSIVE), `freezectl thaw --recursive /pods` and
    ApplyBatch([thaw /pods] or [thaw /], RECURSIVE) clear the flags of
    /pods/bad\\xff, of /pods/bad\\xff/inner and /pods/ctl\\x01, each frozen by
    its own flag, after the flags freezerd follows, and at the reply their
    cgroup.events read frozen 0; the sleeper runs again (before, they stayed
    frozen and the call succeeded); the batch counts their writes; a batch
    whose last request over /pods freezes leaves their flags;
  * Freeze("/pods") and Thaw("/pods") each bring one GroupsChanged entry for
    /pods (frozen, then running): before, one odd entry dropped the whole
    signal; the kernel froze the sleeper of /pods/bad\\xff with it."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ODD = [b'bad\xff', 'nc\uffff'.encode(), b'ctl\x01']
ESCAPED = ['bad\\xff', 'nc\\xef\\xbf\\xbf', 'ctl\\x01']


def events_frozen(d):
    with open(d + b'/cgroup.events') as f:
        return ft._parse_keyed(f.read()).get('frozen') == 1


def read_flag(d):
    with open(d + b'/cgroup.freeze') as f:
        return int(f.read())


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl')
    with ft.Scratch('fault-names') as sc, ft.Bus() as bus:
        for g in ('/pods/a', '/pods/b'):
            sc.mkdir(g)
            sc.spawn_sleepers(g, 1)
        pods = os.fsencode(sc.abspath('/pods'))
        for name in ODD[:2]:
            os.mkdir(pods + b'/' + name)
        bad = pods + b'/' + ODD[0]
        sleeper = ft.subprocess.Popen(['sleep', '1000'])
        sc.procs.append(sleeper)
        with open(bad + b'/cgroup.procs', 'w') as f:
            f.write(str(sleeper.pid))

        def odd_flag(name):
            return read_flag(pods + b'/' + name)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            os.mkdir(pods + b'/' + ODD[2])
            c.call('ListGroups')  # a round trip after freezerd read the IN_CREATE
            want = ['/', '/pods', '/pods/a', '/pods/b']
            ft.check_equal(sorted(p for p, _o, _s in c.call('ListGroups')[0]), want, 'ListGroups')
            objs = c.managed_objects()
            ft.check_equal(sorted(o for o in objs if o != ft.MANAGER_PATH), sorted(ft.group_object(p) for p in want),
                           'GetManagedObjects')
            r = ft.freezectl('list', address=bus.address, check=False)
            ft.check(r.returncode == 0, 'freezectl list succeeds', r.stderr)
            ft.check(all(p in r.stdout for p in want[1:]), 'freezectl list shows /pods, /pods/a, /pods/b',
                     r.stdout)
            ft.check_equal(c.group_property('/pods', 'Descendants'), 2, '/pods counts 2 descendants')
            log = d.log()
            for e in ESCAPED:
                ft.check(log.count(f'Not following /pods/{e}:') == 1, f'the log names /pods/{e} once', log)
            # Track() of a tracked subtree looks again for the groups it lacks:
            # the odd ones are still not followed, and not logged again.
            for p in ('/pods', '/', '/pods'):
                c.call('Track', p)
            ft.check_equal(sorted(p for p, _o, _s in c.call('ListGroups')[0]), want, 'ListGroups after 3 rescans')
            log = d.log()
            for e in ESCAPED:
                ft.check(log.count(f'Not following /pods/{e}:') == 1, f'after 3 rescans the log names /pods/{e} once',
                         log)

            # Many below one group: the first eight are named, the ninth says that
            # more go unlogged, and no rescan logs any of them again.
            os.mkdir(pods + b'/many')
            many = [b'm%d\xff' % i for i in range(12)]
            for name in many:
                os.mkdir(pods + b'/many/' + name)
            c.call('Track', '/pods/many')
            for p in ('/pods/many', '/pods'):
                c.call('Track', p)
            lines = [ln for ln in d.log().splitlines() if 'Not following /pods/many/' in ln]
            ft.check(len(lines) == 9 and 'not logged' in lines[-1] and all('not logged' not in ln for ln in lines[:8]),
                     '12 odd names below /pods/many: 8 named, the 9th says the rest go unlogged, none again after '
                     'rescans', '\n'.join(lines))
            gone = c.record(subscribe=False)
            for name in many:
                os.rmdir(pods + b'/many/' + name)
            os.rmdir(pods + b'/many')
            # A reply does not wait for freezerd to read the kernel's IN_DELETE: the
            # FreezeExcept below failed with NoSuchGroup for /pods/many under ASan.
            gone.wait_for(lambda r: ft.group_object('/pods/many') in [o for o, _i in r.interfaces_removed()],
                          what='InterfacesRemoved of /pods/many')

            # FreezeExcept(/pods, [/pods/a]) would freeze /pods/b and each odd sibling by its
            # own flag; freezerd cannot name one in its reply (a D-Bus string), and before
            # left them out: it replied [/pods/b] with the sleeper of /pods/bad\xff running.
            flags_before = {n: odd_flag(n) for n in ODD} | {'/pods/b': sc.read_freeze('/pods/b')}
            e = ft.expect_dbus_error('org.freezerd.Freezer1.Error.NotSupported', c.call, 'FreezeExcept', '/pods',
                                     ['/pods/a'], 0, 0)
            ft.check(any(f'/pods/{x} ' in e.message for x in ESCAPED) and 'freeze /pods as a whole' in e.message
                     and 'nothing was written' in e.message,
                     'FreezeExcept(/pods, [/pods/a]) names an odd sibling, escaped, and says to freeze /pods', e.message)
            ft.check_equal({n: odd_flag(n) for n in ODD} | {'/pods/b': sc.read_freeze('/pods/b')}, flags_before,
                           'the refused FreezeExcept wrote nothing')
            ft.check(not ft.task_frozen(ft.proc_state(sleeper.pid)), 'the sleeper of /pods/bad\\xff still runs')
            r = ft.freezectl('freeze', '/pods', '--except=/pods/a', address=bus.address, check=False)
            print('# ' + r.stderr.strip(), flush=True)

            # The same below a followed group whose name holds a literal backslash: its
            # path in the message has the backslash doubled, as in every quoted path, so
            # that its "\x0a" does not read as an escaped newline.
            bs = os.fsencode(sc.abspath('/bs\\x0a'))
            os.mkdir(bs)
            os.mkdir(bs + b'/a')
            os.mkdir(bs + b'/' + ODD[0])
            c.call('Track', '/bs\\x0a')
            e = ft.expect_dbus_error('org.freezerd.Freezer1.Error.NotSupported', c.call, 'FreezeExcept', '/bs\\x0a',
                                     ['/bs\\x0a/a'], 0, 0)
            ft.check('/bs\\\\x0a/bad\\xff ' in e.message and '/bs\\x0a/' not in e.message.replace('\\\\', ''),
                     'FreezeExcept below /bs\\x0a: the odd group named with the backslash of its parent doubled',
                     e.message)
            ft.check(r.returncode == 1 and 'NotSupported' in r.stderr and 'apart from its siblings' in r.stderr
                     and 'freeze /pods as a whole' in r.stderr,
                     'freezectl freeze /pods --except=/pods/a exits 1 and prints the error', r)

            # The odd group is named by its whole path, quoted as one path is: in double
            # quotes where a part of it starts or ends with white space (its parent's
            # name, or its own), a '"' in it as \"; cut as one where it is long, the
            # byte count its whole path's.  Before, its parent was quoted alone and
            # "/" and its name put after it: "/sp /bad\xff" read as two paths, and a
            # long parent's "(N bytes)" came before the name.
            long_parent = '/' + 'L' * 200 + '/' + 'M' * 100
            for parent, name, want in (
                    ('/sp ', b'bad\xff', '"/sp /bad\\xff"'),
                    ('/lw', b' lead\xff', '"/lw/ lead\\xff"'),
                    ('/qt"x ', b'bad\xff', '"/qt\\"x /bad\\xff"'),
                    ('/qt"y', b'bad\xff', '/qt"y/bad\\xff '),
                    (long_parent, b'bad\xff', 'L/' + 'M' * 100 + '/bad\\xff (%d bytes) ' % (len(long_parent) + 5)),
                    ('/', b'rt\xff', ' /rt\\xff ')):
                top = os.fsencode(sc.abspath(parent))
                sc.mkdir(parent.rstrip('/') + '/x')
                os.mkdir(top + b'/' + name)
                try:
                    c.call('Track', parent)
                    e = ft.expect_dbus_error('org.freezerd.Freezer1.Error.NotSupported', c.call, 'FreezeExcept',
                                             parent, [parent.rstrip('/') + '/x'], 0, 0)
                    ft.check(want in e.message and 'nothing was written' in e.message,
                             f'FreezeExcept below {parent!r}: the odd group named as one path, {want}', e.message)
                finally:
                    os.rmdir(top + b'/' + name)
                    os.rmdir(top + b'/x')

            # Odd groups inside an excluded subtree (they run anyway) and inside a group
            # of the cover (frozen with it) are no matter.
            for g in ('/q/keep', '/q/other'):
                sc.mkdir(g)
            q = os.fsencode(sc.abspath('/q'))
            os.mkdir(q + b'/keep/k\xfe')
            os.mkdir(q + b'/other/o\x02')
            c.call('ListGroups')
            ft.check_equal(c.call('FreezeExcept', '/q', ['/q/keep'], 0, 0)[0], ['/q/other'],
                           'FreezeExcept(/q, [/q/keep]) replies [/q/other] (odd groups inside both)')
            ft.check(events_frozen(q + b'/other/o\x02') and not events_frozen(q + b'/keep/k\xfe'),
                     '/q/other/o\\x02 is frozen with /q/other, /q/keep/k\\xfe is not')
            c.call('Thaw', '/q/other', 0, 0)

            # Thaw RECURSIVE clears the flags of the odd groups too, bottom-up, and the
            # kernel reports them thawed when it replies: before, /pods/bad\xff (and the
            # group below it) stayed frozen, its sleeper stopped, and the call succeeded.
            inner = bad + b'/inner'
            os.mkdir(inner)
            for how in ('Thaw', 'freezectl', 'ApplyBatch', 'ApplyBatch of /'):
                c.call('Freeze', '/pods/a', 0, 0)
                for d in (inner, bad, pods + b'/' + ODD[2]):
                    with open(d + b'/cgroup.freeze', 'w') as f:
                        f.write('1')
                ft.wait_for(lambda: ft.task_frozen(ft.proc_state(sleeper.pid)),
                            what='the sleeper of /pods/bad\\xff to freeze by its own flag')
                if how == 'Thaw':
                    # The odd groups' flags are written last, once the call's own
                    # succeeded: a call refused or failed never touches them (their
                    # flags were written first, and written back after a failure, their
                    # tasks running meanwhile).
                    ino = ft.Inotify()
                    try:
                        wd_a = ino.add_watch(sc.abspath('/pods/a') + '/cgroup.freeze', ft.Inotify.IN_MODIFY)
                        wd_bad = ino.add_watch(bad + b'/cgroup.freeze', ft.Inotify.IN_MODIFY)
                        c.call('Thaw', '/pods', 0, ft.FLAG_RECURSIVE)
                        order = [wd for wd, _mask, _name in ino.read() if wd in (wd_a, wd_bad)]
                    finally:
                        os.close(ino.fd)
                    ft.check(order and order[0] == wd_a and wd_bad in order,
                             'Thaw RECURSIVE of /pods writes /pods/a\'s flag before /pods/bad\\xff\'s',
                             order)
                elif how == 'freezectl':
                    r = ft.freezectl('thaw', '--recursive', '/pods', address=bus.address, check=False)
                    ft.check(r.returncode == 0, 'freezectl thaw --recursive /pods exits 0', r)
                else:
                    # ApplyBatch with RECURSIVE does the same (it left them frozen), and
                    # counts their writes: /pods/a and the three odd groups.
                    top = '/pods' if how == 'ApplyBatch' else '/'
                    writes, _skipped = c.call('ApplyBatch', [(top, False)], 'auto', 0, ft.FLAG_RECURSIVE)
                    ft.check_equal(writes, 4, f'{how} [thaw {top}] RECURSIVE: 4 writes (/pods/a, 3 odd groups)')
                for d, name in ((inner, 'bad\\xff/inner'), (bad, 'bad\\xff'), (pods + b'/' + ODD[2], 'ctl\\x01')):
                    ft.check(not events_frozen(d) and read_flag(d) == 0,
                             f'{how} RECURSIVE of /pods: /pods/{name} reads cgroup.freeze 0 and frozen 0 at its reply')
                ft.check_equal(sc.read_events('/pods/a')['frozen'], 0, f'{how} RECURSIVE of /pods: /pods/a thawed')
                ft.wait_for(lambda: not ft.task_frozen(ft.proc_state(sleeper.pid)),
                            what='the sleeper of /pods/bad\\xff to run again')
                ft.check(True, f'{how} RECURSIVE of /pods: the sleeper of /pods/bad\\xff runs again')

            # Of a RECURSIVE batch, the request that decides a group decides the odd groups
            # below it: the last one over /pods freezes, so their own flags stay.
            for d in (bad, pods + b'/' + ODD[2]):
                with open(d + b'/cgroup.freeze', 'w') as f:
                    f.write('1')
            c.call('ApplyBatch', [('/pods', False), ('/pods', True)], 'auto', 0, ft.FLAG_RECURSIVE)
            ft.check_equal([read_flag(bad), read_flag(pods + b'/' + ODD[2])], [1, 1],
                           'ApplyBatch [thaw /pods, freeze /pods] RECURSIVE: the odd groups\' own flags stay 1')
            c.call('Thaw', '/pods', 0, ft.FLAG_RECURSIVE)
            ft.check_equal([read_flag(bad), read_flag(pods + b'/' + ODD[2])], [0, 0], 'and Thaw RECURSIVE clears them')

            rec = c.record(subscribe='groups')
            for freeze, state in ((True, 'frozen'), (False, 'running')):
                rec.clear()
                c.call('Freeze' if freeze else 'Thaw', '/pods', 0, 0)
                c.call('ListGroups')  # signals of the call come before this reply
                ft.wait_for(lambda: any(p == '/pods' and v.get('FreezerState') == state
                                        for sig in rec.groups_changed() for p, v in sig),
                            what=f'GroupsChanged to bring /pods {state}')
                ft.check(True, f'{"Freeze" if freeze else "Thaw"}(/pods): GroupsChanged has /pods {state}')
                if freeze:
                    ft.wait_for(lambda: ft.task_frozen(ft.proc_state(sleeper.pid)),
                                what='the sleeper of /pods/bad\\xff to freeze')
                    ft.check(True, 'the kernel froze the sleeper of /pods/bad\\xff with /pods')


if __name__ == '__main__':
    ft.run(test)
