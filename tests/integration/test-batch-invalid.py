#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Bad batches: a clear error, and nothing written.

  /x/y, /x/z   a `sleep` each; the valid requests of every bad batch would change
               their flags
  /sentinel    written at the end, as a barrier
  /inner/m, /outer   for a second freezerd whose --cgroup-root is /inner

Each bad ApplyBatch (and FreezeExcept) must fail with the named error and a message
that says what is wrong, and must write nothing.  "Nothing" is checked strictly: an
inotify watch on the cgroup.freeze of every group sees any write(2), even one of
the value already there (vfs_write -> fsnotify_modify), and no PropertiesChanged
carrying Freeze may be sent.  At the end freezerd freezes /sentinel: its
cgroup.freeze event and its PropertiesChanged come after anything the bad calls
could have caused, so once they are in, the absence of the others is proven.

Cases: an empty batch (InvalidArgs); 100 000 requests (InvalidArgs naming the limit
65536; 65536 are accepted); paths with "..", ".", an empty component (InvalidPath);
a missing group among valid ones (NoSuchGroup naming it and its request index); the
root "/" (InvalidPath); order "sideways" (InvalidArgs); flag 16 (InvalidArgs); a path
naming a file, not a cgroup directory (/x/cgroup.procs, InvalidPath); and bad
FreezeExcept arguments.

A symlink and a non-cgroup directory cannot be made inside cgroupfs: kernfs refuses
symlink(2) and every mkdir(2) there creates a cgroup.  The test checks the first
(and would test freezerd on the symlink if the kernel allowed one); freezerd's
refusal of symlinks (cg_openat_beneath: RESOLVE_NO_SYMLINKS / O_NOFOLLOW, ELOOP ->
InvalidPath) and of non-cgroup directories is covered by the unit tests in
tests/test-cgroup-util.c, on a plain directory tree.  Instead a second freezerd
runs with --cgroup-root=/inner, and paths that would leave its root ("/../outer",
"../outer") are refused with InvalidPath while /outer and /inner/m stay untouched;
"/outer" itself is NoSuchGroup there."""

import errno
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

GROUPS = ['/x', '/x/y', '/x/z', '/sentinel', '/inner', '/inner/m', '/outer']
VALID = [('/x/y', True), ('/x/z', True)]


class FreezeWrites:
    """Every write(2) to the cgroup.freeze of the given groups, in order."""

    def __init__(self, sc, groups):
        self.ino = ft.Inotify()
        self.wds = {self.ino.add_watch(sc.abspath(g, 'cgroup.freeze'), ft.Inotify.IN_MODIFY): g for g in groups}
        self.seen = []

    def read(self):
        self.seen += [self.wds[wd] for wd, mask, _ in self.ino.read() if wd in self.wds and mask & ft.Inotify.IN_MODIFY]
        return self.seen

    def close(self):
        self.ino.close()


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    t = int(ft.DEFAULT_TIMEOUT * 1e6)
    with ft.Scratch('batch-invalid') as sc, ft.Bus() as bus:
        for g in GROUPS:
            sc.mkdir(g)
        for g in ('/x/y', '/x/z', '/inner/m', '/outer'):
            sc.spawn_sleepers(g, 1)

        # cgroupfs has no symlinks (see above); test one only if this kernel allowed it.
        link = sc.abspath('/x', 'link')
        try:
            os.symlink('y', link)
            made_link = True
        except OSError as e:
            made_link = False
            ft.check(e.errno in (errno.EPERM, errno.EOPNOTSUPP, errno.EINVAL),
                     f'cgroupfs refuses symlink(2) ({errno.errorcode.get(e.errno, e.errno)}): '
                     'the symlink case is unit-tested (tests/test-cgroup-util.c)')

        before = {g: sc.read_freeze(g) for g in GROUPS}
        writes = FreezeWrites(sc, GROUPS)
        cases = 0
        try:
            with ft.Daemon(bus, sc.root) as d:
                c = d.client
                rec = c.record()

                def bad(name, requests, order='auto', flags=0, contains=(), method='ApplyBatch', args=None):
                    nonlocal cases
                    cases += 1
                    if args is None:
                        args = (requests, order, t, flags)
                    e = ft.expect_dbus_error(name, c.call, method, *args)
                    print(f'#   {e.message}', flush=True)
                    for s in contains:
                        ft.check(re.search(s, e.message) is not None, f'  the message says {s!r}', e.message)
                    ft.check_equal(writes.read(), [], '  no cgroup.freeze was written')
                    return e

                bad(ft.ERROR_INVALID_ARGS, [], contains=['empty'])
                bad(ft.ERROR_INVALID_ARGS, [('/x/y', True)] * 100_000, contains=['65536'])
                bad(ft.ERROR_INVALID_ARGS, VALID * 32768 + [('/x/z', True)], contains=['65536'])
                # The limit itself is accepted (the last request for each group wins: nothing changes).
                n_w, _n_s = c.call('ApplyBatch', [('/x/y', True), ('/x/y', False)] * 32768, 'auto', t, 0)
                ft.check_equal(n_w, 0, '65536 requests are accepted (each group\'s last request is its current flag)')
                ft.check_equal(writes.read(), [], '  no cgroup.freeze was written')

                for p in ('/x/../x/z', '..', '/x/y/..', '../x/y', '/x/./y', '/x//y'):
                    bad(ft.ERROR_INVALID_PATH, VALID + [(p, True)], contains=[re.escape(p), r'\b2\b'])
                bad(ft.ERROR_INVALID_PATH, VALID + [('/x/../x/z', True)], flags=ft.FLAG_RECURSIVE,
                    contains=[re.escape('/x/../x/z')])
                bad(ft.ERROR_NO_SUCH_GROUP, VALID + [('/x/nope', True), ('/x/y', False)],
                    contains=['/x/nope', r'[Rr]equest 2\b'])
                bad(ft.ERROR_NO_SUCH_GROUP, [('/x/nope/deeper', True)] + VALID, contains=['/x/nope', r'[Rr]equest 0\b'])
                bad(ft.ERROR_INVALID_PATH, VALID + [('/', True)], contains=[r'\b2\b', 'root'])
                bad(ft.ERROR_INVALID_PATH, [('/', False)] + VALID, contains=[r'\b0\b', 'root'])
                bad(ft.ERROR_INVALID_PATH, VALID + [('/x/cgroup.procs', True)],
                    contains=['/x/cgroup.procs', 'not a cgroup'])
                if made_link:
                    bad(ft.ERROR_INVALID_PATH, VALID + [('/x/link', True)], contains=['/x/link', 'symlink'])
                bad(ft.ERROR_INVALID_ARGS, VALID, order='sideways', contains=['sideways'])
                bad(ft.ERROR_INVALID_ARGS, VALID, order='Auto', contains=['Auto'])
                bad(ft.ERROR_INVALID_ARGS, VALID, flags=16, contains=['0x10'])  # bit 3 is SKIP_MISSING
                bad(ft.ERROR_INVALID_ARGS, VALID, flags=1 << 63, contains=['0x8000000000000000'])

                # FreezeExcept: bad paths, exclusions outside the path, unknown flags.
                bad(ft.ERROR_INVALID_ARGS, None, method='FreezeExcept', args=('/x', ['/sentinel'], t, 0),
                    contains=['/sentinel', 'not below'])
                bad(ft.ERROR_INVALID_ARGS, None, method='FreezeExcept', args=('/x', ['/x'], t, 0),
                    contains=['not below'])
                bad(ft.ERROR_NO_SUCH_GROUP, None, method='FreezeExcept', args=('/x', ['/x/nope'], t, 0),
                    contains=['/x/nope'])
                bad(ft.ERROR_INVALID_PATH, None, method='FreezeExcept', args=('/x', ['/x/../sentinel'], t, 0),
                    contains=[re.escape('/x/../sentinel')])
                bad(ft.ERROR_NO_SUCH_GROUP, None, method='FreezeExcept', args=('/nope', ['/nope/a'], t, 0),
                    contains=['/nope'])
                bad(ft.ERROR_INVALID_ARGS, None, method='FreezeExcept', args=('/x', ['/x/y'], t, 8),
                    contains=['0x8'])

                # The barrier: a write freezerd does do.
                c.call('Freeze', '/sentinel', t, 0)
                ft.wait_for(lambda: '/sentinel' in writes.read(), what='the inotify event of /sentinel/cgroup.freeze')
                rec.wait_property(ft.group_object('/sentinel'), 'Freeze', True)
                ft.check_equal(writes.read(), ['/sentinel'], 'the only cgroup.freeze written was /sentinel\'s')
                changed = [o for o, _i, props, _inv in rec.properties_changed() if 'Freeze' in props]
                ft.check_equal(changed, [ft.group_object('/sentinel')],
                               'the only PropertiesChanged with Freeze was /sentinel\'s')
                after = {g: sc.read_freeze(g) for g in GROUPS}
                ft.check_equal(after, dict(before, **{'/sentinel': 1}), 'no other cgroup.freeze changed')
                c.call('Thaw', '/sentinel', t, 0)
                writes.read()
                writes.seen = []

            # A second freezerd, rooted at /inner: paths must not leave it.
            with ft.Daemon(bus, sc.abspath('/inner')) as d2:
                c = d2.client
                rec = c.record()
                ft.check_equal(c.manager_property('CgroupRoot'), sc.abspath('/inner'), 'second freezerd: root /inner')
                for p in ('/../outer', '../outer', '/m/../../outer', '..'):
                    bad(ft.ERROR_INVALID_PATH, [('/m', True), (p, True)], contains=[re.escape(p)])
                    bad(ft.ERROR_INVALID_PATH, None, method='Freeze', args=(p, t, 0), contains=[re.escape(p)])
                bad(ft.ERROR_INVALID_PATH, None, method='GetGroup', args=('/../outer',))
                bad(ft.ERROR_NO_SUCH_GROUP, [('/m', True), ('/outer', True)], contains=['/outer', r'\b1\b'])
                bad(ft.ERROR_INVALID_PATH, [('/m', True), ('/../', True)], flags=ft.FLAG_RECURSIVE)
                bad(ft.ERROR_INVALID_PATH, None, method='FreezeExcept', args=('/', ['/../outer'], t, 0))
                c.call('Freeze', '/m', t, 0)
                ft.wait_for(lambda: '/inner/m' in writes.read(), what='the inotify event of /inner/m/cgroup.freeze')
                rec.wait_property(ft.group_object('/m'), 'Freeze', True)
                ft.check_equal(writes.read(), ['/inner/m'], 'second freezerd: it wrote /inner/m only, never /outer')
                changed = [o for o, _i, props, _inv in rec.properties_changed() if 'Freeze' in props]
                ft.check_equal(changed, [ft.group_object('/m')], 'second freezerd: the only PropertiesChanged '
                                                                 'with Freeze was /m\'s')
                ft.check_equal(sc.read_freeze('/outer'), 0, '/outer/cgroup.freeze is still 0')
                ft.check_equal(sc.read_events('/outer')['frozen'], 0, '/outer runs')
                c.call('Thaw', '/m', t, 0)
        finally:
            writes.close()
        print(f'# summary: {cases} bad calls (ApplyBatch, FreezeExcept, Freeze, GetGroup) on two daemons, '
              f'each refused with nothing written to {len(GROUPS)} watched cgroup.freeze files', flush=True)


ft.run(test)
