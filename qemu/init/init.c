// SPDX-License-Identifier: GPL-2.0
/*
 * /init of the ktopic test guest (see "The guest" in docs/ci.md).
 *
 * Mounts proc, sysfs, devtmpfs and debugfs, loads every module in
 * /lib/modules/test/ in name order (their KUnit suites run at load time),
 * runs every program in /tests/ in name order (each prints one KTAP
 * document), prints "ktopic-init: done" and powers the machine off.
 *
 * Every step is reported on the console as a "ktopic-init:" line so that
 * the host can tell a module that failed to load or a program that crashed
 * from one that never ran.  Built with gcc -static; no libc beyond that.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MODULE_DIR "/lib/modules/test"
#define TEST_DIR "/tests"
/* /etc/ktopic/modargs/<name>.ko: parameters for that test module, if any. */
#define MODARGS_DIR "/etc/ktopic/modargs"

/* One whole line per write(), so it is not interleaved with other output. */
static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "ktopic-init: ");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(STDOUT_FILENO, buf, n) < 0)
		return;
}

static void do_mount(const char *src, const char *dst, const char *type)
{
	mkdir(dst, 0755);
	if (mount(src, dst, type, 0, NULL) && errno != EBUSY)
		say("mount %s on %s failed: %s", type, dst, strerror(errno));
}

static void console_fds(void)
{
	int fd;

	if (fcntl(STDOUT_FILENO, F_GETFD) != -1)
		return;
	fd = open("/dev/console", O_RDWR | O_NOCTTY);
	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

static int regular(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static int sorted_entries(const char *dir, struct dirent ***list)
{
	int n = scandir(dir, list, regular, alphasort);

	if (n < 0 && errno != ENOENT)
		say("cannot read %s: %s", dir, strerror(errno));
	return n < 0 ? 0 : n;
}

static void module_args(const char *name, char *buf, size_t size)
{
	char path[512];
	ssize_t len;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", MODARGS_DIR, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	len = read(fd, buf, size - 1);
	close(fd);
	if (len < 0)
		len = 0;
	buf[len] = '\0';
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = '\0';
}

static int load_modules(void)
{
	struct dirent **list;
	int i, n, failed = 0;

	n = sorted_entries(MODULE_DIR, &list);
	for (i = 0; i < n; i++) {
		char path[512], args[512];
		int fd;

		snprintf(path, sizeof(path), "%s/%s", MODULE_DIR, list[i]->d_name);
		module_args(list[i]->d_name, args, sizeof(args));
		if (args[0])
			say("insmod %s %s", list[i]->d_name, args);
		else
			say("insmod %s", list[i]->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || syscall(SYS_finit_module, fd, args, 0)) {
			say("insmod %s failed: %s", list[i]->d_name, strerror(errno));
			failed++;
		}
		if (fd >= 0)
			close(fd);
		free(list[i]);
	}
	if (n)
		free(list);
	return failed;
}

static int run_programs(void)
{
	struct dirent **list;
	int i, n, failed = 0;

	n = sorted_entries(TEST_DIR, &list);
	for (i = 0; i < n; i++) {
		char path[512];
		char *argv[2] = { path, NULL };
		char *envp[] = { "PATH=/tests:/bin", "HOME=/", NULL };
		int status;
		pid_t pid;

		snprintf(path, sizeof(path), "%s/%s", TEST_DIR, list[i]->d_name);
		say("run %s", list[i]->d_name);
		pid = fork();
		if (pid == 0) {
			execve(path, argv, envp);
			say("exec %s failed: %s", path, strerror(errno));
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &status, 0) < 0) {
			say("run %s failed: %s", list[i]->d_name, strerror(errno));
			failed++;
		} else if (WIFSIGNALED(status)) {
			say("%s killed by signal %d", list[i]->d_name, WTERMSIG(status));
			failed++;
		} else {
			say("%s exited with status %d", list[i]->d_name, WEXITSTATUS(status));
		}
		free(list[i]);
	}
	if (n)
		free(list);
	return failed;
}

int main(void)
{
	int failed;

	do_mount("devtmpfs", "/dev", "devtmpfs");
	console_fds();
	do_mount("proc", "/proc", "proc");
	do_mount("sysfs", "/sys", "sysfs");
	do_mount("debugfs", "/sys/kernel/debug", "debugfs");
	say("start");

	failed = load_modules();
	failed += run_programs();

	/* Reap anything a test left behind, so nothing outlives the run. */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	say("%d failure%s", failed, failed == 1 ? "" : "s");
	say("done");
	sync();
	reboot(RB_POWER_OFF);
	say("power off failed: %s", strerror(errno));
	for (;;)
		pause();
}
