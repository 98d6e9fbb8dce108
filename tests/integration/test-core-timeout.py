#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Freeze timeouts, with and without ROLLBACK_ON_TIMEOUT, and NO_WAIT, on a group
that cannot finish freezing.

  /h   a sleeper and a task blocked (state D) on a FUSE mount that never answers:
       the kernel keeps /h at "frozen 0" while cgroup.freeze is 1
  freezerd runs with default_timeout_usec 700000

Checks:
  * Freeze("/h", 500 ms, ROLLBACK_ON_TIMEOUT) fails with Timeout after >= 500 ms
    (and well before the method-call timeout), the message names /h; cgroup.freeze
    is back to 0, FreezerState "running", Freeze false, no task in the trap.
  * Freeze("/h", 500 ms, 0) fails with Timeout naming /h; cgroup.freeze stays 1,
    the kernel says frozen 0, FreezerState "freezing", Freeze true, Frozen false.
    The message names the task that keeps /h from freezing, its state (D) and
    the kernel function it sleeps in (/proc/PID/wchan), and not the sleeper,
    which is frozen.  It and the log say "after 500ms" (it was "500.000ms", then
    "500 ms": two words, which freezectl's --timeout= does not take pasted back).
  * With the flag already 1, Freeze(1.25 s, ROLLBACK) writes back the previous
    value, 1; the message says "after 1.25s" (it said "1.25 s"), which freezectl
    --timeout= takes as it is, and that ROLLBACK_ON_TIMEOUT had
    nothing to restore: /h's cgroup.freeze was 1 and stays 1, and the kernel goes
    on freezing it; `freezectl freeze --rollback` says it of --rollback; so does
    ApplyBatch([/h: freeze]); ApplyBatch([/h, /x (empty): freeze]) restores /x
    and says that /h stays 1; ApplyBatch([/x (frozen), /h: freeze]) names /h
    alone as the one the kernel goes on with (not done yet), in freezectl's
    words too.
  * Thaw then succeeds.
  * timeout_usec 0 means DefaultTimeoutUSec (700 ms): Group.Freeze(0, ROLLBACK)
    fails with Timeout after >= 700 ms.
  * NO_WAIT: Freeze("/h", 0, NO_WAIT) replies at once (the kernel still says
    frozen 0), FreezerState "freezing", cgroup.freeze 1.
  * No Timeout ever comes before its deadline: 40 x Freeze("/h", 100 ms, ROLLBACK),
    each measured from before the call was sent (CLOCK_MONOTONIC).
  * /p (a sleeper) with /p/c (a task blocked on FUSE): the kernel reports /p frozen
    once its own sleeper is, while /p/c is still freezing; the Timeout of
    Freeze("/p") and of a batch holding /p names /p/c as what keeps it, and its
    task; so does the Timeout of FreezeExcept("/q", ["/q/keep"]) for /q/s/c.
  * A group whose name holds ". ROLLBACK_ON_TIMEOUT had nothing to restore: ...",
    blocked: `freezectl freeze --rollback` says "--rollback" of freezerd's sentence
    only, not of the same words in the name (in double quotes).
  * `freezectl freeze /q --except=/q/keep` timing out without --rollback names the
    flags left, /q/s and /q/t; as nobody, given /q/s and /q/t but not /q, nothing
    advises `thaw --recursive /q` (which freezerd refuses nobody), and a thaw of
    those two works."""

import os
import pwd
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

DEFAULT_USEC = 700000


def timed_timeout(fn, *args):
    t0 = time.monotonic()
    e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, fn, *args)
    return e, time.monotonic() - t0


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('core-timeout') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        sc.mkdir('/h')
        sc.mkdir('/x')
        sleeper = sc.spawn_sleepers('/h', 1)[0]
        stuck = fuse.spawn_stuck(sc, '/h')

        with ft.Daemon(bus, sc.root, config={'default_timeout_usec': DEFAULT_USEC}) as d:
            c = d.client
            obj = c.call('GetGroup', '/h')[0]
            ft.check_equal(c.manager_property('DefaultTimeoutUSec'), DEFAULT_USEC, 'DefaultTimeoutUSec from config')
            slack = 5.0 * ft.TIMEOUT_MULTIPLIER

            def state():
                p = c.get_all(obj, ft.GROUP_IFACE)
                return (p['FreezerState'], p['Freeze'], p['Frozen'])

            # ---- with rollback
            e, dt = timed_timeout(c.call, 'Freeze', '/h', 500000, ft.FLAG_ROLLBACK_ON_TIMEOUT)
            ft.check(0.5 <= dt < 0.5 + slack, f'Timeout after 500 ms ({dt * 1000:.3f} ms)', f'{dt * 1000:.3f} ms')
            ft.check('/h' in e.message, 'the Timeout message names /h', repr(e.message))
            ft.check('stay as asked' not in e.message and e.message.endswith('. Every flag this call changed was '
                                                                              'restored'),
                     'rollback: the Timeout message says the flags were restored, not that they stay',
                     repr(e.message))
            ft.check_equal(sc.read_freeze('/h'), 0, 'rollback: cgroup.freeze is back to 0')
            ft.check_equal(state(), ('running', False, False), 'rollback: (FreezerState, Freeze, Frozen)')
            sc.wait_tasks_frozen('/h', frozen=False)
            ft.check(sc.no_task_frozen('/h'), 'rollback: no task in the freezer trap', sc.proc_states('/h'))
            ft.check_equal(stuck.poll(), None, 'the blocked task is still there')

            # ---- without rollback
            e, dt = timed_timeout(c.call, 'Freeze', '/h', 500000, 0)
            ft.check(0.5 <= dt < 0.5 + slack, f'Timeout after 500 ms ({dt * 1000:.3f} ms)', f'{dt * 1000:.3f} ms')
            ft.check('/h' in e.message, 'the Timeout message names /h', repr(e.message))
            # The task that keeps /h from freezing, and what it sleeps in; not the frozen sleeper.
            wchan = ft.proc_state(stuck.pid).wchan
            ft.check(f'Not frozen: task {stuck.pid} (stat) of /h, in uninterruptible sleep in {wchan}' in e.message,
                     f'the Timeout message names the task asleep in {wchan} (state D)', repr(e.message))
            ft.check(str(sleeper.pid) not in e.message, 'and not the frozen sleeper', repr(e.message))
            ft.check(e.message.startswith('Timed out after 500ms waiting for /h'),
                     'the Timeout message says "after 500ms"', repr(e.message))
            ft.check(f'A call timed out after 500ms waiting for /h (freezing). Not frozen: task {stuck.pid} (stat)'
                     in d.log(), "freezerd's log says so too", d.log()[-2000:])
            # What stays is said, as a rollback's restore is: "Timed out" alone reads as if
            # nothing was done.
            ft.check(e.message.endswith('. Without ROLLBACK_ON_TIMEOUT the flags stay as asked, and the kernel '
                                        'goes on with them'),
                     'no rollback: the Timeout message says that the flags stay', repr(e.message))
            ft.check_equal(sc.read_freeze('/h'), 1, 'no rollback: cgroup.freeze stays 1')
            ft.check_equal(sc.read_events('/h').get('frozen'), 0, 'no rollback: the kernel says frozen 0')
            ft.check_equal(state(), ('freezing', True, False), 'no rollback: (FreezerState, Freeze, Frozen)')

            # ---- rollback restores the previous value, which is 1 now (1.25 s: "1.25s" in the message)
            e, dt = timed_timeout(c.call, 'Freeze', '/h', 1250000, ft.FLAG_ROLLBACK_ON_TIMEOUT)
            ft.check(e.message.startswith('Timed out after 1.25s waiting for /h'),
                     'the Timeout message says "after 1.25s"', repr(e.message))
            # As freezectl reads a duration: pasted back, it is a timeout (NoSuchGroup
            # from freezerd, exit 1), not a usage error (exit 2).
            took = e.message.split('Timed out after ', 1)[1].split(' waiting', 1)[0]
            r = ft.freezectl('freeze', f'--timeout={took}', '/nope', address=bus.address, check=False)
            ft.check(r.returncode == 1 and 'NoSuchGroup' in r.stderr,
                     f'freezectl freeze --timeout={took}: the message\'s duration as freezectl takes it', r)
            ft.check_equal(sc.read_freeze('/h'), 1, 'rollback to the previous value 1: cgroup.freeze stays 1')
            ft.check_equal(state(), ('freezing', True, False), 'still freezing')
            # The call changed nothing: said, lest the caller wonder whether its rollback happened.
            unchanged = ('ROLLBACK_ON_TIMEOUT had nothing to restore: the cgroup.freeze of the group already as '
                         'asked was 1 before this call and stays 1, and the kernel goes on freezing it: /h')
            ft.check(e.message.endswith('. ' + unchanged) and 'restored' not in e.message,
                     'rollback of a call that wrote nothing: the Timeout message says what stays', repr(e.message))
            r = ft.freezectl('freeze', '--rollback', '--timeout=300ms', '/h', address=bus.address, check=False)
            ft.check(r.returncode == 1 and 'Timeout: Timed out after 300ms waiting for /h' in r.stderr and
                     r.stderr.endswith('. ' + unchanged.replace('ROLLBACK_ON_TIMEOUT', '--rollback') + '\n'),
                     'freezectl freeze --rollback: the same in its words', r)
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'ApplyBatch', [('/h', True)], 'auto', 300000,
                                     ft.FLAG_ROLLBACK_ON_TIMEOUT)
            ft.check(e.message.endswith('. ' + unchanged), 'the same for a batch whose request was skipped',
                     repr(e.message))
            # A batch that wrote /x (restored) and skipped /h.
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'ApplyBatch', [('/h', True), ('/x', True)], 'auto',
                                     300000, ft.FLAG_ROLLBACK_ON_TIMEOUT)
            # Its rollback's sentence is the one of what it restored: "nothing to restore" is not said.
            ft.check(e.message.endswith('. Every flag this call changed was restored') and
                     'nothing to restore' not in e.message,
                     'a batch that restored /x says so, not "nothing to restore"', repr(e.message))
            ft.check_equal((sc.read_freeze('/h'), sc.read_freeze('/x')), (1, 0), '  ... /h stays 1, /x is back to 0')
            ft.check_equal(state(), ('freezing', True, False), 'still freezing')
            # A batch that skipped both /h (freezing) and /x (frozen): "not done yet" is
            # said of /h alone, the one the kernel goes on with.
            c.call('Freeze', '/x', 0, 0)
            mixed = ('ROLLBACK_ON_TIMEOUT had nothing to restore: the cgroup.freeze of the 2 groups already as asked '
                     'was 1 before this call and stays 1, and the kernel goes on with the one not done yet: /h')
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'ApplyBatch', [('/x', True), ('/h', True)], 'auto',
                                     300000, ft.FLAG_ROLLBACK_ON_TIMEOUT)
            ft.check(e.message.endswith('. ' + mixed), 'a batch that skipped a frozen /x and a freezing /h: '
                     'only /h is named as not done yet', repr(e.message))
            r = ft.freezectl('batch', '--rollback', '--timeout=300ms', '-', address=bus.address, check=False,
                             input='[{"path": "/x", "freeze": true}, {"path": "/h", "freeze": true}]')
            ft.check(r.returncode == 1 and
                     r.stderr.endswith('. ' + mixed.replace('ROLLBACK_ON_TIMEOUT', '--rollback') + '\n'),
                     'freezectl batch --rollback: the same in its words', r)
            c.call('Thaw', '/x', 0, 0)
            ft.check_equal((sc.read_freeze('/h'), sc.read_freeze('/x')), (1, 0), '  ... /h stays 1, /x thawed')

            c.call('Thaw', '/h', 0, 0)
            ft.check_equal((sc.read_freeze('/h'), sc.read_events('/h').get('frozen')), (0, 0), 'Thaw: 0, frozen 0')
            ft.check_equal(state(), ('running', False, False), 'Thaw: running')

            # ---- timeout 0 = DefaultTimeoutUSec, through the group object
            e, dt = timed_timeout(c.group_call, '/h', 'Freeze', 0, ft.FLAG_ROLLBACK_ON_TIMEOUT)
            ft.check(DEFAULT_USEC / 1e6 <= dt < DEFAULT_USEC / 1e6 + slack,
                     f'timeout_usec 0: Timeout after DefaultTimeoutUSec, 700 ms ({dt * 1000:.3f} ms)',
                     f'{dt * 1000:.3f} ms')
            ft.check('/h' in e.message, 'the Timeout message names /h', repr(e.message))
            ft.check_equal(sc.read_freeze('/h'), 0, 'rollback: cgroup.freeze is back to 0')
            ft.check_equal(state(), ('running', False, False), 'rollback: running')

            # ---- NO_WAIT
            t0 = time.monotonic()
            c.call('Freeze', '/h', 0, ft.FLAG_NO_WAIT)
            dt = time.monotonic() - t0
            ft.check_equal(sc.read_events('/h').get('frozen'), 0,
                           'NO_WAIT replied although the kernel says frozen 0')
            ft.check(dt < DEFAULT_USEC / 1e6, 'NO_WAIT replied before any timeout', f'{dt:.3f} s')
            ft.check_equal(sc.read_freeze('/h'), 1, 'NO_WAIT: cgroup.freeze is 1')
            ft.check_equal(state(), ('freezing', True, False), 'NO_WAIT: freezing')
            c.call('Thaw', '/h', 0, 0)
            ft.check_equal(state(), ('running', False, False), 'thawed')

            # ---- the deadline is never early: measured from before the call was sent, so
            # the daemon's own elapsed time is shorter still
            dts = []
            for _ in range(40):
                t0 = time.monotonic()
                try:
                    c.call('Freeze', '/h', 100000, ft.FLAG_ROLLBACK_ON_TIMEOUT)
                    ft.fail('Freeze(/h, 100 ms) succeeded')
                except ft.DBusError as e:
                    if e.name != ft.ERROR_TIMEOUT:
                        ft.fail(f'Freeze(/h, 100 ms) failed with {e}, expected Timeout')
                dts.append(time.monotonic() - t0)
            early = sorted(dt for dt in dts if dt < 0.1)
            ft.check(not early, f'40 x Freeze(100 ms): no Timeout before 100 ms (shortest {min(dts) * 1000:.3f} ms)',
                     f'{len(early)} early: ' + ', '.join(f'{dt * 1000:.3f} ms' for dt in early))

        # ---- a freeze held up below the group: the message names the group that blocks
        sc.mkdir('/p/c')
        sc.spawn_sleepers('/p', 1)
        stuck_c = fuse.spawn_stuck(sc, '/p/c')
        for g in ('/q/keep', '/q/s/c', '/q/t'):
            sc.mkdir(g)
        sc.spawn_sleepers('/q/s', 1)
        stuck_q = fuse.spawn_stuck(sc, '/q/s/c')
        # A group whose name holds the sentence freezectl says of --rollback.
        hostile = '/z. ROLLBACK_ON_TIMEOUT had nothing to restore: the cgroup.freeze of the x: q'
        sc.mkdir(hostile)
        fuse.spawn_stuck(sc, hostile)
        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'Freeze', '/p', 300000, ft.FLAG_ROLLBACK_ON_TIMEOUT)
            ft.check('/p/c freezing-by-parent' in e.message,
                     'a Timeout of /p names /p/c, the child that keeps it from freezing', repr(e.message))
            ft.check(f'task {stuck_c.pid} (stat) of /p/c, in uninterruptible sleep' in e.message,
                     "... and /p/c's task that keeps it", repr(e.message))
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'ApplyBatch', [('/p', True), ('/h', False)], 'auto',
                                     300000, ft.FLAG_ROLLBACK_ON_TIMEOUT)
            ft.check('/p/c freezing-by-parent' in e.message, 'the same in a batch', repr(e.message))
            ft.check_equal((sc.read_freeze('/p'), sc.frozen('/p/c')), (0, False), 'both rolled back')
            # FreezeExcept (freezectl freeze --except) names them as Freeze does.
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'FreezeExcept', '/q', ['/q/keep'], 300000,
                                     ft.FLAG_ROLLBACK_ON_TIMEOUT)
            ft.check(f'/q/s/c freezing-by-parent). Not frozen: task {stuck_q.pid} (stat) of /q/s/c, in uninterruptible '
                     'sleep' in e.message, 'FreezeExcept: the Timeout names /q/s/c and its task', repr(e.message))
            ft.check_equal((sc.read_freeze('/q/s'), sc.read_freeze('/q/t')), (0, 0), '  ... rolled back')
            # freezectl says --rollback for the sentence, not for the same words in a path.
            ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'Freeze', hostile, 300000, 0)
            r = ft.freezectl('freeze', '--rollback', '--timeout=300ms', hostile, address=bus.address, check=False)
            ft.check(r.returncode == 1 and r.stderr.endswith(
                '. --rollback had nothing to restore: the cgroup.freeze of the group already as asked was 1 before '
                f'this call and stays 1, and the kernel goes on freezing it: "{hostile}"\n') and
                r.stderr.count('ROLLBACK_ON_TIMEOUT') == 4,
                'freezectl freeze --rollback of a group whose name holds the sentence: --rollback said of '
                'the sentence alone', r)
            ft.check_equal(sc.read_freeze(hostile), 1, '  ... whose flag stays 1')
            c.call('Thaw', hostile, 0, 0)
            # Without --rollback the cover's flags stay and none is printed: the error names
            # them (test-batch-except-timeout).
            r = ft.freezectl('freeze', '/q', '--except=/q/keep', '--timeout=300ms', address=bus.address,
                             check=False)
            ft.check(r.returncode == 1 and r.stdout == '' and 'Timeout' in r.stderr and
                     "Without --rollback the flags it wrote stay as asked, and the kernel goes on with them: "
                     "/q/s, /q/t\n" in r.stderr and "ROLLBACK_ON_TIMEOUT" not in r.stderr and
                     "note:" not in r.stderr,
                     'freezectl freeze --except times out without --rollback: exit 1, the flags left named', r)
            ft.check_equal((sc.read_freeze('/q/s'), sc.read_freeze('/q/t')), (1, 1), '  ... which stay set')
            c.call('Thaw', '/q', 0, ft.FLAG_RECURSIVE | ft.FLAG_NO_WAIT)
            # The same as a user other than root, given /q/s and /q/t (their cgroup.freeze)
            # but not /q: nothing advises 'thaw --recursive /q', which freezerd refuses it
            # (the group a call names must be the caller's, "Who may do what"); a thaw of
            # the groups named, which the freeze found to be its own, works.
            try:
                nobody = pwd.getpwnam('nobody')
            except KeyError:
                nobody = None
            if nobody is None or shutil.which('setpriv') is None:
                print('# skipped the note to a user other than root: no user "nobody" or no setpriv', flush=True)
            else:
                for g in ('/q/s', '/q/t'):
                    os.chown(sc.abspath(g, 'cgroup.freeze'), nobody.pw_uid, nobody.pw_gid)
                bus.open_to_other_uids()
                prefix = ['setpriv', f'--reuid={nobody.pw_uid}', f'--regid={nobody.pw_gid}', '--clear-groups', '--']
                r = ft.freezectl('freeze', '/q', '--except=/q/keep', '--timeout=300ms', address=bus.address,
                                 check=False, prefix=prefix)
                ft.check(r.returncode == 1 and 'Timeout' in r.stderr and
                         'the kernel goes on with them: /q/s, /q/t\n' in r.stderr and
                         'thaw --recursive /q\' clears' not in r.stderr,
                         'as nobody: the error names the groups it froze, nothing advises thaw --recursive /q', r)
                r = ft.freezectl('thaw', '--recursive', '/q', address=bus.address, check=False, prefix=prefix)
                ft.check(r.returncode == 1 and 'AccessDenied' in r.stderr,
                         '  ... (thaw --recursive /q is refused to nobody)', r)
                ft.freezectl('thaw', '--no-wait', '/q/s', '/q/t', address=bus.address, prefix=prefix)
                ft.check_equal((sc.read_freeze('/q/s'), sc.read_freeze('/q/t')), (0, 0),
                               '  ... and a thaw of those works')
    print('# checked: Timeout with and without ROLLBACK_ON_TIMEOUT (manager and group object, explicit and '
          'default timeout), rollback to the previous value, NO_WAIT, on a group blocked by FUSE')


ft.run(test)
