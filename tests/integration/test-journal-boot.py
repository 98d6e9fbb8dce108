#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Batch journals of an earlier boot are not restored (a --runtime-dir that
survives a reboot).

A journal records the kernel's boot id (/proc/sys/kernel/random/boot_id).  Two
journals are left in the runtime directory before freezerd starts, each saying
that a batch froze a group (prev false, new true) and was interrupted:

  journal-5.json   another boot's id, naming /g (frozen now, by someone else)
  journal-6.json   this boot's id, naming /h (frozen now, as if by that batch)
  journal-7.json   no boot id (as written before boot ids were recorded), /k
  journal-8.json   this boot's id, naming /c, cut short in the middle (freezerd
                   killed inside the pwrite() of a journal longer than a page:
                   its batch wrote nothing; /c is frozen by someone else)
  journal-9.json   this boot's id, naming /v, in format version 2 (another
                   freezerd's, before a downgrade)
  journal-17.json  empty: a free slot
  journal-10.json  a directory, not a file
  journal-13.json  a FIFO (no writer: an open() that waits for one would hang)
  journal-11.json  NUL bytes (a disk's runtime directory after a power loss)
  journal-12.json  not JSON, where journal-12.json.broken is a directory that
                   holds a file (a damaged journal of an earlier start kept)
  journal-15.json  another boot's id, naming /g, cut short after its boot id
  journal-16.json  another boot's id, naming /g, NUL bytes after the first
                   bytes (the blocks a power loss left unwritten on a disk)
  journal-14.json  not JSON, immutable (chattr +i, where the file system has
                   it): it cannot be renamed out of the way
  journal-0.json   the same, at the name of the slot a batch takes first

freezerd must restore /h and /k (flag 0, thawed), leave /g, /c and /v frozen,
log that journal-5, journal-15 and journal-16 are from an earlier boot and
remove them (until session 34 journal-15 was logged as cut short in its
writing, and journal-16 as damaged, kept as *.broken), that journal-8 was cut short and
that journal-9 is of another format version, keep journal-9 as
journal-9.json.broken and remove the five others; log journal-10 and journal-13 as not a
regular file and journal-11 as damaged (each naming the file), keep them as
*.broken, keep journal-12 as journal-12.json.2.broken, next to the
journal-12.json.broken there (until session 34 it could not be renamed, and a
file there was replaced), and log that journal-14 and journal-0 cannot be renamed and are
left as they are (before session 33 the three said "Bad message", and "kept as"
for such a one, which stayed; journal-13 held up the start for good).  Then a batch
of its own writes a journal carrying this boot's id (checked from inside the
batch: FREEZERD_TEST_WRITE_DELAY_USEC holds its write long enough to read it), in
another file than journal-0.json, with a warning that says so (until session 35
every batch failed, "Cannot record the batch journal ...: Operation not
permitted", at every start until someone removed the file)."""

import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

OTHER_BOOT = '00000000-0000-4000-8000-000000000000'
LONG_USEC = 60 * 1000000


def journal(boot, path, batch):
    j = {'version': 1, 'id': batch, 'groups': [{'path': path, 'prev': False, 'new': True}]}
    if boot is not None:
        j['boot'] = boot
    return j


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with open('/proc/sys/kernel/random/boot_id') as f:
        boot = f.read().strip()
    ft.check(boot != OTHER_BOOT, 'this boot is not the made-up one')
    with ft.Scratch('journal-boot') as sc, ft.Bus() as bus:
        for g in ('/g', '/h', '/k', '/c', '/v'):
            sc.mkdir(g)
            sc.spawn_sleepers(g, 1)
            sc.write_freeze(g, 1)
            sc.wait_events(g, frozen=1)
        sc.mkdir('/b')
        runtime_dir = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}journal-boot-{os.getpid()}-')
        try:
            files = {'journal-5.json': journal(OTHER_BOOT, '/g', 5), 'journal-6.json': journal(boot, '/h', 6),
                     'journal-7.json': journal(None, '/k', 7)}
            for name, j in files.items():
                with open(os.path.join(runtime_dir, name), 'w') as f:
                    json.dump(j, f)
            whole = json.dumps(journal(boot, '/c', 8)) + '\n'
            with open(os.path.join(runtime_dir, 'journal-8.json'), 'w') as f:
                f.write(whole[:len(whole) // 2])
            open(os.path.join(runtime_dir, 'journal-17.json'), 'w').close()
            with open(os.path.join(runtime_dir, 'journal-9.json'), 'w') as f:
                json.dump(dict(journal(boot, '/v', 9), version=2), f)
            os.mkdir(os.path.join(runtime_dir, 'journal-10.json'))
            os.mkfifo(os.path.join(runtime_dir, 'journal-13.json'))
            with open(os.path.join(runtime_dir, 'journal-11.json'), 'wb') as f:
                f.write(b'\0' * 4096)
            with open(os.path.join(runtime_dir, 'journal-12.json'), 'w') as f:
                f.write('{"version":1,"groups":[{"path":}]}\n')
            os.mkdir(os.path.join(runtime_dir, 'journal-12.json.broken'))
            # As freezerd writes them: no spaces, "boot" in the first bytes.
            other = json.dumps({'version': 1, 'id': 15, 'boot': OTHER_BOOT,
                                'groups': [{'path': '/g' + '/x' * 100, 'prev': False, 'new': True}]},
                               separators=(',', ':')) + '\n'
            with open(os.path.join(runtime_dir, 'journal-15.json'), 'w') as f:
                f.write(other[:len(other) // 2])
            with open(os.path.join(runtime_dir, 'journal-16.json'), 'wb') as f:
                f.write(other.replace('15', '16', 1).encode()[:80] + b'\0' * 4096)
            open(os.path.join(runtime_dir, 'journal-12.json.broken', 'x'), 'w').close()
            j14 = os.path.join(runtime_dir, 'journal-14.json')
            with open(j14, 'w') as f:
                f.write('{"version":1,"groups":[{"path":}]}\n')
            immutable = ft.subprocess.run(['chattr', '+i', j14], stderr=ft.subprocess.DEVNULL).returncode == 0
            j0 = os.path.join(runtime_dir, 'journal-0.json')
            if immutable:
                shutil.copy(j14, j0)
                ft.subprocess.run(['chattr', '+i', j0], check=True)

            env = {'FREEZERD_TEST_WRITE_DELAY_USEC': '300000'}
            with ft.Daemon(bus, sc.root, runtime_dir=runtime_dir, env=env) as d:
                ft.check_equal(sc.read_freeze('/g'), 1, "another boot's journal: /g left frozen")
                ft.check(sc.frozen('/g'), '/g still frozen')
                ft.check_equal(sc.read_freeze('/h'), 0, "this boot's journal: /h restored")
                ft.check_equal(sc.read_freeze('/k'), 0, 'a journal without boot id: /k restored')
                sc.wait_events('/h', frozen=0)
                sc.wait_events('/k', frozen=0)
                log = d.log()
                ft.check('journal-5.json is from an earlier boot' in log and OTHER_BOOT in log,
                         'the earlier boot logged', log)
                ft.check(f'journal-15.json is from an earlier boot ({OTHER_BOOT}) and was cut short: removed' in log
                         and f'journal-16.json is from an earlier boot ({OTHER_BOOT}) and damaged' in log,
                         'the earlier boot of the journals cut short and damaged logged', log)
                ft.check('Recovered interrupted batch 6' in log and 'Recovered interrupted batch 7' in log,
                         'journals 6 and 7 recovered', log)
                ft.check_equal(sc.read_freeze('/c'), 1, 'a journal cut short: nothing restored, /c left frozen')
                ft.check('journal-8.json was cut short while it was written' in log and
                         'Recovered interrupted batch 8' not in log, 'the journal cut short logged, not recovered',
                         log)
                ft.check('journal-17.json' not in log, 'the empty slot removed quietly', log)
                ft.check('journal-9.json is in a format other than this freezerd' in log and
                         'written by another version of freezerd' in log and
                         'Recovered interrupted batch 9' not in log,
                         'the journal of another format version logged as such, not recovered', log)
                ft.check(f'Batch journal {runtime_dir}/journal-10.json is damaged (not a regular file): kept as '
                         'journal-10.json.broken' in log, 'the directory logged as not a regular file', log)
                ft.check(f'Batch journal {runtime_dir}/journal-11.json is damaged (not a journal' in log and
                         'kept as journal-11.json.broken' in log, 'the NUL bytes logged as damaged', log)
                ft.check(f'Batch journal {runtime_dir}/journal-12.json is damaged (not a journal' in log and
                         'kept as journal-12.json.2.broken' in log,
                         'the journal kept next to the one kept before', log)
                if immutable:
                    ft.check(f'Batch journal {runtime_dir}/journal-14.json is damaged (not a journal' in log and
                             'left as it is (cannot rename it to journal-14.json.broken: Operation not permitted)'
                             in log, 'the journal that cannot be renamed logged as left', log)
                    ft.check(f'Batch journal {runtime_dir}/journal-0.json is damaged (not a journal' in log and
                             'left as it is (cannot rename it to journal-0.json.broken: Operation not permitted)'
                             in log, "the one at the first slot's name logged as left", log)
                ft.check(f'Batch journal {runtime_dir}/journal-13.json is damaged (not a regular file): kept as '
                         'journal-13.json.broken' in log, 'the FIFO logged as not a regular file', log)
                ft.check('Bad message' not in log, 'no "Bad message"', log)
                ft.check(log.count('.broken') == 6 + immutable,
                         'journal-9, 10, 11, 12 and 13 kept as .broken, 14 and 0 not', log)
                ft.check_equal(sc.read_freeze('/v'), 1, 'another format version: nothing restored, /v left frozen')
                left = sorted(n for n in os.listdir(runtime_dir) if n.startswith('journal-'))
                ft.check_equal(left, (['journal-0.json'] if immutable else []) + ['journal-10.json.broken', 'journal-11.json.broken', 'journal-12.json.2.broken',
                                      'journal-12.json.broken', 'journal-13.json.broken']
                               + (['journal-14.json'] if immutable else ['journal-14.json.broken'])
                               + ['journal-9.json.broken'],
                               'every journal removed but those kept, and the one that could not be renamed')
                ft.check(os.path.exists(os.path.join(runtime_dir, 'journal-12.json.broken', 'x')),
                         'the one kept before is still there')

                # A batch of its own records this boot's id, in another file than the
                # journal-0.json left there.
                ft.loop().watch(runtime_dir, ft.Inotify.IN_MODIFY)
                call = d.client.call_async('ApplyBatch', [('/b', True)], 'auto', LONG_USEC, 1)
                written = ft.wait_for(lambda: next((j for j in (ft.read_journal(runtime_dir, n)
                                                                for n in ft.live_journals(runtime_dir)) if j), None),
                                      timeout=ft.DEFAULT_TIMEOUT, what='the batch journal')
                ft.check_equal(written.get('boot'), boot, "the journal carries this boot's id")
                call.result(timeout=3 * ft.DEFAULT_TIMEOUT)
                if immutable:
                    log = d.log()
                    ft.check(f'{runtime_dir}/journal-0.json is there already and cannot hold a batch journal (it '
                             'cannot be written): left as it is, batch journals go to other files' in log,
                             'the slot it cannot take logged', log)
                    ft.check_equal(open(j0).read(), open(j14).read(), 'journal-0.json left as it is')
                    ft.check(os.path.exists(os.path.join(runtime_dir, 'journal-1.json')), 'journal-1.json kept')
                sc.write_freeze('/g', 0)
                sc.write_freeze('/c', 0)
                sc.write_freeze('/v', 0)
        finally:
            for name in ('journal-14.json', 'journal-0.json'):
                if os.path.exists(os.path.join(runtime_dir, name)):
                    ft.subprocess.run(['chattr', '-i', os.path.join(runtime_dir, name)])
            shutil.rmtree(runtime_dir, ignore_errors=True)


if __name__ == '__main__':
    ft.run(test)
