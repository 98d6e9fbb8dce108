#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The groups of a batch journal that a start cannot restore are kept, and
the next start restores them.

The cgroup root a journal records is a read-only bind mount of the scratch
cgroup (as a container's /sys/fs/cgroup is): the kernel refuses every
cgroup.freeze write there (EROFS, root or not).  journal-0.json (a slot's name)
says that batch 7 froze /a (prev false) and thawed /h (prev true); both are
frozen now, so /h has its previous flag already and /a needs a write, which
fails.

The first start must log the failure, leave /a frozen and keep /a (and /a
alone: /h was restored) in journal-retry-7.json, under the root the journal
records, which a batch of its own must not write over.  Once the mount is
made writable, the next start must thaw /a and remove the file.  (Before
session 34 the first start removed the journal: /a stayed frozen for good.)

A flag set since the start is not written back at the next: freezerd runs
in a mount namespace of its own where the cgroup2 mount is read-only, and
cannot restore /c (prev false, frozen now), kept as above.  Someone else then thaws /c and freezes it
again (through the writable path), while freezerd runs: freezerd must drop /c
from the kept file (removed, as nothing is left in it), and the next start
must leave /c frozen, as its owner wants it now.  So too for /e, kept so, for
which an ApplyBatch asks the flag it has (frozen: nothing written), and for
/q/bad\\xff, a group freezerd does not follow for its name (thawed, its
journal's entry in hex: "raw"), for which a Thaw RECURSIVE of /q asks the
flag it has."""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LONG_USEC = 60 * 1000000


def mount(*args):
    ft.subprocess.run(['mount', *args], check=True)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with open('/proc/sys/kernel/random/boot_id') as f:
        boot = f.read().strip()
    with ft.Scratch('journal-retry') as sc, ft.Bus() as bus:
        for g in ('/a', '/h'):
            sc.mkdir(g)
            sc.spawn_sleepers(g, 1)
            sc.write_freeze(g, 1)
            sc.wait_events(g, frozen=1)
        sc.mkdir('/b')
        runtime_dir = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}journal-retry-{os.getpid()}-')
        # (Named as fuse-hang's, so that reap_stale() unmounts it after a SIGKILL.)
        mnt_dir = tempfile.mkdtemp(prefix=f'{ft.FUSE_TMP_PREFIX}{os.getpid()}-journal-retry-')
        ro = os.path.join(mnt_dir, 'mnt')
        os.mkdir(ro)
        mounted = False
        try:
            mount('--bind', sc.root, ro)
            mounted = True
            mount('-o', 'remount,bind,ro', ro)
            try:
                with open(os.path.join(ro, 'a', 'cgroup.freeze'), 'w') as f:
                    f.write('0')
                ft.check(False, 'a read-only mount refuses the write')
            except OSError as e:
                ft.check_equal(e.errno, ft.errno.EROFS, 'the write refused')
            j = ('{"version":1,"id":7,"boot":"%s","root":"%s","groups":[{"path":"/a","prev":false,"new":true},'
                 '{"path":"/h","prev":true,"new":false}]}\n' % (boot, ro))
            with open(os.path.join(runtime_dir, 'journal-0.json'), 'w') as f:
                f.write(j)
            retry = os.path.join(runtime_dir, 'journal-retry-7.json')

            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir) as d:
                log = d.log()
                ft.check('Cannot restore /a to freeze=0: Read-only file system' in log, 'the failure logged', log)
                ft.check('Recovered interrupted batch 7: 0 groups restored to their previous flags, 1 had it already '
                         '(not written before the stop), 0 gone, 1 failed.' in log, 'the summary', log)
                ft.check(f'The 1 group of batch 7 that could not be restored is kept in {retry}: the next start '
                         'tries again.' in log, 'where it is kept logged', log)
                ft.check_equal(sc.read_freeze('/a'), 1, '/a still frozen')
                kept = ft.read_journal(runtime_dir, 'journal-retry-7.json')
                ft.check_equal(kept and (kept['id'], kept['boot'], kept['root'], kept['groups']),
                               (7, boot, ro, [{'path': '/a', 'prev': False, 'new': True}]),
                               'the group that failed kept, alone, with the batch id, boot and root')
                ft.check_equal(ft.live_journals(runtime_dir), [], 'the slot free')
                # A batch of its own takes the slot: the kept file stays as it is.
                d.client.call('ApplyBatch', [('/b', True)], 'auto', LONG_USEC, ft.FLAG_ROLLBACK_ON_TIMEOUT)
                ft.check_equal(ft.read_journal(runtime_dir, 'journal-retry-7.json'), kept,
                               'the kept file untouched by a batch')
            ft.check(os.path.exists(retry), 'the kept file outlives a clean stop')

            # The cause mended: the next start restores /a.
            mount('-o', 'remount,bind,rw', ro)
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir) as d:
                log = d.log()
                ft.check('Recovered interrupted batch 7: 1 group restored to its previous flag, 0 had it already '
                         '(not written before the stop), 0 gone, 0 failed.' in log, 'the retry restores /a', log)
                ft.check_equal(sc.read_freeze('/a'), 0, '/a thawed')
                ft.check_equal(sc.read_freeze('/h'), 1, '/h still frozen')
                ft.check(not os.path.exists(retry), 'the kept file removed')
            sc.wait_events('/a', frozen=0)
            sc.write_freeze('/h', 0)
            sc.write_freeze('/b', 0)

            # ---- a flag set since the start
            sc.mkdir('/c')
            sc.spawn_sleepers('/c', 1)
            sc.write_freeze('/c', 1)
            sc.wait_events('/c', frozen=1)
            with open(os.path.join(runtime_dir, 'journal-0.json'), 'w') as f:
                f.write('{"version":1,"id":8,"boot":"%s","root":"%s","groups":[{"path":"/c","prev":false,"new":true}]}\n'
                        % (boot, sc.root))
            retry = os.path.join(runtime_dir, 'journal-retry-8.json')
            wrapper = ['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c',
                       'mount -o remount,bind,ro "$0" && exec "$@"', sc.mount]
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir, wrapper=wrapper) as d:
                ft.check(f'kept in {retry}' in d.log(), '/c kept', d.log())
                ft.check_equal(sc.read_freeze('/c'), 1, '/c still frozen')
                sc.write_freeze('/c', 0)
                ft.wait_for(lambda: 'The flag of /c was set or asked for since the start' in d.log(), timeout=3 * ft.DEFAULT_TIMEOUT,
                            what='freezerd to see /c thawed')
                sc.write_freeze('/c', 1)
                ft.check(f'does not write it back from {retry} (removed: nothing left in it)' in d.log(),
                         'the kept file removed', d.log())
                ft.check(not os.path.exists(retry), 'no kept file')
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir) as d:
                ft.check('batch 8' not in d.log(), 'nothing of batch 8 restored', d.log())
                ft.check_equal(sc.read_freeze('/c'), 1, '/c left frozen, as its owner set it')
            sc.write_freeze('/c', 0)

            # ---- a flag asked for as it is since the start
            sc.mkdir('/e')
            sc.spawn_sleepers('/e', 1)
            sc.write_freeze('/e', 1)
            sc.wait_events('/e', frozen=1)
            with open(os.path.join(runtime_dir, 'journal-0.json'), 'w') as f:
                f.write('{"version":1,"id":9,"boot":"%s","root":"%s","groups":[{"path":"/e","prev":false,"new":true}]}\n'
                        % (boot, sc.root))
            retry = os.path.join(runtime_dir, 'journal-retry-9.json')
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir, wrapper=wrapper) as d:
                ft.check(f'kept in {retry}' in d.log(), '/e kept', d.log())
                d.client.call('ApplyBatch', [('/e', True)], 'auto', LONG_USEC, 0)
                ft.check('The flag of /e was set or asked for since the start' in d.log() and not os.path.exists(retry),
                         '/e dropped from the kept file', d.log())
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir) as d:
                ft.check('batch 9' not in d.log(), 'nothing of batch 9 restored', d.log())
                ft.check_equal(sc.read_freeze('/e'), 1, '/e left frozen, as the batch asked')
            sc.write_freeze('/e', 0)

            # ---- the same for a group not followed for its name
            sc.mkdir('/q')
            odd = os.fsencode(sc.abspath('/q')) + b'/bad\xff'
            os.mkdir(odd)
            raw = b'/q/bad\xff'.hex()
            with open(os.path.join(runtime_dir, 'journal-0.json'), 'w') as f:
                f.write('{"version":1,"id":10,"boot":"%s","root":"%s","groups":[{"path":"/q/bad\\\\xff","raw":"%s",'
                        '"prev":true,"new":false}]}\n' % (boot, sc.root, raw))
            retry = os.path.join(runtime_dir, 'journal-retry-10.json')
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir, wrapper=wrapper) as d:
                ft.check(f'kept in {retry}' in d.log(), '/q/bad\\xff kept', d.log())
                d.client.call('Thaw', '/q', LONG_USEC, ft.FLAG_RECURSIVE)
                ft.check('The flag of /q/bad\\xff was set or asked for since the start' in d.log()
                         and not os.path.exists(retry), '/q/bad\\xff dropped from the kept file', d.log())
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir) as d:
                ft.check('batch 10' not in d.log(), 'nothing of batch 10 restored', d.log())
                with open(odd + b'/cgroup.freeze') as f:
                    ft.check_equal(f.read().strip(), '0', '/q/bad\\xff left thawed, as the Thaw asked')
            os.rmdir(odd)
        finally:
            if mounted:
                ft.umount2(ro)
            os.rmdir(ro)
            os.rmdir(mnt_dir)
            shutil.rmtree(runtime_dir, ignore_errors=True)


if __name__ == '__main__':
    ft.run(test)
