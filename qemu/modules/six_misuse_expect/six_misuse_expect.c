// SPDX-License-Identifier: GPL-2.0
/*
 * SIX lock misuse that must be refused with a warning, leaving the lock as
 * it was.  Each case is its own load of the module (and its own boot), chosen
 * with case=; each ends by checking that the lock still works, and warns
 * "six_misuse_expect: ... lock broken" if it does not, which no expectation
 * accepts:
 *
 *   unlock_write_twice   write released twice by its holder
 *   unlock_intent_other  intent released by a task that does not hold it
 *   intent_before_write  intent released while write is still held
 *   exit_waited          six_lock_exit() on a percpu lock held and waited for
 *   increment_unheld     six_lock_increment(read) on a percpu lock by a task
 *                        that holds no read, while another holds write: must
 *                        sleep until write is released, not spin
 *   trylock_irq          six_trylock_read() from a hard interrupt
 */
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/errno.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/six.h>
#include <linux/string.h>

static char *misuse_case = "";
module_param_named(case, misuse_case, charp, 0444);
MODULE_PARM_DESC(case, "the misuse to commit (see the source)");

static struct six_lock lock;

static void check_works(const char *what)
{
	struct six_lock_count c;
	bool ok = false;

	if (six_trylock_read(&lock)) {
		if (six_trylock_intent(&lock)) {
			six_unlock_read(&lock);
			if (six_trylock_write(&lock)) {
				six_unlock_write(&lock);
				ok = true;
			}
			six_unlock_intent(&lock);
		} else {
			six_unlock_read(&lock);
		}
	}
	c = six_lock_counts(&lock);
	ok &= !c.n[SIX_LOCK_read] && !c.n[SIX_LOCK_intent] &&
		!c.n[SIX_LOCK_write];
	WARN(!ok, "six_misuse_expect: %s: lock broken\n", what);
	pr_info("six_misuse_expect: %s: lock %s\n", what, ok ? "works" : "broken");
}

/*
 * Another task: it runs @take, then waits to be told to run @release, so
 * that it holds what it took while we misuse it (a task must not exit
 * holding a lock).
 */
struct other {
	struct completion taken, go, done;
	void (*take)(void);
	void (*release)(void);
};

static int other_fn(void *p)
{
	struct other *o = p;

	o->take();
	complete(&o->taken);
	wait_for_completion(&o->go);
	if (o->release)
		o->release();
	complete(&o->done);
	return 0;
}

static struct task_struct *run_other(struct other *o, void (*take)(void),
				     void (*release)(void))
{
	struct task_struct *t;

	init_completion(&o->taken);
	init_completion(&o->go);
	init_completion(&o->done);
	o->take = take;
	o->release = release;
	t = kthread_run(other_fn, o, "six_misuse");
	if (!IS_ERR(t))
		get_task_struct(t);
	return t;
}

static void finish_other(struct other *o, struct task_struct *t)
{
	complete(&o->go);
	wait_for_completion(&o->done);
	put_task_struct(t);
}

static void take_intent(void)
{
	WARN_ON(six_lock_intent(&lock, NULL, NULL));
}

static void release_intent(void)
{
	six_unlock_intent(&lock);
}

static void unlock_write_twice(void)
{
	WARN_ON(six_lock_intent(&lock, NULL, NULL));
	WARN_ON(six_lock_write(&lock, NULL, NULL));
	six_unlock_write(&lock);
	six_unlock_write(&lock);
	six_unlock_intent(&lock);
}

static void unlock_intent_other(void)
{
	struct task_struct *t;
	struct other o;

	t = run_other(&o, take_intent, release_intent);
	if (IS_ERR(t))
		return;
	wait_for_completion(&o.taken);
	six_unlock_intent(&lock);		/* not ours */
	finish_other(&o, t);
}

static void intent_before_write(void)
{
	WARN_ON(six_lock_intent(&lock, NULL, NULL));
	WARN_ON(six_lock_write(&lock, NULL, NULL));
	six_unlock_intent(&lock);		/* refused: write first */
	six_unlock_write(&lock);
	six_unlock_intent(&lock);
}

static void take_read(void)
{
	WARN_ON(six_lock_read(&lock, NULL, NULL));
	six_unlock_read(&lock);
}

static void increment_read(void)
{
	six_lock_increment(&lock, SIX_LOCK_read);
	six_unlock_read(&lock);
}

/*
 * Holding write, start @take in another task and wait until it sleeps (or
 * a second has gone by: it may spin instead).
 */
static struct task_struct *blocked_other(struct other *o, void (*take)(void))
{
	struct task_struct *t;
	int i;

	WARN_ON(six_lock_intent(&lock, NULL, NULL));
	WARN_ON(six_lock_write(&lock, NULL, NULL));
	t = run_other(o, take, NULL);
	if (IS_ERR(t)) {
		six_unlock_write(&lock);
		six_unlock_intent(&lock);
		return t;
	}
	for (i = 0; i < 1000 && READ_ONCE(t->__state) != TASK_UNINTERRUPTIBLE; i++)
		msleep(1);
	return t;
}

static void exit_waited(void)
{
	struct task_struct *t;
	struct other o;

	t = blocked_other(&o, take_read);
	if (IS_ERR(t))
		return;
	six_lock_exit(&lock);			/* refused: held and waited for */
	six_unlock_write(&lock);
	six_unlock_intent(&lock);
	finish_other(&o, t);
}

static void increment_unheld(void)
{
	struct task_struct *t;
	struct other o;

	t = blocked_other(&o, increment_read);
	if (IS_ERR(t))
		return;
	msleep(50);
	WARN(READ_ONCE(t->__state) == TASK_RUNNING,
	     "six_misuse_expect: increment_unheld: lock broken: spins while write is held\n");
	six_unlock_write(&lock);
	six_unlock_intent(&lock);
	finish_other(&o, t);
}

static int irq_result = -1;

static enum hrtimer_restart trylock_in_irq(struct hrtimer *timer)
{
	irq_result = six_trylock_read(&lock);
	if (irq_result)
		six_unlock_read(&lock);
	return HRTIMER_NORESTART;
}

static void trylock_irq(void)
{
	struct hrtimer timer;

	hrtimer_init_on_stack(&timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_HARD);
	timer.function = trylock_in_irq;
	hrtimer_start(&timer, ns_to_ktime(1000), HRTIMER_MODE_REL_HARD);
	while (hrtimer_active(&timer))
		msleep(1);
	destroy_hrtimer_on_stack(&timer);
	pr_info("six_misuse_expect: trylock_irq: trylock returned %d\n", irq_result);
}

static const struct {
	const char *name;
	void (*fn)(void);
	unsigned int flags;
} cases[] = {
	{ "unlock_write_twice",  unlock_write_twice,  0 },
	{ "unlock_intent_other", unlock_intent_other, 0 },
	{ "intent_before_write", intent_before_write, 0 },
	{ "exit_waited",         exit_waited,         SIX_LOCK_INIT_PCPU },
	{ "increment_unheld",    increment_unheld,    SIX_LOCK_INIT_PCPU },
	{ "trylock_irq",         trylock_irq,         0 },
};

static int __init six_misuse_expect_init(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		if (strcmp(misuse_case, cases[i].name))
			continue;
		six_lock_init(&lock, cases[i].flags);
		cases[i].fn();
		check_works(cases[i].name);
		six_lock_exit(&lock);
		return 0;
	}
	pr_info("six_misuse_expect: no case \"%s\"\n", misuse_case);
	return -EINVAL;
}

static void __exit six_misuse_expect_exit(void)
{
}

module_init(six_misuse_expect_init);
module_exit(six_misuse_expect_exit);
MODULE_DESCRIPTION("SIX lock misuse that must be refused with a warning");
MODULE_LICENSE("GPL");
