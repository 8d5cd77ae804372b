// SPDX-License-Identifier: GPL-2.0
/*
 * fs_tmpfile: O_TMPFILE on tmpfs, seen from userspace (fs topic): a
 * regression test, not a test of the new helper.
 *
 * tmpfs creates O_TMPFILE files with d_tmpfile(), which the fs topic
 * rebuilds on top of d_mark_tmpfile().  No filesystem in the tree calls
 * d_mark_tmpfile() itself, so userspace cannot reach it alone; this checks
 * that the refactored d_tmpfile() still does what the unpatched one does,
 * and passes on the unpatched kernel too, by design: the file starts with
 * no link, its /proc/self/fd entry names the dentry "#<inode number>",
 * data written to it survives linkat() into the namespace through
 * /proc/self/fd with AT_SYMLINK_FOLLOW, after which it has one link, and
 * an O_EXCL tmpfile cannot be linked.  d_mark_tmpfile() on its own (name
 * given, link count and dentry left alone) is tested by the KUnit suite
 * d_mark_tmpfile in fs/tmpfile_test.c.
 *
 * Needs root (it mounts its own tmpfs) and /proc.  Prints KTAP.
 * Build: gcc -static -O2 -Wall -o fs_tmpfile fs_tmpfile.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define NR_TESTS	9
#define DATA_SIZE	(3 * 4096 + 123)	/* a few pages and a partial one */

static int test_nr;
static int failed;

static void result(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (!ok && fmt) {
		printf("# %s: ", name);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
	}
	printf("%sok %d %s\n", ok ? "" : "not ", ++test_nr, name);
	if (!ok)
		failed = 1;
	fflush(stdout);
}

static void skip_rest(const char *why)
{
	while (test_nr < NR_TESTS)
		printf("ok %d skipped # SKIP %s\n", ++test_nr, why);
}

static void fill(unsigned char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 31 + 7);
}

int main(void)
{
	static unsigned char data[DATA_SIZE], back[DATA_SIZE];
	char dir[64], linked[96], fdpath[64], target[256], expect[256];
	struct stat st, st2;
	int fd = -1, fd2, excl, ok;
	ssize_t n;

	printf("KTAP version 1\n1..%d\n", NR_TESTS);
	fflush(stdout);

	/* 1: our own tmpfs, whatever the root filesystem is */
	snprintf(dir, sizeof(dir), "/tmp/fs_tmpfile.%d", (int)getpid());
	mkdir("/tmp", 01777);
	ok = mkdir(dir, 0700) == 0 &&
	     mount("tmpfs", dir, "tmpfs", 0, "size=1m") == 0;
	result(ok, "mount_tmpfs", "%s: %s", dir, strerror(errno));
	if (!ok) {
		skip_rest("no tmpfs");
		return 1;
	}
	snprintf(linked, sizeof(linked), "%s/linked", dir);

	/* 2: an unnamed regular file with no link */
	fd = open(dir, O_TMPFILE | O_RDWR, 0600);
	ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	     st.st_nlink == 0;
	result(ok, "o_tmpfile_unlinked", "fd %d nlink %lu: %s", fd,
	       fd >= 0 ? (unsigned long)st.st_nlink : 0UL, strerror(errno));
	if (fd < 0) {
		skip_rest("no O_TMPFILE");
		goto out;
	}

	/* 3: its dentry is named "#<ino>" (d_mark_tmpfile()), deleted */
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	n = readlink(fdpath, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	snprintf(expect, sizeof(expect), "%s/#%llu (deleted)", dir,
		 (unsigned long long)st.st_ino);
	result(n > 0 && strcmp(target, expect) == 0, "proc_fd_name",
	       "readlink gave '%s', expected '%s'", target, expect);

	/* 4: write data */
	fill(data, sizeof(data));
	n = pwrite(fd, data, sizeof(data), 0);
	result(n == (ssize_t)sizeof(data), "write", "pwrite returned %zd: %s",
	       n, strerror(errno));

	/* 5: give it a name through /proc/self/fd */
	ok = linkat(AT_FDCWD, fdpath, AT_FDCWD, linked, AT_SYMLINK_FOLLOW) == 0;
	result(ok, "linkat", "linkat(%s, %s): %s", fdpath, linked,
	       strerror(errno));

	/* 6: one link now, and the name is the same inode */
	ok = fstat(fd, &st) == 0 && stat(linked, &st2) == 0 &&
	     st.st_nlink == 1 && st2.st_ino == st.st_ino &&
	     st2.st_size == (off_t)sizeof(data);
	result(ok, "nlink_after_linkat", "nlink %lu ino %llu/%llu size %lld",
	       (unsigned long)st.st_nlink, (unsigned long long)st.st_ino,
	       (unsigned long long)st2.st_ino, (long long)st2.st_size);

	/* 7: the contents read back through the new name */
	memset(back, 0, sizeof(back));
	fd2 = open(linked, O_RDONLY);
	n = fd2 >= 0 ? pread(fd2, back, sizeof(back), 0) : -1;
	if (fd2 >= 0)
		close(fd2);
	result(n == (ssize_t)sizeof(back) &&
	       memcmp(data, back, sizeof(data)) == 0, "contents",
	       "read %zd bytes, %s", n,
	       n == (ssize_t)sizeof(back) ? "data differs" : strerror(errno));

	/* 8: unlinking the name takes the link count back to zero */
	ok = unlink(linked) == 0 && fstat(fd, &st) == 0 && st.st_nlink == 0;
	result(ok, "nlink_after_unlink", "nlink %lu: %s",
	       (unsigned long)st.st_nlink, strerror(errno));

	/* 9: an O_EXCL tmpfile can never be linked */
	excl = open(dir, O_TMPFILE | O_EXCL | O_RDWR, 0600);
	if (excl >= 0) {
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", excl);
		errno = 0;
		ok = linkat(AT_FDCWD, fdpath, AT_FDCWD, linked,
			    AT_SYMLINK_FOLLOW) < 0 && errno == ENOENT;
		close(excl);
	} else {
		ok = 0;
	}
	result(ok, "o_excl_not_linkable", "fd %d, linkat errno %d (%s)",
	       excl, errno, strerror(errno));

out:
	if (fd >= 0)
		close(fd);
	unlink(linked);
	umount(dir);
	rmdir(dir);
	return failed;
}
