// SPDX-License-Identifier: GPL-2.0
/*
 * An order of the pagecache add lock against another lock that can
 * deadlock, which lockdep must report although nothing waits here.  Each
 * case is its own load of the module (and its own boot), chosen with case=:
 *
 *   add_block_abba  a mutex held while waiting to add, then the mutex taken
 *                   while holding the block: a task in the first order
 *                   waits for the blocker, which waits for its mutex.  The
 *                   wait to add is told to lockdep as a write acquire of
 *                   the block side, and only that makes the cycle visible:
 *                   the lock is free here, so nothing waits for real.
 */
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/printk.h>
#include <linux/string.h>

static char *expect_case = "";
module_param_named(case, expect_case, charp, 0444);
MODULE_PARM_DESC(case, "the order to take (see the source)");

static DEFINE_MUTEX(outer);
static struct pagecache_lock lock;

static void add_block_abba(void)
{
	pagecache_lock_init(&lock);

	mutex_lock(&outer);
	pagecache_add_get(&lock);
	pagecache_add_put(&lock);
	mutex_unlock(&outer);

	pagecache_block_get(&lock);
	mutex_lock(&outer);
	mutex_unlock(&outer);
	pagecache_block_put(&lock);
}

static int __init pagecache_expect_init(void)
{
	if (!strcmp(expect_case, "add_block_abba")) {
		add_block_abba();
		pr_info("pagecache_expect: add_block_abba: returned\n");
		return 0;
	}
	pr_err("pagecache_expect: unknown case '%s'\n", expect_case);
	return -EINVAL;
}
module_init(pagecache_expect_init);

MODULE_DESCRIPTION("pagecache add lock orders lockdep must report");
MODULE_LICENSE("GPL");
