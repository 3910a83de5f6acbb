/*
 * The snapshot store: content-addressed blobs under CRASHCHECK_SNAPDIR,
 * written aside and renamed into place, each stored once; and the
 * scratch's budget (CRASHCHECK_LIMIT), the notes to the harness
 * (CRASHCHECK_NOTE) and stopping a run the scratch cannot hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "record.h"

/*
 * Hashes this process has seen stored, so that a blob written again (a
 * whole snapshot of unchanged content, a block of zeros) costs no lookup in
 * SNAPDIR. A slot holds a whole hash or 0; a lost race only costs a lookup.
 */
#define STORED_NR 4096
static uint64_t stored[STORED_NR];

static bool stored_has(uint64_t h)
{
	return h && __atomic_load_n(&stored[h % STORED_NR], __ATOMIC_RELAXED) == h;
}

static void stored_add(uint64_t h)
{
	__atomic_store_n(&stored[h % STORED_NR], h, __ATOMIC_RELAXED);
}

/* ---- the scratch: its budget, and when it is full ---------------------- */

/* one line appended to CRASHCHECK_NOTE, which the harness reads after the run */
static void note_line(const char *fmt, va_list ap)
{
	char line[CC_PATH_MAX + 256];
	int fd, n;

	if (!cc.note)
		return;
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	fd = cc_sys_open(cc.note, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	cc_sys_write_all(fd, line, n);
	cc_sys_close(fd);
}

/*
 * The run cannot be recorded within what the harness gave it: say why in
 * CRASHCHECK_NOTE, then kill the run's process group: the harness sets a
 * note only for a run it started in a session of its own. The harness
 * reports such a run as its own failure (harness-error), never as the
 * program's: a run stopped half way says nothing about it. Without a
 * note, the reason goes to stderr and only this process is killed.
 *
 * Under the supervisor this runs in the supervisor, not in the program:
 * it knows every process of the program (its tracees, in whatever
 * process group or session they put themselves), kills those
 * (cc.stop_program), and then itself alone, whoever started it, with or
 * without a note; its SIGKILL is the run's end the harness sees, as the
 * preload's.
 */
void cc_stop_run(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (cc.note)
		note_line(fmt, ap);
	else
		cc_vwarn(fmt, ap);
	va_end(ap);
	if (cc.stop_program)
		cc.stop_program();
	else if (cc.note)
		syscall(SYS_kill, 0, SIGKILL);
	syscall(SYS_kill, syscall(SYS_getpid), SIGKILL);
	syscall(SYS_exit_group, 137);
	_exit(137);
}

static void stop_full(const char *what, const char *path, int err)
{
	cc_stop_run("full %s %s %s", err == EDQUOT ? "EDQUOT" : "ENOSPC", what,
		    path);
}

/* a snapshot's write to PATH (written aside, removed here) failed: a full
 * scratch stops the run, with room made for its note first; anything else
 * only loses the snapshot */
void cc_store_failed(const char *what, const char *path, int err)
{
	syscall(SYS_unlinkat, AT_FDCWD, path, 0);
	if (err == ENOSPC || err == EDQUOT)
		stop_full(what, path, err);
	cc_warn("%s snapshot '%s': %s", what, path, strerror(err));
}

/* N more bytes of snapshots to store: past CRASHCHECK_LIMIT the run stops */
void cc_charge(uint64_t n)
{
	uint64_t now;

	if (!cc.limit || !n)
		return;
	now = __atomic_add_fetch(&cc.sh->stored, n, __ATOMIC_RELAXED);
	if (now > cc.limit)
		cc_stop_run("limit-stored %llu", (unsigned long long)cc.limit);
}

/* the file NAME, of SIZE bytes, is to be snapshotted */
void cc_check_size(const char *name, long long size)
{
	if (cc.limit && size > 0 && (unsigned long long)size > cc.limit)
		cc_stop_run("limit-file %llu %lld %s", (unsigned long long)cc.limit,
			    size, name);
}

static void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	note_line(fmt, ap);
	va_end(ap);
}

/*
 * A call of the program on the work directory failed with ENOSPC or
 * EDQUOT that no rule planned: the scratch itself is full, and the
 * program's answer to it is not what the case was about. Noted once per
 * process (a program may retry for ever); the harness decides, for a spec
 * that runs on a full disk on purpose expects it.
 */
static bool noted;	/* cc_note_failure's, once a process */

void cc_note_failure(const struct cc_rec *r, int err)
{
	if (noted || !cc.note || (err != ENOSPC && err != EDQUOT) || r->fired ||
	    !r->path[0] || !(cc_under_watch(r->path) || !strcmp(r->path, cc.watch)))
		return;
	noted = true;
	note("program-full %s %s %s", err == EDQUOT ? "EDQUOT" : "ENOSPC",
	     call_table[r->call].name, r->path);
}

/* Store LEN bytes of DATA once under SNAPDIR/<hash>; put the hash in HEX. */
int cc_store_blob(const void *data, size_t len, char hex[17])
{
	char path[CC_PATH_MAX], tmp[CC_PATH_MAX];
	uint64_t h = cc_hash(data, len);
	int out = -1, ret = -1;

	cc_hash_hex(h, hex);
	if (stored_has(h))
		return 0;
	snprintf(path, sizeof(path), "%s/%s", cc.snapdir, hex);
	if (syscall(SYS_faccessat, AT_FDCWD, path, F_OK) == 0) {
		ret = 0;
		goto out;
	}
	cc_charge(len);
	/* write aside and rename, so a reader never sees half a snapshot */
	/* a thread id is unique among the live threads of every process */
	snprintf(tmp, sizeof(tmp), "%s/.%s.%ld", cc.snapdir, hex,
		 (long)syscall(SYS_gettid));
	out = cc_sys_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0) {
		cc_store_failed("open", tmp, errno);
		goto out;
	}
	if (cc_sys_write_all(out, data, len) < 0) {
		cc_store_failed("write", tmp, errno);
		goto out;
	}
	if (syscall(SYS_renameat, AT_FDCWD, tmp, AT_FDCWD, path) < 0) {
		cc_store_failed("rename", tmp, errno);
		goto out;
	}
	ret = 0;
out:
	if (!ret)
		stored_add(h);
	if (out >= 0)
		cc_sys_close(out);
	return ret;
}

/* a blob written aside as TMP, whose content hashes to H, put in its place */
int cc_place_blob(const char *tmp, uint64_t h, char hex[17])
{
	char path[CC_PATH_MAX];

	cc_hash_hex(h, hex);
	snprintf(path, sizeof(path), "%s/%s", cc.snapdir, hex);
	if (stored_has(h) || syscall(SYS_faccessat, AT_FDCWD, path, F_OK) == 0) {
		syscall(SYS_unlinkat, AT_FDCWD, tmp, 0);
		stored_add(h);
		return 0;
	}
	if (syscall(SYS_renameat, AT_FDCWD, tmp, AT_FDCWD, path) < 0) {
		cc_store_failed("rename", tmp, errno);
		return -1;
	}
	stored_add(h);
	return 0;
}

long cc_pwrite_all(int fd, const char *buf, size_t len, long long off)
{
	while (len) {
		long n = syscall(SYS_pwrite64, fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			return -1;
		}
		buf += n;
		len -= n;
		off += n;
	}
	return 0;
}

long cc_pread_some(int fd, char *buf, size_t len, long long off)
{
	long n;

	do
		n = syscall(SYS_pread64, fd, buf, len, off);
	while (n < 0 && errno == EINTR);
	return n;
}

/* STREAM_MIN, CHUNK: record.h */
static const uint8_t zeros[1 << 16];

static void hash_zeros(struct cc_hasher *h, long long n)
{
	while (n > 0) {
		size_t k = n < (long long)sizeof(zeros) ? (size_t)n : sizeof(zeros);

		cc_hash_feed(h, zeros, k);
		n -= k;
	}
}

/*
 * Snapshot SIZE bytes of the regular file FD, a chunk at a time, into a
 * blob; its hash in HEX, the bytes it holds in *GOT (fewer when the file
 * shrank meanwhile). -1: nothing stored (the reason was said).
 */
int cc_store_stream(int fd, long long size, char hex[17], long long *got)
{
	char tmp[CC_PATH_MAX], *buf = NULL;
	struct cc_hasher h;
	long long off = 0;
	int out = -1, ret = -1;

	*got = 0;
	snprintf(tmp, sizeof(tmp), "%s/.stream.%ld", cc.snapdir,
		 (long)syscall(SYS_gettid));
	out = cc_sys_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		cc_store_failed("open", tmp, errno);
		return -1;
	}
	buf = malloc(CHUNK);
	if (!buf)
		goto out;
	cc_hash_init(&h);
	while (off < size) {
		long long data = syscall(SYS_lseek, fd, off, SEEK_DATA), hole;

		if (data < 0 && errno == ENXIO) {
			/* a hole to the end, or the file shrank */
			struct stat st;

			if (cc_sys_fstat(fd, &st) == 0 && st.st_size < size)
				size = st.st_size > off ? st.st_size : off;
			data = hole = size;
		} else if (data < 0) {
			data = off;	/* no SEEK_DATA here: read it all */
			hole = size;
		} else {
			if (data > size)
				data = size;
			hole = syscall(SYS_lseek, fd, data, SEEK_HOLE);
			if (hole < 0 || hole > size)
				hole = size;
		}
		hash_zeros(&h, data - off);
		off = data;
		while (off < hole) {
			long n = cc_pread_some(fd, buf, hole - off < CHUNK ? hole - off : CHUNK,
					    off);

			if (n < 0)
				goto out;
			if (n == 0) {
				size = hole = off;	/* shrank under us */
				break;
			}
			cc_charge(n);
			cc_hash_feed(&h, buf, n);
			if (cc_pwrite_all(out, buf, n, off) < 0) {
				cc_store_failed("write", tmp, errno);
				goto out;
			}
			off += n;
		}
	}
	if (syscall(SYS_ftruncate, out, off) < 0) {
		cc_store_failed("truncate", tmp, errno);
		goto out;
	}
	cc_sys_close(out);
	out = -1;
	*got = off;
	ret = cc_place_blob(tmp, cc_hash_end(&h), hex);
out:
	free(buf);
	if (out >= 0) {
		cc_sys_close(out);
		syscall(SYS_unlinkat, AT_FDCWD, tmp, 0);
	}
	return ret;
}

void cc_store_reset(void)
{
	memset(stored, 0, sizeof(stored));
	noted = false;
}
