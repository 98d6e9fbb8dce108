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
        /* A line cut short: 0. */
        CHECK_R(PARSE("9 (x) Z 5", &t), 0);
        CHECK(t.ppid == 5 && t.flags == 0);
        CHECK_R(PARSE("9 (x) Z", &t), 0);
        CHECK(t.ppid == 0 && t.flags == 0);

        /* Not NUL-terminated: only len bytes count. */
        CHECK_R(task_state_parse_stat("5 (ab) S 1", 6, &t), -EINVAL);
        CHECK_R(task_state_parse_stat("5 (ab) S 1", 8, &t), 0);
        CHECK(t.state == 'S');

        /* A longer name than TASK_COMM_MAX is cut, NUL-terminated. */
        char buf[256];
        snprintf(buf, sizeof buf, "3 (%0200d) S 1", 0);
        CHECK_R(PARSE(buf, &t), 0);
        CHECK(strlen(t.comm) == TASK_COMM_MAX - 1);
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

int main(void) {
        test_parse();
        test_frozen_and_describe();
        test_counted_frozen();
        test_live();
        return test_summary("test-task-state");
}
