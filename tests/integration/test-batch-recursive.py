#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""ApplyBatch with RECURSIVE: each request applies to the tracked groups of its
subtree, later requests winning, and overlapping requests cost one visit per
group.

  /r/a/a1 (a sleeper), /r/a/a2, /r/b/b1      the small tree
  /big/g0 .. /big/g999                       1,000 empty groups

Checks:
  * [(/r, freeze), (/r/a, thaw)]: /r, /r/b, /r/b/b1 get flag 1, /r/a and below
    keep 0 (the later request wins below /r/a): 3 writes, 3 skipped; the
    kernel freezes all of /r all the same (/r's flag covers its subtree);
  * [(/r/a, thaw), (/r, freeze)]: every group of /r gets 1 (the later request
    covers all): 3 more writes, 3 skipped;
  * 65,536 requests of (/big, freeze), the most a batch holds: one write per
    group (1,001), within the call's timeout, and freezerd's RSS grows by
    less than 16 MiB (not under AddressSanitizer, whose quarantine keeps freed
    memory).  Each request
    used to be copied out to its whole subtree before the duplicates went:
    65 million items, about 1.5 GB, from a 2 MB message any caller may send."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

R = ['/r', '/r/a', '/r/a/a1', '/r/a/a2', '/r/b', '/r/b/b1']
BIG = 1000
MAX_REQUESTS = 65536
RSS_GROWTH_MAX_KIB = 16 * 1024


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('batch-recursive') as sc, ft.Bus() as bus:
        for g in ('/r/a/a1', '/r/a/a2', '/r/b/b1'):
            sc.mkdir(g)
        sc.spawn_sleepers('/r/a/a1', 1)
        big = sc.abspath('/big')
        os.mkdir(big)
        for i in range(BIG):
            os.mkdir(os.path.join(big, f'g{i}'))

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            t = 30 * 1000000

            writes, skipped = c.call('ApplyBatch', [('/r', True), ('/r/a', False)], 'auto', t, ft.FLAG_RECURSIVE)
            flags = {g: sc.read_freeze(g) for g in R}
            ft.check_equal(flags, {'/r': 1, '/r/a': 0, '/r/a/a1': 0, '/r/a/a2': 0, '/r/b': 1, '/r/b/b1': 1},
                           '[(/r, freeze), (/r/a, thaw)] RECURSIVE: the later request wins below /r/a')
            ft.check_equal((writes, skipped), (3, 3), '3 writes, 3 skipped')
            ft.check_equal((sc.read_events('/r/b/b1')['frozen'], sc.read_events('/r/a/a1')['frozen']), (1, 1),
                           'the kernel: /r freezes everything below it, own flags or not')

            writes, skipped = c.call('ApplyBatch', [('/r/a', False), ('/r', True)], 'auto', t, ft.FLAG_RECURSIVE)
            ft.check_equal({g: sc.read_freeze(g) for g in R}, {g: 1 for g in R},
                           '[(/r/a, thaw), (/r, freeze)] RECURSIVE: every group of /r gets 1')
            ft.check_equal((writes, skipped), (3, 3), '3 writes, 3 skipped')
            c.call('Thaw', '/r', t, ft.FLAG_RECURSIVE)
            ft.check_equal({g: sc.read_freeze(g) for g in R}, {g: 0 for g in R}, 'Thaw RECURSIVE of /r clears them')
            sc.wait_tasks_frozen('/r/a/a1', frozen=False)

            before = ft.rss_kib(d.pid)
            p = c.call_async('ApplyBatch', [('/big', True)] * MAX_REQUESTS, 'auto', t, ft.FLAG_RECURSIVE)
            p.what = f'ApplyBatch of {MAX_REQUESTS} requests of /big, RECURSIVE'  # not the whole body
            writes, skipped = p.result()
            after = ft.rss_kib(d.pid)
            ft.check_equal((writes, skipped), (BIG + 1, 0), f'{MAX_REQUESTS} requests of /big RECURSIVE: one write '
                                                            f'per group ({BIG + 1})')
            if ft.under_asan(d.pid):
                print(f'# RSS not compared under AddressSanitizer: {before} -> {after} KiB', flush=True)
            else:
                ft.check(after - before < RSS_GROWTH_MAX_KIB, f'freezerd\'s RSS grew by less than '
                         f'{RSS_GROWTH_MAX_KIB} KiB ({before} -> {after} KiB)')
            ft.check_equal(sc.read_events('/big')['frozen'], 1, '/big is frozen')
            c.call('Thaw', '/big', t, ft.FLAG_RECURSIVE)
            ft.check_equal(sc.read_freeze('/big/g999'), 0, 'Thaw RECURSIVE of /big')


if __name__ == '__main__':
    ft.run(test)
