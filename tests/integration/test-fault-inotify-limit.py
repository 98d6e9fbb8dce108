#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The inotify watch limit reached: the calls that need a new watch get a clear
error, the groups that could not be watched are logged clearly as not tracked,
and the rest keeps working (issue 5, "Faults and load").

  /w/g0 .. /w/g4   a sleeper each, tracked at start

freezerd uses two watches per group (its directory, for mkdir and rmdir, and its
cgroup.freeze; cgroup.events is polled, not watched), and one on the directory
above its root (for the root's own rmdir).  The
limit is lowered for freezerd only: it runs in a user namespace of its own
(`unshare --user --map-root-user`, uid 0 mapped to 0, so it still owns the
cgroup files) whose /proc/sys/user/max_inotify_watches is set, from inside that
namespace (nsenter), to freezerd's current usage + 3.  The kernel checks the
limit of every namespace up the chain, so that is freezerd's limit, exactly, and
no other process on the machine is affected.  Where no user namespace can be
made (or with FREEZERD_TEST_INOTIFY_LIMIT=global) the system-wide
/proc/sys/fs/inotify/max_user_watches is lowered to root's usage + 3 instead, and
put back in a finally.

Then:
  1. mkdir /w/n0: fits (2 watches), tracked: InterfacesAdded.  One watch is
     left: each of the groups below gets its directory's watch and not its
     cgroup.freeze's, which must be taken back.
  2. mkdir /w/n1, /w/n2, /w/n3 and /w/deep/a: do not fit.  freezerd logs, for
     each, that it is not tracked, saying why: the inotify watch limit.
  3. Freeze("/w/n1"), GetGroup("/w/n2"), Track("/w/n3"), ApplyBatch([/w/g1 freeze,
     /w/n2 freeze]) each fail with an error that names the group and says the
     inotify watch limit is reached (LimitsExceeded); the batch writes nothing.
  3b. The calls over /w do not leave out the groups it could not watch:
     Thaw("/w", RECURSIVE) and ApplyBatch([thaw /w], RECURSIVE) clear the own
     flags of /w/n2, /w/deep and /w/deep/a (set by someone else) after the
     ones freezerd follows, and they read frozen 0 at the reply (before, they
     stayed frozen and the calls succeeded); FreezeExcept("/w", ["/w/g0"])
     fails with LimitsExceeded naming one of them and the inotify watch limit,
     writing nothing (before, it froze /w/g1../w/g4 and left them running).
  3c. Each group left out is logged once however often calls make freezerd try
     to watch it again (GetGroup and FreezeExcept, three times more: before, each
     try logged it again); rmdir and mkdir again of /w/n3 logs it again.
  4. The rest keeps working: Freeze/Thaw of /w/g0..g4, an ApplyBatch of them,
     ListGroups (without the untracked groups), GetAll; no watch leaked.
  5. rmdir /w/n0 frees its watch: Freeze("/w/n1") now works.  With the limit
     raised again, mkdir /w/n5 is tracked at once and the groups that were left
     out are tracked on demand (Freeze("/w/n2")), or by Track("/w") of the
     tracked /w, which looks through it again (/w/n3: InterfacesAdded).
  6. (user namespace only) With room for /w/big and 5 more groups, /w/big and its
     20 children are made while freezerd is stopped: its listing of /w/big opens
     and watches them from two threads.  /w/big and exactly 5 of them are tracked,
     the other 15 logged (the inotify watch limit), no watch is leaked, and the 5
     follow a Freeze of /w/big.
Clarity failures (3's errors, 2's log lines) are collected and reported together
at the end, after every other check ran."""

import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = [f'/w/g{i}' for i in range(5)]
NEW_OK = '/w/n0'
NEW_FAIL = ['/w/n1', '/w/n2', '/w/n3', '/w/deep']
LIMIT_ERRORS = ('org.freezerd.Freezer1.Error.LimitsExceeded', 'org.freedesktop.DBus.Error.LimitsExceeded')
GLOBAL_SYSCTL = '/proc/sys/fs/inotify/max_user_watches'
NS_SYSCTL = '/proc/sys/user/max_inotify_watches'
WATCHES_PER_GROUP = 2
ROOT_PARENT_WATCHES = 1  # the directory above freezerd's root (below the mount): the root's own rmdir
SPARE = 3
LONG_USEC = 60 * 1000000
BIG = '/w/big'
BIG_CHILDREN = 20  # above SCAN_PARALLEL_MIN (daemon/manager.c)
BIG_ROOM = 5


def inotify_watches(pid):
    """Watches held by the inotify instances of a process (/proc/PID/fdinfo)."""
    return ft.anon_fd_items(pid, 'inotify', b'inotify wd:')


def root_watches():
    """Watches of every process running as root (an estimate: a shared instance counts twice)."""
    total = 0
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            uid = ft.proc_uids(pid)[1]  # inotify charges the effective uid
        except OSError:
            continue
        if uid == 0:
            total += inotify_watches(int(pid))
    return total


def read_int(path):
    with open(path) as f:
        return int(f.read())


def write_int(path, value):
    with open(path, 'w') as f:
        f.write(str(value))


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    mode = os.environ.get('FREEZERD_TEST_INOTIFY_LIMIT') or ('userns' if ft.userns_works() else 'global')
    if mode not in ('userns', 'global'):
        ft.fail(f'FREEZERD_TEST_INOTIFY_LIMIT={mode}: expected userns or global')
    if mode == 'userns':
        # In front of any wrapper (valgrind): unshare execs it, the pid stays freezerd's.
        ft.FREEZERD_WRAPPER = ['unshare', '--user', '--map-root-user', '--'] + ft.FREEZERD_WRAPPER
    print(f'# mode: {mode}', flush=True)
    fig = ft.Figures('test-fault-inotify-limit')
    violations = []
    # Runs from other checkouts wait their turn: the global mode lowers it, and both
    # modes check at the end that it is as before.
    setting = ft.MachineSetting(GLOBAL_SYSCTL)
    global_before = setting.value

    def set_limit(pid, value):
        if mode == 'userns':
            subprocess.run(['nsenter', '--user', f'--target={pid}', '--', 'sh', '-c', f'echo {value} > {NS_SYSCTL}'],
                           check=True, timeout=10)
            return
        write_int(GLOBAL_SYSCTL, value)

    try:
        with ft.Scratch('fault-inotify-limit') as sc, ft.Bus() as bus:
            for g in GROUPS:
                sc.spawn_sleepers(g, 1)
            # New groups are made with os.mkdir, not sc.mkdir: the harness adds no watch of
            # its own once the limit is low (in global mode that would fail too).

            with ft.Daemon(bus, sc.root) as d:
                c = d.client
                rec = c.record()
                ft.loop().watch(d.log_path, ft.Inotify.IN_MODIFY)  # wakes waits on the log

                def call(method, *args):
                    return fig.call(c, method, *args)

                def listed():
                    return sorted(p for p, _o, _s in call('ListGroups')[0])

                def works(what):
                    """Freeze/Thaw of every original group, a batch over them, property reads."""
                    for g in GROUPS:
                        call('Freeze', g, LONG_USEC, 0)
                    frozen = [g for g in GROUPS if sc.read_events(g)['frozen'] == 1]
                    ft.check_equal(frozen, GROUPS, f'{what}: Freeze of the {len(GROUPS)} groups works')
                    call('ApplyBatch', [(g, False) for g in GROUPS], 'auto', LONG_USEC, 0)
                    ft.check_equal([sc.read_freeze(g) for g in GROUPS], [0] * len(GROUPS),
                                   f'{what}: an ApplyBatch thawing them works')
                    props = c.get_all(ft.group_object(GROUPS[0]), ft.GROUP_IFACE)
                    fig.reply('GetAll')
                    ft.check_equal(props['FreezerState'], 'running', f'{what}: GetAll works')
                    fig.checked['groups frozen and thawed while the limit is reached'] += len(GROUPS)

                tracked = listed()
                usage = inotify_watches(d.pid)
                ft.check_equal(usage, WATCHES_PER_GROUP * len(tracked) + ROOT_PARENT_WATCHES,
                               f'freezerd holds {WATCHES_PER_GROUP} watches per tracked group '
                               f'({len(tracked)} groups) and one above its root')
                if mode == 'userns':
                    limit = usage + SPARE
                else:
                    limit = root_watches() + SPARE
                set_limit(d.pid, limit)
                fig.faults[f'inotify watch limit lowered ({mode})'] += 1
                print(f'# freezerd uses {usage} watches; limit set to {limit}', flush=True)

                def outcome(path):
                    """'tracked' once InterfacesAdded came, else the log line naming path."""
                    obj = ft.group_object(path)
                    if any(o == obj for o, _i in rec.interfaces_added()):
                        return 'tracked'
                    lines = [ln for ln in d.log().splitlines() if re.search(re.escape(path) + r'\b', ln)]
                    return lines[-1] if lines else None

                # 1. One new group fits.
                os.mkdir(sc.abspath(NEW_OK))
                fig.faults['mkdir'] += 1
                got = ft.wait_for(lambda: outcome(NEW_OK), what=f'{NEW_OK} to be tracked or logged')
                ft.check_equal(got, 'tracked', f'{NEW_OK} ({WATCHES_PER_GROUP} watches, {SPARE} spare) is tracked')
                after_ok = inotify_watches(d.pid)
                ft.check_equal(after_ok, usage + WATCHES_PER_GROUP, f'freezerd now holds {WATCHES_PER_GROUP} more watches')

                # 2. The next ones do not.
                os.mkdir(sc.abspath(NEW_FAIL[0]))
                fig.faults['mkdir'] += 1
                first = ft.wait_for(lambda: outcome(NEW_FAIL[0]), what=f'{NEW_FAIL[0]} to be tracked or logged')
                if first == 'tracked' and mode == 'global':
                    ft.skip('the system-wide watch count could not be pinned down (other root processes use '
                            'watches): nothing was learnt')
                ft.check(first != 'tracked', f'{NEW_FAIL[0]} does not fit: not tracked', first)
                for g in NEW_FAIL[1:]:
                    os.mkdir(sc.abspath(g))
                    fig.faults['mkdir'] += 1
                os.mkdir(sc.abspath('/w/deep/a'))
                fig.faults['mkdir'] += 1
                for g in NEW_FAIL:
                    line = ft.wait_for(lambda: outcome(g), what=f'{g} to be tracked or logged')
                    ft.check(line != 'tracked', f'{g}: not tracked, logged: {line}')
                    if not re.search(r'inotify', line, re.I):
                        violations.append(f'log line for {g} does not say the inotify watch limit is the cause: '
                                          f'{line!r}')
                ft.check_equal(inotify_watches(d.pid), usage + WATCHES_PER_GROUP, 'no watch leaked by the failed attempts')
                ft.check_equal(listed(), sorted(tracked + [NEW_OK]), 'ListGroups: the groups that do not fit are '
                                                                     'not listed')

                # 3. The calls that need a new watch: a clear error, nothing written.
                def expect_limit_error(method, *args, path):
                    try:
                        result = call(method, *args)
                    except ft.DBusError as e:
                        ft.check(True, f'{method}({path}) fails: {e.name}: {e.message}')
                        problems = []
                        if e.name not in LIMIT_ERRORS:
                            problems.append(f'error name {e.name} (expected one of {", ".join(LIMIT_ERRORS)})')
                        if path not in e.message:
                            problems.append('the message does not name the group')
                        if not re.search(r'inotify', e.message, re.I):
                            problems.append('the message does not say the inotify watch limit is reached')
                        if problems:
                            violations.append(f'{method}({path}) -> {e.name}: "{e.message}": ' + '; '.join(problems))
                        return e
                    ft.fail(f'{method}({path}) succeeded ({result!r}) with the watch limit reached')

                expect_limit_error('Freeze', '/w/n1', LONG_USEC, 0, path='/w/n1')
                ft.check_equal(sc.read_freeze('/w/n1'), 0, '/w/n1: nothing written')
                expect_limit_error('GetGroup', '/w/n2', path='/w/n2')
                expect_limit_error('Track', '/w/n3', path='/w/n3')
                expect_limit_error('ApplyBatch', [(GROUPS[1], True), ('/w/n2', True)], 'auto', LONG_USEC, 0,
                                   path='/w/n2')
                ft.check_equal((sc.read_freeze(GROUPS[1]), sc.read_freeze('/w/n2')), (0, 0),
                               'the batch wrote nothing')
                expect_limit_error('Freeze', '/w/deep/a', LONG_USEC, 0, path='/w/deep/a')
                fig.checked['groups whose calls were refused'] += 5

                # 3b. The groups it could not watch are not left out of the calls over /w:
                # "thaw everything under /w" must not leave one frozen with a success.
                left_out = ['/w/n2', '/w/deep', '/w/deep/a']
                for how in ('Thaw', 'ApplyBatch'):
                    for g in left_out:
                        sc.write_freeze(g, 1)
                    if how == 'Thaw':
                        call('Thaw', '/w', LONG_USEC, ft.FLAG_RECURSIVE)
                    else:
                        writes, _skipped = call('ApplyBatch', [('/w', False)], 'auto', LONG_USEC, ft.FLAG_RECURSIVE)
                        ft.check_equal(writes, len(left_out), f'{how} RECURSIVE counts their {len(left_out)} writes')
                    ft.check_equal([(sc.read_freeze(g), sc.read_events(g)['frozen']) for g in left_out],
                                   [(0, 0)] * len(left_out),
                                   f'{how} RECURSIVE of /w: {", ".join(left_out)}, not watched, read cgroup.freeze 0 '
                                   f'and frozen 0 at its reply')
                e = ft.expect_dbus_error(LIMIT_ERRORS[0], c.call, 'FreezeExcept', '/w', [GROUPS[0]], LONG_USEC, 0)
                ft.check(any(f'{g} apart from its siblings' in e.message for g in NEW_FAIL)
                         and re.search(r'inotify', e.message) and 'nothing was written' in e.message,
                         f'FreezeExcept(/w, [{GROUPS[0]}]) names a sibling not watched, and the inotify watch limit',
                         e.message)
                ft.check_equal([sc.read_freeze(g) for g in GROUPS[1:]], [0] * (len(GROUPS) - 1),
                               'the refused FreezeExcept wrote nothing')
                ft.check_equal(inotify_watches(d.pid), usage + WATCHES_PER_GROUP, 'these calls took no watch')
                fig.checked['groups not watched, thawed by RECURSIVE calls'] += 2 * len(left_out)

                # 3c. Each group kept out is logged once, however often callers make freezerd try
                # it again (3's calls, 3b's FreezeExcept, and here more of them); made again after
                # an rmdir, it is logged again.
                def limit_lines(path):
                    return [ln for ln in d.log().splitlines()
                            if re.search(re.escape(path) + r':', ln) and 'inotify' in ln]

                for _ in range(3):
                    ft.expect_dbus_error(LIMIT_ERRORS[0], c.call, 'GetGroup', '/w/n2')
                    ft.expect_dbus_error(LIMIT_ERRORS[0], c.call, 'FreezeExcept', '/w', [GROUPS[0]], LONG_USEC, 0)
                for g in NEW_FAIL:
                    ft.check(len(limit_lines(g)) == 1, f'{g}: its watch limit warning is logged once, not at each '
                                                       'retry', limit_lines(g))
                os.rmdir(sc.abspath('/w/n3'))
                os.mkdir(sc.abspath('/w/n3'))
                ft.wait_for(lambda: len(limit_lines('/w/n3')) == 2, what='/w/n3, made again, to be logged again')
                ft.check_equal(inotify_watches(d.pid), usage + WATCHES_PER_GROUP, 'the retries took no watch')

                # 4. The rest keeps working.
                works('limit reached')
                ft.check_equal(inotify_watches(d.pid), usage + WATCHES_PER_GROUP, 'still no watch leaked')

                # 5. Watches freed: the groups come back.
                os.rmdir(sc.abspath(NEW_OK))
                rec.wait_for(lambda r: any(o == ft.group_object(NEW_OK) for o, _i in r.interfaces_removed()),
                             what=f'InterfacesRemoved of {NEW_OK}')
                ft.check_equal(inotify_watches(d.pid), usage, f'rmdir {NEW_OK} gave its watch back')
                call('Freeze', '/w/n1', LONG_USEC, 0)
                ft.check_equal(sc.read_events('/w/n1')['frozen'], 1, 'Freeze(/w/n1) works once watches are free')
                set_limit(d.pid, max(limit + 1000, 8192) if mode == 'userns' else global_before)
                os.mkdir(sc.abspath('/w/n5'))
                got = ft.wait_for(lambda: outcome('/w/n5'), what='/w/n5 to be tracked or logged')
                ft.check_equal(got, 'tracked', 'with the limit raised a new group is tracked at once')
                call('Freeze', '/w/n2', LONG_USEC, 0)
                ft.check_equal(sc.read_events('/w/n2')['frozen'], 1, 'a group left out is tracked on demand')
                call('Freeze', '/w/deep/a', LONG_USEC, 0)
                ft.check_equal(sc.read_events('/w/deep/a')['frozen'], 1, 'and a nested one')
                # Track() of the tracked /w looks through it again: /w/n3, still left out, is found.
                ft.check('/w/n3' not in listed(), '/w/n3 is still left out', listed())
                rec.clear()
                call('Track', '/w')
                ft.check('/w/n3' in listed(), 'Track("/w") of the tracked /w publishes /w/n3', listed())
                ft.check(ft.group_object('/w/n3') in [o for o, _i in rec.interfaces_added()],
                         '... with its InterfacesAdded')
                for g in ('/w/n1', '/w/n2', '/w/deep/a'):
                    call('Thaw', g, LONG_USEC, 0)
                works('limit raised')
                fig.checked['groups tracked again after the limit'] += 4

                # 6. A listing of 20 new groups below an empty one, which freezerd opens and
                # watches from two threads (daemon/scan-helper.h), with room for 5 of them.
                if mode == 'userns':
                    big = [f'{BIG}/c{i}' for i in range(BIG_CHILDREN)]
                    before = inotify_watches(d.pid)
                    set_limit(d.pid, before + WATCHES_PER_GROUP * (1 + BIG_ROOM) + 1)
                    rec.clear()
                    os.kill(d.pid, signal.SIGSTOP)  # so that the children are there when it lists /w/big
                    try:
                        os.mkdir(sc.abspath(BIG))
                        for g in big:
                            os.mkdir(sc.abspath(g))
                    finally:
                        os.kill(d.pid, signal.SIGCONT)
                    fig.faults['mkdir'] += 1 + BIG_CHILDREN
                    # (Its children's log lines name it too: wait for its InterfacesAdded.)
                    rec.wait_for(lambda r: any(o == ft.group_object(BIG) for o, _i in r.interfaces_added()),
                                 what=f'InterfacesAdded of {BIG}')
                    outcomes = {g: ft.wait_for(lambda: outcome(g), what=f'{g} to be tracked or logged') for g in big}
                    fits = [g for g in big if outcomes[g] == 'tracked']
                    ft.check(len(fits) == BIG_ROOM, f'{BIG_ROOM} of the {BIG_CHILDREN} groups of {BIG} fit', outcomes)
                    for g in big:
                        if outcomes[g] != 'tracked' and not re.search(r'inotify', outcomes[g], re.I):
                            violations.append(f'log line for {g} does not say the inotify watch limit is the '
                                              f'cause: {outcomes[g]!r}')
                    ft.check_equal(inotify_watches(d.pid), before + WATCHES_PER_GROUP * (1 + BIG_ROOM),
                                   'no watch leaked by the two threads\' failed attempts')
                    ft.check_equal(sorted(g for g in listed() if g.startswith(BIG + '/')), sorted(fits),
                                   f'ListGroups holds the groups of {BIG} that fit, and no other')
                    call('Freeze', BIG, LONG_USEC, 0)
                    ft.check_equal([c.group_property(g, 'FreezerState') for g in fits],
                                   ['frozen-by-parent'] * BIG_ROOM, f'Freeze {BIG}: the groups that fit follow')
                    call('Thaw', BIG, LONG_USEC, 0)
                    fig.checked[f'groups of a listing of {BIG_CHILDREN} with room for {BIG_ROOM}'] += BIG_CHILDREN
    finally:
        setting.release()
    ft.check_equal(read_int(GLOBAL_SYSCTL), global_before, f'{GLOBAL_SYSCTL} is {global_before} as before')
    fig.lines.append(f'mode:            {mode} (watches: freezerd {usage}, limit {limit})')
    fig.lines.append(f'clarity issues:  {len(violations)}')
    fig.print()
    if violations:
        ft.fail(f'{len(violations)} unclear reports of the inotify watch limit:\n  ' + '\n  '.join(violations))


ft.run(test)
