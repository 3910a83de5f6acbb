/*
 * ops: make exactly the calls a fault-library test names, in order, and
 * print what each one returned.
 *
 * Method: the arguments are a list of steps, each a word and its operands
 * (see usage below). Every step prints one line, "<step> <operands> =
 * <ret>", followed by the errno's name when the call reported failure, so
 * a test checks what the program observed rather than what the trace
 * claims. A failed step never stops the list: the test decides what a
 * failure means.
 *
 * The data written is recognisable: every buffer (one per write, pwrite,
 * fwrite, or per iovec of a writev) is filled with the next letter of
 * a..z, so after a crash or a short write the file's content shows which
 * calls reached it and how many of their bytes.
 *
 * stdout is unbuffered and written by printf: glibc's stdio writes through
 * its internal write, not the interposable one, and we never call
 * fflush(stdout), so the program's own output is never counted as a call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#define MAX_FDS 16
#define MAX_IOV 16

static const char usage[] =
	"usage: ops STEP...\n"
	"  open PATH FLAGS     open(2); FLAGS: comma list of r w rw creat excl\n"
	"                      trunc append sync dsync direct directory\n"
	"  openat PATH FLAGS   openat(AT_FDCWD, ...)\n"
	"  use I               make the I-th opened fd (from 0) current\n"
	"  write N             write(2) N bytes\n"
	"  pwrite N OFF        pwrite(2) N bytes at OFF\n"
	"  writev N,N,...      writev(2), one iovec per size\n"
	"  fopen PATH MODE     fopen(3)\n"
	"  fwrite N            fwrite(3) N bytes (size 1, N items)\n"
	"  fflush | fclose     on the current stream\n"
	"  fsync | fdatasync | close   on the current fd\n"
	"  ftruncate LEN       on the current fd\n"
	"  mmap LEN            MAP_SHARED read-write mapping of the current fd,\n"
	"                      then fill it with the next letter\n"
	"  msync sync|async    msync(2) the whole mapping\n"
	"  munmap\n"
	"  rename OLD NEW      rename(2)\n"
	"  renameat OLD NEW    renameat(AT_FDCWD, OLD, AT_FDCWD, NEW)\n"
	"  link OLD NEW        link(2)\n"
	"  closerange          close_range(2) every descriptor from 3 on: no\n"
	"                      backend sees it (not a call of calls.def)\n"
	"  dioalign            print the O_DIRECT offset alignment of the current\n"
	"                      fd (statx STATX_DIOALIGN; 0 when unknown)\n"
	"  fork                the child runs the remaining steps; the parent\n"
	"                      waits and exits with the child's status\n"
	"  exit CODE           exit(CODE)\n"
	"  kill SIG            raise(SIG)\n";

static int fds[MAX_FDS];
static int nfds;
static int fd = -1;		/* the current fd */
static FILE *fp;		/* the current stream */
static char *map;		/* the current mapping */
static size_t maplen;		/* its length in bytes */
static int letter;		/* next fill letter, 0 = 'a' */

static void die_usage(const char *problem, const char *arg)
{
	fprintf(stderr, "ops: %s '%s'\n%s", problem, arg, usage);
	exit(2);
}

static unsigned long number(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end)
		die_usage("bad number", s);
	return v;
}

static int open_flags(const char *spec)
{
	static const struct { const char *name; int flag; } names[] = {
		{ "r", O_RDONLY }, { "w", O_WRONLY }, { "rw", O_RDWR },
		{ "creat", O_CREAT }, { "excl", O_EXCL }, { "trunc", O_TRUNC },
		{ "append", O_APPEND }, { "sync", O_SYNC }, { "dsync", O_DSYNC },
		{ "direct", O_DIRECT }, { "directory", O_DIRECTORY },
	};
	char *copy = strdup(spec), *save = NULL;
	int flags = 0;

	if (!copy) {
		perror("ops: strdup");
		exit(1);
	}
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(w, names[i].name))
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			die_usage("unknown open flag", w);
		flags |= names[i].flag;
	}
	free(copy);
	return flags;
}

/* An aligned buffer of N bytes of the next letter (O_DIRECT needs the
 * alignment; 4096 covers every logical block size Linux uses). */
static char *fill(size_t n)
{
	void *buf;

	if (posix_memalign(&buf, 4096, n ? n : 1)) {
		fprintf(stderr, "ops: out of memory for %zu bytes\n", n);
		exit(1);
	}
	memset(buf, 'a' + letter++ % 26, n);
	return buf;
}

/* Print "<label> = <ret>" and, when the call failed, the errno's name. */
static void report(const char *label, long ret, int failed, int err)
{
	if (failed) {
		const char *name = err ? strerrorname_np(err) : NULL;

		printf("%s = %ld %s\n", label, ret, name ? name : "errno-unset");
	} else {
		printf("%s = %ld\n", label, ret);
	}
}

static long dio_align(void)
{
#ifdef STATX_DIOALIGN
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN))
		return stx.stx_dio_offset_align;
#endif
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	for (int i = 1; i < argc; ) {
		const char *op = argv[i];
		char label[512];
		long ret = 0;
		int failed = 0, nargs;

		if (!strcmp(op, "open") || !strcmp(op, "openat") ||
		    !strcmp(op, "pwrite") || !strcmp(op, "fopen") ||
		    !strcmp(op, "rename") || !strcmp(op, "renameat") ||
		    !strcmp(op, "link"))
			nargs = 2;
		else if (!strcmp(op, "use") || !strcmp(op, "write") ||
			 !strcmp(op, "writev") || !strcmp(op, "fwrite") ||
			 !strcmp(op, "ftruncate") || !strcmp(op, "mmap") ||
			 !strcmp(op, "msync") || !strcmp(op, "exit") ||
			 !strcmp(op, "kill"))
			nargs = 1;
		else if (!strcmp(op, "fflush") || !strcmp(op, "fclose") ||
			 !strcmp(op, "fsync") || !strcmp(op, "fdatasync") ||
			 !strcmp(op, "close") || !strcmp(op, "munmap") ||
			 !strcmp(op, "dioalign") || !strcmp(op, "fork") ||
			 !strcmp(op, "closerange"))
			nargs = 0;
		else
			die_usage("unknown step", op);
		if (i + nargs >= argc)
			die_usage("missing operand of", op);
		snprintf(label, sizeof(label), "%s%s%s%s%s", op,
			 nargs > 0 ? " " : "", nargs > 0 ? argv[i + 1] : "",
			 nargs > 1 ? " " : "", nargs > 1 ? argv[i + 2] : "");
		const char *a1 = nargs > 0 ? argv[i + 1] : NULL;
		const char *a2 = nargs > 1 ? argv[i + 2] : NULL;
		i += 1 + nargs;

		errno = 0;
		if (!strcmp(op, "open") || !strcmp(op, "openat")) {
			int flags = open_flags(a2);

			if (nfds == MAX_FDS)
				die_usage("too many open steps at", op);
			ret = op[4] ? openat(AT_FDCWD, a1, flags, 0644)
				    : open(a1, flags, 0644);
			failed = ret < 0;
			if (!failed)
				fd = fds[nfds++] = ret;
		} else if (!strcmp(op, "use")) {
			unsigned long k = number(a1);

			if (k >= (unsigned long)nfds)
				die_usage("no such opened fd", a1);
			ret = fd = fds[k];
		} else if (!strcmp(op, "write")) {
			size_t n = number(a1);
			char *buf = fill(n);

			ret = write(fd, buf, n);
			failed = ret < 0;
			free(buf);
		} else if (!strcmp(op, "pwrite")) {
			size_t n = number(a1);
			char *buf = fill(n);

			ret = pwrite(fd, buf, n, number(a2));
			failed = ret < 0;
			free(buf);
		} else if (!strcmp(op, "writev")) {
			struct iovec iov[MAX_IOV];
			int cnt = 0;
			char *copy = strdup(a1), *save = NULL;

			for (char *w = strtok_r(copy, ",", &save); w;
			     w = strtok_r(NULL, ",", &save)) {
				if (cnt == MAX_IOV)
					die_usage("too many iovecs in", a1);
				iov[cnt].iov_len = number(w);
				iov[cnt].iov_base = fill(iov[cnt].iov_len);
				cnt++;
			}
			ret = writev(fd, iov, cnt);
			failed = ret < 0;
			while (cnt--)
				free(iov[cnt].iov_base);
			free(copy);
		} else if (!strcmp(op, "fopen")) {
			fp = fopen(a1, a2);
			failed = !fp;
			ret = failed ? 0 : fileno(fp);
		} else if (!strcmp(op, "fwrite")) {
			size_t n = number(a1);
			char *buf = fill(n);

			ret = fwrite(buf, 1, n, fp);
			failed = (size_t)ret < n;
			free(buf);
		} else if (!strcmp(op, "fflush")) {
			ret = fflush(fp);
			failed = ret == EOF;
		} else if (!strcmp(op, "fclose")) {
			ret = fclose(fp);
			failed = ret == EOF;
			fp = NULL;
		} else if (!strcmp(op, "fsync")) {
			ret = fsync(fd);
			failed = ret < 0;
		} else if (!strcmp(op, "fdatasync")) {
			ret = fdatasync(fd);
			failed = ret < 0;
		} else if (!strcmp(op, "close")) {
			ret = close(fd);
			failed = ret < 0;
		} else if (!strcmp(op, "ftruncate")) {
			ret = ftruncate(fd, number(a1));
			failed = ret < 0;
		} else if (!strcmp(op, "mmap")) {
			size_t n = number(a1);
			void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
				       MAP_SHARED, fd, 0);

			failed = p == MAP_FAILED;
			ret = failed ? -1 : 0;
			if (!failed) {
				map = p;
				maplen = n;
				memset(map, 'a' + letter++ % 26, n);
			}
		} else if (!strcmp(op, "msync")) {
			int how = !strcmp(a1, "sync") ? MS_SYNC :
				  !strcmp(a1, "async") ? MS_ASYNC : -1;

			if (how < 0)
				die_usage("msync takes sync or async, not", a1);
			ret = msync(map, maplen, how);
			failed = ret < 0;
		} else if (!strcmp(op, "munmap")) {
			ret = munmap(map, maplen);
			failed = ret < 0;
			map = NULL;
		} else if (!strcmp(op, "rename")) {
			ret = rename(a1, a2);
			failed = ret < 0;
		} else if (!strcmp(op, "renameat")) {
			ret = renameat(AT_FDCWD, a1, AT_FDCWD, a2);
			failed = ret < 0;
		} else if (!strcmp(op, "link")) {
			ret = link(a1, a2);
			failed = ret < 0;
		} else if (!strcmp(op, "closerange")) {
			ret = close_range(3, ~0U, 0);
			failed = ret < 0;
			nfds = 0;
			fd = -1;
		} else if (!strcmp(op, "dioalign")) {
			ret = dio_align();
		} else if (!strcmp(op, "fork")) {
			pid_t pid = fork();
			int status;

			if (pid < 0) {
				report(label, -1, 1, errno);
				return 1;
			}
			if (pid == 0) {
				/* the child says so and runs the rest */
				report(label, 0, 0, 0);
				continue;
			}
			if (waitpid(pid, &status, 0) < 0) {
				perror("ops: waitpid");
				return 1;
			}
			if (WIFSIGNALED(status)) {
				printf("child killed by %s\n",
				       sigabbrev_np(WTERMSIG(status)));
				return 128 + WTERMSIG(status);
			}
			printf("child exited %d\n", WEXITSTATUS(status));
			return WEXITSTATUS(status);
		} else if (!strcmp(op, "exit")) {
			exit((int)number(a1));
		} else if (!strcmp(op, "kill")) {
			raise((int)number(a1));
		}
		report(label, ret, failed, errno);
	}
	return 0;
}
