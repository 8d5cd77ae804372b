// SPDX-License-Identifier: GPL-2.0
/*
 * Closure continuation benchmark.
 *
 * Measures round trips through continue_at_nobarrier() (directly and through
 * closure_call()), each finished by closure_sync() on a parent closure, with
 * and without a workqueue. Every round trip is timed twice in the same boot:
 *
 *  old: a benchmark-only copy of continue_at_nobarrier() and closure_queue()
 *       as 6.1 has them (the function and workqueue are stored in the
 *       closure, barrier, read back, and queue_work() is checked with BUG_ON)
 *  new: continue_at_nobarrier() as "closures: optimize
 *       continue_at_nobarrier()" makes it (direct call or INIT_WORK() with the
 *       function, no stores to the closure, no BUG_ON)
 *
 * Both variants are local copies so the comparison does not depend on which
 * one the kernel under test carries. old and new alternate round by round
 * (ABAB..., the first one alternating) in many short rounds; the fastest and
 * the median round of each are reported, and the median over rounds of the
 * old/new ratio within a round ("paired": both variants ran back to back, so
 * they saw the same host load - the steadiest figure when QEMU TCG shares
 * the CPUs with other work). Old-vs-old runs give the noise floor.
 *
 * Cases (ns per round trip; every one ends with closure_sync() on the parent):
 *   closure_call_*: closure_call(child, fn, wq, parent); fn: closure_return()
 *   closure_cont_*: closure_get(parent); continue_at_nobarrier(child, fn, wq);
 *                   fn: closure_put(parent) (no init, the bare dispatch)
 *   *_nowq: fn runs inside continue_at_nobarrier(); *_wq: on a workqueue
 *
 * Output (one KUnit suite, closure_bench, so it runs when the module loads):
 *   # bench: closure_<case>_<old|new>[_median]: <ns> ns/op
 *   # bench-ratio: closure_<case> old/new[ median| paired]: <x.xx>
 *   (ratios > 1: new is faster)
 */

#include <kunit/test.h>
#include <linux/closure.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/workqueue.h>

/*
 * Benchmark-only copy of the 6.1 closure_queue(), BUG_ON() included: it is
 * part of what is measured.
 */
static inline void bench_queue_old(struct closure *cl)
{
	struct workqueue_struct *wq = cl->wq;

	if (wq) {
		INIT_WORK(&cl->work, cl->work.func);
		BUG_ON(!queue_work(wq, &cl->work));
	} else {
		cl->fn(cl);
	}
}

/* Benchmark-only copy of the 6.1 continue_at_nobarrier() */
#define bench_continue_old(_cl, _fn, _wq)				\
do {									\
	set_closure_fn(_cl, _fn, _wq);					\
	bench_queue_old(_cl);						\
} while (0)

/* continue_at_nobarrier() with the optimization */
#define bench_continue_new(_cl, _fn, _wq)				\
do {									\
	closure_set_ip(_cl);						\
	if (_wq) {							\
		INIT_WORK(&(_cl)->work, (void *)(_fn));			\
		queue_work((_wq), &(_cl)->work);			\
	} else {							\
		(_fn)(_cl);						\
	}								\
} while (0)

struct bench_ctx {
	struct closure		parent;
	struct closure		child;
	struct workqueue_struct	*wq;
	unsigned long		count;
};

/* Continuation of closure_call(): finish the child, dropping its parent ref */
static void bench_child_return(struct closure *cl)
{
	struct bench_ctx *b = container_of(cl, struct bench_ctx, child);

	b->count++;
	closure_return(cl);
}

/* Continuation that only drops the parent reference the caller took for it */
static void bench_child_put_parent(struct closure *cl)
{
	struct bench_ctx *b = container_of(cl, struct bench_ctx, child);

	b->count++;
	closure_put(&b->parent);
}

/* Each round trip ends with closure_sync(parent) */
enum bench_case {
	BENCH_CALL,	/* closure_call(child, fn, wq, parent) */
	BENCH_CONT,	/* closure_get(parent); continue_at_nobarrier(child, fn, wq) */
};

/* One timed round of @n round trips; returns ns per round trip */
static u64 bench_round(struct bench_ctx *b, enum bench_case c, bool new,
		       unsigned int n)
{
	struct workqueue_struct *wq = b->wq;
	unsigned int i;
	u64 t0, t1;

	b->count = 0;
	t0 = ktime_get_ns();
	for (i = 0; i < n; i++) {
		if (c == BENCH_CALL) {
			closure_init(&b->child, &b->parent);
			if (new)
				bench_continue_new(&b->child, bench_child_return, wq);
			else
				bench_continue_old(&b->child, bench_child_return, wq);
		} else {
			closure_get(&b->parent);
			if (new)
				bench_continue_new(&b->child, bench_child_put_parent, wq);
			else
				bench_continue_old(&b->child, bench_child_put_parent, wq);
		}
		closure_sync(&b->parent);
	}
	t1 = ktime_get_ns();
	WARN_ON(b->count != n);
	return div_u64(t1 - t0, n);
}

#define BENCH_ROUNDS	41

static int bench_cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* "1.23" for @num / @den */
static void bench_fmt_ratio(char *buf, size_t len, u64 num, u64 den)
{
	u64 r = den ? div64_u64(num * 100 + den / 2, den) : 0;

	snprintf(buf, len, "%llu.%02llu", r / 100, r % 100);
}

/*
 * Time @rounds rounds of @n round trips of each variant, alternating which
 * goes first, and report the fastest and the median round of each. Rounds
 * are short (a few ms) so that some of them escape the host's preemption of
 * the vCPU threads; the minimum is the figure of merit, the median shows the
 * spread. With @a_a both variants are the old code: the ratio is then the
 * noise floor.
 */
static void bench_compare(struct kunit *test, const char *name, enum bench_case c,
			  bool use_wq, bool a_a, unsigned int n)
{
	const char *label[2] = { a_a ? "old_a" : "old", a_a ? "old_b" : "new" };
	char rmin[16], rmed[16], rpair[16];
	struct bench_ctx *b;
	u64 *t[2], *pair;
	unsigned int r;
	int v;

	b = kzalloc(sizeof(*b), GFP_KERNEL);
	t[0] = kcalloc(BENCH_ROUNDS, sizeof(u64), GFP_KERNEL);
	t[1] = kcalloc(BENCH_ROUNDS, sizeof(u64), GFP_KERNEL);
	pair = kcalloc(BENCH_ROUNDS, sizeof(u64), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, b);
	KUNIT_ASSERT_NOT_NULL(test, pair);
	KUNIT_ASSERT_NOT_NULL(test, t[0]);
	KUNIT_ASSERT_NOT_NULL(test, t[1]);
	if (use_wq) {
		b->wq = alloc_workqueue("closure_bench", 0, 0);
		KUNIT_ASSERT_NOT_NULL(test, b->wq);
	}
	closure_init_stack(&b->parent);
	if (c == BENCH_CONT)
		closure_init_stack(&b->child);

	bench_round(b, c, false, n);	/* warm up */
	bench_round(b, c, !a_a, n);
	for (r = 0; r < BENCH_ROUNDS; r++) {
		for (v = 0; v < 2; v++) {
			int which = (r & 1) ? 1 - v : v;

			t[which][r] = bench_round(b, c, a_a ? false : which, n);
		}
		/* old/new of this round, x1000: both ran back to back */
		pair[r] = t[1][r] ? div64_u64(t[0][r] * 1000, t[1][r]) : 0;
		cond_resched();
	}
	sort(pair, BENCH_ROUNDS, sizeof(u64), bench_cmp_u64, NULL);
	sort(t[0], BENCH_ROUNDS, sizeof(u64), bench_cmp_u64, NULL);
	sort(t[1], BENCH_ROUNDS, sizeof(u64), bench_cmp_u64, NULL);

	for (v = 0; v < 2; v++) {
		pr_info("# bench: %s_%s: %llu ns/op\n", name, label[v], t[v][0]);
		pr_info("# bench: %s_%s_median: %llu ns/op\n", name, label[v],
			t[v][BENCH_ROUNDS / 2]);
	}
	bench_fmt_ratio(rmin, sizeof(rmin), t[0][0], t[1][0]);
	bench_fmt_ratio(rmed, sizeof(rmed), t[0][BENCH_ROUNDS / 2],
			t[1][BENCH_ROUNDS / 2]);
	pr_info("# bench-ratio: %s %s/%s: %s\n", name, label[0], label[1], rmin);
	pr_info("# bench-ratio: %s %s/%s median: %s\n", name, label[0], label[1], rmed);
	bench_fmt_ratio(rpair, sizeof(rpair), pair[BENCH_ROUNDS / 2], 1000);
	pr_info("# bench-ratio: %s %s/%s paired: %s\n", name, label[0], label[1], rpair);

	if (b->wq)
		destroy_workqueue(b->wq);
	kfree(t[0]);
	kfree(t[1]);
	kfree(pair);
	kfree(b);
}

static void closure_bench_run(struct kunit *test)
{
	/* round trips: about 2.5 us each without a workqueue, 40 us with one */
	bench_compare(test, "closure_call_nowq_noise", BENCH_CALL, false, true, 2000);
	bench_compare(test, "closure_call_nowq", BENCH_CALL, false, false, 2000);
	bench_compare(test, "closure_cont_nowq_noise", BENCH_CONT, false, true, 20000);
	bench_compare(test, "closure_cont_nowq", BENCH_CONT, false, false, 20000);
	bench_compare(test, "closure_call_wq_noise", BENCH_CALL, true, true, 200);
	bench_compare(test, "closure_call_wq", BENCH_CALL, true, false, 200);
	bench_compare(test, "closure_cont_wq_noise", BENCH_CONT, true, true, 200);
	bench_compare(test, "closure_cont_wq", BENCH_CONT, true, false, 200);
}

static struct kunit_case closure_bench_cases[] = {
	KUNIT_CASE(closure_bench_run),
	{}
};

static struct kunit_suite closure_bench_suite = {
	.name = "closure_bench",
	.test_cases = closure_bench_cases,
};

kunit_test_suite(closure_bench_suite);

MODULE_DESCRIPTION("closure continuation benchmark (continue_at_nobarrier old vs new)");
MODULE_LICENSE("GPL");
