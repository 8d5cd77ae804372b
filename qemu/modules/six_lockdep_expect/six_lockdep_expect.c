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
 *   tree_unranked  two nodes of one class, without ranks: read on the
 *               parent then intent on the child, and intent then write on
 *               the child.  Legal in a tree, but lockdep cannot tell the
 *               nodes apart: must report "possible circular locking
 *               dependency detected" (six_lock_type_nested() is the cure;
 *               the KUnit case six_test_lockdep_nested shows it quiet).
 *   tree_abba   the same nodes with their ranks, but the child taken
 *               before the parent, after the parent before the child: a
 *               real ABBA between two tasks.  Must report "possible
 *               circular locking dependency detected".
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
MODULE_PARM_DESC(case, "read_write, read_read, abba, tree_unranked or tree_abba");

static struct six_lock lock_a, lock_b;
static struct six_lock parent, child;

/* Without should_sleep_fn these cannot fail; say so if they do */
static void six_expect_take(struct six_lock *lock, enum six_lock_type type)
{
	if (six_lock_type(lock, type, NULL, NULL))
		pr_err("six_lockdep_expect: taking type %d failed\n", type);
}

static int six_expect_give_up(struct six_lock *lock, void *p)
{
	return -EDEADLK;
}

static void six_expect_read_write(void)
{
	int ret;

	six_expect_take(&lock_a, SIX_LOCK_read);
	six_expect_take(&lock_a, SIX_LOCK_intent);
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
	six_expect_take(&lock_a, SIX_LOCK_read);
	/* Nobody waits for write here, so this gets in; lockdep reports */
	six_expect_take(&lock_a, SIX_LOCK_read);
	six_unlock_read(&lock_a);
	six_unlock_read(&lock_a);
}

static void six_expect_read_then_write(struct six_lock *r, struct six_lock *w)
{
	six_expect_take(r, SIX_LOCK_read);
	six_expect_take(w, SIX_LOCK_intent);
	six_expect_take(w, SIX_LOCK_write);
	six_unlock_write(w);
	six_unlock_intent(w);
	six_unlock_read(r);
}

/* One call site: one lockdep class for every node */
static void six_expect_node_init(struct six_lock *node)
{
	six_lock_init(node, 0);
}

static void six_expect_tree_unranked(void)
{
	six_expect_take(&parent, SIX_LOCK_read);
	six_expect_take(&child, SIX_LOCK_intent);
	six_unlock_intent(&child);
	six_unlock_read(&parent);

	six_expect_take(&child, SIX_LOCK_intent);
	six_expect_take(&child, SIX_LOCK_write);
	six_unlock_write(&child);
	six_unlock_intent(&child);
}

static void six_expect_take_nested(struct six_lock *lock,
				   enum six_lock_type type, unsigned int rank)
{
	if (six_lock_type_nested(lock, type, rank, NULL, NULL))
		pr_err("six_lockdep_expect: taking type %d failed\n", type);
}

static void six_expect_tree_abba(void)
{
	six_expect_take_nested(&parent, SIX_LOCK_intent, 1);
	six_expect_take_nested(&child, SIX_LOCK_intent, 0);
	six_unlock_intent(&child);
	six_unlock_intent(&parent);

	six_expect_take_nested(&child, SIX_LOCK_intent, 0);
	six_expect_take_nested(&parent, SIX_LOCK_intent, 1);
	six_unlock_intent(&parent);
	six_unlock_intent(&child);
}

static int __init six_lockdep_expect_init(void)
{
	/* Two call sites: two lockdep classes; the nodes share a third */
	six_lock_init(&lock_a, 0);
	six_lock_init(&lock_b, 0);
	six_expect_node_init(&parent);
	six_expect_node_init(&child);

	if (!strcmp(lock_case, "read_write")) {
		six_expect_read_write();
	} else if (!strcmp(lock_case, "read_read")) {
		six_expect_read_read();
	} else if (!strcmp(lock_case, "abba")) {
		six_expect_read_then_write(&lock_a, &lock_b);
		six_expect_read_then_write(&lock_b, &lock_a);
	} else if (!strcmp(lock_case, "tree_unranked")) {
		six_expect_tree_unranked();
	} else if (!strcmp(lock_case, "tree_abba")) {
		six_expect_tree_abba();
	} else {
		pr_info("six_lockdep_expect: no case \"%s\"; use case=read_write, read_read, abba, tree_unranked or tree_abba\n",
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
	six_lock_exit(&parent);
	six_lock_exit(&child);
}

module_init(six_lockdep_expect_init);
module_exit(six_lockdep_expect_exit);
MODULE_DESCRIPTION("SIX lock deadlocks lockdep must report");
MODULE_LICENSE("GPL");
