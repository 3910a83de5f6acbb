/*
 * Method: a run's private view of the machine (confine.h). The harness
 * (harness/engine/confine.py) decides what the view holds and writes it
 * as steps; this file only makes them, in the process about to become
 * the program: the confine helper (confine-main.c) before its exec, the
 * preload's fork server's child (serve.c), the supervisor's child
 * (syscall/supervise.c). A step that fails stops the run before the
 * program starts: a program never runs half confined.
 *
 * The steps, one a line, fields separated by tabs:
 *
 *   U uid gid       a user namespace (we are not root) mapping us to us,
 *                   and a mount namespace owned by it
 *   N               a mount namespace
 *   P               every mount private: nothing we do reaches the host
 *   O target opts   an overlay on target ("lowerdir=...,upperdir=...")
 *   T target        a fresh tmpfs on target
 *   B src target    src bound on target, with what is mounted below it
 *   R src target    the same, read-only all the way down
 *   r src target    src alone (not what is mounted below it), read-only
 *   D path          a directory (one that is there already will do)
 *   V root          root becomes the root; the old one is let go
 *   C path          the working directory
 */

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine.h"

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif

struct mount_attr_v0 {
	unsigned long long attr_set, attr_clr, propagation, userns_fd;
};

/*
 * No library call: the supervisor's child shares its parent's memory
 * (errno included) until it execs.
 */
#if defined(__x86_64__)
static long sys6(long nr, long a, long b, long c, long d, long e)
{
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e;
	long ret;

	__asm__ volatile ("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c),
			  "r"(r10), "r"(r8) : "rcx", "r11", "memory");
	return ret;
}
#else
static long sys6(long nr, long a, long b, long c, long d, long e)
{
	long ret = syscall(nr, a, b, c, d, e);

	return ret < 0 ? -errno : ret;
}
#endif

int cf_parse(char *text, struct cf_op *ops, int max)
{
	int n = 0;
	char *line = text;

	while (line && *line) {
		char *next = strchr(line, '\n'), *f[3] = { NULL, NULL, NULL };
		int k = 0, want;

		if (next)
			*next++ = '\0';
		if (!*line) {
			line = next;
			continue;
		}
		for (char *p = line; p && k < 3; k++) {
			f[k] = p;
			p = strchr(p, '\t');
			if (p)
				*p++ = '\0';
		}
		if (n >= max || strlen(f[0]) != 1)
			return -1;
		switch (f[0][0]) {
		case 'N': case 'P':
			want = 0;
			break;
		case 'T': case 'D': case 'V': case 'C':
			want = 1;
			break;
		case 'U': case 'O': case 'B': case 'R': case 'r':
			want = 2;
			break;
		default:
			return -1;
		}
		if ((want >= 1 && !f[1]) || (want >= 2 && !f[2]))
			return -1;
		ops[n].kind = f[0][0];
		ops[n].a = want >= 1 ? f[1] : NULL;
		ops[n].b = want >= 2 ? f[2] : NULL;
		n++;
		line = next;
	}
	return n;
}

/* write TEXT into the file PATH (a /proc/self map) */
static long put(const char *path, const char *text)
{
	long fd = sys6(SYS_openat, AT_FDCWD, (long)path, O_WRONLY | O_CLOEXEC, 0, 0);
	long rc;

	if (fd < 0)
		return fd;
	rc = sys6(SYS_write, fd, (long)text, (long)strlen(text), 0, 0);
	sys6(SYS_close, fd, 0, 0, 0, 0);
	return rc < 0 ? rc : 0;
}

/* "ID ID 1\n" of the decimal ID, into BUF */
static const char *map_line(char *buf, size_t size, const char *id)
{
	size_t len = strlen(id);

	if (2 * len + 5 > size)
		return NULL;
	memcpy(buf, id, len);
	buf[len] = ' ';
	memcpy(buf + len + 1, id, len);
	memcpy(buf + 2 * len + 1, " 1\n", 4);
	return buf;
}

static long user_ns(const char *uid, const char *gid)
{
	char line[64];
	long rc = sys6(SYS_unshare, CLONE_NEWUSER | CLONE_NEWNS, 0, 0, 0, 0);

	if (rc < 0)
		return rc;
	if (!map_line(line, sizeof(line), uid))
		return -EINVAL;
	rc = put("/proc/self/uid_map", line);
	if (rc < 0)
		return rc;
	/* an unprivileged gid map needs setgroups denied first */
	rc = put("/proc/self/setgroups", "deny");
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (!map_line(line, sizeof(line), gid))
		return -EINVAL;
	return put("/proc/self/gid_map", line);
}

static long apply(const struct cf_op *op)
{
	long rc;

	switch (op->kind) {
	case 'U':
		return user_ns(op->a, op->b);
	case 'N':
		return sys6(SYS_unshare, CLONE_NEWNS, 0, 0, 0, 0);
	case 'P':
		return sys6(SYS_mount, 0, (long)"/", 0, MS_REC | MS_PRIVATE, 0);
	case 'O':
		return sys6(SYS_mount, (long)"overlay", (long)op->a, (long)"overlay",
			    0, (long)op->b);
	case 'T':
		return sys6(SYS_mount, (long)"tmpfs", (long)op->a, (long)"tmpfs",
			    MS_NOSUID | MS_NODEV, (long)"mode=1777");
	case 'B':
		return sys6(SYS_mount, (long)op->a, (long)op->b, 0,
			    MS_BIND | MS_REC, 0);
	case 'R': {
		struct mount_attr_v0 attr = { MOUNT_ATTR_RDONLY, 0, 0, 0 };

		rc = sys6(SYS_mount, (long)op->a, (long)op->b, 0, MS_BIND | MS_REC, 0);
		if (rc < 0)
			return rc;
		rc = sys6(SYS_mount_setattr, AT_FDCWD, (long)op->b, AT_RECURSIVE,
			  (long)&attr, sizeof(attr));
		if (rc == -ENOSYS)	/* before Linux 5.12: the top alone */
			rc = sys6(SYS_mount, 0, (long)op->b, 0,
				  MS_BIND | MS_REMOUNT | MS_RDONLY, 0);
		return rc;
	}
	case 'r':
		rc = sys6(SYS_mount, (long)op->a, (long)op->b, 0, MS_BIND, 0);
		if (rc < 0)
			return rc;
		return sys6(SYS_mount, 0, (long)op->b, 0,
			    MS_BIND | MS_REMOUNT | MS_RDONLY, 0);
	case 'D':
		rc = sys6(SYS_mkdirat, AT_FDCWD, (long)op->a, 0755, 0, 0);
		return rc == -EEXIST ? 0 : rc;
	case 'V':
		/* pivot_root(".", ".") stacks the old root under the new
		 * one; letting go of it leaves the new root alone */
		rc = sys6(SYS_chdir, (long)op->a, 0, 0, 0, 0);
		if (!rc)
			rc = sys6(SYS_pivot_root, (long)".", (long)".", 0, 0, 0);
		if (!rc)
			rc = sys6(SYS_umount2, (long)".", MNT_DETACH, 0, 0, 0);
		if (!rc)
			rc = sys6(SYS_chdir, (long)"/", 0, 0, 0, 0);
		return rc;
	case 'C':
		return sys6(SYS_chdir, (long)op->a, 0, 0, 0, 0);
	}
	return -EINVAL;
}

long cf_apply(const struct cf_op *ops, int n, const struct cf_op **failed)
{
	for (int i = 0; i < n; i++) {
		long rc = apply(&ops[i]);

		if (rc < 0) {
			*failed = &ops[i];
			return rc;
		}
	}
	return 0;
}

const char *cf_describe(const struct cf_op *op)
{
	switch (op->kind) {
	case 'U': return "user namespace";
	case 'N': return "mount namespace";
	case 'P': return "private mounts";
	case 'O': return "overlay";
	case 'T': return "tmpfs";
	case 'B': return "bind";
	case 'R': case 'r': return "read-only bind";
	case 'D': return "mkdir";
	case 'V': return "pivot_root";
	case 'C': return "chdir";
	}
	return "step";
}

const char *cf_message(char *buf, size_t size, const struct cf_op *op, int err)
{
	if (!op)
		snprintf(buf, size, "confine: %s is not a view", CF_VAR);
	else if (op->kind == 'U' || op->kind == 'N' || op->kind == 'P')
		snprintf(buf, size, "confine: %s: %s", cf_describe(op), strerror(err));
	else
		snprintf(buf, size, "confine: %s '%s': %s", cf_describe(op), op->a,
			 strerror(err));
	return buf;
}
