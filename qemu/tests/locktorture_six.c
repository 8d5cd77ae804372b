// SPDX-License-Identifier: GPL-2.0
/*
 * locktorture_six: run the kernel's lock torture test on SIX locks
 * (locking topic).
 *
 * Loads /lib/modules/kernel/locktorture.ko once per variant (six_lock,
 * six_lock_pcpu, and rwsem_lock and mutex_lock for reference) for a few
 * seconds, unloads it, and judges the run from the kernel log: the
 * "<type>-torture:--- End of test: SUCCESS" verdict that locktorture prints
 * at unload, non-zero write and read totals (a starved side proves nothing),
 * and no WARNING/BUG/lockdep report while it ran.  One KTAP case per variant.
 *
 * Needs /dev/kmsg and CONFIG_LOCK_TORTURE_TEST=m (which makes torture.ko a
 * module too: it is loaded first, as nothing here resolves dependencies).
 * Prints KTAP.
 * Build: gcc -static -O2 -Wall -o locktorture_six locktorture_six.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MODULE_PATH	"/lib/modules/kernel/locktorture.ko"
#define TORTURE_PATH	"/lib/modules/kernel/torture.ko"	/* its dependency */
#define UNLOAD_TIMEOUT	60	/* seconds; locktorture stops its threads */

struct variant {
	const char *type;
	unsigned int seconds;
	int readers;		/* has a read side to check */
};

/*
 * Eight seconds in all: the boot and tests of a branch should stay within
 * 20 s under TCG.  The reference locks only show that the harness works.
 */
static const struct variant variants[] = {
	{ "six_lock",		3, 1 },
	{ "six_lock_pcpu",	3, 1 },
	{ "rwsem_lock",		1, 1 },
	{ "mutex_lock",		1, 0 },
};

#define NR_VARIANTS	(sizeof(variants) / sizeof(variants[0]))

static const char *const splats[] = {
	"WARNING:", "BUG:", "Oops", "INFO: ", "possible recursive locking",
	"possible circular locking", "inconsistent lock state",
	"bad unlock balance", "lockdep", "soft lockup", "hung task", NULL,
};

static int kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);	/* only what happens from now on */
	return fd;
}

/* Message text of one /dev/kmsg record ("prio,seq,ts,flags;text\n...") */
static char *kmsg_text(char *rec)
{
	char *text = strchr(rec, ';');
	char *nl;

	if (!text)
		return rec;
	text++;
	nl = strchr(text, '\n');
	if (nl)
		*nl = '\0';
	return text;
}

static int load_file(const char *path, const char *args)
{
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, args, 0);
	ret = ret && errno != EEXIST ? -errno : 0;
	close(fd);
	return ret;
}

static int load(const char *type)
{
	char args[256];

	snprintf(args, sizeof(args),
		 "torture_type=%s nwriters_stress=2 nreaders_stress=2 verbose=0",
		 type);
	return load_file(MODULE_PATH, args);
}

/* Unload in a child, so that a hung unload is reported, not waited for */
static int unload(void)
{
	pid_t pid = fork();
	int status, i;

	if (pid == 0)
		_exit(syscall(SYS_delete_module, "locktorture", O_NONBLOCK) ? 1 : 0);
	if (pid < 0)
		return -1;
	for (i = 0; i < UNLOAD_TIMEOUT * 10; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
		usleep(100000);
	}
	return -2;
}

/* "Writes:  Total: 123  Max/Min: ..." -> 123, or -1 */
static long long total(const char *text, const char *what)
{
	const char *p = strstr(text, what);

	if (!p || !(p = strstr(p, "Total:")))
		return -1;
	return strtoll(p + strlen("Total:"), NULL, 10);
}

static int run(const struct variant *v, int *unusable)
{
	char verdict_prefix[128], rec[8192];
	long long writes = -1, reads = -1;
	int fd, ret, verdict = 0, splat = 0;
	const char *const *s;
	ssize_t n;

	snprintf(verdict_prefix, sizeof(verdict_prefix),
		 "%s-torture:--- End of test: ", v->type);

	fd = kmsg_open();
	if (fd < 0) {
		printf("# %s: /dev/kmsg: %s\n", v->type, strerror(errno));
		return 0;
	}
	ret = load(v->type);
	if (ret) {
		printf("# %s: loading %s failed: %s\n", v->type, MODULE_PATH,
		       strerror(-ret));
		close(fd);
		return 0;
	}
	sleep(v->seconds);
	ret = unload();
	if (ret) {
		printf("# %s: unloading locktorture %s\n", v->type,
		       ret == -2 ? "hung" : "failed");
		*unusable = 1;
	}

	for (;;) {
		char *text;

		errno = 0;
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* overrun: records were lost, go on */
		if (n <= 0)
			break;		/* EAGAIN: nothing more */
		rec[n] = '\0';
		text = kmsg_text(rec);
		for (s = splats; *s; s++) {
			if (strstr(text, *s)) {
				printf("# %s: kernel: %s\n", v->type, text);
				splat = 1;
				break;
			}
		}
		if (strstr(text, "Writes:"))
			writes = total(text, "Writes:");
		if (strstr(text, "Reads :"))
			reads = total(text, "Reads :");
		if (!strncmp(text, verdict_prefix, strlen(verdict_prefix))) {
			const char *r = text + strlen(verdict_prefix);

			printf("# %s: %.*s\n", v->type, (int)strcspn(r, ":"), r);
			verdict = !strncmp(r, "SUCCESS", 7) ? 1 : -1;
		}
	}
	close(fd);

	printf("# %s: %u s, writes %lld, reads %lld\n", v->type, v->seconds,
	       writes, reads);
	if (!verdict)
		printf("# %s: no end-of-test verdict in the log\n", v->type);
	return verdict == 1 && !splat && !ret && writes > 0 &&
	       (!v->readers || reads > 0);
}

int main(void)
{
	int unusable = 0, failed = 0;
	unsigned int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("KTAP version 1\n1..%zu\n", NR_VARIANTS);
	if (!access(TORTURE_PATH, F_OK)) {
		int ret = load_file(TORTURE_PATH, "");

		if (ret)
			printf("# loading %s failed: %s\n", TORTURE_PATH,
			       strerror(-ret));
	}
	for (i = 0; i < NR_VARIANTS; i++) {
		const struct variant *v = &variants[i];
		int ok;

		if (unusable) {
			printf("not ok %u %s # locktorture could not be unloaded\n",
			       i + 1, v->type);
			failed = 1;
			continue;
		}
		ok = run(v, &unusable);
		printf("%sok %u %s\n", ok ? "" : "not ", i + 1, v->type);
		failed |= !ok;
	}
	return failed;
}
