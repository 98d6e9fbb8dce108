#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A Timeout of a call that writes groups it does not name (FreezeExcept's cover, a
RECURSIVE freeze's subtree) names the flags it wrote, which stay without
ROLLBACK_ON_TIMEOUT: the caller cannot tell them otherwise, and FreezeExcept's
success returns them so that one ApplyBatch undoes the call.

  /t
   +- a        a sleeper, then a task blocked on a FUSE mount (never finishes freezing)
   +- b        a sleeper
   `- k ---- keep   the excluded group
         `-- c

Checks:
  * FreezeExcept("/t", ["/t/k/keep"]) succeeds (nothing stuck yet) and returns the
    cover {/t/a, /t/b, /t/k/c}; thawed again.
  * With /t/a stuck, the same call (300 ms, no flags) fails with Timeout, its message
    ending "Without ROLLBACK_ON_TIMEOUT the flags it wrote stay as asked, and the kernel
    goes on with them: " and naming exactly that cover; their flags are 1.
  * The same with ROLLBACK_ON_TIMEOUT: "Every flag this call changed was restored",
    nothing said to stay, every flag 0.
  * `freezectl freeze /t --except=/t/k/keep` (and with --json) times out: exit 1,
    nothing on standard output, the error line names the cover after "Without
    --rollback the flags it wrote stay as asked, and the kernel goes on with them: ",
    not freezerd's bus flag, and no note that they are not printed.
  * /t/a and /t/b frozen by a pending ApplyBatch with ROLLBACK_ON_TIMEOUT, FreezeExcept
    without it times out: it names the whole cover, /t/a and /t/b too (it took them
    over: the batch's rollback leaves them, "kept"), not only /t/k/c, which it wrote;
    every flag stays 1.
  * With three more groups (/t/d, /t/e, /t/f) the cover is 6 groups: the message names
    four "and 2 more", and freezectl notes that not all are named, where to see them.
  * Freeze("/t", RECURSIVE) timing out names the flags it wrote too (/t, /t/a, ...); a
    plain ApplyBatch of named groups keeps its one sentence, "the flags stay as asked,
    and the kernel goes on with them": its caller knows them.
  * Every cover flag set before the call: the Timeout names none, and freezectl (run
    as root) notes that they are not printed with root's advice, thaw --recursive (it
    gave the advice of a caller who is not root).
  * /u with /u/a stuck, /u/keep excluded and covers named "/u/x and 3 more", one
    holding the whole sentence ("/u/zz. Without ROLLBACK_ON_TIMEOUT ...: q") and
    "/u/e " (a trailing space): the Timeout puts these in double quotes; freezectl finds
    the list after the real sentence (not in the name), says it of --rollback, takes
    none of them for "and N more" (no note) and keeps "/u/e "'s space.
  * "/it's " (an apostrophe, a trailing space) with "/it's /a" stuck, its flag set before,
    "/it's /keep" excluded: root's note suggests 'freezectl tree '/it'"'"'s '' (PATH as a
    shell word, which a shell reads as the path, with no backslash, which the line shows
    doubled; it printed it bare: two words, the quote unclosed).
  * "/b\\s" (a backslash), the same: the note names it without a command (it suggested
    '/b\\\\s', as the line doubles a backslash: a shell reads another path)."""

import os
import shlex
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

STAYS = '. Without ROLLBACK_ON_TIMEOUT the flags it wrote stay as asked, and the kernel goes on with them: '
STAYS_CTL = '. Without --rollback the flags it wrote stay as asked, and the kernel goes on with them: '
PLAIN_CTL = '. Without --rollback the flags stay as asked, and the kernel goes on with them'
PLAIN = '. Without ROLLBACK_ON_TIMEOUT the flags stay as asked, and the kernel goes on with them'
GROUPS = ['/t/a', '/t/b', '/t/k/keep', '/t/k/c']
# Names that read as the list's words (commas, "and N more", the sentence itself) or
# hide a space.
U_MORE, U_TRAP, U_SPACE = '/u/x and 3 more', '/u/zz' + STAYS + 'q', '/u/e '
U_COVER = sorted(['/u/a', U_MORE, U_TRAP, U_SPACE])
# A name that no shell reads bare: a quote, a trailing space.
W = "/it's "
W_WORD = "'/it'\"'\"'s '"
# A name whose backslash the line shows doubled: no shell word on it.
B = '/b\\s'
COVER = ['/t/a', '/t/b', '/t/k/c']
SHORT_USEC = 300000


def named(message, stays=STAYS):
    ft.check(stays in message, 'the Timeout names the flags that stay', repr(message))
    return sorted(message.rsplit(stays, 1)[-1].split(', '))


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'freezectl', 'fuse')
    long_usec = int(ft.DEFAULT_TIMEOUT * 1e6)
    with ft.Scratch('batch-except-timeout') as sc, ft.Bus() as bus, ft.FuseHang() as fuse:
        for g in GROUPS + ['/u/keep'] + U_COVER + [W + '/a', W + '/keep', B + '/a', B + '/keep']:
            sc.mkdir(g)
        for g in ('/t/a', '/t/b'):
            sc.spawn_sleepers(g, 1)
        with ft.Daemon(bus, sc.root) as d:
            c = d.client

            def flags(groups):
                return [sc.read_freeze(g) for g in groups]

            def thaw_all():
                c.call('Thaw', '/t', long_usec, ft.FLAG_RECURSIVE | ft.FLAG_NO_WAIT)
                ft.check_equal(flags(['/t'] + GROUPS), [0] * (1 + len(GROUPS)), 'every flag cleared')

            # ---- the cover, as the call's success returns it
            cover = sorted(c.call('FreezeExcept', '/t', ['/t/k/keep'], long_usec, 0)[0])
            ft.check_equal(cover, COVER, 'FreezeExcept succeeds with the cover')
            thaw_all()

            fuse.spawn_stuck(sc, '/t/a')

            # ---- no ROLLBACK_ON_TIMEOUT: the cover's flags stay, named
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'FreezeExcept', '/t', ['/t/k/keep'], SHORT_USEC, 0)
            ft.check('/t/a (freezing' in e.message, 'the Timeout names /t/a as not done', repr(e.message))
            ft.check_equal(named(e.message), cover, 'the Timeout names every group it froze: the cover')
            ft.check(PLAIN not in e.message, '... in one sentence, not two', repr(e.message))
            ft.check_equal(flags(cover), [1] * len(cover), '... whose flags stay 1')
            thaw_all()

            # ---- ROLLBACK_ON_TIMEOUT: restored, nothing stays
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'FreezeExcept', '/t', ['/t/k/keep'], SHORT_USEC,
                                     ft.FLAG_ROLLBACK_ON_TIMEOUT)
            ft.check('stay as asked' not in e.message and
                     e.message.endswith('. Every flag this call changed was restored'),
                     'with ROLLBACK_ON_TIMEOUT: restored, nothing said to stay', repr(e.message))
            ft.check_equal(flags(['/t'] + GROUPS), [0] * (1 + len(GROUPS)), '... every flag 0')

            # ---- freezectl: the same groups, said of --rollback, text and --json
            for json_opt in ([], ['--json']):
                r = ft.freezectl(*json_opt, 'freeze', '/t', '--except=/t/k/keep', '--timeout=300ms',
                                 address=bus.address, check=False)
                what = f'freezectl {" ".join(json_opt)} freeze --except times out'
                ft.check(r.returncode == 1 and r.stdout == '' and 'Timeout' in r.stderr, f'{what}: exit 1, no '
                         'output', r)
                ft.check_equal(named(r.stderr.rstrip('\n'), STAYS_CTL), cover, f'{what}: the error line names the '
                               'cover as staying')
                ft.check('ROLLBACK_ON_TIMEOUT' not in r.stderr and 'note: the groups whose flags stay' not in r.stderr,
                         f"{what}: said of --rollback, and no note that they are not printed", r.stderr)
                ft.check_equal(flags(cover), [1] * len(cover), f'{what}: the flags stay')
                thaw_all()

            # ---- flags an earlier ROLLBACK call wrote, taken over: named, as they stay for this call
            # Its timeout well past the FreezeExcept's (SHORT_USEC), which must end first
            # also on a slow run (under a sanitizer, on a loaded machine).
            pending = c.call_async('ApplyBatch', [('/t/a', True), ('/t/b', True)], 'auto', 5000000,
                                   ft.FLAG_ROLLBACK_ON_TIMEOUT)
            ft.wait_for(lambda: flags(['/t/a', '/t/b']) == [1, 1] and sc.frozen('/t/b'),
                        what='the pending batch wrote /t/a and /t/b')
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'FreezeExcept', '/t', ['/t/k/keep'], SHORT_USEC, 0)
            paths, more = ft.stays_list(e.message, STAYS)
            ft.check_equal((sorted(paths or []), more), (cover, 0),
                           'the Timeout names the flags it took over from the pending batch too: the cover')
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, pending.result)
            ft.check('kept: a later call asked for them too' in e.message,
                     "the batch's rollback leaves them to the later call", repr(e.message))
            ft.check_equal(flags(cover), [1] * len(cover), '... whose flags stay 1')
            thaw_all()

            # ---- more than four: four named, "and 2 more"; freezectl says where to see them
            for g in ('/t/d', '/t/e', '/t/f'):
                sc.mkdir(g)
                c.call('GetGroup', g)
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'FreezeExcept', '/t', ['/t/k/keep'], SHORT_USEC, 0)
            ft.check(e.message.endswith(' and 2 more') and len(named(e.message[:-len(' and 2 more')])) == 4,
                     'a cover of 6: four named, "and 2 more"', repr(e.message))
            thaw_all()
            r = ft.freezectl('freeze', '/t', '--except=/t/k/keep', '--timeout=300ms', address=bus.address,
                             check=False)
            ft.check(r.returncode == 1 and r.stdout == '' and ' and 2 more' in r.stderr and
                     "note: the groups whose flags stay set (without --rollback) are not all named: "
                     "'freezectl tree /t' shows them" in r.stderr,
                     'freezectl: not all named, a note says where to see them', r)
            thaw_all()

            # ---- Freeze RECURSIVE names the flags it wrote; a plain batch does not need to
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'Freeze', '/t', SHORT_USEC, ft.FLAG_RECURSIVE)
            ft.check(STAYS + '/t, ' in e.message and e.message.endswith(' more'),
                     'Freeze RECURSIVE: the Timeout names the flags it wrote', repr(e.message))
            thaw_all()
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'ApplyBatch', [('/t/a', True), ('/t/b', True)],
                                     'auto', SHORT_USEC, 0)
            ft.check(e.message.endswith(PLAIN) and STAYS not in e.message,
                     'a batch of named groups: the flags stay, not named again', repr(e.message))
            thaw_all()

            # ---- every cover flag set before: none named; root's note (thaw --recursive)
            ft.check_equal(os.geteuid(), 0, 'the test runs as root')
            for g in COVER + ['/t/d', '/t/e', '/t/f']:
                c.call('Freeze', g, long_usec, ft.FLAG_NO_WAIT)
            r = ft.freezectl('freeze', '/t', '--except=/t/k/keep', '--timeout=300ms', address=bus.address,
                             check=False)
            lines = r.stderr.split('\n')
            ft.check(r.returncode == 1 and lines[0].endswith(PLAIN_CTL) and STAYS_CTL not in r.stderr,
                     'every flag set before: freezectl names none', r)
            ft.check_equal(lines[1:], ["freezectl: note: the groups whose flags stay set (without --rollback) are "
                                       "not printed: 'freezectl tree /t' shows them ('freezectl thaw --recursive "
                                       "/t' clears every flag below it, also those set before)", ''],
                           "... and, to root, root's note")
            thaw_all()

            # ---- names that read as the list's words: in double quotes, freezectl not fooled
            fuse.spawn_stuck(sc, '/u/a')
            e = ft.expect_dbus_error(ft.ERROR_TIMEOUT, c.call, 'FreezeExcept', '/u', ['/u/keep'], SHORT_USEC, 0)
            for q in ('"/u/x and 3 more"', f'"{U_TRAP}"', '"/u/e "'):
                ft.check(q in e.message, f'the Timeout names {q} in double quotes', repr(e.message))
            paths, more = ft.stays_list(e.message, STAYS)
            ft.check_equal((sorted(paths or []), more), (U_COVER, 0), 'the Timeout names exactly the cover of /u')
            c.call('Thaw', '/u', long_usec, ft.FLAG_RECURSIVE | ft.FLAG_NO_WAIT)
            r = ft.freezectl('freeze', '/u', '--except=/u/keep', '--timeout=300ms', address=bus.address,
                             check=False)
            lines = r.stderr.split('\n')
            ft.check(r.returncode == 1 and len(lines) == 2 and lines[1] == '',
                     'freezectl: one error line, no note (all are named)', r)
            ft.check_equal(lines[0].count(STAYS_CTL), 1, 'freezectl says the real sentence of --rollback, once')
            paths, more = ft.stays_list(lines[0], STAYS_CTL)
            ft.check_equal((sorted(paths or []), more), (U_COVER, 0),
                           "freezectl's line names the cover as freezerd's, the names whole (\"/u/e \" too)")
            c.call('Thaw', '/u', long_usec, ft.FLAG_RECURSIVE | ft.FLAG_NO_WAIT)

            # ---- root's note: PATH in its commands as a shell word
            fuse.spawn_stuck(sc, W + '/a')
            c.call('Freeze', W + '/a', long_usec, ft.FLAG_NO_WAIT)
            r = ft.freezectl('freeze', W, f'--except={W}/keep', '--timeout=300ms', address=bus.address, check=False)
            lines = r.stderr.split('\n')
            ft.check(r.returncode == 1 and len(lines) == 3 and lines[0].endswith(PLAIN_CTL),
                     f'freezectl freeze {W!r} --except: every flag set before, none named', r)
            ft.check_equal(lines[1:], ["freezectl: note: the groups whose flags stay set (without --rollback) are "
                                       f"not printed: 'freezectl tree {W_WORD}' shows them ('freezectl thaw "
                                       f"--recursive {W_WORD}' clears every flag below it, also those set before)", ''],
                           "... root's note names PATH as a shell word")
            ft.check_equal(shlex.split(f'freezectl tree {W_WORD}'), ['freezectl', 'tree', W],
                           '... which a shell reads as the path')
            c.call('Thaw', W, long_usec, ft.FLAG_RECURSIVE | ft.FLAG_NO_WAIT)

            # ---- a PATH the line cannot show as a shell word (a backslash, shown doubled): no command
            fuse.spawn_stuck(sc, B + '/a')
            c.call('Freeze', B + '/a', long_usec, ft.FLAG_NO_WAIT)
            r = ft.freezectl('freeze', B, f'--except={B}/keep', '--timeout=300ms', address=bus.address, check=False)
            lines = r.stderr.split('\n')
            ft.check(r.returncode == 1 and len(lines) == 3 and lines[0].endswith(PLAIN_CTL),
                     f'freezectl freeze {B!r} --except: every flag set before, none named', r)
            ft.check_equal(lines[1:], ['freezectl: note: the groups whose flags stay set (without --rollback) are '
                                       'not printed: freezectl tree of /b\\\\s shows them (a thaw --recursive '
                                       'of it clears every flag below it, also those set before)', ''],
                           "... root's note names PATH with no command (it suggested '/b\\\\s', another path)")
            c.call('Thaw', B, long_usec, ft.FLAG_RECURSIVE | ft.FLAG_NO_WAIT)
    print('# checked: a Timeout of FreezeExcept (and of a RECURSIVE freeze) names the flags that stay, the cover '
          'its success returns; with ROLLBACK_ON_TIMEOUT none; freezectl says so of --rollback')


ft.run(test)
