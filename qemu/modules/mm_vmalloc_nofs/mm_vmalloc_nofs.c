// SPDX-License-Identifier: GPL-2.0
/*
 * __vmalloc(GFP_NOFS / GFP_NOIO) from inside filesystem reclaim.
 *
 * In June 2019 bcachefs carried "Propagate gfp_t when allocating pte
 * entries from __vmalloc": __vmalloc() allocated the page tables of the
 * new area with GFP_KERNEL whatever the caller asked for, so a GFP_NOFS
 * caller could recurse into filesystem reclaim, and lockdep said so.
 * 6.1 fixes it differently: __vmalloc_area_node() maps the area inside
 * memalloc_nofs_save() / memalloc_noio_save() when the caller's mask lacks
 * __GFP_FS / __GFP_IO, so every nested allocation, page tables included,
 * is restricted the same way.
 *
 * Each case enters the lockdep model of fs reclaim (fs_reclaim_acquire),
 * allocates an area large enough to need page tables of its own, and
 * checks that lockdep is still running, i.e. reported nothing.  With the
 * memalloc scope removed from mm/vmalloc.c the same module makes lockdep
 * report recursive fs_reclaim from __pte_alloc_kernel().
 */
#include <kunit/test.h>
#include <linux/debug_locks.h>
#include <linux/gfp.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/sizes.h>
#include <linux/vmalloc.h>

/* Several PMDs' worth: the area needs page-table pages of its own. */
#define NOFS_AREA	(16 * SZ_1M)

static void vmalloc_in_fs_reclaim(struct kunit *test, gfp_t gfp)
{
	unsigned char *p;

	if (!IS_ENABLED(CONFIG_PROVE_LOCKING))
		kunit_skip(test, "needs CONFIG_PROVE_LOCKING");
	KUNIT_ASSERT_TRUE_MSG(test, debug_locks,
			      "lockdep was already off before the test");

	fs_reclaim_acquire(GFP_KERNEL);
	p = __vmalloc(NOFS_AREA, gfp);
	fs_reclaim_release(GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, p);
	p[0] = 1;
	p[NOFS_AREA - 1] = 2;
	KUNIT_EXPECT_EQ(test, p[0] + p[NOFS_AREA - 1], 3);
	vfree(p);

	KUNIT_EXPECT_TRUE_MSG(test, debug_locks,
			      "lockdep reported a problem (see the log)");
}

static void vmalloc_nofs_in_fs_reclaim(struct kunit *test)
{
	vmalloc_in_fs_reclaim(test, GFP_NOFS);
}

static void vmalloc_noio_in_fs_reclaim(struct kunit *test)
{
	vmalloc_in_fs_reclaim(test, GFP_NOIO);
}

static struct kunit_case vmalloc_nofs_cases[] = {
	KUNIT_CASE(vmalloc_nofs_in_fs_reclaim),
	KUNIT_CASE(vmalloc_noio_in_fs_reclaim),
	{}
};

static struct kunit_suite vmalloc_nofs_suite = {
	.name = "mm_vmalloc_nofs",
	.test_cases = vmalloc_nofs_cases,
};

kunit_test_suite(vmalloc_nofs_suite);

MODULE_DESCRIPTION("__vmalloc() with GFP_NOFS/GFP_NOIO inside fs reclaim");
MODULE_LICENSE("GPL");
