// SPDX-License-Identifier: GPL-2.0
/*
 * SIX lock uses that deadlock, for lockdep to report.
 *
 * Lockdep turns itself off after its first report, so each case is its own
 * load of the module (and its own boot), chosen with case=:
 *
 *   read_write  one task takes read, then intent, then write on one lock:
 *               write waits for the task's own read.  Must report
 *               "possible recursive locking detected".
 *   read_read   one task takes read twice on one lock: the second would
 *               queue behind a writer that waits for the first.  Must
 *               report "possible recursive locking detected".
 *   abba        read A then write B, later read B then write A: two tasks
 *               doing one each wait for each other's read.  Must report
 *               "possible circular locking dependency detected".
 *
 * Nothing here really blocks: the locks are uncontended except for the
 * self-deadlock, which should_sleep_fn aborts instead of sleeping forever.
 * The cases that must not report (intent then read, read and intent held
 * by one task) are in the six_lock KUnit suite.
 */
#include <linux/debug_locks.h>
#include <linux/errno.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/six.h>
#include <linux/string.h>

static char *lock_case = "";
module_param_named(case, lock_case, charp, 0444);
MODULE_PARM_DESC(case, "read_write, read_read or abba");

static struct six_lock lock_a, lock_b;

static int six_expect_give_up(struct six_lock *lock, void *p)
{
	return -EDEADLK;
}

static void six_expect_read_write(void)
{
	int ret;

	six_lock_read(&lock_a, NULL, NULL);
	six_lock_intent(&lock_a, NULL, NULL);
	/* Lockdep reports here, before the wait; the wait is then aborted */
	ret = six_lock_write(&lock_a, six_expect_give_up, NULL);
	pr_info("six_lockdep_expect: write under own read: %d\n", ret);
	if (!ret)
		six_unlock_write(&lock_a);
	six_unlock_intent(&lock_a);
	six_unlock_read(&lock_a);
}

static void six_expect_read_read(void)
{
	six_lock_read(&lock_a, NULL, NULL);
	/* Nobody waits for write here, so this gets in; lockdep reports */
	six_lock_read(&lock_a, NULL, NULL);
	six_unlock_read(&lock_a);
	six_unlock_read(&lock_a);
}

static void six_expect_read_then_write(struct six_lock *r, struct six_lock *w)
{
	six_lock_read(r, NULL, NULL);
	six_lock_intent(w, NULL, NULL);
	six_lock_write(w, NULL, NULL);
	six_unlock_write(w);
	six_unlock_intent(w);
	six_unlock_read(r);
}

static int __init six_lockdep_expect_init(void)
{
	/* Two call sites: two lockdep classes */
	six_lock_init(&lock_a, 0);
	six_lock_init(&lock_b, 0);

	if (!strcmp(lock_case, "read_write")) {
		six_expect_read_write();
	} else if (!strcmp(lock_case, "read_read")) {
		six_expect_read_read();
	} else if (!strcmp(lock_case, "abba")) {
		six_expect_read_then_write(&lock_a, &lock_b);
		six_expect_read_then_write(&lock_b, &lock_a);
	} else {
		pr_info("six_lockdep_expect: no case \"%s\"; use case=read_write, read_read or abba\n",
			lock_case);
	}
	pr_info("six_lockdep_expect: case \"%s\" done, lockdep %s\n", lock_case,
		debug_locks ? "still on (no report)" : "off (reported)");
	return 0;
}

static void __exit six_lockdep_expect_exit(void)
{
	six_lock_exit(&lock_a);
	six_lock_exit(&lock_b);
}

module_init(six_lockdep_expect_init);
module_exit(six_lockdep_expect_exit);
MODULE_DESCRIPTION("SIX lock deadlocks lockdep must report");
MODULE_LICENSE("GPL");
