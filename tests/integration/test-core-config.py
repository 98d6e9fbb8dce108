#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The configuration file: SIGHUP reload, and refusal to start on a bad one.

Checks:
  * freezerd started with {"default_timeout_usec": 5000000} has DefaultTimeoutUSec
    5000000.  After the file is rewritten with 7000000 and SIGHUP (freezerd
    sends RELOADING=1, then READY=1), PropertiesChanged carries
    DefaultTimeoutUSec=7000000 and Get reads it.
  * A bad file on SIGHUP: freezerd keeps running with the old value, logs the
    file:line, and still answers.
  * An empty object on SIGHUP: back to the default, 10000000 (signalled).
  * The file (named with --config=) removed, SIGHUP: "Not reloading", naming
    it, and the old value stays (the defaults applied, track ["/"] among them).
  * "track": ["/a"] tracks only /a's subtree ("/" is an object all the same,
    untracked); Freeze of /b tracks /b's subtree
    first (InterfacesAdded); Untrack("/b") removes the objects and leaves the
    flags as they are.
  * A missing file named with --config= stops the start (exit 1, no READY=1),
    naming it; it meant the defaults, silently.  The default file (freezerd
    --user's, in $XDG_CONFIG_HOME) may be missing: the ready line says the
    defaults apply, naming it, as does a SIGHUP (it said "reloaded from").
    The ready line names the file read.
  * freezerd refuses to start (non-zero exit, no READY=1, bus name never owned)
    on an unknown key, a wrong type, bad JSON, a non-object, a duplicate key, a
    relative cgroup_root, a zero timeout; stderr names FILE:LINE (and the key).
  * SIGHUP from "track" ["/a"] to ["/a/x"] and back: /a/x stays published
    through both (no InterfacesRemoved or InterfacesAdded of it; it was
    removed with the old root and published again).
  * SIGHUP replacing 50 (waiting) track roots saves tracked.json once, and it
    keeps a Track()ed root that the configuration names now (one save, with
    an fsync, per root added or dropped held the loop for seconds).
  * cgroup_root from the file (no --cgroup-root): SIGHUP warns that a new one
    takes effect only on restart when it changed (taken out), not when it is
    the same (it warned at every SIGHUP, and never for one taken out).
  * A FIFO in the file's place is refused at start and on SIGHUP (the old
    configuration stays), at once: freezerd waited in open() for a writer."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

IN_MOVED_TO = 0x00000080

BAD = [
    # (text, line, words the message must contain)
    ('{\n  "track": ["/"],\n  "bogus": 1\n}\n', 3, ['bogus']),
    ('{\n  "default_timeout_usec": "10s"\n}\n', 2, ['default_timeout_usec']),
    ('{\n  "track": "/"\n}\n', 2, ['track']),
    ('{\n  "track": ["/"],\n  "default_timeout_usec": 1000000,\n}\n', 4, []),   # trailing comma: the "}" line
    ('{\n  "track": ["/"]\n', 3, []),                                            # unterminated
    ('[1]\n', 1, []),
    ('{\n  "default_timeout_usec": 1,\n  "default_timeout_usec": 2\n}\n', 3, ['default_timeout_usec']),
    ('{\n\n  "cgroup_root": "relative"\n}\n', 3, ['cgroup_root']),
    ('{\n  "default_timeout_usec": 0\n}\n', 2, ['default_timeout_usec']),
]


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def start_bad(bus, sc, tmpdir, i, text):
    """Run freezerd on a bad configuration (text None: a FIFO); returns (exit status, output, READY seen)."""
    cfg = os.path.join(tmpdir, f'bad-{i}.json')
    if text is None:
        os.mkfifo(cfg)
    else:
        write(cfg, text)
    notify = os.path.join(tmpdir, f'notify-{i}')
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(notify)
    sock.setblocking(False)
    try:
        env = dict(os.environ, NOTIFY_SOCKET=notify)
        argv = ft.FREEZERD_WRAPPER + [ft.FREEZERD_BIN, f'--address={bus.address}', f'--cgroup-root={sc.root}',
                                      f'--config={cfg}', f'--runtime-dir={tmpdir}', f'--state-dir={tmpdir}']
        try:
            r = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=ft.DEFAULT_TIMEOUT, preexec_fn=ft._child_setup(pdeathsig=signal.SIGKILL))
        except subprocess.TimeoutExpired:
            ft.fail(f'freezerd did not exit on the bad configuration {text!r}')
        ready = False
        while True:
            try:
                ready |= b'READY=1' in sock.recv(65536)
            except BlockingIOError:
                break
        return r.returncode, r.stdout + r.stderr, cfg, ready
    finally:
        sock.close()


def run_default_config(bus, sc, tmpdir):
    """freezerd --user with an empty $XDG_CONFIG_HOME (its default file missing): start it,
    SIGHUP, SIGTERM; returns (exit status, output, READY=1 count)."""
    xdg = {k: os.path.join(tmpdir, 'xdg-' + k.lower())
           for k in ('XDG_CONFIG_HOME', 'XDG_RUNTIME_DIR', 'XDG_STATE_HOME')}
    for p in xdg.values():
        os.mkdir(p)
    notify = os.path.join(tmpdir, 'notify-default')
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(notify)
    ready = 0

    def wait_ready(n, proc):
        nonlocal ready

        def got():
            nonlocal ready
            ready += sock.recv(65536).count(b'READY=1')
        ft.loop().add_reader(sock, got)
        try:
            ft.wait_for(lambda: ready >= n or proc.poll() is not None, what=f'READY=1 number {n}')
        finally:
            ft.loop().remove_reader(sock)

    env = {k: v for k, v in os.environ.items() if not k.startswith('XDG_')}
    env.update(xdg, NOTIFY_SOCKET=notify, DBUS_SESSION_BUS_ADDRESS=bus.address)
    argv = ft.FREEZERD_WRAPPER + [ft.FREEZERD_BIN, '--user', f'--cgroup-root={sc.root}']
    out = os.path.join(tmpdir, 'default.log')
    try:
        with open(out, 'w') as log:
            proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    preexec_fn=ft._child_setup(pdeathsig=signal.SIGKILL))
        try:
            wait_ready(1, proc)
            if proc.poll() is None:
                proc.send_signal(signal.SIGHUP)
                wait_ready(2, proc)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=ft.DEFAULT_TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        with open(out) as f:
            return rc, f.read(), ready, os.path.join(xdg['XDG_CONFIG_HOME'], 'freezerd', 'freezerd.json')
    finally:
        sock.close()


def sig_ignored(pid):
    """The SigIgn mask of /proc/PID/status."""
    with open(f'/proc/{pid}/status') as f:
        return next(int(line.split()[1], 16) for line in f if line.startswith('SigIgn:'))


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-config') as sc, ft.Bus() as bus, \
            tempfile.TemporaryDirectory(prefix=f'{ft.TMP_PREFIX}daemon-{os.getpid()}-cfg-') as tmpdir:
        sc.mkdir('/g')

        # ---- SIGHUP reload
        with ft.Daemon(bus, sc.root, config={'default_timeout_usec': 5000000}) as d:
            c = d.client
            ft.check_equal(c.manager_property('DefaultTimeoutUSec'), 5000000, 'DefaultTimeoutUSec from the file')
            ft.check(f'; configuration: {d.config_path}.' in d.log(), 'the ready line names the file read',
                     d.log())
            rec = c.record()
            write(d.config_path, '{\n  "default_timeout_usec": 7000000\n}\n')
            d.reload()
            ft.check(any(n.get('RELOADING') == '1' for n in d.notifications), 'RELOADING=1 was sent')
            rec.wait_property(ft.MANAGER_PATH, 'DefaultTimeoutUSec', 7000000)
            ft.check_equal(c.manager_property('DefaultTimeoutUSec'), 7000000,
                           'SIGHUP: PropertiesChanged and Get say 7000000')

            write(d.config_path, '{\n  "default_timeout_usec": "soon"\n}\n')
            d.reload()
            ft.check_equal(c.manager_property('DefaultTimeoutUSec'), 7000000,
                           'a bad file on SIGHUP keeps the old value')
            ft.check(f'{d.config_path}:2' in d.log(), 'the reload failure is logged with file:line', d.log())
            ft.check_equal(c.call('GetGroup', '/g')[0], ft.group_object('/g'), 'freezerd still answers')
            ft.check_equal(d.exit_status, None, 'freezerd is still running')

            # A FIFO in the file's place (no writer): refused at once, the old value stays.
            # Its open() blocked freezerd's loop until someone wrote to it: no READY=1,
            # no answer, not even to SIGTERM.
            os.unlink(d.config_path)
            os.mkfifo(d.config_path)
            d.reload()
            ft.check(f'{d.config_path}: not a regular file (a FIFO)' in d.log(),
                     'a FIFO on SIGHUP is refused, naming the file', d.log()[-500:])
            ft.check_equal(c.manager_property('DefaultTimeoutUSec'), 7000000, '... and the old value stays')
            os.unlink(d.config_path)

            rec.clear()
            write(d.config_path, '{}\n')
            d.reload()
            rec.wait_property(ft.MANAGER_PATH, 'DefaultTimeoutUSec', 10000000)
            ft.check_equal(c.manager_property('DefaultTimeoutUSec'), 10000000, 'an empty file: the default again')

            # The file named with --config= removed: not reloaded (it meant the defaults, track
            # ["/"] among them), as at the start.
            write(d.config_path, '{\n  "default_timeout_usec": 8000000\n}\n')
            d.reload()
            rec.wait_property(ft.MANAGER_PATH, 'DefaultTimeoutUSec', 8000000)
            os.unlink(d.config_path)
            d.reload()
            ft.check(f'Not reloading: {d.config_path}: failed to open: No such file or directory' in d.log(),
                     'a removed --config= file on SIGHUP: "Not reloading", naming it', d.log()[-500:])
            ft.check_equal(c.manager_property('DefaultTimeoutUSec'), 8000000, '... and the old value stays')

        # ---- signals inherited as ignored (nohup ignores SIGHUP): freezerd takes them back
        d = ft.Daemon(bus, sc.root, config={'default_timeout_usec': 5000000})
        saved = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGHUP, signal.SIGTERM)}
        try:
            d.__enter__()  # started with both ignored, as exec(2) hands them on
        finally:
            for sig, h in saved.items():
                signal.signal(sig, h)
        try:
            ft.check_equal(sig_ignored(d.pid) & ((1 << (signal.SIGHUP - 1)) | (1 << (signal.SIGTERM - 1))), 0,
                           'freezerd, started with SIGHUP and SIGTERM ignored, ignores neither')
            rec = d.client.record()
            write(d.config_path, '{\n  "default_timeout_usec": 6000000\n}\n')
            d.reload()
            rec.wait_property(ft.MANAGER_PATH, 'DefaultTimeoutUSec', 6000000)
            ft.check(True, 'started with SIGHUP ignored, SIGHUP still reloads')
            ft.check_equal(d.stop(), 0, 'started with SIGTERM ignored, SIGTERM still stops it (exit 0)')
        finally:
            d.__exit__(None, None, None)

        # ---- "track": only the configured subtrees at first; a request elsewhere tracks that subtree
        sc.mkdir('/a/x')
        sc.mkdir('/b/y')
        with ft.Daemon(bus, sc.root, config={'track': ['/a']}) as d:
            c = d.client
            ft.check_equal(sorted(p for p, _o, _s in c.call('ListGroups')[0]), ['/', '/a', '/a/x'],
                           'track ["/a"]: only /a and /a/x are tracked (and "/" is listed)')
            ft.check_equal(c.manager_property('Groups'), 3, 'Groups is 3')
            rec = c.record()
            c.call('Freeze', '/b', 0, 0)
            ft.check_equal(sc.read_events('/b').get('frozen'), 1, 'Freeze of untracked /b works')
            ft.check_equal(sorted(p for p, _o, _s in c.call('ListGroups')[0]), ['/', '/a', '/a/x', '/b', '/b/y'],
                           '... and tracks the subtree of /b')
            ft.check_equal(sorted(o for o, _i in rec.interfaces_added()),
                           sorted([ft.group_object('/b'), ft.group_object('/b/y')]), 'InterfacesAdded for /b, /b/y')
            c.call('Untrack', '/b')
            ft.check_equal(sorted(p for p, _o, _s in c.call('ListGroups')[0]), ['/', '/a', '/a/x'], 'Untrack(/b)')
            ft.check_equal(sorted(o for o, _i in rec.interfaces_removed()),
                           sorted([ft.group_object('/b'), ft.group_object('/b/y')]), 'InterfacesRemoved for /b, /b/y')
            ft.check_equal((sc.read_freeze('/b'), sc.frozen('/b')), (1, True), 'Untrack leaves /b frozen')
            c.call('Thaw', '/b', 0, 0)
            ft.check_equal(sc.read_events('/b').get('frozen'), 0, 'Thaw of the untracked /b works')

        # ---- cgroup_root from the file (no --cgroup-root): a SIGHUP warns only when it changed.
        # freezerd compared with a root it never kept: the same file warned at every SIGHUP,
        # and one whose cgroup_root was taken out never did.
        restart = 'A new cgroup_root takes effect only on restart.'
        with ft.Daemon(bus, None, config={'cgroup_root': sc.root}) as d:
            ft.check_equal(d.client.manager_property('CgroupRoot'), sc.root, 'cgroup_root from the file')
            d.reload()
            ft.check(restart not in d.log(), 'SIGHUP, cgroup_root unchanged: no warning', d.log())
            write(d.config_path, '{}\n')
            d.reload()
            ft.check(restart in d.log(), 'SIGHUP, cgroup_root taken out: it takes effect only on restart', d.log())
            ft.check_equal(d.client.manager_property('CgroupRoot'), sc.root, '... and the root stays')

        # ---- SIGHUP from "track": ["/a"] to ["/a/x"] and back: /a/x, covered by both, stays
        # published through both changes (it was removed with /a, and published again).
        sc.mkdir('/a/z')
        with ft.Daemon(bus, sc.root, config={'track': ['/a']}) as d:
            c = d.client
            rec = c.record()
            write(d.config_path, '{"track": ["/a/x"]}\n')
            d.reload()
            ft.check_equal(sorted(p for p, _o, _s in c.call('ListGroups')[0]), ['/', '/a/x'],
                           'SIGHUP, track ["/a"] to ["/a/x"]: /a/x is tracked')
            ft.check_equal(sorted(o for o, _i in rec.interfaces_removed()),
                           sorted([ft.group_object('/a'), ft.group_object('/a/z')]),
                           '  ... InterfacesRemoved for /a and /a/z, not /a/x')
            ft.check_equal(rec.interfaces_added(), [], '  ... and no InterfacesAdded')
            rec.clear()
            write(d.config_path, '{"track": ["/a"]}\n')
            d.reload()
            ft.check_equal(sorted(p for p, _o, _s in c.call('ListGroups')[0]), ['/', '/a', '/a/x', '/a/z'],
                           'SIGHUP, track back to ["/a"]: /a\'s subtree is tracked')
            ft.check_equal(sorted(o for o, _i in rec.interfaces_added()),
                           sorted([ft.group_object('/a'), ft.group_object('/a/z')]),
                           '  ... InterfacesAdded for /a and /a/z, not /a/x')
            ft.check_equal(rec.interfaces_removed(), [], '  ... and no InterfacesRemoved')

        # ---- SIGHUP replacing 50 roots saves tracked.json once (it saved, with an fsync,
        # at each root added or dropped: seconds of a held loop for a few hundred)
        with ft.Daemon(bus, sc.root, config={'track': [f'/p{i}' for i in range(50)]}) as d:
            c = d.client
            c.call('Track', '/g')
            tracked = os.path.join(d.state_dir, 'tracked.json')
            with open(tracked) as f:
                ft.check_equal(json.load(f)['tracked'], ['/g'], 'Track("/g") is saved in tracked.json')
            ino = ft.Inotify()
            try:
                # IN_CREATE too: the kernel merges an event into the one queued
                # before it when they are alike (every rename, on its own).
                ino.add_watch(d.state_dir, IN_MOVED_TO | ft.Inotify.IN_CREATE)
                write(d.config_path, json.dumps({'track': [f'/q{i}' for i in range(50)] + ['/g']}) + '\n')
                d.reload()
                saves = [e for e in ino.read() if e[1] & IN_MOVED_TO and e[2] == 'tracked.json']
            finally:
                ino.close()
            ft.check_equal(len(saves), 1, 'SIGHUP replacing 50 roots saves tracked.json once')
            with open(tracked) as f:
                ft.check_equal(json.load(f)['tracked'], ['/g'],
                               '  ... still with /g, which the configuration names now (test-core-config-track)')

        # ---- a missing file: an error when named with --config=, the defaults at the default path
        with ft.Client(bus.address, destination='org.freedesktop.DBus') as busc:
            missing = os.path.join(tmpdir, 'does-not-exist.json')
            argv = ft.FREEZERD_WRAPPER + [ft.FREEZERD_BIN, f'--address={bus.address}', f'--cgroup-root={sc.root}',
                                          f'--config={missing}', f'--runtime-dir={tmpdir}', f'--state-dir={tmpdir}']
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=ft.DEFAULT_TIMEOUT, preexec_fn=ft._child_setup(pdeathsig=signal.SIGKILL))
            want = f'{missing}: failed to open: No such file or directory (given with --config='
            ft.check(r.returncode == 1 and want in r.stderr, 'a missing --config= file stops the start, naming it',
                     f'exit {r.returncode}: {r.stderr}')
            ft.check_equal(busc.call_method('/org/freedesktop/DBus', 'org.freedesktop.DBus', 'NameHasOwner', 's',
                                            (ft.BUS_NAME,))[0], False, '... and the bus name is not owned')
        rc, out, ready, default = run_default_config(bus, sc, tmpdir)
        ft.check(rc == 0 and ready == 2, 'freezerd --user without its default file starts, reloads and stops',
                 f'exit {rc}, {ready} READY=1: {out}')
        ft.check(f'; configuration: the defaults, no file at {default}.' in out,
                 '... its ready line says the defaults apply, naming the file', out)
        ft.check(f'Configuration reloaded: {default} does not exist, so the defaults apply' in out,
                 '... and so does its SIGHUP', out)

        # ---- bad files at start
        with ft.Client(bus.address, destination='org.freedesktop.DBus') as busc:
            for i, (text, line, words) in enumerate(BAD):
                rc, out, cfg, ready = start_bad(bus, sc, tmpdir, i, text)
                ft.check(rc != 0 and not ready, f'bad config {text!r}: freezerd refuses to start',
                         f'exit {rc}, READY={ready}: {out}')
                lines = [ln for ln in out.splitlines() if f'{cfg}:{line}' in ln]
                ft.check(lines and all(w in lines[0] for w in words),
                         f'  ... the message names {cfg.rsplit("/", 1)[1]}:{line} {" ".join(words)}', out)
                owned = busc.call_method('/org/freedesktop/DBus', 'org.freedesktop.DBus', 'NameHasOwner', 's',
                                         (ft.BUS_NAME,))[0]
                ft.check_equal(owned, False, '  ... and the bus name is not owned')
            # A FIFO: refused at once (freezerd waited in open() for a writer).
            rc, out, cfg, ready = start_bad(bus, sc, tmpdir, len(BAD), None)
            ft.check(rc != 0 and not ready and f'{cfg}: not a regular file (a FIFO)' in out,
                     'a FIFO as the configuration: freezerd refuses to start, naming it', f'exit {rc}: {out}')
    print('# checked: SIGHUP reload (new value signalled, bad file keeps the old one, empty file resets), missing '
          f'--config= file refused and missing default file = defaults, {len(BAD)} bad files refused at start with '
          'file:line, a FIFO at start and on SIGHUP')


ft.run(test)
