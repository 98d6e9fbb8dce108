#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Calls over groups removed a moment ago, before freezerd read their IN_DELETE.

  /t (tracked), /t/h (excluded, a sleeper), /t/a, /t/b (a sleeper each); /t/x, /t/b/y
  and /t/z made, looked up (GetGroup: in the model), and removed during the test

The model still holds a group whose rmdir freezerd has not read yet: a call then
computes its groups with it, and the write of its cgroup.freeze fails (ENOENT at the
open, or ENODEV through the file freezerd kept open since an earlier write).  Until
session 36 every such call failed with NoSuchGroup, "the requests before it stay
applied", and a container manager whose containers come and go hit it (5 times in 40
FreezeExcept calls of a loop of mkdir, GetGroup, rmdir, FreezeExcept):

  * a group the call reached without naming it (FreezeExcept's cover, a RECURSIVE
    request's subtree) is no longer part of what it asks for: its tasks went with it.
    It is left out (and out of FreezeExcept's reply), the call succeeds;
  * a group an ApplyBatch names fails it with NoSuchGroup as before, but with nothing
    written (the requests before it were written and stayed);
  * so does the top or an excluded group of FreezeExcept (which froze all around an
    excluded group removed so, and replied [] for a top removed so).

The same for a group removed while the call waits for the kernel to confirm: /t/s
holds a task blocked on a FUSE mount (it cannot freeze), and is killed and removed
while FreezeExcept, or a RECURSIVE ApplyBatch over /t, waits for it.  Such a call
failed with NoSuchGroup ("was removed while waiting for it to freeze"), its flags
written; it now succeeds without /t/s (left out of FreezeExcept's reply too).  A
batch that names /t/s still fails so, but with SKIP_MISSING (bit 3), which leaves out
a named group that does not exist as it does an unnamed one: there it succeeds, and an
ApplyBatch naming /t/z removed a moment ago writes the others, /t/z counted as skipped
(test-batch-skip-missing has the rest of SKIP_MISSING).

The same behind other events freezerd has not handled either: the rmdir queued after
a write to cgroup.freeze (/t/a, the same flag again, as someone else), or after the
call, or with the events of freezerd's own write (a Thaw of /t/w, sent before the
call): an ApplyBatch naming the group fails with NoSuchGroup, nothing written, and a
RECURSIVE one leaves it out.  freezerd looks for a removal among the events it has not
handled (and those queued, read ahead), not only whether some wait.

A storm: FreezeExcept("/v", ["/v/c0"]) over 1,100 children, whose cover of 1,099
goes out from the real-time writer thread (daemon/freeze-writer.h), each written
group put in the model as the thread goes on (batch_written()), with /v/c7 removed a
moment ago: left out as above, the thread's other writes go on.

The order is made certain as in test-batch-except-new: freezerd is stopped (SIGSTOP),
the group removed, the call written into its private socket, and freezerd goes on:
it reads both in one turn of its loop, and handles the call before the inotify event.
It must be stopped waiting in epoll_wait() (/proc/PID/syscall, whose numbers for
epoll_wait(), epoll_pwait() and epoll_pwait2() are read off children blocked in each,
ft.epoll_waits()), else stopped again:
stopped in the middle of a turn (a notification of cgroup.events that came after the
last reply), it would go on reading the inotify queue, the rmdir in it, and handle it
at that turn's end, before it reads the call at the next.
Even so freezerd may read the removal first (a write of its own on the way when it was
stopped): a call naming the group then fails with "does not exist", and one reaching it
without naming it succeeds as if the race had been hit.  Either is tried again (up to 5
times), the latter unless freezerd's debug log says that it left the group out, its
removal not read yet: else it could pass without testing anything.
Each group is tried with its cgroup.freeze never written by freezerd (the open
fails) and written before (freezerd keeps the file open: the write, or its check
before the writes, fails)."""

import os
import re
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ['/t', '/t/h', '/t/a', '/t/b']
FLAG_SKIP_MISSING = 1 << 3
SKIPPED_LINE = 'does not exist, left out (SKIP_MISSING)'  # the validation's, in freezerd's debug log
CHILDREN = 1100  # of /v: a cover of 1,099 groups, >= 1,024, written by the real-time thread
RT_LINE = re.compile(r'Wrote (\d+) of (\d+) cgroup\.freeze from a real-time thread')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    print(f'# epoll_wait(), epoll_pwait(), epoll_pwait2() here: {sorted(ft.epoll_waits())}', flush=True)
    with ft.Scratch('batch-vanished') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        for g in GROUPS:
            sc.mkdir(g)
        for g in ('/t/h', '/t/a', '/t/b'):
            sc.spawn_sleepers(g, 1)
        for i in range(CHILDREN):
            sc.mkdir(f'/v/c{i}')
        with ft.Daemon(bus, sc.root, config={'track': ['/t', '/v']}, env={'FREEZERD_LOG_LEVEL': 'debug'}) as d, \
                ft.Client(f'unix:path={os.path.join(d.runtime_dir, "private")}', direct=True) as priv:
            c = d.client

            def made(p, written):
                sc.mkdir(p)
                c.call('GetGroup', p)  # in the model
                if written:  # freezerd keeps its cgroup.freeze open
                    c.call('Freeze', p, 0, 0)
                    c.call('Thaw', p, 0, 0)

            def stop_waiting():
                """SIGSTOP freezerd while it waits in epoll_wait() for its next loop turn."""
                ft.stop_in_epoll_wait(d.pid)

            def raced(p, method, *args):
                """method(*args) sent while freezerd is stopped, after p's rmdir (p: one or a list)."""
                stop_waiting()
                try:
                    for q in [p] if isinstance(p, str) else p:
                        sc.rmdir(q)
                    call = priv.call_async(method, *args)
                finally:
                    os.kill(d.pid, signal.SIGCONT)
                return call

            def named_raced(make, removed, method, *args):
                """raced() of a call that names a removed group: its NoSuchGroup.  One whose
                removal freezerd read first after all ("does not exist", as at any time:
                freezerd stopped in epoll_wait() with the event of a write of its own on the
                way, say) is tried again, up to 5 times."""
                for attempt in range(5):
                    make()
                    call = raced(removed, method, *args)
                    e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, call.result)
                    if 'does not exist' not in e.message:
                        return e
                    print(f'# the removal was read before the call, again: {e.message}', flush=True)
                ft.fail(f'{method}: the removal was read before the call in 5 tries')

            def skipped_raced(make, removed, *args):
                """raced() of an ApplyBatch with SKIP_MISSING that names a removed group: its
                reply.  One whose removal freezerd read first after all (its validation left
                the group out, as it says in the log) is tried again, up to 5 times."""
                for attempt in range(5):
                    make()
                    before = d.log().count(SKIPPED_LINE)
                    got = tuple(raced(removed, 'ApplyBatch', *args).result())
                    if d.log().count(SKIPPED_LINE) == before:
                        return got
                    print('# the removal was read before the call, again', flush=True)
                    all_thawed('a batch tried again')
                ft.fail('ApplyBatch: the removal was read before the call in 5 tries')

            def left_out(p):
                """How often freezerd left p out of a call, its removal not read yet (its log)."""
                return d.log().count(f'{p}: removed a moment ago, its removal not read yet: left out of the call')

            def unnamed_raced(make, removed, top, send):
                """send() (raced(), behind()) of a call that reaches a removed group without
                naming it, which succeeds whether freezerd read the removal first or not: its
                log tells.  One whose removal freezerd read first (see named_raced()) proves
                nothing: Thaw(top, RECURSIVE), and again, up to 5 times."""
                for attempt in range(5):
                    make()
                    n = left_out(removed)
                    call = send()
                    ft.wait_for(call.done, what=f'the reply of the call over {removed}, removed')
                    if left_out(removed) > n:
                        return call
                    print(f'# the removal of {removed} was read before the call, again', flush=True)
                    call.result()
                    c.call('Thaw', top, 0, ft.FLAG_RECURSIVE)
                ft.fail(f'the removal of {removed} was read before the call in 5 tries')

            def flags():
                return {g: sc.read_freeze(g) for g in GROUPS}

            def all_thawed(what):
                c.call('Thaw', '/t', 0, ft.FLAG_RECURSIVE)
                ft.check_equal(flags(), {g: 0 for g in GROUPS}, f'{what}: every flag cleared after')

            for written in (False, True):
                how = 'written before' if written else 'never written'

                # FreezeExcept: /t/x in the cover, removed.
                call = unnamed_raced(lambda: made('/t/x', written), '/t/x', '/t',
                                     lambda: raced('/t/x', 'FreezeExcept', '/t', ['/t/h'], 0, 0))
                what = f'FreezeExcept(/t, [/t/h]) with /t/x ({how}) removed a moment ago'
                got = call.result()[0]
                ft.check_equal(sorted(got), ['/t/a', '/t/b'], f'{what}: the cover frozen, /t/x left out')
                ft.check_equal(flags(), {'/t': 0, '/t/h': 0, '/t/a': 1, '/t/b': 1}, f'{what}: the flags')
                for g in ('/t/a', '/t/b'):
                    ft.check_equal(sc.frozen(g), True, f'{what}: {g} frozen')
                ft.check_equal(sc.frozen('/t/h'), False, f'{what}: /t/h runs')
                ft.check_equal(c.call('ApplyBatch', [(g, False) for g in got], 'auto', 0, 0)[0], 2,
                               f'{what}: one ApplyBatch of the reply thaws it')

                # Thaw RECURSIVE: /t/b/y (frozen by its own flag) in the subtree, removed.
                def made_frozen_a(p):
                    made(p, written)
                    c.call('Freeze', p, 0, 0)
                    c.call('Freeze', '/t/a', 0, 0)

                call = unnamed_raced(lambda: made_frozen_a('/t/b/y'), '/t/b/y', '/t',
                                     lambda: raced('/t/b/y', 'Thaw', '/t', 0, ft.FLAG_RECURSIVE))
                what = f'Thaw(/t, RECURSIVE) with /t/b/y ({how}, frozen) removed a moment ago'
                call.result()
                ft.check_equal(flags(), {g: 0 for g in GROUPS}, f'{what}: every flag cleared')
                ft.check_equal(sc.frozen('/t/a'), False, f'{what}: /t/a runs')

                # ApplyBatch RECURSIVE: /t/b/y below the named /t, removed.
                call = unnamed_raced(lambda: made('/t/b/y', written), '/t/b/y', '/t',
                                     lambda: raced('/t/b/y', 'ApplyBatch', [('/t', True)], 'auto', 0,
                                                   ft.FLAG_RECURSIVE))
                what = f'ApplyBatch([/t freeze], RECURSIVE) with /t/b/y ({how}) removed a moment ago'
                ft.check_equal(tuple(call.result()), (4, 0), f'{what}: the 4 groups left written, none skipped')
                ft.check_equal(flags(), {g: 1 for g in GROUPS}, f'{what}: every flag set')
                all_thawed(what)

                # ApplyBatch naming /t/z, removed: nothing written.
                for flag in (0, ft.FLAG_RECURSIVE, ft.FLAG_ROLLBACK_ON_TIMEOUT):
                    e = named_raced(lambda: made('/t/z', written), '/t/z', 'ApplyBatch',
                                    [('/t/a', True), ('/t/z', True)], 'top-down', 0, flag)
                    what = f'ApplyBatch([/t/a, /t/z], flags {flag}) with /t/z ({how}) removed a moment ago'
                    ft.check('/t/z' in e.message and 'nothing was written' in e.message,
                             f'{what}: NoSuchGroup names /t/z and says nothing was written', e.message)
                    ft.check_equal(flags(), {g: 0 for g in GROUPS}, f'{what}: /t/a not written')
                    ft.check_equal(sc.frozen('/t/a'), False, f'{what}: /t/a runs')

                # With SKIP_MISSING: /t/z left out, counted as skipped, /t/a written.
                for flag in (0, ft.FLAG_RECURSIVE, ft.FLAG_ROLLBACK_ON_TIMEOUT):
                    what = f'ApplyBatch([/t/a, /t/z], flags {flag | FLAG_SKIP_MISSING:#x}) with /t/z ({how}) removed'
                    got = skipped_raced(lambda: made('/t/z', written), '/t/z', [('/t/a', True), ('/t/z', True)],
                                        'top-down', 0, flag | FLAG_SKIP_MISSING)
                    ft.check_equal(got, (1, 1), f'{what}: /t/a written, /t/z skipped')
                    ft.check_equal(flags(), {'/t': 0, '/t/h': 0, '/t/a': 1, '/t/b': 0}, f'{what}: /t/a set')
                    ft.check_equal(sc.frozen('/t/a'), True, f'{what}: /t/a frozen')
                    all_thawed(what)

                # The same with the removed group's flag as the call asks already: no
                # write tells of the removal, the check before the writes does.
                def made_frozen(p):
                    made(p, written)
                    c.call('Freeze', p, 0, 0)

                call = unnamed_raced(lambda: made_frozen('/t/x'), '/t/x', '/t',
                                     lambda: raced('/t/x', 'FreezeExcept', '/t', ['/t/h'], 0, 0))
                what = f'FreezeExcept(/t, [/t/h]) with /t/x ({how}, frozen) removed a moment ago'
                got = call.result()[0]
                ft.check_equal(sorted(got), ['/t/a', '/t/b'], f'{what}: /t/x left out of the reply')
                ft.check_equal(c.call('ApplyBatch', [(g, False) for g in got], 'auto', 0, 0)[0], 2,
                               f'{what}: one ApplyBatch of the reply thaws it')

                call = unnamed_raced(lambda: made_frozen('/t/b/y'), '/t/b/y', '/t',
                                     lambda: raced('/t/b/y', 'ApplyBatch', [('/t', True)], 'auto', 0,
                                                   ft.FLAG_RECURSIVE))
                what = f'ApplyBatch([/t freeze], RECURSIVE) with /t/b/y ({how}, frozen) removed a moment ago'
                ft.check_equal(tuple(call.result()), (4, 0), f'{what}: 4 written, /t/b/y not counted as skipped')
                all_thawed(what)

                e = named_raced(lambda: made_frozen('/t/z'), '/t/z', 'ApplyBatch',
                                [('/t/a', True), ('/t/z', True)], 'top-down', 0, 0)
                what = f'ApplyBatch([/t/a, /t/z]) with /t/z ({how}, frozen) removed a moment ago'
                ft.check('/t/z' in e.message and 'nothing was written' in e.message,
                         f'{what}: NoSuchGroup names /t/z and says nothing was written', e.message)
                ft.check_equal(flags(), {g: 0 for g in GROUPS}, f'{what}: /t/a not written')

                what = f'ApplyBatch([/t/a, /t/z], SKIP_MISSING) with /t/z ({how}, frozen) removed a moment ago'
                got = skipped_raced(lambda: made_frozen('/t/z'), '/t/z', [('/t/a', True), ('/t/z', True)],
                                    'top-down', 0, FLAG_SKIP_MISSING)
                ft.check_equal(got, (1, 1), f'{what}: /t/a written, /t/z skipped')
                ft.check_equal(flags(), {'/t': 0, '/t/h': 0, '/t/a': 1, '/t/b': 0}, f'{what}: /t/a set')
                all_thawed(what)

            # The rmdir's IN_DELETE behind other events, not handled yet: a write to
            # cgroup.freeze (someone else's, of /t/a, changing nothing) queued before the
            # rmdir, or before the call and the rmdir after it, or freezerd's own write
            # (a Thaw of /t/w sent before the call).  freezerd looks for a removal among
            # all it has not handled, not only whether anything waits.
            def behind(order, p, method, *args):
                stop_waiting()
                try:
                    if order == 'ours':
                        own = priv.call_async('Thaw', '/t/w', 0, 0)
                    else:
                        sc.write_freeze('/t/a', 0)
                    if order != 'call, rmdir':
                        sc.rmdir(p)
                    call = priv.call_async(method, *args)
                    if order == 'call, rmdir':
                        sc.rmdir(p)
                finally:
                    os.kill(d.pid, signal.SIGCONT)
                if order == 'ours':
                    own.result()
                return call

            removals = c.record(subscribe=False)

            def rmdir_seen(p):
                """rmdir p and wait for freezerd to read it (InterfacesRemoved): made again at
                once, p would be the old group of the model, removed (the race above)."""
                removals.clear()
                sc.rmdir(p)
                removals.wait_for(lambda r: ft.group_object(p) in [o for o, _i in r.interfaces_removed()],
                                  what=f'freezerd read the removal of {p}')

            for order in ('rmdir, call', 'call, rmdir', 'ours'):
                for written in (False, True):
                    how = 'written before' if written else 'never written'
                    for z_flag in (0, 1) if written else (0,):
                        def make():
                            if order == 'ours':
                                made('/t/w', True)
                                c.call('Freeze', '/t/w', 0, 0)
                            made('/t/z', written)
                        what = (f'ApplyBatch([/t/a freeze, /t/z {"freeze" if z_flag else "thaw"}]) with /t/z '
                                f'({how}, thawed) removed a moment ago, behind a write ({order})')
                        for attempt in range(5):
                            make()
                            e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, behind(
                                order, '/t/z', 'ApplyBatch', [('/t/a', True), ('/t/z', bool(z_flag))], 'top-down',
                                0, 0).result)
                            if order == 'ours':
                                rmdir_seen('/t/w')
                            if 'does not exist' not in e.message:
                                break
                            print(f'# the removal was read before the call, again: {e.message}', flush=True)
                        else:
                            ft.fail(f'{what}: the removal was read before the call in 5 tries')
                        ft.check('/t/z' in e.message and 'nothing was written' in e.message,
                                 f'{what}: NoSuchGroup names /t/z and says nothing was written', e.message)
                        ft.check_equal(flags(), {g: 0 for g in GROUPS}, f'{what}: /t/a not written')

                    what = (f'ApplyBatch([/t thaw], RECURSIVE) with /t/z ({how}, thawed) removed a moment ago, '
                            f'behind a write ({order})')
                    def make_w():
                        if order == 'ours' and not sc.exists('/t/w'):
                            made('/t/w', True)
                        if order == 'ours':
                            c.call('Freeze', '/t/w', 0, 0)
                        made('/t/z', written)
                    got = tuple(unnamed_raced(make_w, '/t/z', '/t', lambda: behind(
                        order, '/t/z', 'ApplyBatch', [('/t', False)], 'auto', 0, ft.FLAG_RECURSIVE)).result())
                    ft.check_equal(got, (0, len(GROUPS) + (order == 'ours')),
                                   f'{what}: nothing written, /t/z not counted as skipped')
                    if order == 'ours':
                        rmdir_seen('/t/w')

            # A storm, written by the real-time thread.
            kept = [f'/v/c{i}' for i in range(1, CHILDREN) if i != 7]
            for written in (False, True):
                how = 'written before' if written else 'never written'
                what = f'FreezeExcept(/v, [/v/c0]) of {CHILDREN - 1} groups with /v/c7 ({how}) removed a moment ago'
                n_rt = len(RT_LINE.findall(d.log()))

                def made_c7():
                    nonlocal n_rt
                    made('/v/c7', written)
                    n_rt = len(RT_LINE.findall(d.log()))
                call = unnamed_raced(made_c7, '/v/c7', '/v',
                                     lambda: raced('/v/c7', 'FreezeExcept', '/v', ['/v/c0'], 0, 0))
                got = call.result()[0]
                ft.check_equal(sorted(got), sorted(kept), f'{what}: the cover frozen, /v/c7 left out')
                ft.check_equal(RT_LINE.findall(d.log())[n_rt:], [(str(CHILDREN - 2), str(CHILDREN - 1))],
                               f'{what}: written by the thread, all but /v/c7')
                wrong = [g for g in kept if sc.read_freeze(g) != 1 or not sc.frozen(g)]
                ft.check(not wrong, f'{what}: every group of the cover frozen', wrong[:3])
                ft.check_equal((sc.read_freeze('/v/c0'), sc.frozen('/v/c0')), (0, False), f'{what}: /v/c0 runs')
                c.call('Thaw', '/v', 0, ft.FLAG_RECURSIVE)
                wrong = [g for g in kept if sc.read_freeze(g) != 0 or sc.frozen(g)]
                ft.check(not wrong, f'{what}: every group thawed after', wrong[:3])

            # Removed while the call waits: /t/s cannot freeze until killed.
            def stuck_call(method, *args):
                sc.mkdir('/t/s')
                stuck = fuse.spawn_stuck(sc, '/t/s')
                c.call('GetGroup', '/t/s')
                call = c.call_async(method, *args)
                ft.wait_for(lambda: sc.read_freeze('/t/a') == 1 or call.done(), what='the call wrote its flags')
                ft.check(not call.done(), f'{method} waits for /t/s', call.done() and call.result())
                # Killed, /t/s would be frozen (empty) before its rmdir is read:
                # both wait for freezerd together.
                stop_waiting()
                try:
                    sc.kill('/t/s')
                    stuck.wait()
                    sc.wait_events('/t/s', populated=0)
                    sc.rmdir('/t/s')
                finally:
                    os.kill(d.pid, signal.SIGCONT)
                return call

            call = stuck_call('FreezeExcept', '/t', ['/t/h'], 0, 0)
            what = 'FreezeExcept(/t, [/t/h]) waiting for /t/s, removed'
            ft.check_equal(sorted(call.result()[0]), ['/t/a', '/t/b'], f'{what}: the cover frozen, /t/s left out')
            ft.check_equal(flags(), {'/t': 0, '/t/h': 0, '/t/a': 1, '/t/b': 1}, f'{what}: the flags')
            all_thawed(what)

            call = stuck_call('ApplyBatch', [('/t', True)], 'auto', 0, ft.FLAG_RECURSIVE)
            what = 'ApplyBatch([/t freeze], RECURSIVE) waiting for /t/s, removed'
            ft.check_equal(tuple(call.result()), (5, 0), f'{what}: the 5 groups written (/t/s too), none skipped')
            ft.check_equal(flags(), {g: 1 for g in GROUPS}, f'{what}: every flag set')
            all_thawed(what)

            call = stuck_call('ApplyBatch', [('/t/a', True), ('/t/s', True)], 'auto', 0, 0)
            what = 'ApplyBatch([/t/a, /t/s]) waiting for /t/s, removed'
            e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, call.result)
            ft.check('/t/s' in e.message and 'removed while waiting' in e.message,
                     f'{what}: NoSuchGroup names /t/s, which it names', e.message)
            all_thawed(what)

            call = stuck_call('ApplyBatch', [('/t/a', True), ('/t/s', True)], 'auto', 0, FLAG_SKIP_MISSING)
            what = 'ApplyBatch([/t/a, /t/s], SKIP_MISSING) waiting for /t/s, removed'
            ft.check_equal(tuple(call.result()), (2, 0), f'{what}: both written (/t/s before its removal)')
            ft.check_equal(sc.frozen('/t/a'), True, f'{what}: /t/a frozen')
            all_thawed(what)

            # FreezeExcept naming a group removed: its top, or one it excludes.
            for written in (False, True):
                how = 'written before' if written else 'never written'
                for top, removed, excluded in (('/t', ['/t/x'], ['/t/x']),
                                               ('/t/p', ['/t/p/q', '/t/p'], ['/t/p/q'])):
                    what = f'FreezeExcept({top}, {excluded}) with {removed[-1]} ({how}) removed a moment ago'
                    e = named_raced(lambda: [made(g, written) for g in reversed(removed)], removed,
                                    'FreezeExcept', top, excluded, 0, 0)
                    ft.check(removed[-1] in e.message and 'nothing was written' in e.message,
                             f'{what}: NoSuchGroup names {removed[-1]} and says nothing was written', e.message)
                    ft.check_equal(flags(), {g: 0 for g in GROUPS}, f'{what}: nothing written')

            ft.check_equal(d.warnings(), [], 'no warning in the log')


ft.run(test)
