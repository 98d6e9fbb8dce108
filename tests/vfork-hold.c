/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vfork-hold: a vfork() parent that waits for its child for as long as the
 * child lives, for the tests of freezerd's check of a group the kernel reports
 * frozen early (test-core-delegated).
 *
 * usage: vfork-hold
 *
 * The child of vfork() asks for SIGKILL when its parent dies and sleeps in
 * pause() without exec'ing, so the parent stays in uninterruptible sleep in
 * wait_for_vfork_done(), which the kernel's freezer counts as frozen (the
 * child, asleep, enters the freezer's trap).  A signal to the child ends both:
 * the parent exits 0 when the child is gone.  Only system calls run in the
 * child, which shares the parent's memory until it exits.
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
        pid_t pid = vfork();

        if (pid < 0)
                return 1;
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (;;)
                        pause();
        }
        (void) waitpid(pid, NULL, 0);
        return 0;
}
