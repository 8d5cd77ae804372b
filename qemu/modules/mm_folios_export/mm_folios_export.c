// SPDX-License-Identifier: GPL-2.0
/*
 * filemap_get_folios() from a module.
 *
 * In June 2019 bcachefs asked for find_get_pages_range() to be exported.
 * 6.1 no longer has that function; its folio replacement,
 * filemap_get_folios(), is exported (EXPORT_SYMBOL in mm/filemap.c).  This
 * suite proves a module can use it on a real mapping: it creates a shmem
 * file, puts recognisable data in some of its pages, and checks which
 * folios the lookup returns, in which order, with a reference held, and
 * how it advances the start index.
 */
#include <kunit/test.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/pagevec.h>
#include <linux/shmem_fs.h>

#define FOLIOS_FILE_PAGES	256
#define FOLIOS_MAGIC		0x466f6c696f000000ULL	/* "Folio\0\0\0" */

/* Sparse pages, then a run longer than one folio batch. */
static const pgoff_t sparse[] = { 0, 1, 2, 5, 9, 40 };
#define RUN_START	100
#define RUN_LEN		(PAGEVEC_SIZE + 5)

struct folios_ctx {
	struct file *file;
	struct address_space *mapping;
};

static int folios_put_page(struct kunit *test, pgoff_t index)
{
	struct folios_ctx *ctx = test->priv;
	struct page *page;
	u64 *p;

	page = shmem_read_mapping_page(ctx->mapping, index);
	if (IS_ERR(page))
		return PTR_ERR(page);
	p = kmap_local_page(page);
	*p = FOLIOS_MAGIC | index;
	kunmap_local(p);
	set_page_dirty(page);
	put_page(page);
	return 0;
}

static int folios_init(struct kunit *test)
{
	struct folios_ctx *ctx;
	unsigned int i;
	int ret;

	ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	ctx->file = shmem_file_setup("mm_folios_export",
				     FOLIOS_FILE_PAGES * PAGE_SIZE,
				     VM_NORESERVE);
	if (IS_ERR(ctx->file))
		return PTR_ERR(ctx->file);
	ctx->mapping = ctx->file->f_mapping;
	test->priv = ctx;

	for (i = 0; i < ARRAY_SIZE(sparse); i++) {
		ret = folios_put_page(test, sparse[i]);
		if (ret)
			return ret;
	}
	for (i = 0; i < RUN_LEN; i++) {
		ret = folios_put_page(test, RUN_START + i);
		if (ret)
			return ret;
	}
	return 0;
}

static void folios_exit(struct kunit *test)
{
	struct folios_ctx *ctx = test->priv;

	fput(ctx->file);
}

/* Check one returned folio: it is the page we wrote at that index. */
static void folios_check(struct kunit *test, struct folio *folio,
			 pgoff_t index)
{
	u64 *p;

	KUNIT_EXPECT_EQ(test, folio->index, index);
	KUNIT_EXPECT_PTR_EQ(test, folio->mapping,
			    ((struct folios_ctx *)test->priv)->mapping);
	/* The batch holds a reference on top of the page cache's own. */
	KUNIT_EXPECT_GE(test, folio_ref_count(folio), 2);
	p = kmap_local_folio(folio, 0);
	KUNIT_EXPECT_EQ(test, *p, FOLIOS_MAGIC | index);
	kunmap_local(p);
}

/* A lookup over [0, 50] finds exactly the sparse pages, in order. */
static void folios_sparse(struct kunit *test)
{
	struct folios_ctx *ctx = test->priv;
	struct folio_batch fbatch;
	pgoff_t start = 0;
	unsigned int i, n;

	folio_batch_init(&fbatch);
	n = filemap_get_folios(ctx->mapping, &start, 50, &fbatch);
	KUNIT_ASSERT_EQ(test, n, ARRAY_SIZE(sparse));
	for (i = 0; i < n; i++)
		folios_check(test, fbatch.folios[i], sparse[i]);
	/* Nothing beyond the end: start moves to end + 1. */
	KUNIT_EXPECT_EQ(test, start, 51UL);
	folio_batch_release(&fbatch);
}

/* A range that starts and ends in holes; an empty range. */
static void folios_range(struct kunit *test)
{
	struct folios_ctx *ctx = test->priv;
	struct folio_batch fbatch;
	pgoff_t start = 3;
	unsigned int n;

	folio_batch_init(&fbatch);
	n = filemap_get_folios(ctx->mapping, &start, 8, &fbatch);
	KUNIT_ASSERT_EQ(test, n, 1U);
	folios_check(test, fbatch.folios[0], 5);
	KUNIT_EXPECT_EQ(test, start, 9UL);
	folio_batch_release(&fbatch);

	start = 10;
	n = filemap_get_folios(ctx->mapping, &start, 39, &fbatch);
	KUNIT_EXPECT_EQ(test, n, 0U);
	KUNIT_EXPECT_EQ(test, start, 40UL);
	folio_batch_release(&fbatch);
}

/*
 * A run longer than a folio batch comes back in two calls; the first
 * stops when the batch is full and leaves start just after its last folio.
 */
static void folios_full_batch(struct kunit *test)
{
	struct folios_ctx *ctx = test->priv;
	struct folio_batch fbatch;
	pgoff_t start = RUN_START, next = RUN_START;
	unsigned int i, n, total = 0;

	folio_batch_init(&fbatch);
	n = filemap_get_folios(ctx->mapping, &start, (pgoff_t)-1, &fbatch);
	KUNIT_ASSERT_EQ(test, n, (unsigned int)PAGEVEC_SIZE);
	KUNIT_EXPECT_EQ(test, start, (pgoff_t)(RUN_START + PAGEVEC_SIZE));
	for (i = 0; i < n; i++)
		folios_check(test, fbatch.folios[i], next++);
	total += n;
	folio_batch_release(&fbatch);

	n = filemap_get_folios(ctx->mapping, &start, (pgoff_t)-1, &fbatch);
	KUNIT_EXPECT_EQ(test, n, (unsigned int)(RUN_LEN - PAGEVEC_SIZE));
	for (i = 0; i < n; i++)
		folios_check(test, fbatch.folios[i], next++);
	total += n;
	/* end == (pgoff_t)-1: start saturates instead of wrapping. */
	KUNIT_EXPECT_EQ(test, start, (pgoff_t)-1);
	folio_batch_release(&fbatch);
	KUNIT_EXPECT_EQ(test, total, (unsigned int)RUN_LEN);
}

/* Releasing the batch drops exactly the reference the lookup took. */
static void folios_refcount(struct kunit *test)
{
	struct folios_ctx *ctx = test->priv;
	struct folio_batch fbatch;
	struct folio *folio;
	pgoff_t start = 5;
	int before;

	folio = filemap_get_folio(ctx->mapping, 5);
	KUNIT_ASSERT_NOT_NULL(test, folio);
	before = folio_ref_count(folio);

	folio_batch_init(&fbatch);
	KUNIT_ASSERT_EQ(test, filemap_get_folios(ctx->mapping, &start, 5,
						 &fbatch), 1U);
	KUNIT_EXPECT_PTR_EQ(test, fbatch.folios[0], folio);
	KUNIT_EXPECT_EQ(test, folio_ref_count(folio), before + 1);
	folio_batch_release(&fbatch);
	KUNIT_EXPECT_EQ(test, folio_ref_count(folio), before);
	folio_put(folio);
}

static struct kunit_case folios_cases[] = {
	KUNIT_CASE(folios_sparse),
	KUNIT_CASE(folios_range),
	KUNIT_CASE(folios_full_batch),
	KUNIT_CASE(folios_refcount),
	{}
};

static struct kunit_suite folios_suite = {
	.name = "mm_folios_export",
	.init = folios_init,
	.exit = folios_exit,
	.test_cases = folios_cases,
};

kunit_test_suite(folios_suite);

MODULE_DESCRIPTION("filemap_get_folios() used from a module");
MODULE_LICENSE("GPL");
