// SPDX-License-Identifier: GPL-2.0
/*
 * closure_wait_event() used where it must not be, which the kernel's own
 * debug checks have to report.  Each case is its own load of the module (and
 * its own boot), chosen with case=:
 *
 *   atomic_true   closure_wait_event() with a condition that is already true,
 *                 with preemption disabled: it does not sleep then, but it
 *                 may, so CONFIG_DEBUG_ATOMIC_SLEEP must say so on the fast
 *                 path too, where a wrong caller would otherwise go unseen
 *                 until the day the condition is false
 */
#include <linux/closure.h>
#include <linux/errno.h>
#include <linux/module.h>
#include <linux/preempt.h>
#include <linux/printk.h>
#include <linux/string.h>

static char *expect_case = "";
module_param_named(case, expect_case, charp, 0444);
MODULE_PARM_DESC(case, "the misuse to commit (see the source)");

static struct closure_waitlist waitlist;

static int __init closure_expect_init(void)
{
	if (!strcmp(expect_case, "atomic_true")) {
		preempt_disable();
		closure_wait_event(&waitlist, true);
		preempt_enable();
		pr_info("closure_expect: atomic_true: returned\n");
		return 0;
	}
	pr_err("closure_expect: unknown case '%s'\n", expect_case);
	return -EINVAL;
}
module_init(closure_expect_init);

MODULE_DESCRIPTION("closure_wait_event() misuse the debug checks must report");
MODULE_LICENSE("GPL");
