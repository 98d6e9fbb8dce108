#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Load (not timed): 64 concurrent clients making 500 calls each over 16
overlapping groups (issue 5, "Faults and load").

  /L/a  /L/a/a1  /L/a/a1/x  /L/a/a2  /L/b  /L/b/b1  /L/c  /L/c/c1  /L/c/c2
  /L/d  /L/e  /L/e/e1  /L/f  /L/g  /L/h  /L/h/h1          (a sleeper in each)

Each client is a thread with a D-Bus connection of its own (jeepney, blocking)
and a random generator of its own (seeded from the printed seed), making, one
after the other: Freeze / Thaw of one group (manager or group object), an
ApplyBatch of 2-5 requests (random order argument), a Thaw RECURSIVE of a
subtree, and property reads (Get FreezerState, GetAll, ListGroups, the
Manager's Groups).  Timeouts are 60 s, so no call should time out.

Checks:
  * every call gets a reply: success, or Cancelled (another call reversed it
    first), or FrozenByParent (a Thaw whose group an ancestor freezes); nothing
    else;
  * at the end, for every group, cgroup.freeze equals "the last request made for
    it": the last call, in freezerd's order, whose reply vouches for the group's
    own flag: a successful Freeze/Thaw/ApplyBatch/RECURSIVE Thaw naming it, or a
    Thaw that failed with FrozenByParent (its own flag was cleared all the same).
    freezerd's order is the serial of its replies (one connection, numbered as
    sent), and every write comes before the reply of the call that made it, so a
    later write to a group always belongs to a call with a later reply.  That
    holds for failures too: freezerd answers a call's failure before it handles
    the next call (before, it answered failures at the end of its loop turn, and
    a FrozenByParent Thaw could reply after a later call that wrote the same
    group).  One case stays open: a batch cancelled by another call's write is
    answered after that call, which may itself have replied at once and written
    another group of the batch, so a Cancelled batch vouches for nothing: a
    group for which one replied after the last vouching reply (with the other
    value) has two possible "last requests"; it is counted as undetermined, and
    only checked against freezerd's own report;
  * freezerd's Freeze and Frozen of every group equal the kernel's, and the
    kernel's frozen is what the flags imply;
  * freezerd's fd count is back to its level after a warm-up (64 clients x 10
    calls), and its RSS within 512 KiB of it (freezerd fixes glibc's trim
    threshold, so a burst's memory goes back)."""

import collections
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402
from jeepney import DBusAddress, MessageType, new_method_call  # noqa: E402
from jeepney.io.blocking import open_dbus_connection  # noqa: E402

GROUPS = ['/L/a', '/L/a/a1', '/L/a/a1/x', '/L/a/a2', '/L/b', '/L/b/b1', '/L/c', '/L/c/c1', '/L/c/c2',
          '/L/d', '/L/e', '/L/e/e1', '/L/f', '/L/g', '/L/h', '/L/h/h1']
SUBTREE_ROOTS = ['/L/a', '/L/a/a1', '/L/b', '/L/c', '/L/e', '/L/h']
CLIENTS = int(os.environ.get('FREEZERD_LOAD_CLIENTS', '64'))
CALLS = int(os.environ.get('FREEZERD_LOAD_CALLS', '500'))
WARMUP_CALLS = 10
TIMEOUT_USEC = 60 * 1000000
REPLY_TIMEOUT = 180.0  # seconds a client waits for one reply before calling it lost
RSS_SLACK_KIB = 512
ALLOWED = {'ok', ft.ERROR_CANCELLED, ft.ERROR_FROZEN_BY_PARENT}


Record = collections.namedtuple('Record', 'client method sets serial outcome message')
# sets: {group: flag} the call asks for (own flags); serial: freezerd's serial of the reply


def subtree(root):
    return [g for g in GROUPS if g == root or g.startswith(root + '/')]


def ancestors(g):
    parts = g.split('/')
    return ['/'.join(parts[:i]) for i in range(3, len(parts))]


class Worker(threading.Thread):
    def __init__(self, index, address, seed, n_calls):
        super().__init__(name=f'client-{index}', daemon=True)
        self.index = index
        self.address = address
        self.rng = random.Random(seed)
        self.n_calls = n_calls
        self.records = []
        self.problem = None

    def call(self, path, interface, member, signature, body):
        msg = new_method_call(DBusAddress(path, ft.BUS_NAME, interface), member, signature, body)
        reply = self.conn.send_and_get_reply(msg, timeout=REPLY_TIMEOUT)
        if reply.header.message_type == MessageType.error:
            return reply, reply.header.fields.get(ft.HeaderFields.error_name, '?'), \
                (reply.body[0] if reply.body else '')
        return reply, 'ok', ''

    def one(self):
        rng = self.rng
        r = rng.random()
        g = rng.choice(GROUPS)
        if r < 0.55:
            freeze = rng.random() < 0.5
            method = 'Freeze' if freeze else 'Thaw'
            if rng.random() < 0.5:
                reply, outcome, message = self.call(ft.MANAGER_PATH, ft.MANAGER_IFACE, method, 'stt',
                                                    (g, TIMEOUT_USEC, 0))
            else:
                reply, outcome, message = self.call(ft.group_object(g), ft.GROUP_IFACE, method, 'tt',
                                                    (TIMEOUT_USEC, 0))
            sets = {g: int(freeze)}
        elif r < 0.72:
            method = 'ApplyBatch'
            reqs = [(rng.choice(GROUPS), rng.random() < 0.5) for _ in range(rng.randint(2, 5))]
            order = rng.choice(['auto', '', 'top-down', 'bottom-up'])
            reply, outcome, message = self.call(ft.MANAGER_PATH, ft.MANAGER_IFACE, method, 'a(sb)stt',
                                                (reqs, order, TIMEOUT_USEC, 0))
            sets = {}
            for p, f in reqs:
                sets[p] = int(f)  # the last request of a path wins
        elif r < 0.77:
            method = 'Thaw RECURSIVE'
            root = rng.choice(SUBTREE_ROOTS)
            reply, outcome, message = self.call(ft.MANAGER_PATH, ft.MANAGER_IFACE, 'Thaw', 'stt',
                                                (root, TIMEOUT_USEC, ft.FLAG_RECURSIVE))
            sets = {x: 0 for x in subtree(root)}
        else:
            sets = {}
            k = rng.random()
            if k < 0.4:
                method = 'Get FreezerState'
                reply, outcome, message = self.call(ft.group_object(g), ft.PROPERTIES_IFACE, 'Get', 'ss',
                                                    (ft.GROUP_IFACE, 'FreezerState'))
            elif k < 0.7:
                method = 'GetAll'
                reply, outcome, message = self.call(ft.group_object(g), ft.PROPERTIES_IFACE, 'GetAll', 's',
                                                    (ft.GROUP_IFACE,))
            elif k < 0.9:
                method = 'ListGroups'
                reply, outcome, message = self.call(ft.MANAGER_PATH, ft.MANAGER_IFACE, 'ListGroups', None, ())
            else:
                method = 'Get Groups'
                reply, outcome, message = self.call(ft.MANAGER_PATH, ft.PROPERTIES_IFACE, 'Get', 'ss',
                                                    (ft.MANAGER_IFACE, 'Groups'))
        self.records.append(Record(self.index, method, sets, reply.header.serial, outcome, message))

    def run(self):
        try:
            self.conn = open_dbus_connection(self.address, auth_timeout=ft.DEFAULT_TIMEOUT)
            try:
                for _ in range(self.n_calls):
                    self.one()
            finally:
                self.conn.close()
        except TimeoutError:
            self.problem = f'no reply within {REPLY_TIMEOUT} s (after {len(self.records)} calls)'
        except BaseException as e:  # reported by the main thread
            self.problem = f'{type(e).__name__}: {e} (after {len(self.records)} calls)'


def run_clients(address, seed, n_clients, n_calls):
    workers = [Worker(i, address, seed * 1000 + i, n_calls) for i in range(n_clients)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(REPLY_TIMEOUT * 2 + n_calls)
    return workers


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    seed = os.environ.get('FREEZERD_TEST_SEED')
    seed = int(seed) if seed else random.SystemRandom().randrange(1 << 31)
    print(f'# seed {seed} (FREEZERD_TEST_SEED={seed} repeats the calls, not their interleaving)', flush=True)
    fig = ft.Figures('test-load-clients')
    with ft.Scratch('load-clients') as sc, ft.Bus() as bus:
        for g in GROUPS:
            sc.spawn_sleepers(g, 1)
        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            start = (ft.fd_count(d.pid), ft.rss_kib(d.pid))

            # Warm-up, then the levels to come back to.  freezerd keeps some files open
            # once used, one set per group (a group's cgroup.freeze once written, its
            # pressure files once read, up to a bound): every group gets every kind of
            # call once, then the clients run a few calls each.
            for g in GROUPS:
                c.get_all(ft.group_object(g), ft.GROUP_IFACE)
                c.call('Freeze', g, TIMEOUT_USEC, 0)
                c.call('Thaw', g, TIMEOUT_USEC, 0)
            c.get_all(ft.MANAGER_PATH, ft.MANAGER_IFACE)
            warm = run_clients(bus.address, seed + 1, CLIENTS, WARMUP_CALLS)
            bad = [w.problem for w in warm if w.problem or w.is_alive()]
            ft.check(not bad, f'warm-up: {CLIENTS} clients x {WARMUP_CALLS} calls, every call answered', bad[:5])
            c.call('Thaw', '/L', TIMEOUT_USEC, ft.FLAG_RECURSIVE)
            base = (ft.fd_count(d.pid), ft.rss_kib(d.pid))
            print(f'# freezerd at start: {start[0]} fds, RSS {start[1]} KiB; after the warm-up: {base[0]} fds, '
                  f'RSS {base[1]} KiB', flush=True)

            t0 = time.monotonic()
            workers = run_clients(bus.address, seed, CLIENTS, CALLS)
            took = time.monotonic() - t0
            stuck = [w.name for w in workers if w.is_alive()]
            ft.check(not stuck, f'all {CLIENTS} clients finished ({took:.1f} s)', stuck)
            problems = [f'{w.name}: {w.problem}' for w in workers if w.problem]
            ft.check(not problems, f'every one of the {CLIENTS * CALLS} calls got a reply', problems[:5])
            records = [r for w in workers for r in w.records]
            ft.check_equal(len(records), CLIENTS * CALLS, 'replies recorded')
            for r in records:
                fig.reply(r.method, None if r.outcome == 'ok' else r.outcome)
            unexpected = [r for r in records if r.outcome not in ALLOWED or
                          (r.outcome != 'ok' and not r.sets) or
                          (r.outcome == ft.ERROR_FROZEN_BY_PARENT and r.method != 'Thaw')]
            ft.check(not unexpected, 'every reply is a success, Cancelled, or FrozenByParent (of a Thaw)',
                     [(r.method, r.sets, r.outcome, r.message) for r in unexpected[:5]])
            serials = [r.serial for r in records]
            ft.check_equal(len(set(serials)), len(serials), 'freezerd numbered every reply differently')

            # ---- the last request of each group
            vouched = {}       # group -> (serial, flag)
            unsure = collections.defaultdict(list)  # group -> [(serial, flag)] of failed calls that wrote it
            for r in sorted(records, key=lambda r: r.serial):
                for g, f in r.sets.items():
                    if r.outcome == 'ok' or (r.outcome == ft.ERROR_FROZEN_BY_PARENT and r.method == 'Thaw'):
                        vouched[g] = (r.serial, f)
                    elif r.outcome == ft.ERROR_CANCELLED and r.method in ('ApplyBatch', 'Thaw RECURSIVE'):
                        unsure[g].append((r.serial, f))
            expected, undetermined = {}, {}
            for g in GROUPS:
                serial, flag = vouched.get(g, (0, 0))
                later = sorted({f for s, f in unsure[g] if s > serial and f != flag})
                expected[g] = flag
                if later:
                    undetermined[g] = (flag, later)

            # Every call is answered, so nothing is in flight: the kernel settles.
            def implied(flags, g):
                return int(any(flags[a] for a in [g] + ancestors(g) if a in flags))

            def kernel():
                flags = {g: sc.read_freeze(g) for g in GROUPS}
                return {g: (flags[g], sc.read_events(g)['frozen']) for g in GROUPS}, flags

            ft.wait_for(lambda: all(z == implied(kernel()[1], g) for g, (_f, z) in kernel()[0].items()),
                        what='the kernel\'s frozen to be what the flags imply')
            now, flags = kernel()
            determined = [g for g in GROUPS if g not in undetermined]
            wrong = {g: (flags[g], expected[g]) for g in determined if flags[g] != expected[g]}
            ft.check(not wrong, f'cgroup.freeze of the {len(determined)} groups with a determined last request '
                                'equals it', f'(kernel, last request): {wrong}')
            fig.checked['cgroup.freeze == last request'] += len(determined)
            for g, (flag, later) in undetermined.items():
                print(f'#   {g}: last vouched request {flag}, a later Cancelled batch asked {later}: kernel has '
                      f'{flags[g]}', flush=True)
            fig.checked['cgroup.freeze undetermined (a Cancelled batch came later)'] += len(undetermined)

            def daemon_view():
                objs = c.managed_objects()
                return {g: (int(objs[ft.group_object(g)][ft.GROUP_IFACE]['Freeze']),
                            int(objs[ft.group_object(g)][ft.GROUP_IFACE]['Frozen'])) for g in GROUPS}

            rec = c.record()
            deadline = time.monotonic() + ft.DEFAULT_TIMEOUT
            while True:
                n = len(c.signals)
                got = daemon_view()
                if got == now or time.monotonic() >= deadline:
                    break
                if len(c.signals) == n:
                    ft.loop().run_once(deadline - time.monotonic())
            ft.check_equal(got, now, 'freezerd reports every group\'s Freeze and Frozen as the kernel has them')
            fig.checked['daemon view == kernel'] += len(GROUPS)
            del rec

            # ---- resources
            end = (ft.fd_count(d.pid), ft.rss_kib(d.pid))
            print(f'# freezerd after the load: {end[0]} fds, RSS {end[1]} KiB', flush=True)
            ft.check_equal(end[0], base[0], f'freezerd\'s fd count is back to {base[0]}')
            if ft.under_asan(d.pid):
                # ASan's quarantine keeps freed memory resident by design: RSS says
                # nothing about leaks there (LeakSanitizer checks those at exit).
                print(f'# RSS not compared under AddressSanitizer: {base[1]} -> {end[1]} KiB', flush=True)
            else:
                ft.check(end[1] <= base[1] + RSS_SLACK_KIB, f'freezerd\'s RSS {end[1]} KiB is within '
                                                            f'{RSS_SLACK_KIB} KiB of {base[1]} KiB')
            c.call('Thaw', '/L', TIMEOUT_USEC, ft.FLAG_RECURSIVE)

    per_group = collections.Counter()
    for r in records:
        for g in r.sets:
            per_group[g] += 1
    fig.lines += [f'seed:            {seed}',
                  f'clients:         {CLIENTS} x {CALLS} calls in {took:.1f} s ({CLIENTS * CALLS / took:.0f} calls/s), '
                  f'plus a warm-up of {CLIENTS} x {WARMUP_CALLS}',
                  f'requests/group:  min {min(per_group.values())}, max {max(per_group.values())}',
                  f'undetermined:    {len(undetermined)} of {len(GROUPS)} groups',
                  f'fds:             {start[0]} at start, {base[0]} after the warm-up, {end[0]} at the end',
                  f'RSS (KiB):       {start[1]} at start, {base[1]} after the warm-up, {end[1]} at the end']
    fig.print()


ft.run(test)
