#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A SIGHUP whose new "track" roots cannot all be added (out of memory, made to
happen with FREEZERD_TEST_TRACK_ROOT_ENOMEM=C) keeps the configuration before,
whole; later SIGHUPs still converge.  C is /c (a group that exists), then
/none (one that does not, which waits to be made), then /c/d/e with the
failure at /c/d, once /c is in the model (manager_ensure_path() fails
part-way).

  "track": ["/a"] at the start (/a with /a/x), default_timeout_usec 5 s.
  SIGHUP with ["/b", C], 7 s: adding C fails.  /a and /a/x stay published, /b
    is not (its InterfacesAdded never sent), nor /c, DefaultTimeoutUSec stays
    5 s, and the log says the configuration before stays in effect.  (/b was
    tracked, /a too, and the timeout was 7 s: half of each; /c was published
    with no root holding it.)
  SIGHUP with ["/b"]: /b alone.  (/a stayed tracked for good: each reload
    dropped the roots of the configuration it replaced, and the failed one
    had replaced ["/a"] by ["/b", "/c"] in memory, so no later reload named
    /a to drop.)
  SIGHUP with ["/a"]: /a again, /b dropped.
  With C /c/d/e, after the failed reload freezerd watches no file of /c: the
  group /c, added for the path, goes again.  (It stayed in the
  model, unpublished, with its files open and its directory watched, held by
  no root, until the stop.)
  So too for a call: GetGroup("/c/none/z") and Track("/c/none"), NoSuchGroup, leave
  /c unwatched (it stayed in the model until the stop), and so does a configured root
  that is a file, /c/cgroup.procs, skipped with a warning."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-config-reload-fail') as sc, ft.Bus() as bus:
        for g in ('/a/x', '/b', '/c/d/e'):
            sc.mkdir(g)
        for failing, root in (('/c', '/c'), ('/none', '/none'), ('/c/d', '/c/d/e')):
            run(sc, bus, failing, root)
        # A configured root that cannot be tracked for another reason than that it does not
        # exist (a file: no cgroup directory) is skipped with a warning, and leaves nothing
        # of its path in the model (/c stayed watched until the stop).
        with ft.Daemon(bus, sc.root, config={'track': ['/a', '/c/cgroup.procs']}) as d:
            ft.check_equal(ft.published_paths(d.client), ['/', '/a', '/a/x'], 'track ["/a", "/c/cgroup.procs"]: /a')
            ft.check('Cannot track /c/cgroup.procs' in d.log(), '  ... a warning names /c/cgroup.procs', d.log())
            ft.check(not watched(d, sc.abspath('/c')), '  ... /c is not watched (not in the model)')
    print('# checked: a reload that fails keeps the configuration before whole, and later ones converge')


def watched(d, path):
    """Whether freezerd's inotify instance watches path's inode (a group's
    directory, or its cgroup.freeze): what a group in its model holds."""
    pid = d.proc.pid
    inos = set()
    for fd in os.listdir(f'/proc/{pid}/fd'):
        try:
            if os.readlink(f'/proc/{pid}/fd/{fd}') != 'anon_inode:inotify':
                continue
            with open(f'/proc/{pid}/fdinfo/{fd}') as f:
                inos |= {int(m, 16) for m in re.findall(r'^inotify wd:\S+ ino:([0-9a-f]+)', f.read(), re.M)}
        except FileNotFoundError:
            continue  # closed meanwhile
    return any(os.stat(os.path.join(path, *f)).st_ino in inos for f in ((), ('cgroup.freeze',)))


def run(sc, bus, failing, root):
    print(f'# adding {root} fails at {failing}', flush=True)
    with ft.Daemon(bus, sc.root, config={'track': ['/a'], 'default_timeout_usec': 5000000},
                   env={'FREEZERD_TEST_TRACK_ROOT_ENOMEM': failing}) as d:
        c = d.client
        ft.check_equal(ft.published_paths(c), ['/', '/a', '/a/x'], 'at the start: /a')
        ft.check(watched(d, sc.abspath('/a')), '  ... its directory watched (as the check below sees it)')
        if failing == '/none':
            # A call's lookup that fails part-way (NoSuchGroup below /c, which exists) leaves
            # nothing of /c in the model either.
            for method, path in (('GetGroup', '/c/none/z'), ('Track', '/c/none')):
                ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, c.call, method, path)
                ft.check(not watched(d, sc.abspath('/c')), f'{method}({path}), NoSuchGroup: /c is not watched')

        rec = c.record()
        d.write_config({'track': ['/b', root], 'default_timeout_usec': 7000000})
        d.reload()
        ft.check_equal(ft.published_paths(c), ['/', '/a', '/a/x'],
                       f'a reload that cannot add {root}: /a stays, /b is not tracked')
        ft.check_equal(c.manager_property('DefaultTimeoutUSec'), 5000000, '  ... the timeout before stays')
        ft.check_equal([o for o, _i in rec.interfaces_added()], [], '  ... no InterfacesAdded (of /b)')
        ft.check('Reloading failed, the configuration before stays in effect: Cannot allocate memory'
                 in d.log(), '  ... the log says so', d.log()[-2000:])
        ft.check(not watched(d, sc.abspath('/c')), '  ... /c is not watched (not in the model)')

        d.write_config({'track': ['/b']})
        d.reload()
        ft.check_equal(ft.published_paths(c), ['/', '/b'], 'the next reload, with ["/b"]: /b alone, /a dropped')
        ft.check_equal(c.manager_property('DefaultTimeoutUSec'), 10000000, '  ... the default timeout')

        d.write_config({'track': ['/a']})
        d.reload()
        ft.check_equal(ft.published_paths(c), ['/', '/a', '/a/x'], 'and with ["/a"]: /a again, /b dropped')


ft.run(test)
