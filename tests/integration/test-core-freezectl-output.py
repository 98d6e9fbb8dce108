#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezectl's output: valid JSON in every locale, a standard output that fails is
said and exits 1, and a missing user bus is named as such.

  /g   (no process)

Checks:
  * --json pressure of the system and of /g in a locale whose decimal point is a
    comma (de_DE.UTF-8, made with localedef into a temporary LOCPATH; the check
    is left out where localedef cannot make it): the output parses as JSON and
    the averages are numbers (they were printed "0,00": no JSON), while the text
    output has the locale's comma.
  * --help and --version with standard output on /dev/full: exit 1, one line on
    stderr "cannot write output" (--help exited 0 in silence: its text fills the
    stdio buffer, and the write that failed inside printf() left nothing for the
    final fflush() to fail on; --version exited 1 in silence).
  * list and --json freeze with standard output on /dev/full: exit 1, one line
    naming ENOSPC.
  * watch (text and --json) with SIGPIPE ignored (as systemd's services have it)
    and a pipe whose reader has gone: once an event comes (a freeze of /g), it
    exits 1 with one line "cannot write output: Broken pipe" (it ran on for ever,
    printing to nobody, and said "Resource temporarily unavailable" when it was
    finally stopped).
  * --user (status, and freeze) with neither DBUS_SESSION_BUS_ADDRESS nor
    XDG_RUNTIME_DIR set (as under sudo): exit 1, one line saying there is no user
    bus and naming both (it said "No such file or directory (is dbus-daemon
    running?)" since libfreezer 0.4.0 reports sd-bus' ENOMEDIUM as ENOENT).
  * DBUS_SYSTEM_BUS_ADDRESS=bogus (--system status, freeze) and
    DBUS_SESSION_BUS_ADDRESS=bogus (--user status, freeze): exit 1, one line saying
    that the variable is not a valid D-Bus address (they said "Connection refused (is
    dbus-daemon running?)": sd-bus skips an entry without a transport).
  * the same for the values foo:x=y (a transport sd-bus does not know) and unix:path=
    (no socket), and --address= with each of the three (status said "Connection
    refused" for both, freeze "Invalid argument" for unix:path=).
  * --address= and DBUS_SYSTEM_BUS_ADDRESS with a socket path or name too long for a
    sockaddr_un, a guid= that is not 32 hex digits, two sockets, a bad %-escape, an
    empty path=, for status (sd-bus) and freeze (the wire): one line saying what is
    wrong and with which value (they said "Invalid argument", "File name too long").
  * freeze "/g ", thaw "/g/ ", status " ", tree "/g<TAB>", freeze /g --except="/g/x " and
    --except=" /g/x": freezectl's words name the path in double quotes (they read as /g,
    /g/, /, /g, /g/x); freeze /nope and status "/g/a b" as they were.  freeze /g "" /g:
    "empty PATH: the 2nd of the 3 given" (it said "empty PATH", whichever it was).
  * freeze '/g" ', '/g\\" ' and /g --except='/g/" x ': a '"' inside the quotes as \\" (they
    printed "/g" "), a backslash doubled.
  * thaw --recursive "/g/p /c " with "/g/p " frozen: the note names both quoted.
  * --address= with a guid= that is not the bus' id: freeze, batch (freezectl's own
    wire) and list (sd-bus) each exit 1 with one line "cannot connect to the bus at
    ADDRESS: Permission denied", asking about guid= (freeze and batch said "cannot
    freeze /g: AccessDenied: Operation not permitted", as if freezerd refused); and
    /g was not frozen (the wire sent its call with AUTH and BEGIN in one write, the
    bus routed it, and freezerd froze /g while freezectl said it failed).
  * --json freeze (the wire), --json thaw --recursive and --json list (libfreezer) at
    that address: the same line, and nothing on standard output (the wire printed a
    "failed" JSON object for /g, which libfreezer's commands never did).
  * as nobody, status and freeze at the bus (its address has a guid=) and at
    freezerd's private socket, both in directories of mode 0700: exit 1, one line
    "Permission denied (the socket, or a directory on its path, is not open to uid
    65534...)" (at the bus it asked whether guid= named the bus; at the private
    socket it said nothing more).
  * --json freeze, thaw, batch (freezectl's own wire) and status (sd-bus) at a private
    socket whose server closes each connection before it answers AUTH (as freezerd at
    its limit of connections), at once or after reading part of a 4 MB batch: exit 1,
    one line "cannot connect to freezerd's private socket PATH: Connection reset by
    peer", as status said it, and nothing on standard output (freeze and thaw printed
    a "failed" object, saying that freezerd closed the connection while the call was
    written, or that it stopped or crashed during the freeze; batch said the first).
  * --json freeze and thaw of a PATH that is not UTF-8 ("/g\\xff\\xc3\\xa9"): the output
    parses as JSON, with the path "/g\\ufffd\\u00e9" (the byte went out as it was: no
    JSON parser took the output); its error line is UTF-8, with the byte as \\xff
    (it went out as it was: the journal keeps such a line as a blob).  Text thaw, status
    and freeze of such a PATH say how to reach the group: through its nearest ancestor
    that D-Bus carries (freeze it, thaw --recursive it; "/" only the latter) (they said
    only that the path is not UTF-8).
  * a file system path as PATH (the scratch group's, under the cgroup2 mount):
    status, freeze (the wire), batch and freeze --except exit 1 with one NoSuchGroup
    line that says PATH is relative to freezerd's cgroup root, naming the cgroup2
    mount (they said only that the directory, which exists, "does not exist"; then
    named /sys/fs/cgroup whatever the mount); a group whose name holds
    "/sys/fs/cgroup/" gets no such hint (it did: the message text was looked at, not
    the path), and in a mount namespace with cgroup2 mounted elsewhere a path there
    gets it (it did not).
  * a path relative to the cgroup2 mount (as /proc/PID/cgroup shows the scratch group,
    freezerd's root being below the mount): status, freeze (the wire) and batch exit 1
    with one NoSuchGroup line that says PATH is not relative to the mount, naming the
    group found there (they said only "does not exist"); a path that names nothing
    there gets no hint."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def freezectl_to_full(bus, *args):
    with open('/dev/full', 'w') as full:
        try:
            return subprocess.run([ft.FREEZECTL_BIN, f'--address={bus.address}', *args], stdout=full,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                  timeout=ft.DEFAULT_TIMEOUT)
        except subprocess.TimeoutExpired:
            ft.fail(f'freezectl {" ".join(args)} >/dev/full did not finish in time')


def check_full(bus, args, words):
    r = freezectl_to_full(bus, *args)
    lines = r.stderr.splitlines()
    what = f'freezectl {" ".join(args)} >/dev/full'
    ft.check_equal(r.returncode, 1, f'{what}: exit status 1')
    ft.check(len(lines) == 1 and lines[0].startswith('freezectl: cannot write output') and
             all(w in lines[0] for w in words), f'{what}: one line "cannot write output" {" ".join(words)}', lines)


def check_watch_reader_gone(bus, args):
    """watch ARGS with SIGPIPE ignored, its stdout a pipe whose reader closes after the
    watching line."""
    what = f'freezectl {" ".join(args)}'
    rfd, wfd = os.pipe2(os.O_CLOEXEC)
    old = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        p = subprocess.Popen([ft.FREEZECTL_BIN, f'--address={bus.address}', *args], stdout=wfd,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, restore_signals=False)
    finally:
        signal.signal(signal.SIGPIPE, old)
        os.close(wfd)
    try:
        with os.fdopen(rfd, 'rb') as reader:
            first = reader.readline()  # the watching line: the watch is set up
            ft.check(b'watching' in first, f'{what}: the watching line', first)
        ft.freezectl('freeze', '/g', address=bus.address)
        ft.freezectl('thaw', '/g', address=bus.address)
        try:
            rc = p.wait(timeout=ft.DEFAULT_TIMEOUT)
        except subprocess.TimeoutExpired:
            ft.fail(f'{what}: still running with nobody to read its output')
        lines = p.stderr.read().decode(errors='replace').splitlines()
        ft.check_equal(rc, 1, f'{what}: exit status 1 once its output cannot be written')
        ft.check(lines == ['freezectl: cannot write output: Broken pipe'],
                 f'{what}: one line "cannot write output: Broken pipe"', lines)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stderr.close()


def comma_locale(tmp):
    """Environment variables for de_DE.UTF-8 made in tmp, or None if localedef cannot."""
    try:
        r = subprocess.run(['localedef', '-i', 'de_DE', '-f', 'UTF-8', os.path.join(tmp, 'de_DE.UTF-8')],
                           capture_output=True, text=True, timeout=ft.DEFAULT_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if not os.path.isdir(os.path.join(tmp, 'de_DE.UTF-8')):
        print(f'# localedef made no de_DE.UTF-8 ({r.returncode}: {r.stderr.strip()[-200:]})', flush=True)
        return None
    return {'LOCPATH': tmp, 'LC_ALL': 'de_DE.UTF-8'}


def check_json_in_comma_locale(bus):
    tmp = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}locale-{os.getpid()}-')
    try:
        env = comma_locale(tmp)
        if env is None:
            print('# no de_DE locale could be made: the JSON locale check is left out', flush=True)
            return
        env = dict(os.environ, **env)
        for args in (['pressure'], ['pressure', '/g']):
            what = f'LC_ALL=de_DE.UTF-8 freezectl {" ".join(args)}'
            text = subprocess.run([ft.FREEZECTL_BIN, f'--address={bus.address}', *args], env=env,
                                  capture_output=True, text=True, timeout=ft.DEFAULT_TIMEOUT)
            ft.check(text.returncode == 0 and re.search(r'\d,\d\d ', text.stdout),
                     f'{what}: the text has the decimal comma', (text.returncode, text.stdout, text.stderr))
            r = subprocess.run([ft.FREEZECTL_BIN, f'--address={bus.address}', '--json', *args], env=env,
                               capture_output=True, text=True, timeout=ft.DEFAULT_TIMEOUT)
            ft.check_equal(r.returncode, 0, f'{what} --json: exit status 0')
            try:
                out = json.loads(r.stdout)
            except ValueError as e:
                ft.fail(f'{what} --json: not JSON ({e}): {r.stdout[:300]}')
            avgs = [line[k] for res in ('cpu', 'memory', 'io') for kind in ('some', 'full')
                    for line in [out[res][kind]] for k in ('avg10', 'avg60', 'avg300')]
            ft.check(all(isinstance(a, (int, float)) for a in avgs), f'{what} --json: the averages are numbers', avgs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_no_user_bus():
    env = {k: v for k, v in os.environ.items() if k not in ('DBUS_SESSION_BUS_ADDRESS', 'XDG_RUNTIME_DIR')}
    for args in (['status'], ['freeze', '/g']):
        what = f'freezectl --user {" ".join(args)} without a user bus in the environment'
        r = subprocess.run([ft.FREEZECTL_BIN, '--user', *args], env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=ft.DEFAULT_TIMEOUT)
        lines = r.stderr.splitlines()
        ft.check_equal(r.returncode, 1, f'{what}: exit status 1')
        ft.check(len(lines) == 1 and 'there is no user bus' in lines[0] and 'DBUS_SESSION_BUS_ADDRESS' in lines[0]
                 and 'XDG_RUNTIME_DIR' in lines[0], f'{what}: one line saying there is no user bus', lines)


def check_bogus_env_address():
    # bogus: an entry without a transport; foo: a transport sd-bus does not know; unix:path=
    # no socket (sd-bus skips each, and said "Connection refused").
    for value in ('bogus', 'foo:x=y', 'unix:path='):
        for var, args in (('DBUS_SYSTEM_BUS_ADDRESS', ['--system', 'status']),
                          ('DBUS_SYSTEM_BUS_ADDRESS', ['--system', 'freeze', '/g']),
                          ('DBUS_SESSION_BUS_ADDRESS', ['--user', 'status']),
                          ('DBUS_SESSION_BUS_ADDRESS', ['--user', 'freeze', '/g'])):
            what = f'{var}={value} freezectl {" ".join(args)}'
            r = subprocess.run([ft.FREEZECTL_BIN, *args], env=dict(os.environ, **{var: value}),
                               stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=ft.DEFAULT_TIMEOUT)
            lines = r.stderr.splitlines()
            ft.check_equal(r.returncode, 1, f'{what}: exit status 1')
            ft.check(len(lines) == 1 and f'{var} is not a valid D-Bus address' in lines[0],
                     f'{what}: one line saying {var} is not a valid address', lines)
        for args in (['status'], ['freeze', '/g']):
            what = f'freezectl --address={value} {" ".join(args)}'
            r = subprocess.run([ft.FREEZECTL_BIN, f'--address={value}', *args], stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=ft.DEFAULT_TIMEOUT)
            lines = r.stderr.splitlines()
            ft.check_equal(r.returncode, 1, f'{what}: exit status 1')
            ft.check(len(lines) == 1 and 'not a D-Bus address this can use' in lines[0],
                     f'{what}: one line saying it is not a D-Bus address this can use', lines)


def check_address_defects():
    """An address the wire refuses (as sd-bus does) is said with what is wrong with it and
    its value, for --address= and for DBUS_SYSTEM_BUS_ADDRESS, by freeze (the wire) and
    status (sd-bus): they said "Invalid argument" (or "File name too long") and at best
    "not a D-Bus address this can use: e.g. unix:path=/run/dbus/system_bus_socket"."""
    long_path = '/tmp/' + 'a' * 120
    for value, why in ((f'unix:path={long_path}',
                        'its socket path is 125 bytes, longer than the 107 a unix socket address takes'),
                       (f'unix:abstract={long_path}',
                        'its socket name is 125 bytes, longer than the 106 a unix socket address takes'),
                       ('unix:path=/run/x,guid=zz', 'guid=zz is not 32 hex digits'),
                       ('unix:path=/run/a,path=/run/b', 'it names more than one socket: path= or abstract= is given '
                                                        'twice'),
                       ('unix:path=/run/a%zz', '"%zz" is no %-escape of two hex digits'),
                       ('unix:path=', 'path= names no socket')):
        for args in (['status'], ['freeze', '/g']):
            what = f'freezectl --address={value[:40]} {" ".join(args)}'
            r = subprocess.run([ft.FREEZECTL_BIN, f'--address={value}', *args], stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=ft.DEFAULT_TIMEOUT)
            ft.check(r.returncode == 1 and r.stderr.startswith(f'freezectl: cannot connect to the bus at {value}: ')
                     and r.stderr.endswith(f' (not a D-Bus address this can use: {why})\n'),
                     f'{what}: exit 1, one line saying what is wrong with the address', repr(r.stderr))
            what = f'DBUS_SYSTEM_BUS_ADDRESS={value[:40]} freezectl --system {" ".join(args)}'
            r = subprocess.run([ft.FREEZECTL_BIN, '--system', *args],
                               env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=value), stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=ft.DEFAULT_TIMEOUT)
            ft.check_equal((r.returncode, r.stderr),
                           (1, f'freezectl: cannot connect to the system bus ({value}): DBUS_SYSTEM_BUS_ADDRESS is '
                               f'not a valid D-Bus address: {why}\n'),
                           f'{what}: exit 1, one line saying what is wrong with the variable\'s address')


def check_quoted_paths(sc, bus):
    """freezectl's words name a path in double quotes where it starts or ends with white
    space (or is empty), which read as the path without it ("cannot freeze /g : ..." for
    "/g "); ordinary paths as they were."""
    for args, start in ((['freeze', '/g '], 'freezectl: cannot freeze "/g ": NoSuchGroup: '),
                        (['thaw', '/g/ '], 'freezectl: cannot thaw "/g/ ": NoSuchGroup: '),
                        # A '"' inside the quotes as \", after a backslash (doubled) too.
                        (['freeze', '/g" '], 'freezectl: cannot freeze "/g\\" ": NoSuchGroup: '),
                        (['freeze', '/g\\" '], 'freezectl: cannot freeze "/g\\\\\\" ": NoSuchGroup: '),
                        (['freeze', '/g', '--except=/g/" x '], 'freezectl: cannot freeze /g except "/g/\\" x ": '
                                                               'NoSuchGroup: '),
                        (['status', ' '], 'freezectl: cannot get status of "/ ": NoSuchGroup: '),
                        (['tree', '/g\t'], 'freezectl: cannot show tree of "/g\\x09": InvalidPath: '),
                        (['freeze', '/g', '--except=/g/x '], 'freezectl: cannot freeze /g except "/g/x ": '
                                                             'NoSuchGroup: '),
                        (['freeze', '/g', '--except= /g/x'], 'freezectl: --except=" /g/x" is not below /g, the PATH '
                                                             'to freeze'),
                        (['freeze', '/nope'], 'freezectl: cannot freeze /nope: NoSuchGroup: '),
                        (['status', '/g/a b'], 'freezectl: cannot get status of /g/a b: NoSuchGroup: '),
                        (['freeze', '/g', '', '/g'], 'freezectl: empty PATH: the 2nd of the 3 given (see --help)'),
                        (['thaw', ''], 'freezectl: empty PATH (see --help)')):
        what = ' '.join(repr(a) for a in args)
        r = ft.freezectl(*args, address=bus.address, check=False)
        ft.check(r.returncode in (1, 2) and len(r.stderr.splitlines()) == 1 and r.stderr.startswith(start),
                 f'freezectl {what}: one line starting {start!r}', repr(r.stderr))
    ft.check_equal(sc.read_freeze('/g'), 0, '/g was not frozen')


def check_quoted_note(sc, bus):
    """thaw --recursive's note, of a group that an ancestor still freezes, names both in
    double quotes where they end with white space ("/g/p /c " frozen by "/g/p ")."""
    sc.write_freeze('/g/p ', 1)
    sc.wait_events('/g/p /c ', frozen=1)
    ft.wait_for(lambda: ft.freezectl('--json', 'status', '/g/p /c ', address=bus.address,
                                     check=False).stdout.count('frozen-by-parent') > 0,
                what='freezerd to see "/g/p /c " frozen by its parent')
    r = ft.freezectl('thaw', '--recursive', '/g/p /c ', address=bus.address, check=False)
    ft.check_equal((r.returncode, r.stderr),
                   (3, 'freezectl: note: every freeze flag in "/g/p /c " is cleared, but "/g/p " still freezes it\n'),
                   'thaw --recursive "/g/p /c ": the note names both paths quoted')
    sc.write_freeze('/g/p ', 0)
    sc.wait_events('/g/p /c ', frozen=0)


def check_wrong_guid(sc, bus):
    address = re.sub(r'guid=[0-9a-f]+', 'guid=' + '0' * 31 + '1', bus.address)
    ft.check(address != bus.address, 'the bus address has a guid=', bus.address)
    # --json freeze by the wire, and --json thaw --recursive and list by libfreezer: no
    # JSON on standard output either way (the wire printed a "failed" object for /g).
    for cmd, stdin in ((['freeze', '/g'], None), (['batch', '-'], '[{"path": "/g", "freeze": true}]'),
                       (['list'], None), (['--json', 'freeze', '/g'], None),
                       (['--json', 'thaw', '--recursive', '/g'], None), (['--json', 'list'], None)):
        what = f'{" ".join(cmd)} at an address whose guid= is not the bus\' id'
        r = ft.freezectl(*cmd, address=address, check=False, input=stdin)
        lines = r.stderr.splitlines()
        ft.check_equal(r.returncode, 1, f'{what}: exit status 1')
        ft.check(len(lines) == 1 and lines[0].startswith(f'freezectl: cannot connect to the bus at {address}: '
                                                         'Permission denied') and 'guid=' in lines[0][-80:],
                 f'{what}: one line "cannot connect ... Permission denied", asking about guid=', lines)
        ft.check_equal(r.stdout, '', f'{what}: nothing on standard output')
    # A call of ours that the bus had routed would be in freezerd's hands before this one.
    ft.freezectl('status', '/g', address=bus.address)
    ft.check_equal(sc.read_freeze('/g'), 0, 'no freeze reached freezerd from the wrong guid=')


def check_fs_path_hint(bus, cmd, stdin, mount, hint=True, prefix=()):
    what = f'{" ".join(prefix[-1:])} {cmd[0]} of {cmd[-1] if stdin is None else stdin}'
    r = ft.freezectl(*cmd, address=bus.address, check=False, input=stdin, prefix=prefix)
    lines = r.stderr.splitlines()
    ft.check_equal(r.returncode, 1, f'{what}: exit status 1')
    if hint:
        ft.check(len(lines) == 1 and 'NoSuchGroup' in lines[0] and "relative to freezerd's cgroup root" in lines[0]
                 and f'not {mount}/.../pods/a' in lines[0],
                 f'{what}: one NoSuchGroup line saying PATH is relative to the cgroup root, naming {mount}', lines)
    else:
        ft.check(len(lines) == 1 and 'NoSuchGroup' in lines[0] and 'relative to' not in lines[0],
                 f'{what}: one NoSuchGroup line, without the file system path hint', lines)


def check_socket_denied(bus, d):
    """freezectl as nobody, whom the bus' and freezerd's socket directories (0700) keep out."""
    if shutil.which('setpriv') is None:
        print('# no setpriv: the check of a socket not open to the uid is left out', flush=True)
        return
    prefix = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--']
    private = os.path.join(d.runtime_dir, 'private')
    for cmd, how in ((['status'], {'address': bus.address}), (['freeze', '/g'], {'address': bus.address}),
                     (['status'], {'socket': private}), (['freeze', '/g'], {'socket': private})):
        what = f'{" ".join(cmd)} as nobody at {"the bus" if "address" in how else "the private socket"}'
        r = ft.freezectl(*cmd, check=False, prefix=prefix, **how)
        lines = r.stderr.splitlines()
        ft.check_equal(r.returncode, 1, f'{what}: exit status 1')
        ft.check(len(lines) == 1 and 'Permission denied (the socket, or a directory on its path, is not open to '
                 'uid 65534' in lines[0] and 'guid=' not in lines[0].split('Permission denied')[1],
                 f'{what}: one line saying the socket is not open to the uid (not asking about guid=)', lines)


def check_private_closed_before_auth():
    """A private socket whose server closes each connection before it answers AUTH, as
    freezerd at its limit of connections does: at once, and once it read part of what
    came (the call of a 4 MB batch is then cut while freezectl writes it)."""
    tmp = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}closing-{os.getpid()}-')
    path = os.path.join(tmp, 'private')
    batch = os.path.join(tmp, 'big.json')
    with open(batch, 'w') as f:
        json.dump([{'path': '/g/' + 'x' * 200 + str(i), 'freeze': True} for i in range(20000)], f)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    mode = ['at once']

    def serve():
        while True:
            try:
                c, _ = listener.accept()
            except OSError:  # shut down: the check is over
                return
            if mode[0] == 'after reading':
                c.recv(65536)
            c.close()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        for mode[0] in ('at once', 'after reading'):
            for cmd in (['--json', 'freeze', '/g'], ['--json', 'thaw', '/g'], ['--json', 'batch', batch],
                        ['--json', 'status', '/g']):
                what = f'{" ".join(cmd[:2])} at a private socket closed {mode[0]}, before AUTH was answered'
                r = ft.freezectl(*cmd, socket=path, check=False)
                lines = r.stderr.splitlines()
                ft.check_equal(r.returncode, 1, f'{what}: exit status 1')
                ft.check(len(lines) == 1 and lines[0].startswith(
                    f"freezectl: cannot connect to freezerd's private socket {path}: Connection reset by peer"),
                    f'{what}: one line "cannot connect", as status says it', lines)
                ft.check_equal(r.stdout, '', f'{what}: nothing on standard output')
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        server.join(ft.DEFAULT_TIMEOUT)
        shutil.rmtree(tmp, ignore_errors=True)


def check_json_of_non_utf8_path(bus):
    """A PATH argument that is not UTF-8: the --json output of freeze and thaw parses."""
    for cmd in ('freeze', 'thaw'):
        what = f'--json {cmd} of a path that is not UTF-8'
        r = subprocess.run([ft.FREEZECTL_BIN, f'--address={bus.address}', '--json', cmd, b'/g\xff\xc3\xa9'],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=ft.DEFAULT_TIMEOUT)
        ft.check_equal(r.returncode, 1, f'{what}: exit status 1')
        try:
            out = json.loads(r.stdout)
        except ValueError as e:
            ft.fail(f'{what}: the output is no JSON ({e}): {r.stdout[:300]!r}')
        ft.check(len(out) == 1 and out[0]['path'] == '/g\ufffd\u00e9' and out[0]['result'] == 'failed' and
                 out[0]['error'] == 'org.freedesktop.DBus.Error.InvalidArgs',
                 f'{what}: one failed object, the invalid byte as U+FFFD', out)
        try:
            err = r.stderr.decode()
        except UnicodeDecodeError as e:
            ft.fail(f'{what}: the error line is not UTF-8 ({e}): {r.stderr!r}')
        ft.check(err.count('\n') == 1 and '/g\\xff\u00e9' in err, f'{what}: the error line has the byte as \\xff',
                 err)
    # The line says how to reach such a group, through its nearest ancestor D-Bus carries
    # (it said only "not valid UTF-8", which left a group so named, frozen, with no way out):
    # freeze (the wire) and status (libfreezer); below "/" only thaw --recursive / does.
    for cmd, path, words in (('thaw', b'/g/x\xff', ['reach it through /g,', 'thaw --recursive']),
                             ('status', b'/g/x\xff/y', ['reach it through /g,']),
                             ('freeze', b'/\xff', ['thaw --recursive / clears its flag'])):
        what = f'{cmd} of {path!r}'
        r = subprocess.run([ft.FREEZECTL_BIN, f'--address={bus.address}', cmd, path], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=ft.DEFAULT_TIMEOUT)
        err = r.stderr.decode(errors='replace')
        ft.check_equal(r.returncode, 1, f'{what}: exit status 1')
        ft.check(err.count('\n') == 1 and 'not valid UTF-8' in err and 'D-Bus carries UTF-8 only' in err and
                 all(w in err for w in words), f'{what}: one line saying how to reach the group: {words}', err)


def check_file_system_path(sc, bus):
    mount = ft.cgroup2_mount()
    fs_path = sc.abspath('/g')
    for cmd, stdin in ((['status', fs_path], None), (['freeze', fs_path], None),
                       (['batch', '-'], json.dumps([{'path': fs_path, 'freeze': True}])),
                       (['freeze', '/g', f'--except={fs_path}/x'], None)):
        check_fs_path_hint(bus, cmd, stdin, mount)
    # A group whose name merely holds "/sys/fs/cgroup/" is no file system path (the hint
    # was given for any message holding it).
    for cmd in (['status', '/g/sys/fs/cgroup/x'], ['freeze', '/g/sys/fs/cgroup/x']):
        check_fs_path_hint(bus, cmd, None, mount, hint=False)
    # cgroup2 mounted elsewhere too, where freezectl runs (a mount namespace of its own):
    # a path there gets the hint, naming that mount (it was given only for /sys/fs/cgroup/).
    if shutil.which('unshare'):
        other = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}cgmount-{os.getpid()}-')
        try:
            other_path = os.path.join(other, os.path.relpath(fs_path, mount))
            prefix = ['unshare', '-m', 'sh', '-c', f'mount -t cgroup2 cgroup2 "$0" && exec "$@"', other]
            check_fs_path_hint(bus, ['status', other_path], None, other, prefix=prefix)
        finally:
            os.rmdir(other)
    # A path relative to the cgroup2 mount (as /proc/PID/cgroup shows it), freezerd's root
    # being below the mount: the hint names the group it found there (it said only "does
    # not exist").  A path that names no directory there gets none.
    mount_rel = '/' + os.path.relpath(fs_path, mount)
    for cmd, stdin in ((['status', mount_rel], None), (['freeze', mount_rel + '/'], None),
                       (['batch', '-'], json.dumps([{'path': mount_rel, 'freeze': True}]))):
        what = f'{cmd[0]} of {cmd[-1] if stdin is None else stdin}'
        r = ft.freezectl(*cmd, address=bus.address, check=False, input=stdin)
        lines = r.stderr.splitlines()
        ft.check_equal(r.returncode, 1, f'{what}: exit status 1')
        ft.check(len(lines) == 1 and 'NoSuchGroup' in lines[0] and 'not to the cgroup2 mount' in lines[0]
                 and f'for {fs_path} give its path below' in lines[0],
                 f'{what}: one NoSuchGroup line saying PATH is not relative to the mount, naming {fs_path}', lines)
    r = ft.freezectl('status', mount_rel + '-none', address=bus.address, check=False)
    ft.check('cgroup2 mount' not in r.stderr and 'does not exist' in r.stderr,
             'status of a path that is no directory below the mount: no hint', r.stderr)
    ft.check_equal(sc.read_freeze('/g'), 0, 'nothing was frozen')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-freezectl-output') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        sc.mkdir('/g/p ')
        sc.mkdir('/g/p /c ')
        check_full(bus, ['--help'], [])
        check_full(bus, ['--version'], [])
        check_no_user_bus()
        check_bogus_env_address()
        check_address_defects()
        check_private_closed_before_auth()
        with ft.Daemon(bus, sc.root) as d:
            check_socket_denied(bus, d)
            check_json_in_comma_locale(bus)
            check_wrong_guid(sc, bus)
            check_json_of_non_utf8_path(bus)
            check_file_system_path(sc, bus)
            check_quoted_paths(sc, bus)
            check_quoted_note(sc, bus)
            check_full(bus, ['list'], ['No space left on device'])
            check_full(bus, ['--json', 'freeze', '/g'], ['No space left on device'])
            ft.freezectl('thaw', '/g', address=bus.address)
            check_watch_reader_gone(bus, ['watch'])
            check_watch_reader_gone(bus, ['--json', 'watch', '/g'])


if __name__ == '__main__':
    ft.run(test)
