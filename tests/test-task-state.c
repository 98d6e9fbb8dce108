/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "task-state.h"
#include "test-util.h"

#define PARSE(s, t) task_state_parse_stat((s), strlen(s), (t))

static void test_parse(void) {
        TaskState t;

        CHECK_R(PARSE("1234 (cat) S 1 1234 1234 0 -1 4194560 ...\n", &t), 0);
        CHECK(t.tid == 1234 && t.state == 'S');
        CHECK_STR(t.comm, "cat");
        CHECK_STR(t.wchan, "");

        /* A name may hold spaces and parentheses (prctl(PR_SET_NAME)): it ends at the last ')'. */
        CHECK_R(PARSE("7 (a) b (c)) D 1 7\n", &t), 0);
        CHECK(t.tid == 7 && t.state == 'D');
        CHECK_STR(t.comm, "a) b (c)");
        CHECK_R(PARSE("8 () R 1\n", &t), 0);
        CHECK_STR(t.comm, "");
        CHECK(t.state == 'R');
        /* The state at the very end, without more fields. */
        CHECK_R(PARSE("9 (x) Z", &t), 0);
        CHECK(t.state == 'Z');

        CHECK_R(PARSE("", &t), -EINVAL);
        CHECK_R(PARSE("1234", &t), -EINVAL);
        CHECK_R(PARSE("1234 (cat", &t), -EINVAL);
        CHECK_R(PARSE("(cat) S", &t), -EINVAL);
        CHECK_R(PARSE("x (cat) S", &t), -EINVAL);
        CHECK_R(PARSE("0 (cat) S", &t), -EINVAL);
        CHECK_R(PARSE("-5 (cat) S", &t), -EINVAL);
        CHECK_R(PARSE("12  (cat) S", &t), -EINVAL);
        CHECK_R(PARSE("12 (cat)", &t), -EINVAL);
        CHECK_R(PARSE("12 (cat) ", &t), -EINVAL);
        CHECK_R(PARSE("12 (cat)S", &t), -EINVAL);
        CHECK_R(PARSE("12 (cat)  S", &t), -EINVAL);
        CHECK_R(PARSE("99999999999999999999 (cat) S", &t), -EINVAL);

        /* Fields 26 and 27 (startcode, endcode) both 1: the kernel hides the task's details from us. */
        static const char hidden[] = "42 (sleep) S 1 42 42 0 -1 4194304 93 0 0 0 0 0 0 0 20 0 1 0 5611 "
                                     "5652480 249 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0\n";
        CHECK_R(PARSE(hidden, &t), 0);
        CHECK(t.hidden && t.state == 'S');
        static const char visible[] = "42 (sleep) S 1 42 42 0 -1 4194304 93 0 0 0 0 0 0 0 20 0 1 0 5611 "
                                      "5652480 249 18446744073709551615 94289058250752 94289058268681 "
                                      "140736632294016 0 0 0 0 0 0 1 0 0 17 1 0 0\n";
        CHECK_R(PARSE(visible, &t), 0);
        CHECK(!t.hidden);
        /* A kernel thread (no mm: 0 0) and a line cut short are not hidden. */
        static const char kthread[] = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0 "
                                      "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 0\n";
        CHECK_R(PARSE(kthread, &t), 0);
        CHECK(!t.hidden);
        CHECK_R(PARSE("1234 (cat) S 1 1234 1234 0 -1 4194560 1 1", &t), 0);
        CHECK(!t.hidden);

        /* The parent (field 4) and the PF_* flags (field 9), shown to all: a forked child that
         * has not exec'd (PF_FORKNOEXEC, 0x40), and one that has. */
        CHECK_R(PARSE(hidden, &t), 0);
        CHECK(t.ppid == 1 && t.flags == 4194304 && !task_state_forked_not_execed(&t));
        CHECK_R(PARSE("77 (sh) S 76 77 77 0 -1 4194368 1 1\n", &t), 0);
        CHECK(t.ppid == 76 && t.flags == 4194368 && task_state_forked_not_execed(&t));
        /* The memory's size and resident pages (fields 23 and 24), shown to all too. */
        CHECK_R(PARSE(hidden, &t), 0);
        CHECK(t.vsize == 5652480 && t.rss == 249);
        /* A line cut short: 0. */
        CHECK_R(PARSE("9 (x) Z 5", &t), 0);
        CHECK(t.ppid == 5 && t.flags == 0 && t.vsize == 0 && t.rss == 0);
        CHECK_R(PARSE("9 (x) Z", &t), 0);
        CHECK(t.ppid == 0 && t.flags == 0);
        CHECK_R(PARSE("9 (x) Z 5 1 1 0 -1 64 1 1 1 1 1 1 1 1 20 0 1 0 5 4096", &t), 0);
        CHECK(t.flags == 64 && t.vsize == 4096 && t.rss == 0);

        /* A name D-Bus cannot carry as it is (not UTF-8: a character cut at 15 bytes, or
         * any bytes given to prctl(PR_SET_NAME)) is escaped byte by byte; a control
         * character is escaped, UTF-8 kept. */
        CHECK_R(PARSE("5 (a\xe6\x97\xa5\xe6\x9c) S 1", &t), 0);
        CHECK_STR(t.comm, "a\\xe6\\x97\\xa5\\xe6\\x9c");
        CHECK_R(PARSE("5 (a\tb\x7f) S 1", &t), 0);
        CHECK_STR(t.comm, "a\\x09b\\x7f");
        CHECK_R(PARSE("5 (\xe6\x97\xa5\xe6\x9c\xac) S 1", &t), 0);
        CHECK_STR(t.comm, "\xe6\x97\xa5\xe6\x9c\xac");
        /* A backslash doubled, as freezerd's messages show one: a literal
         * "\x0a" is not read as a newline. */
        CHECK_R(PARSE("5 (a\\x0ab) S 1", &t), 0);
        CHECK_STR(t.comm, "a\\\\x0ab");
        /* The kernel's longest name, every byte escaped: whole. */
        CHECK_R(PARSE("5 (\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff) S 1", &t), 0);
        CHECK(strlen(t.comm) == 15 * 4 && strncmp(t.comm, "\\xff\\xff", 8) == 0);

        /* Not NUL-terminated: only len bytes count. */
        CHECK_R(task_state_parse_stat("5 (ab) S 1", 6, &t), -EINVAL);
        CHECK_R(task_state_parse_stat("5 (ab) S 1", 8, &t), 0);
        CHECK(t.state == 'S');

        /* A longer name than TASK_COMM_RAW_MAX is cut, NUL-terminated; escaped, cut with "...". */
        char buf[256];
        snprintf(buf, sizeof buf, "3 (%0200d) S 1", 0);
        CHECK_R(PARSE(buf, &t), 0);
        CHECK(strlen(t.comm) == TASK_COMM_RAW_MAX - 1);
        memset(buf, 1, sizeof buf);
        memcpy(buf, "3 (", 3);
        snprintf(buf + 100, sizeof buf - 100, ") S 1");
        CHECK_R(PARSE(buf, &t), 0);
        CHECK(strlen(t.comm) < TASK_COMM_MAX && strcmp(t.comm + strlen(t.comm) - 3, "...") == 0);
}

static void test_frozen_and_describe(void) {
        TaskState t = { .tid = 1, .state = 'S' };
        char buf[128];

        strcpy(t.wchan, "get_signal");
        CHECK(task_state_frozen(&t));
        strcpy(t.wchan, "do_freezer_trap");
        CHECK(task_state_frozen(&t));
        strcpy(t.wchan, "do_nanosleep");
        CHECK(!task_state_frozen(&t));
        CHECK_STR(task_state_describe(&t, buf, sizeof buf), "asleep in do_nanosleep");
        t.state = 'D';
        strcpy(t.wchan, "fuse_get_req");
        CHECK(!task_state_frozen(&t));
        CHECK_STR(task_state_describe(&t, buf, sizeof buf), "in uninterruptible sleep in fuse_get_req");
        t.wchan[0] = 0;
        CHECK_STR(task_state_describe(&t, buf, sizeof buf), "in uninterruptible sleep");
        /* Hidden from us: say so, rather than leave the reader to wonder where. */
        t.hidden = true;
        CHECK_STR(task_state_describe(&t, buf, sizeof buf),
                  "in uninterruptible sleep (where, the kernel does not show freezerd)");
        t.state = 'S';
        CHECK_STR(task_state_describe(&t, buf, sizeof buf), "asleep (where, the kernel does not show freezerd)");
        t.state = 'R';
        CHECK_STR(task_state_describe(&t, buf, sizeof buf), "running");
        t.hidden = false;
        t.state = 'R';
        strcpy(t.wchan, "whatever");
        CHECK_STR(task_state_describe(&t, buf, sizeof buf), "running");
        t.state = 'T';
        t.wchan[0] = 0;
        CHECK_STR(task_state_describe(&t, buf, sizeof buf), "stopped");
        t.state = 'X';
        CHECK_STR(task_state_describe(&t, buf, sizeof buf), "in state X");
}

/* What the kernel counts as frozen: the trap, and tasks that cannot run and
 * entered the count on the way (stopped, traced, a vfork() parent). */
static void test_counted_frozen(void) {
        static const struct {
                char state;
                const char *wchan;
                bool counted;
        } cases[] = {
                { 'S', "do_freezer_trap", true },
                { 'S', "get_signal", true },
                { 'S', "do_nanosleep", false },
                { 'S', "", false },             /* still on its CPU: looked at again */
                { 'R', "", false },
                { 'R', "get_signal", false },   /* a wchan read after the state: the state wins */
                { 'T', "do_signal_stop", true },
                { 't', "ptrace_stop", true },
                { 'Z', "", true },
                { 'X', "", true },
                { 'D', "kernel_clone", true },  /* wait_for_vfork_done(), inlined */
                { 'D', "wait_for_vfork_done", true },
                { 'D', "fuse_get_req", false }, /* the classic "stuck freezing" */
                { 'D', "", false },
                { 'I', "", false },
        };

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                TaskState t = { .tid = 1, .state = cases[i].state };
                snprintf(t.wchan, sizeof t.wchan, "%s", cases[i].wchan);
                CHECK(task_state_counted_frozen(&t) == cases[i].counted);
        }
}

/* The real /proc: a child that renamed itself and sleeps; then stopped. */
static void test_live(void) {
        TaskState t;
        int fds[2];
        pid_t pid;
        char c;

        CHECK_R(task_state_read(getpid(), &t), 0);
        CHECK(t.tid == getpid() && t.state == 'R');

        if (pipe(fds) < 0) {
                CHECK(false);
                return;
        }
        pid = fork();
        if (pid == 0) {
                (void) prctl(PR_SET_NAME, "a (b) c");
                (void) !write(fds[1], "x", 1);
                pause();
                _exit(0);
        }
        CHECK(pid > 0);
        CHECK(read(fds[0], &c, 1) == 1);
        /* Asleep in pause() once it is off the run queue: no event says when. */
        for (int i = 0; i < 2000; i++) {
                if (task_state_read(pid, &t) == 0 && t.state == 'S' && t.wchan[0])
                        break;
                usleep(1000);
        }
        CHECK_R(task_state_read(pid, &t), 0);
        CHECK(t.tid == pid && t.state == 'S');
        CHECK_STR(t.comm, "a (b) c");
        /* Forked, not exec'd: what tells a vfork() child (manager.c, hidden_vfork_parent()). */
        CHECK(t.ppid == getpid() && task_state_forked_not_execed(&t));
        CHECK_R(task_state_read_stat(getpid(), &t), 0);
        CHECK(!task_state_forked_not_execed(&t)); /* exec'd by whoever started the test */
        {
                pid_t tgid = 0;
                CHECK_R(task_read_tgid(pid, &tgid), 0);
                CHECK(tgid == pid);
                CHECK_R(task_read_tgid(getpid(), &tgid), 0);
                CHECK(tgid == getpid());
        }
        CHECK_R(task_state_read(pid, &t), 0);
        CHECK(!task_state_frozen(&t));
        CHECK(!t.hidden && t.wchan[0]);

        /* Read as another uid, without CAP_SYS_PTRACE: hidden, no wchan. */
        if (geteuid() == 0) {
                pid_t reader = fork();
                if (reader == 0) {
                        TaskState h;
                        if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                                _exit(2);
                        _exit(task_state_read(pid, &h) == 0 && h.hidden && h.state == 'S' && !h.wchan[0] ? 0 : 1);
                }
                int status = 0;
                CHECK(reader > 0 && waitpid(reader, &status, 0) == reader);
                CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        kill(pid, SIGSTOP);
        (void) waitpid(pid, NULL, WUNTRACED);
        CHECK_R(task_state_read(pid, &t), 0);
        CHECK(t.state == 'T');
        CHECK(task_state_counted_frozen(&t));
        kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
        CHECK_R(task_state_read(pid, &t), -ENOENT);
        close(fds[0]);
        close(fds[1]);
}

/* A vfork() child and its parent, waiting for it in uninterruptible sleep: one memory,
 * the same size and resident pages in both stat files, which is how freezerd tells a
 * hidden vfork() parent (manager.c, hidden_vfork_parent()). */
static void test_vfork(void) {
        TaskState parent = { 0 }, child = { 0 };
        pid_t helper, vchild = 0;
        int fds[2];

        if (pipe(fds) < 0) {
                CHECK(false);
                return;
        }
        helper = fork();
        if (helper == 0) {
                pid_t v;

                close(fds[0]);
                v = vfork();
                if (v == 0) {
                        pid_t self = getpid(); /* system calls only: it runs in its parent's memory */
                        (void) !write(fds[1], &self, sizeof self);
                        for (;;)
                                pause();
                }
                _exit(v > 0 ? 0 : 1);
        }
        CHECK(helper > 0);
        close(fds[1]);
        CHECK(read(fds[0], &vchild, sizeof vchild) == (ssize_t) sizeof vchild && vchild > 0);
        close(fds[0]);
        /* Asleep once off the run queue: no event says when. */
        for (int i = 0; i < 2000; i++) {
                if (task_state_read_stat(vchild, &child) == 0 && child.state == 'S' &&
                    task_state_read_stat(helper, &parent) == 0 && parent.state == 'D')
                        break;
                usleep(1000);
        }
        CHECK(parent.state == 'D' && child.state == 'S');
        CHECK(child.ppid == helper && task_state_forked_not_execed(&child));
        CHECK(child.vsize != 0 && child.vsize == parent.vsize && child.rss == parent.rss);
        if (vchild > 0)
                kill(vchild, SIGKILL);
        if (helper > 0) {
                int status = 0;
                CHECK(waitpid(helper, &status, 0) == helper && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
}

int main(void) {
        test_parse();
        test_vfork();
        test_frozen_and_describe();
        test_counted_frozen();
        test_live();
        return test_summary("test-task-state");
}
