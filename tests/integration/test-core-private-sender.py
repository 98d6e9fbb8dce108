#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""On the private socket a message's sender field is not an identity: the peer
writes it, and no bus daemon vouches for it.  A private connection whose
messages name a bus client's unique name is its own connection, not that
client.  (Its uid is its own too: test-access.)

  /g   empty

Checked, with bus client A subscribed (Subscribe) and owning a pressure
trigger on /g, and private connection P naming A as the sender of its calls:
  * P's Unsubscribe fails with NotSubscribed (P has not subscribed), and A's
    own Unsubscribe then succeeds: A's subscription was not P's to end;
  * P's RemovePressureTrigger of A's trigger fails with InvalidArgs ("of this
    client"), and A removes it itself afterwards;
  * P's AddPressureTrigger (on a system with PSI) makes a trigger of P's: A
    cannot remove it, and A hears nothing when it ends with P's connection.
No sleeps: every wait is on D-Bus messages, with a deadline."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402
from jeepney import DBusAddress, HeaderFields, new_method_call  # noqa: E402

NOT_SUBSCRIBED = 'org.freezerd.Freezer1.Error.NotSubscribed'
WINDOW = 2_000_000          # usec: a whole multiple of 2 s (freezerd lacks CAP_SYS_RESOURCE)
THRESHOLD = 100_000         # usec


def spoofed_call(client, obj, iface, method, sender, *args):
    """iface.method(*args) on obj over the connection client, its message naming sender as its sender."""
    msg = new_method_call(DBusAddress(obj, ft.BUS_NAME, iface), method,
                          ft.METHOD_SIGNATURES[(iface, method)] or None, tuple(args))
    msg.header.fields[HeaderFields.sender] = sender
    serial = next(client.conn.outgoing_serial)
    client.conn.send(msg, serial=serial)
    return ft.PendingCall(client, serial, f'{method}{args!r} on {obj} as {sender}')


def removed(client, tid):
    return [s.body for s in client.signals if s.member == 'PressureTriggerRemoved' and s.body[0] == tid]


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('private-sender') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        psi = os.path.exists('/proc/pressure/cpu') and os.path.exists(sc.abspath('/g', 'cpu.pressure'))
        if not psi:
            print('# no pressure stall information here: the trigger checks are left out', flush=True)
        with ft.Daemon(bus, sc.root) as d:
            a = d.client
            a.add_match(type='signal', sender=ft.BUS_NAME)
            a.subscribe()
            if psi:
                tid = a.group_call('/g', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            private = os.path.join(d.runtime_dir, 'private')
            with ft.Client(f'unix:path={private}', direct=True) as p:
                e = ft.expect_dbus_error(NOT_SUBSCRIBED, spoofed_call(p, ft.MANAGER_PATH, ft.MANAGER_IFACE,
                                                                      'Unsubscribe', a.unique_name).result,
                                         ft.DEFAULT_TIMEOUT)
                ft.check('has not called Subscribe()' in e.message, 'P naming A: Unsubscribe says P has not '
                         'subscribed', e.message)
                if psi:
                    e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS,
                                             spoofed_call(p, ft.group_object('/g'), ft.GROUP_IFACE,
                                                          'RemovePressureTrigger', a.unique_name, tid).result,
                                             ft.DEFAULT_TIMEOUT)
                    ft.check('of this client' in e.message, 'P naming A cannot remove A\'s trigger', e.message)
                    own = spoofed_call(p, ft.group_object('/g'), ft.GROUP_IFACE, 'AddPressureTrigger', a.unique_name,
                                       'cpu', 'some', THRESHOLD, WINDOW).result(ft.DEFAULT_TIMEOUT)[0]
                    ft.check(own != tid, 'P naming A adds a trigger', own)
                    e = ft.expect_dbus_error(ft.ERROR_INVALID_ARGS, a.group_call, '/g', 'RemovePressureTrigger', own)
                    ft.check('of this client' in e.message, 'A cannot remove P\'s trigger', e.message)
            a.call_method(ft.MANAGER_PATH, ft.MANAGER_IFACE, 'Unsubscribe')
            ft.check(True, 'A\'s own Unsubscribe succeeds: its subscription was still there')
            if psi:
                a.group_call('/g', 'RemovePressureTrigger', tid)
                ft.check(True, 'A removes its own trigger')
                # A round trip after P closed: freezerd has seen it close, and ended P's trigger.
                a.call('ListGroups')
                ft.check_equal(removed(a, own) + removed(a, tid), [], 'A heard of neither trigger\'s end')


ft.run(test)
