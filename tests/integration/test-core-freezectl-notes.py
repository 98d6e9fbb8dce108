#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezectl's notes and messages say what happens, and its help what it does.

  /g           (no process, never frozen)
  /pods/a/x    /pods/b

Checks:
  * freezerd stopped (SIGSTOP) while `freeze /g --timeout=1s` waits on the bus:
    after the call's timeout and 5 s, exit 1 and one line saying freezerd may or
    may not carry it out and that one it reads only after freezectl left the bus
    is refused (it said freezerd "goes on with the freeze"); once freezerd runs
    again it refuses the call, /g is not frozen.  The same over the private
    socket: the line says freezerd may still carry it out once it reads it, and
    it does, /g freezes.
  * /pods/a/x frozen by its own flag, `freeze /pods --except=/pods/a`: exit 0,
    /pods/b printed, and one note on stderr naming /pods/a/x as staying frozen
    below the excluded /pods/a (nothing said it); `--except=/pods/a/x` itself
    is still refused (InvalidArgs, exit 1).
  * The groups "/sp/ a/\"q ", "/sp/ a/r " ... "/sp/ a/u ": `freeze "/sp/ a"` excepting
    all five notes that nothing was frozen below "/sp/ a", in double quotes; with the
    five frozen, `freeze /sp --except="/sp/ a"` notes the first four of them and the
    excluded "/sp/ a" in double quotes, the '"' as \" (they were bare); `thaw "/sp/ a"`
    then notes `freezectl thaw --recursive '/sp/ a'`, a shell word (it was in double
    quotes, which a shell expands in).
  * /cm/x/"a, b" and /cm/x/c frozen by their own flags, /cm/"y, z"/k too, `freeze /cm
    --except=/cm/x --except="/cm/y, z"`: the notes name "/cm/x/a, b" and the excluded
    "/cm/y, z" in double quotes, as freezerd names a path in a list (they were bare:
    "/cm/x/a, b, /cm/x/c" read as three groups); /cm/x/c and /cm/x bare.  A failed
    `freeze /cm --except="/cm/no, such" --except=/cm/x` names it so too ("except
    "/cm/no, such", ...").
  * a PATH that freezerd normalizes ("-dash", "nope/") names the group the same
    way at the start of the error line as freezerd's message does ("cannot
    freeze /-dash: NoSuchGroup: /-dash does not exist"; it said "cannot freeze
    -dash"), for freeze, thaw, status, track, untrack, tree, pressure, watch and
    freeze --except.
  * /d/a, /d/b, /d/c with sleepers, `freeze /d --except=/d/a` (freezes /d/b
    and /d/c on their own flags), `thaw /d`: exit 0, nothing on stdout, one
    note on stderr naming the 2 groups below /d that stay frozen and `thaw
    --recursive /d` (it said nothing, every app stayed frozen); so over the
    private socket, and with --json (libfreezer), whose object has
    "frozen_below": 2.  Two PATHs: one note for each that has some.  No note
    for: /d frozen whole and thawed (its children, frozen by /d alone, run by
    the reply, 20 times), a leaf (/d/b), thaw --recursive, thaw --no-wait;
    --json of those has no "frozen_below".
  * /lp/<200 a>/<100 b> (305 bytes: its object path, the path escaped, 340 bytes) with
    its child k frozen by its own flag, `thaw` of it: the note for its 1 group
    below, the path cut as freezerd's messages cut it, the command whole; over the
    bus and over the private socket (bus-wire.c refused an object path over 255 bytes,
    and nothing was said).
  * --user with XDG_RUNTIME_DIR=/nonexistent and no DBUS_SESSION_BUS_ADDRESS:
    one line naming the address it tried, unix:path=/nonexistent/bus (it named
    none).
  * `pressure /g` (a group that never had a task) prints its zero totals as
    "0s", as status prints "Frozen in all: 0s" (it printed "0").
  * --help: the watch pressure line shows the averages with "%" as watch prints
    them; `help untrack` points to nothing "below" that it does not show; `help
    tree` says that untracked groups are shown too; `help thaw` says that
    --rollback undoes a timeout only, not a FrozenByParent failure."""

import json
import os
import shlex
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def one_line(r, what, *words):
    lines = r.stderr.splitlines()
    ft.check(len(lines) == 1 and all(w in lines[0] for w in words),
             f'{what}: one line on stderr naming {", ".join(words)}', r.stderr)


def check_stopped(sc, bus, d):
    """freezerd stopped past the call's timeout: on the bus it refuses the call once it
    reads it (its caller gone), over the private socket it carries it out."""
    private = os.path.join(d.runtime_dir, 'private')
    for how in ('bus', 'private socket'):
        kw = {'socket': private} if how == 'private socket' else {'address': bus.address}
        os.kill(d.pid, signal.SIGSTOP)
        try:
            start = time.monotonic()
            r = ft.freezectl('freeze', '/g', '--timeout=1s', check=False, timeout=ft.DEFAULT_TIMEOUT * 2, **kw)
            took = time.monotonic() - start
        finally:
            os.kill(d.pid, signal.SIGCONT)
        what = f'freeze /g --timeout=1s with freezerd stopped, over the {how}'
        ft.check_equal((r.returncode, r.stdout), (1, ''), f'{what}: exit 1')
        ft.check(took >= 6, f'{what}: it waited the timeout and 5 s', took)
        if how == 'bus':
            one_line(r, what, 'cannot freeze /g: no reply from freezerd',
                     'freezerd may or may not carry out the freeze of /g',
                     'one it reads only after freezectl left the bus is refused', 'see freezectl status')
            ft.wait_for(lambda: 'refusing its changes' in d.log(), what='freezerd to refuse the call of a client gone')
            ft.freezectl('status', '/g', address=bus.address)
            ft.check_equal(sc.read_freeze('/g'), 0, f'{what}: freezerd refused the call, /g is not frozen')
        else:
            one_line(r, what, 'cannot freeze /g: no reply from freezerd',
                     'freezerd may still carry out the freeze of /g', 'once it reads it', 'see freezectl status')
            ft.wait_for(lambda: sc.read_freeze('/g') == 1, what='freezerd to carry out the call it read late')
            ft.freezectl('thaw', '/g', address=bus.address)

    # A path with a backslash in that line: escaped once where freezectl names it and
    # where it says what freezerd may still carry out (the second part was escaped twice).
    path = '/g/n\\x0a'  # a literal backslash; no such group: freezerd, read late, refuses it
    os.kill(d.pid, signal.SIGSTOP)
    try:
        r = ft.freezectl('freeze', path, '--timeout=1s', check=False, timeout=ft.DEFAULT_TIMEOUT * 2, socket=private)
    finally:
        os.kill(d.pid, signal.SIGCONT)
    shown = path.replace('\\', '\\\\')
    what = f'freeze {path} with freezerd stopped'
    one_line(r, what, f'cannot freeze {shown}: no reply from freezerd', f'carry out the freeze of {shown}:')
    ft.check('\\\\\\' not in r.stderr, f'{what}: no backslash escaped twice', r.stderr)


def check_except_keeps_frozen(sc, bus):
    ft.freezectl('freeze', '/pods/a/x', address=bus.address)
    r = ft.freezectl('freeze', '/pods', '--except=/pods/a', address=bus.address, check=False)
    what = 'freeze /pods --except=/pods/a with /pods/a/x frozen'
    ft.check_equal((r.returncode, r.stdout), (0, '/pods/b\n'), f'{what}: exit 0, /pods/b frozen')
    one_line(r, what, 'note: /pods/a/x, below the excluded /pods/a, stays frozen by its own flag')
    ft.check_equal((sc.read_freeze('/pods/a'), sc.read_freeze('/pods/a/x')), (0, 1),
                   f'{what}: /pods/a runs, /pods/a/x stays frozen')
    ft.freezectl('thaw', '/pods/b', address=bus.address)
    r = ft.freezectl('freeze', '/pods', '--except=/pods/a/x', address=bus.address, check=False)
    ft.check_equal(r.returncode, 1, 'freeze /pods --except=/pods/a/x, the frozen group itself: refused')
    one_line(r, 'freeze --except of a frozen group', 'InvalidArgs', 'thaw it first')
    ft.freezectl('thaw', '/pods/a/x', address=bus.address)
    # Nothing frozen below: no note.
    r = ft.freezectl('freeze', '/pods', '--except=/pods/a', address=bus.address)
    ft.check_equal(r.stderr, '', 'freeze --except with nothing frozen below the excluded group: no note')
    ft.freezectl('thaw', '/pods/b', address=bus.address)


SPACED_TOP = '/sp/ a'
SPACED = [SPACED_TOP + '/' + n for n in ('"q ', 'r ', 's ', 't ', 'u ')]


def check_except_spaced(sc, bus):
    """The notes of freeze --except name the groups freezerd lists as freezectl's
    words name a path: in double quotes where a name starts or ends with white space
    (a '"' in it as \\"), also the fifth of one line (the first is not left bare)."""
    excepts = [f'--except={p}' for p in SPACED]
    r = ft.freezectl('freeze', SPACED_TOP, *excepts, address=bus.address, check=False)
    ft.check_equal((r.returncode, r.stderr),
                   (0, 'freezectl: note: nothing was frozen: the excluded subtrees hold every group below "/sp/ a" '
                       '(the tasks of "/sp/ a" itself keep running)\n'),
                   f'freeze {SPACED_TOP!r} except all its children: the note quotes it')
    for p in SPACED:
        ft.freezectl('freeze', p, address=bus.address)
    r = ft.freezectl('freeze', '/sp', f'--except={SPACED_TOP}', address=bus.address, check=False)
    ft.check_equal((r.returncode, r.stderr),
                   (0, r'freezectl: note: "/sp/ a/\"q ", "/sp/ a/r ", "/sp/ a/s ", "/sp/ a/t " and 1 more, below the '
                       r'excluded "/sp/ a", stay frozen by their own flags: --except leaves the excluded subtrees as '
                       'they are (thaw them to run them)\n'),
                   f'freeze /sp --except={SPACED_TOP!r} with its children frozen: the note quotes each')
    # thaw's note: PATH in its command as a shell word (it was in double quotes, which a
    # shell expands in).
    r = ft.freezectl('thaw', SPACED_TOP, address=bus.address, check=False)
    ft.check_equal((r.returncode, r.stderr),
                   (0, 'freezectl: note: 5 groups below "/sp/ a" stay frozen by flags set below it (a plain thaw '
                       "clears its own flag only): freezectl thaw --recursive '/sp/ a' clears them\n"),
                   f'thaw {SPACED_TOP!r} with its children frozen: the command names it as a shell word')
    ft.check_equal(shlex.split(r.stderr.rsplit(': ', 1)[1])[:4], ['freezectl', 'thaw', '--recursive', SPACED_TOP],
                   '... which a shell reads as the path')
    ft.freezectl('thaw', '--recursive', '/sp', address=bus.address)
    ft.check_equal([sc.read_freeze(p) for p in ['/sp/b'] + SPACED], [0] * 6, 'thaw --recursive /sp')


COMMA = ['/cm/x/a, b', '/cm/x/c', '/cm/y, z/k', '/cm/w']


def check_except_comma(sc, bus):
    """freeze --except's notes name a group whose name holds ", " in double quotes: one
    of a list, it must not read as two."""
    for p in COMMA[:3]:
        ft.freezectl('freeze', p, address=bus.address)
    r = ft.freezectl('freeze', '/cm', '--except=/cm/x', '--except=/cm/y, z', address=bus.address, check=False)
    what = 'freeze /cm --except=/cm/x --except="/cm/y, z" with groups named with ", " frozen below them'
    ft.check_equal((r.returncode, r.stdout), (0, '/cm/w\n'), f'{what}: exit 0, /cm/w frozen')
    ft.check_equal(r.stderr,
                   'freezectl: note: "/cm/x/a, b", /cm/x/c, below the excluded /cm/x, stay frozen by their own flags: '
                   '--except leaves the excluded subtrees as they are (thaw them to run them)\n'
                   'freezectl: note: "/cm/y, z/k", below the excluded "/cm/y, z", stays frozen by its own flag: '
                   '--except leaves the excluded subtrees as they are (thaw it to run it)\n',
                   f'{what}: the notes quote the names that hold ", "')
    ft.freezectl('thaw', '--recursive', '/cm', address=bus.address)
    ft.check_equal([sc.read_freeze(p) for p in COMMA], [0] * 4, 'thaw --recursive /cm')
    r = ft.freezectl('freeze', '/cm', '--except=/cm/no, such', '--except=/cm/x', address=bus.address, check=False)
    what = 'freeze /cm --except="/cm/no, such" --except=/cm/x'
    ft.check_equal(r.returncode, 1, f'{what}: exit 1')
    one_line(r, what, 'freezectl: cannot freeze /cm except "/cm/no, such", ...: ')


def check_thaw_frozen_below(sc, bus, d):
    private = os.path.join(d.runtime_dir, 'private')
    note = 'freezectl: note: 2 groups below /d stay frozen by flags set below it'
    hint = "freezectl thaw --recursive /d clears them"

    def except_a():
        r = ft.freezectl('freeze', '/d', '--except=/d/a', address=bus.address)
        ft.check_equal(r.stdout, '/d/b\n/d/c\n', 'freeze /d --except=/d/a freezes /d/b and /d/c')

    for how, kw in (('bus', {'address': bus.address}), ('private socket', {'socket': private})):
        except_a()
        r = ft.freezectl('thaw', '/d', check=False, **kw)
        what = f'thaw /d after freeze /d --except=/d/a, over the {how}'
        ft.check_equal((r.returncode, r.stdout), (0, ''), f'{what}: exit 0, nothing on stdout')
        one_line(r, what, note, hint)
        ft.check_equal((sc.read_freeze('/d/b'), sc.read_freeze('/d/c')), (1, 1), f'{what}: /d/b, /d/c stay frozen')

        # The leaf: nothing below it.
        r = ft.freezectl('thaw', '/d/b', check=False, **kw)
        ft.check_equal((r.returncode, r.stdout, r.stderr), (0, '', ''), f'thaw /d/b (a leaf), over the {how}: no note')
        # Two PATHs: a note for /d (1 group, said in the singular), none for /g.
        r = ft.freezectl('thaw', '/d', '/g', check=False, **kw)
        what = f'thaw /d /g with /d/c frozen, over the {how}'
        ft.check_equal((r.returncode, r.stdout), (0, ''), f'{what}: exit 0')
        one_line(r, what, 'note: 1 group below /d stays frozen by flags set below it', hint)
        ft.freezectl('thaw', '/d/c', **kw)

    # --json goes by libfreezer: the note, and "frozen_below" in /d's object.
    except_a()
    r = ft.freezectl('--json', 'thaw', '/d', '/d/b', check=False, address=bus.address)
    what = 'thaw --json /d /d/b after freeze /d --except=/d/a'
    ft.check_equal((r.returncode, json.loads(r.stdout)),
                   (0, [{'path': '/d', 'result': 'done', 'frozen_below': 2}, {'path': '/d/b', 'result': 'done'}]),
                   f'{what}: "frozen_below": 2 for /d alone')
    one_line(r, what, note, hint)

    # --recursive clears them; --no-wait does not wait to look: no note.
    except_a()
    r = ft.freezectl('thaw', '/d', '--no-wait', check=False, address=bus.address)
    ft.check_equal((r.returncode, r.stdout, r.stderr), (0, '', ''), 'thaw --no-wait /d: no note')
    r = ft.freezectl('thaw', '--recursive', '/d', check=False, address=bus.address)
    ft.check_equal((r.returncode, r.stdout, r.stderr), (0, '', ''), 'thaw --recursive /d: no note')
    ft.check_equal((sc.read_freeze('/d/b'), sc.read_freeze('/d/c')), (0, 0), 'thaw --recursive /d: all run')

    # /d frozen whole: its children, frozen by /d alone, are thawed by the
    # time the reply comes, so no note (the count is settled then).
    for i in range(20):
        ft.freezectl('freeze', '/d', address=bus.address)
        for how, kw in (('bus', {'address': bus.address}), ('private socket', {'socket': private})):
            r = ft.freezectl('thaw', '/d', check=False, **kw)
            ft.check_equal((r.returncode, r.stdout, r.stderr), (0, '', ''),
                           f'thaw /d after freeze /d ({i}), over the {how}: no note')
            if how == 'bus':
                ft.freezectl('freeze', '/d', address=bus.address)
    r = ft.freezectl('--json', 'thaw', '/d', check=False, address=bus.address)
    ft.check_equal((r.returncode, json.loads(r.stdout), r.stderr), (0, [{'path': '/d', 'result': 'done'}], ''),
                   'thaw --json /d with nothing frozen below: no "frozen_below", no note')


LONG = '/lp/' + 'a' * 200 + '/' + 'b' * 100  # cgroup names: 255 bytes at most each


def check_thaw_long_path(sc, bus, d):
    """The note of a thaw of a group whose object path is over 255 bytes."""
    private = os.path.join(d.runtime_dir, 'private')
    note = (f'freezectl: note: 1 group below {ft.quoted(LONG)} stays frozen by flags set below it (a plain thaw '
            f'clears its own flag only): freezectl thaw --recursive {LONG} clears them\n')
    for how, kw in (('bus', {'address': bus.address}), ('private socket', {'socket': private})):
        ft.freezectl('freeze', LONG + '/k', **kw)
        r = ft.freezectl('thaw', LONG, check=False, **kw)
        what = f'thaw of a {len(LONG)}-byte path with its child frozen, over the {how}'
        ft.check_equal((r.returncode, r.stdout, r.stderr), (0, '', note), f'{what}: exit 0, the note')
        ft.check_equal(sc.read_freeze(LONG + '/k'), 1, f'{what}: its child stays frozen')
        ft.freezectl('thaw', '--recursive', LONG, **kw)
        ft.check_equal(sc.read_freeze(LONG + '/k'), 0, f'thaw --recursive of the {len(LONG)}-byte path')


def check_normalized_prefix(bus):
    for args, prefix in ((['freeze', '--', '-dash'], 'cannot freeze /-dash: NoSuchGroup'),
                         (['thaw', '--', '-dash'], 'cannot thaw /-dash: NoSuchGroup'),
                         (['status', 'nope/'], 'cannot get status of /nope: NoSuchGroup'),
                         (['track', 'nope/'], 'cannot track /nope: NoSuchGroup'),
                         (['untrack', 'nope/'], 'cannot untrack /nope: '),
                         (['tree', 'nope/'], 'cannot show tree of /nope: NoSuchGroup'),
                         (['pressure', 'nope/'], 'cannot read the pressure of /nope: NoSuchGroup'),
                         (['watch', 'nope/'], 'cannot watch /nope: NoSuchGroup'),
                         (['freeze', 'pods/', '--except=pods/nope'], 'cannot freeze /pods except /pods/nope: ')):
        r = ft.freezectl(*args, address=bus.address, check=False)
        what = f'freezectl {" ".join(args)}'
        ft.check_equal(r.returncode, 1, f'{what}: exit 1')
        one_line(r, what, f'freezectl: {prefix}')


def check_user_bus_named():
    env = {k: v for k, v in os.environ.items() if k != 'DBUS_SESSION_BUS_ADDRESS'}
    env['XDG_RUNTIME_DIR'] = '/nonexistent'
    for args in (['status'], ['freeze', '/g']):
        what = f'XDG_RUNTIME_DIR=/nonexistent freezectl --user {" ".join(args)}'
        r = subprocess.run([ft.FREEZECTL_BIN, '--user', *args], env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=ft.DEFAULT_TIMEOUT)
        ft.check_equal(r.returncode, 1, f'{what}: exit 1')
        one_line(r, what, 'cannot connect to the user bus (unix:path=/nonexistent/bus): ')


def check_zero_totals(bus):
    r = ft.freezectl('pressure', '/g', address=bus.address)
    rows = [line.split() for line in r.stdout.splitlines()[1:] if 'not available' not in line]
    if not rows:
        print('# the kernel hides the pressure of /g: its totals are not checked', flush=True)
    ft.check(all(row[-1] == '0s' for row in rows), 'pressure /g: the zero totals are "0s"', r.stdout)
    r = ft.freezectl('status', '/g', address=bus.address)
    ft.check('Frozen in all:      0s\n' in r.stdout, 'status /g: "Frozen in all: 0s"', r.stdout)


def check_help(bus):
    whole = ft.freezectl('--help', address=bus.address).stdout
    ft.check('avg10 A% avg60 B% avg300 C%' in whole, '--help: watch\'s pressure line has the "%" it prints', whole)
    untrack = ft.freezectl('help', 'untrack', address=bus.address).stdout
    ft.check('below' not in untrack and 'given a PATH outside the tracked subtrees' in untrack,
             'help untrack: no "see below" that it does not show', untrack)
    ft.check('named in the configuration (which freezerd follows again at its next SIGHUP or start' in
             ' '.join(untrack.split()), 'help untrack: a root the configuration names comes back', untrack)
    ft.check('(a number without a unit is seconds: 100 is 100s, not 100ms)' in ' '.join(whole.split()),
             '--help: a THRESHOLD without a unit is seconds', whole)
    tree = ft.freezectl('help', 'tree', address=bus.address).stdout
    ft.check('untracked' in tree, 'help tree: untracked groups are shown too', tree)
    thaw = ft.freezectl('help', 'thaw', address=bus.address).stdout
    ft.check('undoes a\n' in thaw and 'FrozenByParent' in thaw.split('--rollback', 1)[1].split('--recursive')[0],
             'help thaw: --rollback undoes a timeout only, not FrozenByParent', thaw)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    check_user_bus_named()
    with ft.Scratch('core-freezectl-notes') as sc, ft.Bus() as bus:
        check_help(bus)
        for g in ('/g', '/pods', '/pods/a', '/pods/a/x', '/pods/b', '/d', '/sp/b', *SPACED, LONG + '/k', *COMMA):
            sc.mkdir(g)
        for g in ('/d/a', '/d/b', '/d/c'):
            sc.spawn_sleepers(g, 2)
        with ft.Daemon(bus, sc.root) as d:
            check_thaw_frozen_below(sc, bus, d)
            check_thaw_long_path(sc, bus, d)
            check_zero_totals(bus)
            check_normalized_prefix(bus)
            check_except_keeps_frozen(sc, bus)
            check_except_spaced(sc, bus)
            check_except_comma(sc, bus)
            check_stopped(sc, bus, d)


if __name__ == '__main__':
    ft.run(test)
