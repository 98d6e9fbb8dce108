#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Kernels 5.2 to 5.12 print no "full" line for cpu (PSI_CPU_FULL came with 5.13).

freezerd runs with FREEZERD_TEST_PRESSURE_NO_CPU_FULL: its cpu readings lack
their "full" line, as on such a kernel (the parser's side, a file of "some"
alone, is tests/test-psi.c's).  Checked, for the system and for a group /g:
  * CpuPressure reads: "some" as the kernel gives it, "full" with no figures
    (NaN averages, a total of 0), never zeros that read as "no stall"
    (until session 46 the reading failed as malformed; with the line dropped
    after the parse, the full member was zeros); MemoryPressure keeps its full
    figures;
  * freezectl pressure leaves the cpu "full" row out, and --json the cpu
    "full" object (NaN is no JSON), memory's stay;
  * a cpu "full" trigger fails with NotSupported naming 5.13, before it is
    armed (no trigger fd left open); a cpu "some" trigger works.
No sleeps: every wait is on D-Bus replies or /proc, with a deadline."""

import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

ERROR_NOT_SUPPORTED = 'org.freezerd.Freezer1.Error.NotSupported'
WINDOW = 2_000_000          # usec: a whole multiple of 2 s (freezerd lacks CAP_SYS_RESOURCE)
THRESHOLD = 100_000         # usec


def check_reading(what, cpu, memory):
    some, full = cpu
    ft.check(all(math.isfinite(v) for v in some[:3]), f'{what}: CpuPressure\'s some figures are numbers', cpu)
    ft.check(all(math.isnan(v) for v in full[:3]) and full[3] == 0,
             f'{what}: CpuPressure\'s full has no figures: NaN averages, total 0 (until session 46 the '
             'reading failed)', cpu)
    ft.check(all(math.isfinite(v) for line in memory for v in line[:3]),
             f'{what}: MemoryPressure keeps its full figures', memory)


def check_freezectl(path):
    args = ('pressure', path) if path else ('pressure',)
    rows = [line.split()[:2] for line in ft.freezectl(*args).stdout.splitlines()[1:]]
    ft.check(['cpu', 'some'] in rows and ['cpu', 'full'] not in rows and ['memory', 'full'] in rows,
             f'freezectl pressure {path or ""}: no cpu full row, the others there', rows)
    o = json.loads(ft.freezectl('--json', *args).stdout)
    ft.check(set(o['cpu']) == {'some'} and set(o['memory']) == {'some', 'full'},
             f'freezectl --json pressure {path or ""}: no cpu "full"', o)


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'psi')
    with ft.Scratch('pressure-no-cpu-full') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        sc.require_pressure('/g')
        with ft.Daemon(bus, sc.root, env={'FREEZERD_TEST_PRESSURE_NO_CPU_FULL': '1'}) as d:
            c = d.client
            check_reading('the system', c.manager_property('CpuPressure'), c.manager_property('MemoryPressure'))
            check_reading('/g', c.group_property('/g', 'CpuPressure'), c.group_property('/g', 'MemoryPressure'))
            check_freezectl(None)
            check_freezectl('/g')

            for what, add in (('system-wide', c.call), ('on /g', lambda *a: c.group_call('/g', *a))):
                e = ft.expect_dbus_error(ERROR_NOT_SUPPORTED, add, 'AddPressureTrigger', 'cpu', 'full', THRESHOLD,
                                         WINDOW)
                ft.check('"full"' in e.message and '5.13' in e.message,
                         f'a cpu full trigger {what}: NotSupported naming 5.13', e.message)
                ft.check_equal(ft.pressure_trigger_fd_count(d.pid), 0, '  ... no trigger fd left open')
                tid = add('AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
                add('RemovePressureTrigger', tid)
                ft.check(True, f'a cpu some trigger {what} works')
                # Its fd is closed a moment after the removal (the watcher thread's close).
                ft.wait_pressure_trigger_fds(d.pid, 0, 'the removed trigger\'s fd closed')


ft.run(test)
