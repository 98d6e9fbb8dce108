#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezerd's log off the journal (StandardError=file:, a pipe): each line
says its level and when, so that an operator can tell a warning from the rest.

freezerd runs without $JOURNAL_STREAM, its stderr a file, with TZ=IST-5:30 (a
local time 5 h 30 min ahead of UTC).

Checks:
  * Every line is "TIME LEVEL: message", TIME an RFC 3339 local time with
    microseconds ("2026-12-06T21:03:04.123456+05:30"), LEVEL one of emerg,
    alert, crit, error, warning, notice, info, debug; no "<N>" prefix.  Before,
    a line was the message alone.
  * The offset is +05:30, the times are those of the run (within a second of
    the test's clock) and in order.
  * The ready line is info; a SIGHUP whose file takes cgroup_root out logs
    "A new cgroup_root takes effect only on restart." as a warning and
    "Configuration reloaded from FILE." as info; a SIGHUP of bad JSON logs
    "Not reloading: ..." as an error.
  * Daemon.warnings() finds the warning and the error in that format.
(The terminal's form, "LEVEL: message" without a time, and the journal's
"<N>" prefix are test-core-cli's.)"""

import datetime
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    t0 = time.time()
    with ft.Scratch('core-log-format') as sc, ft.Bus() as bus, \
            ft.Daemon(bus, None, config={'cgroup_root': sc.root}, env={'TZ': 'IST-5:30'}, journal=False) as d:
        with open(d.config_path, 'w') as f:
            f.write('{}\n')
        d.reload()
        with open(d.config_path, 'w') as f:
            f.write('{\n')
        d.reload()
        t1 = time.time()

        # Without a wrapper's lines (valgrind's "==PID== ...").
        lines = [x for x in d.log().splitlines() if not x.startswith('==')]
        parsed = [(x, ft.LOG_LINE_RE.fullmatch(x)) for x in lines]
        ft.check(lines and all(m and m.group('time') for _x, m in parsed),
                 'every line is "TIME LEVEL: message"', [x for x, m in parsed if not (m and m.group('time'))] or lines)
        ft.check(not any(x.startswith('<') for x in lines), 'no "<N>" priority prefix', lines)
        times = [datetime.datetime.fromisoformat(m.group('time')) for _x, m in parsed if m and m.group('time')]
        ft.check(all(t.utcoffset() == datetime.timedelta(hours=5, minutes=30) for t in times),
                 'the times are local (TZ=IST-5:30): offset +05:30', lines)
        ft.check(all(t0 - 1 <= t.timestamp() <= t1 + 1 for t in times) and times == sorted(times),
                 "the times are the run's, in order", (t0, t1, lines))

        def level_of(text):
            found = [m.group('level') for _x, m in parsed if m and text in m.group('message')]
            return found[0] if len(found) == 1 else found
        ft.check_equal(level_of(' ready: '), 'info', 'the ready line is info')
        ft.check_equal(level_of('A new cgroup_root takes effect only on restart.'), 'warning',
                       'the cgroup_root taken out on SIGHUP: a warning')
        ft.check_equal(level_of(f'Configuration reloaded from {d.config_path}.'), 'info',
                       '"Configuration reloaded from FILE." is info')
        ft.check_equal(level_of('Not reloading: '), 'error', 'a SIGHUP of bad JSON: an error')
        warnings = d.warnings()
        ft.check(len(warnings) == 2 and 'A new cgroup_root' in warnings[0] and 'Not reloading' in warnings[1],
                 'Daemon.warnings() finds the warning and the error', warnings)


if __name__ == '__main__':
    ft.run(test)
