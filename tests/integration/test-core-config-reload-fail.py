#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A SIGHUP whose new "track" roots cannot all be added (out of memory, made to
happen with FREEZERD_TEST_TRACK_ROOT_ENOMEM=C) keeps the configuration before,
whole; later SIGHUPs still converge.  C is /c (a group that exists), then
/none (one that does not, which waits to be made).

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
  SIGHUP with ["/a"]: /a again, /b dropped."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def write_config(d, config):
    with open(d.config_path, 'w') as f:
        json.dump(config, f)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('core-config-reload-fail') as sc, ft.Bus() as bus:
        for g in ('/a/x', '/b', '/c'):
            sc.mkdir(g)
        for failing in ('/c', '/none'):
            run(sc, bus, failing)
    print('# checked: a reload that fails keeps the configuration before whole, and later ones converge')


def run(sc, bus, failing):
    print(f'# adding {failing} fails', flush=True)
    with ft.Daemon(bus, sc.root, config={'track': ['/a'], 'default_timeout_usec': 5000000},
                   env={'FREEZERD_TEST_TRACK_ROOT_ENOMEM': failing}) as d:
        c = d.client
        ft.check_equal(ft.published_paths(c), ['/', '/a', '/a/x'], 'at the start: /a')

        rec = c.record()
        write_config(d, {'track': ['/b', failing], 'default_timeout_usec': 7000000})
        d.reload()
        ft.check_equal(ft.published_paths(c), ['/', '/a', '/a/x'],
                       f'a reload that cannot add {failing}: /a stays, /b is not tracked')
        ft.check_equal(c.manager_property('DefaultTimeoutUSec'), 5000000, '  ... the timeout before stays')
        ft.check_equal([o for o, _i in rec.interfaces_added()], [], '  ... no InterfacesAdded (of /b)')
        ft.check('Reloading failed, the configuration before stays in effect: Cannot allocate memory'
                 in d.log(), '  ... the log says so', d.log()[-2000:])

        write_config(d, {'track': ['/b']})
        d.reload()
        ft.check_equal(ft.published_paths(c), ['/', '/b'], 'the next reload, with ["/b"]: /b alone, /a dropped')
        ft.check_equal(c.manager_property('DefaultTimeoutUSec'), 10000000, '  ... the default timeout')

        write_config(d, {'track': ['/a']})
        d.reload()
        ft.check_equal(ft.published_paths(c), ['/', '/a', '/a/x'], 'and with ["/a"]: /a again, /b dropped')


ft.run(test)
