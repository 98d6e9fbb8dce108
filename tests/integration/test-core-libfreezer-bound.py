#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""libfreezer's queue of messages at its bound: tests/libfreezer-stress.c built with a queue of 16
messages (libfreezer-stress-bound: DEFERRED_MAX, whose real value of 384K no test reaches), its
scenario "bound", on the bus, then on freezerd's private socket, against the real freezerd:

  40 calls' replies wait in the queue (undispatched), and past them every signal is dropped:
  30 groups made under /b (their InterfacesAdded dropped), then /b frozen, then thawed, by an
  asynchronous call each while blocking calls read the storm of GroupStatesChanged (dropped).
  Once dispatched, the state callback has said of each of the 130 children of /b (the new ones
  too) what the kernel has (cgroup.events "frozen"), each call's callback ran once, and every
  blocking call got its own reply."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def bound_bin():
    path = (os.environ.get('LIBFREEZER_STRESS_BOUND_BIN')
            or os.path.join(ft.BUILDDIR, 'tests', 'libfreezer-stress-bound'))
    if not os.path.exists(path):
        ft.skip(f'{path} is not built')
    return path


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    bound_bin()
    with ft.Scratch('core-libfreezer-bound') as sc, ft.Bus() as bus:
        for kind in ('bus', 'private'):
            with ft.Daemon(bus, sc.root) as d:
                address = bus.address if kind == 'bus' else f'{d.runtime_dir}/private'
                p = subprocess.run([bound_bin(), kind, address, sc.root, 'bound'], capture_output=True, text=True,
                                   timeout=ft.DEFAULT_TIMEOUT * 6)
                out = p.stdout + p.stderr
                ft.check(p.returncode == 0 and 'ok bound' in p.stdout, f'{kind}: bound', out.strip()[-3000:])
                for line in p.stdout.splitlines():
                    if line.startswith('#'):
                        print(f'# {kind}:{line[1:]}', flush=True)
    print('# checked: signals dropped past the bound (GroupStatesChanged, InterfacesAdded) made up for: the '
          'state callback ends with the kernel\'s states of every group, new ones too; replies intact')


if __name__ == '__main__':
    ft.run(test)
