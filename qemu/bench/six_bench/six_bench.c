// SPDX-License-Identifier: GPL-2.0
/*
 * SIX lock benchmark (locking topic), side by side with rw_semaphore, mutex
 * and percpu_rw_semaphore in one boot.
 *
 * Uncontended (one task, cost of lock + unlock, best of 15 short rounds,
 * the lock kinds alternating round by round so that host drift hits all):
 *   read:         six read, six read in percpu mode, down_read, percpu_down_read
 *   intent:       six intent, mutex_lock
 *   write:        six intent + write, mutex_lock, down_write
 * Contended (two kthreads bound to two CPUs hammer the same lock for a fixed
 * time; the figure is CPU time per operation, i.e. 2 * wall time / ops,
 * best of three rounds, the lock kinds alternating):
 *   read_only:    reads only
 *   read_heavy:   one write in 64 operations
 *   write_heavy:  three writes in four operations
 * where a six "write" is intent + write, and a mutex op is lock + unlock.
 *
 * Output (one KUnit suite, six_bench, so it runs when the module loads):
 *   # bench: six_<case>_<lock>: <ns> ns/op
 *   # bench-ratio: six_<case> <lock>/<lock>: <x.xx>   (< 1: six is faster)
 * Under TCG every figure is inflated and atomics/barriers cost far more
 * than on hardware; with lockdep on, lockdep dominates the uncontended cost.
 */

#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu-rwsem.h>
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/six.h>

enum bench_lock { B_SIX, B_SIX_PCPU, B_RWSEM, B_PCPU_RWSEM, B_MUTEX, B_NR };

static const char *const bench_lock_names[B_NR] = {
	"six", "six_pcpu", "rwsem", "percpu_rwsem", "mutex",
};

static struct six_lock bench_six ____cacheline_aligned_in_smp;
static struct six_lock bench_six_pcpu ____cacheline_aligned_in_smp;
static struct rw_semaphore bench_rwsem ____cacheline_aligned_in_smp;
static struct percpu_rw_semaphore bench_pcpu_rwsem;
static struct mutex bench_mutex ____cacheline_aligned_in_smp;

enum bench_op { OP_READ, OP_INTENT, OP_WRITE };

static __always_inline void bench_op(enum bench_lock l, enum bench_op op)
{
	switch (l) {
	case B_SIX:
	case B_SIX_PCPU: {
		struct six_lock *lock = l == B_SIX ? &bench_six : &bench_six_pcpu;

		if (op == OP_READ) {
			six_lock_read(lock, NULL, NULL);
			six_unlock_read(lock);
		} else {
			six_lock_intent(lock, NULL, NULL);
			if (op == OP_WRITE) {
				six_lock_write(lock, NULL, NULL);
				six_unlock_write(lock);
			}
			six_unlock_intent(lock);
		}
		break;
	}
	case B_RWSEM:
		if (op == OP_READ) {
			down_read(&bench_rwsem);
			up_read(&bench_rwsem);
		} else {
			down_write(&bench_rwsem);
			up_write(&bench_rwsem);
		}
		break;
	case B_PCPU_RWSEM:
		if (op == OP_READ) {
			percpu_down_read(&bench_pcpu_rwsem);
			percpu_up_read(&bench_pcpu_rwsem);
		} else {
			percpu_down_write(&bench_pcpu_rwsem);
			percpu_up_write(&bench_pcpu_rwsem);
		}
		break;
	default:
		mutex_lock(&bench_mutex);
		mutex_unlock(&bench_mutex);
		break;
	}
}

/* ns/op in hundredths of a ns */
static u64 bench_uncontended_round(enum bench_lock l, enum bench_op op,
				   unsigned int n)
{
	u64 t = ktime_get_ns();
	unsigned int i;

	for (i = 0; i < n; i++)
		bench_op(l, op);
	return div_u64((ktime_get_ns() - t) * 100, n);
}

static void bench_print(const char *what, enum bench_lock l, u64 v)
{
	pr_info("# bench: six_%s_%s: %llu.%02llu ns/op\n", what,
		bench_lock_names[l], v / 100, v % 100);
}

static void bench_ratio(const char *what, enum bench_lock a, u64 va,
			enum bench_lock b, u64 vb)
{
	u64 r = vb ? div64_u64(va * 100 + vb / 2, vb) : 0;

	pr_info("# bench-ratio: six_%s %s/%s: %llu.%02llu\n", what,
		bench_lock_names[a], bench_lock_names[b], r / 100, r % 100);
}

static void bench_uncontended(const char *what, enum bench_op op,
			      const enum bench_lock *locks, unsigned int nr,
			      u64 *best)
{
	const unsigned int n = 5000, rounds = 15;
	unsigned int r, i;

	for (i = 0; i < nr; i++) {
		best[locks[i]] = U64_MAX;
		bench_uncontended_round(locks[i], op, n / 10);	/* warm up */
	}
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < nr; i++) {
			enum bench_lock l = locks[(i + r) % nr];

			best[l] = min(best[l], bench_uncontended_round(l, op, n));
			cond_resched();
		}
	}
	for (i = 0; i < nr; i++)
		bench_print(what, locks[i], best[locks[i]]);
}

static void six_bench_uncontended(struct kunit *test)
{
	static const enum bench_lock rd[] = { B_SIX, B_SIX_PCPU, B_RWSEM, B_PCPU_RWSEM };
	static const enum bench_lock in[] = { B_SIX, B_MUTEX };
	static const enum bench_lock wr[] = { B_SIX, B_SIX_PCPU, B_MUTEX, B_RWSEM };
	u64 best[B_NR];

	bench_uncontended("read", OP_READ, rd, ARRAY_SIZE(rd), best);
	bench_ratio("read", B_SIX, best[B_SIX], B_RWSEM, best[B_RWSEM]);
	bench_ratio("read", B_SIX_PCPU, best[B_SIX_PCPU], B_PCPU_RWSEM,
		    best[B_PCPU_RWSEM]);

	bench_uncontended("intent", OP_INTENT, in, ARRAY_SIZE(in), best);
	bench_ratio("intent", B_SIX, best[B_SIX], B_MUTEX, best[B_MUTEX]);

	bench_uncontended("write", OP_WRITE, wr, ARRAY_SIZE(wr), best);
	bench_ratio("write", B_SIX, best[B_SIX], B_MUTEX, best[B_MUTEX]);
	bench_ratio("write", B_SIX, best[B_SIX], B_RWSEM, best[B_RWSEM]);
}

#define BENCH_CONTENDED_MS	150

struct bench_thread {
	enum bench_lock		lock;
	unsigned int		write_mask;	/* see bench_is_write() */
	atomic_t		*ready;
	struct completion	done;
	u64			ops, ns;
};

/* write_mask 0: never; 63: one op in 64; 3 with "!= 3": three in four */
static bool bench_is_write(unsigned int write_mask, unsigned int i)
{
	if (!write_mask)
		return false;
	if (write_mask == 3)
		return (i & 3) != 3;
	return !(i & write_mask);
}

static int bench_thread_fn(void *arg)
{
	struct bench_thread *t = arg;
	unsigned int i = 0, j;
	u64 start, end;

	atomic_inc(t->ready);
	while (atomic_read(t->ready) < 2)
		cpu_relax();

	start = ktime_get_ns();
	end = start + BENCH_CONTENDED_MS * NSEC_PER_MSEC;
	do {
		for (j = 0; j < 16; j++, i++)
			bench_op(t->lock, bench_is_write(t->write_mask, i) ?
				 OP_WRITE : OP_READ);
		t->ops += 16;
		cond_resched();
	} while (ktime_get_ns() < end);
	t->ns = ktime_get_ns() - start;

	complete(&t->done);
	return 0;
}

static u64 bench_contended_one(struct kunit *test, enum bench_lock l,
			       unsigned int write_mask)
{
	struct bench_thread t[2] = {};
	atomic_t ready = ATOMIC_INIT(0);
	int i, cpu = -1;

	for (i = 0; i < 2; i++) {
		struct task_struct *task;

		cpu = cpumask_next(cpu, cpu_online_mask);
		t[i].lock = l;
		t[i].write_mask = write_mask;
		t[i].ready = &ready;
		init_completion(&t[i].done);
		task = kthread_create(bench_thread_fn, &t[i], "six_bench/%d", i);
		KUNIT_ASSERT_FALSE(test, IS_ERR(task));
		kthread_bind(task, cpu);
		wake_up_process(task);
	}
	for (i = 0; i < 2; i++)
		wait_for_completion(&t[i].done);

	return div64_u64((t[0].ns + t[1].ns) * 100, t[0].ops + t[1].ops);
}

static void bench_contended(struct kunit *test, const char *what,
			    unsigned int write_mask,
			    const enum bench_lock *locks, unsigned int nr,
			    u64 *v)
{
	const unsigned int rounds = 3;
	unsigned int r, i;

	for (i = 0; i < nr; i++)
		v[locks[i]] = U64_MAX;
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < nr; i++) {
			enum bench_lock l = locks[(i + r) % nr];

			v[l] = min(v[l], bench_contended_one(test, l, write_mask));
		}
	}
	for (i = 0; i < nr; i++)
		bench_print(what, locks[i], v[locks[i]]);
}

static void six_bench_contended(struct kunit *test)
{
	static const enum bench_lock all[] = {
		B_SIX, B_SIX_PCPU, B_RWSEM, B_PCPU_RWSEM, B_MUTEX,
	};
	u64 v[B_NR];

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");

	bench_contended(test, "read_only_2cpu", 0, all, ARRAY_SIZE(all) - 1, v);
	bench_ratio("read_only_2cpu", B_SIX_PCPU, v[B_SIX_PCPU], B_RWSEM, v[B_RWSEM]);
	bench_ratio("read_only_2cpu", B_SIX, v[B_SIX], B_RWSEM, v[B_RWSEM]);

	bench_contended(test, "read_heavy_2cpu", 63, all, ARRAY_SIZE(all), v);
	bench_ratio("read_heavy_2cpu", B_SIX_PCPU, v[B_SIX_PCPU], B_RWSEM, v[B_RWSEM]);
	bench_ratio("read_heavy_2cpu", B_SIX, v[B_SIX], B_RWSEM, v[B_RWSEM]);

	bench_contended(test, "write_heavy_2cpu", 3, all, ARRAY_SIZE(all), v);
	bench_ratio("write_heavy_2cpu", B_SIX, v[B_SIX], B_MUTEX, v[B_MUTEX]);
	bench_ratio("write_heavy_2cpu", B_SIX, v[B_SIX], B_RWSEM, v[B_RWSEM]);
}

static int six_bench_init(struct kunit *test)
{
	six_lock_init(&bench_six, 0);
	six_lock_init(&bench_six_pcpu, SIX_LOCK_INIT_PCPU);
	init_rwsem(&bench_rwsem);
	mutex_init(&bench_mutex);
	KUNIT_ASSERT_EQ(test, percpu_init_rwsem(&bench_pcpu_rwsem), 0);
	KUNIT_ASSERT_NOT_NULL(test, bench_six_pcpu.readers);
	return 0;
}

static void six_bench_exit(struct kunit *test)
{
	six_lock_exit(&bench_six);
	six_lock_exit(&bench_six_pcpu);
	percpu_free_rwsem(&bench_pcpu_rwsem);
}

static struct kunit_case six_bench_cases[] = {
	KUNIT_CASE(six_bench_uncontended),
	KUNIT_CASE(six_bench_contended),
	{}
};

static struct kunit_suite six_bench_suite = {
	.name = "six_bench",
	.init = six_bench_init,
	.exit = six_bench_exit,
	.test_cases = six_bench_cases,
};
kunit_test_suite(six_bench_suite);

MODULE_DESCRIPTION("SIX lock benchmark against rwsem, mutex and percpu_rw_semaphore");
MODULE_LICENSE("GPL");
