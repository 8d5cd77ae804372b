// SPDX-License-Identifier: GPL-2.0
/*
 * fs_block_exports: a module that uses the block layer symbols the fs topic
 * exports for bcachefs, as a KUnit suite that runs when it is loaded.
 *
 * bio_set_pages_dirty() and bio_check_pages_dirty() are the direct-I/O read
 * helpers: dirty the destination pages before the read, and at completion
 * drop the bio's page references, first re-dirtying (from a work item) any
 * page that was cleaned while the read was in flight.  blk_status_to_str()
 * turns a blk_status_t into the text the block layer prints.
 *
 * Loading this module at all proves the symbols are exported to GPL
 * modules; the cases check that they do their job on a bio over pages the
 * module allocated (no device needed: the bio is never submitted).
 */
#include <kunit/test.h>
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/delay.h>
#include <linux/gfp.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/page-flags.h>

#define NR_PAGES	4

struct bexp {
	struct page *pages[NR_PAGES];
};

static int bexp_init(struct kunit *test)
{
	struct bexp *b = kunit_kzalloc(test, sizeof(*b), GFP_KERNEL);
	int i;

	if (!b)
		return -ENOMEM;
	test->priv = b;
	for (i = 0; i < NR_PAGES; i++) {
		b->pages[i] = alloc_page(GFP_KERNEL);
		if (!b->pages[i])
			return -ENOMEM;
	}
	return 0;
}

static void bexp_exit(struct kunit *test)
{
	struct bexp *b = test->priv;
	int i;

	for (i = 0; b && i < NR_PAGES; i++) {
		if (!b->pages[i])
			continue;
		ClearPageDirty(b->pages[i]);
		__free_page(b->pages[i]);
	}
}

/*
 * A read bio over our pages, holding one reference on each page as a
 * direct-I/O bio holds its pinned user pages; bio_check_pages_dirty()
 * consumes these references and the bio.
 */
static struct bio *bexp_bio(struct kunit *test)
{
	struct bexp *b = test->priv;
	struct bio *bio;
	int i;

	bio = bio_alloc(NULL, NR_PAGES, REQ_OP_READ, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, bio);
	for (i = 0; i < NR_PAGES; i++) {
		get_page(b->pages[i]);
		KUNIT_ASSERT_EQ(test, bio_add_page(bio, b->pages[i], PAGE_SIZE, 0),
				(int)PAGE_SIZE);
	}
	KUNIT_EXPECT_EQ(test, bio->bi_iter.bi_size, (unsigned int)(NR_PAGES * PAGE_SIZE));
	return bio;
}

static bool bexp_released(struct bexp *b)
{
	int i;

	for (i = 0; i < NR_PAGES; i++)
		if (page_ref_count(b->pages[i]) != 1)
			return false;
	return true;
}

/* All pages still dirty at completion: references dropped at once. */
static void bexp_pages_stay_dirty(struct kunit *test)
{
	struct bexp *b = test->priv;
	struct bio *bio = bexp_bio(test);
	int i;

	for (i = 0; i < NR_PAGES; i++)
		KUNIT_EXPECT_FALSE(test, PageDirty(b->pages[i]));
	bio_set_pages_dirty(bio);
	for (i = 0; i < NR_PAGES; i++) {
		KUNIT_EXPECT_TRUE(test, PageDirty(b->pages[i]));
		KUNIT_EXPECT_EQ(test, page_ref_count(b->pages[i]), 2);
	}

	bio_check_pages_dirty(bio);	/* consumes bio and page references */
	KUNIT_EXPECT_TRUE(test, bexp_released(b));
	for (i = 0; i < NR_PAGES; i++)
		KUNIT_EXPECT_TRUE(test, PageDirty(b->pages[i]));
}

/*
 * A page was cleaned during the "read" (as writeback would): completion
 * defers to process context, which dirties it again, then drops the
 * references.
 */
static void bexp_cleaned_page_redirtied(struct kunit *test)
{
	struct bexp *b = test->priv;
	struct bio *bio = bexp_bio(test);
	unsigned long timeout;

	bio_set_pages_dirty(bio);
	ClearPageDirty(b->pages[2]);

	bio_check_pages_dirty(bio);	/* defers to a work item */
	timeout = jiffies + 5 * HZ;
	while (!(bexp_released(b) && PageDirty(b->pages[2])) &&
	       time_before(jiffies, timeout))
		msleep(20);

	KUNIT_EXPECT_TRUE(test, PageDirty(b->pages[2]));
	KUNIT_EXPECT_TRUE(test, bexp_released(b));
}

static void bexp_status_strings(struct kunit *test)
{
	KUNIT_EXPECT_STREQ(test, blk_status_to_str(BLK_STS_OK), "");
	KUNIT_EXPECT_STREQ(test, blk_status_to_str(BLK_STS_IOERR), "I/O");
	KUNIT_EXPECT_STREQ(test, blk_status_to_str(BLK_STS_TIMEOUT), "timeout");
	KUNIT_EXPECT_STREQ(test, blk_status_to_str(BLK_STS_NOSPC),
			   "critical space allocation");
	KUNIT_EXPECT_STREQ(test, blk_status_to_str(BLK_STS_OFFLINE),
			   "device offline");
	KUNIT_EXPECT_STREQ(test, blk_status_to_str(BLK_STS_NOTSUPP),
			   "operation not supported");
}

/* The string matches the status an errno maps to, both ways. */
static void bexp_status_from_errno(struct kunit *test)
{
	static const int errnos[] = {
		-EOPNOTSUPP, -ETIMEDOUT, -ENOSPC, -ENOLINK, -ENODATA,
		-ENOMEM, -EAGAIN, -ENODEV, -EIO,
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(errnos); i++) {
		blk_status_t sts = errno_to_blk_status(errnos[i]);
		const char *s = blk_status_to_str(sts);

		KUNIT_EXPECT_EQ(test, blk_status_to_errno(sts), errnos[i]);
		KUNIT_EXPECT_NOT_NULL(test, s);
		KUNIT_EXPECT_GT(test, strlen(s), 0UL);
		kunit_info(test, "errno %d -> status %u -> \"%s\"", errnos[i],
			   (__force unsigned int)sts, s);
	}
	/* an errno with no status of its own is an I/O error */
	KUNIT_EXPECT_STREQ(test, blk_status_to_str(errno_to_blk_status(-EXDEV)),
			   "I/O");
}

static struct kunit_case bexp_cases[] = {
	KUNIT_CASE(bexp_pages_stay_dirty),
	KUNIT_CASE(bexp_cleaned_page_redirtied),
	KUNIT_CASE(bexp_status_strings),
	KUNIT_CASE(bexp_status_from_errno),
	{}
};

static struct kunit_suite bexp_suite = {
	.name		= "fs_block_exports",
	.init		= bexp_init,
	.exit		= bexp_exit,
	.test_cases	= bexp_cases,
};

kunit_test_suite(bexp_suite);

MODULE_DESCRIPTION("Uses bio_set_pages_dirty(), bio_check_pages_dirty(), blk_status_to_str()");
MODULE_LICENSE("GPL");
