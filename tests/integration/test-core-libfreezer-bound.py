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
  blocking call got its own reply.  The group callback reported each new group added, once (the
  groups listed again); then, the queue full again, the 30 removed: each reported removed, once.
  And on a bus that refuses SubscribeGroupStates (as an older
  freezerd lacks it), where the handle follows GroupsChanged: the states are read again after a
  dropped one."""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def bound_bin():
    path = (os.environ.get('LIBFREEZER_STRESS_BOUND_BIN')
            or os.path.join(ft.BUILDDIR, 'tests', 'libfreezer-stress-bound'))
    if not os.path.exists(path):
        ft.skip(f'{path} is not built')
    return path


# A bus that refuses SubscribeGroupStates, as a freezerd without it answers UnknownMethod: the
# handle follows GroupsChanged.
DENY_GROUP_STATES = '''        <policy context="default">
                <deny send_destination="org.freezerd.Freezer1" send_interface="org.freezerd.Freezer1.Manager"
                      send_member="SubscribeGroupStates"/>
        </policy>
</busconfig>'''


def run_bound(sc, bus, kind, what):
    with ft.Daemon(bus, sc.root) as d:
        address = bus.address if kind == 'bus' else f'{d.runtime_dir}/private'
        p = subprocess.run([bound_bin(), kind, address, sc.root, 'bound'], capture_output=True, text=True,
                           timeout=ft.DEFAULT_TIMEOUT * 6)
        out = p.stdout + p.stderr
        ft.check(p.returncode == 0 and 'ok bound' in p.stdout, f'{what}: bound', out.strip()[-3000:])
        for line in p.stdout.splitlines():
            if line.startswith('#'):
                print(f'# {what}:{line[1:]}', flush=True)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    bound_bin()
    with ft.Scratch('core-libfreezer-bound') as sc:
        with ft.Bus() as bus:
            for kind in ('bus', 'private'):
                run_bound(sc, bus, kind, kind)
        tmp = tempfile.mkdtemp(prefix=f'{ft.TMP_PREFIX}bound-conf-')
        try:
            path = os.path.join(tmp, 'deny-group-states.conf')
            with open(ft.DBUS_TEST_CONF) as f:
                conf = f.read()
            with open(path, 'w') as f:
                f.write(conf.replace('</busconfig>', DENY_GROUP_STATES))
            with ft.Bus(config=path) as bus:
                run_bound(sc, bus, 'bus', 'GroupsChanged')
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print('# checked: signals dropped past the bound (GroupStatesChanged, InterfacesAdded) made up for: the '
          'state callback (GroupStatesChanged, GroupsChanged) ends with the kernel\'s states of every group, new ones too; '
          'the group callback reports each group made or removed once; replies intact')


if __name__ == '__main__':
    ft.run(test)
