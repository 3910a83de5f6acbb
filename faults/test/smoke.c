/*
 * smoke: a small, careful writer for the preload library's smoke test.
 *
 * Method. Each mode replaces DIR/target with known content through a
 * different family of calls, the way a correct program does: write to
 * target.tmp, retry EINTR and short writes, check every fsync, close and
 * fclose, rename, fsync the directory. Any hard error is one line on stderr
 * and exit 1, so a planned fault shows as exit 1 with the right errno, a
 * transient one as exit 0 with the full content.
 *
 *   smoke write DIR    openat, write (three pieces), fsync, close, rename
 *   smoke stdio DIR    fopen, fwrite, fputs, fputc, fprintf, fflush, fclose
 *   smoke mmap DIR     open, ftruncate, posix_fallocate, mmap, msync, munmap
 *   smoke vec DIR      creat, writev, pwrite, pwritev, fdatasync,
 *                      sync_file_range, renameat2, unlinkat, truncate,
 *                      fallocate, syncfs, sync
 *   smoke direct DIR   O_DIRECT write of 8192 bytes (exit 77 if unsupported)
 *   smoke append FILE  one O_APPEND write of "x\n"
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define SIZE 4096

static char content[SIZE];
static char tmp[4096], target[4096], scratch[4096];

static int error_errno(const char *what, const char *path)
{
	fprintf(stderr, "smoke: %s '%s': %s\n", what, path, strerror(errno));
	return 1;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		buf += n;
		len -= n;
	}
	return 0;
}

static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	int err = 0;

	if (fd < 0)
		return error_errno("open", dir);
	if (fsync(fd) < 0)
		err = error_errno("fsync", dir);
	if (close(fd) < 0 && !err)
		err = error_errno("close", dir);
	return err;
}

static int finish(const char *dir)
{
	if (rename(tmp, target) < 0)
		return error_errno("rename", tmp);
	return sync_dir(dir);
}

static int mode_write(const char *dir)
{
	int fd = openat(AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	int err = 0;

	if (fd < 0)
		return error_errno("openat", tmp);
	/* three pieces, so plans can aim at write#2 and write#3 */
	if (write_all(fd, content, 1500) < 0 ||
	    write_all(fd, content + 1500, 1500) < 0 ||
	    write_all(fd, content + 3000, SIZE - 3000) < 0) {
		err = error_errno("write", tmp);
		goto out;
	}
	if (fsync(fd) < 0) {
		err = error_errno("fsync", tmp);
		goto out;
	}
out:
	if (close(fd) < 0 && !err)
		err = error_errno("close", tmp);
	return err ? err : finish(dir);
}

static int mode_stdio(const char *dir)
{
	FILE *f = fopen(tmp, "w");
	char three[4];
	int err = 0;

	if (!f)
		return error_errno("fopen", tmp);
	memcpy(three, content + SIZE - 7, 3);
	three[3] = '\0';
	if (fwrite(content, 1, SIZE - 7, f) != SIZE - 7 ||
	    fputs(three, f) == EOF || fputc(content[SIZE - 4], f) == EOF ||
	    fprintf(f, "%c%.2s", content[SIZE - 3], content + SIZE - 2) < 0) {
		err = error_errno("write", tmp);
		fclose(f);
		return err;
	}
	/* stdio holds the bytes until fflush: its failure is the write's */
	if (fflush(f) == EOF) {
		err = error_errno("fflush", tmp);
		fclose(f);
		return err;
	}
	if (fsync(fileno(f)) < 0) {
		err = error_errno("fsync", tmp);
		fclose(f);
		return err;
	}
	if (fclose(f) == EOF)
		return error_errno("fclose", tmp);
	return finish(dir);
}

static int mode_mmap(const char *dir)
{
	int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0644), err = 0, rc;
	char *p = MAP_FAILED;

	if (fd < 0)
		return error_errno("open", tmp);
	if (ftruncate(fd, SIZE) < 0) {
		err = error_errno("ftruncate", tmp);
		goto out;
	}
	rc = posix_fallocate(fd, 0, SIZE);
	if (rc) {
		errno = rc;
		err = error_errno("posix_fallocate", tmp);
		goto out;
	}
	p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = error_errno("mmap", tmp);
		goto out;
	}
	memcpy(p, content, SIZE);
	if (msync(p, SIZE, MS_SYNC) < 0) {
		err = error_errno("msync", tmp);
		goto out;
	}
out:
	if (p != MAP_FAILED && munmap(p, SIZE) < 0 && !err)
		err = error_errno("munmap", tmp);
	if (close(fd) < 0 && !err)
		err = error_errno("close", tmp);
	return err ? err : finish(dir);
}

static int mode_vec(const char *dir)
{
	struct iovec iov[3] = {
		{ content, 1000 }, { content + 1000, 24 }, { content + 1024, 1024 },
	};
	int fd = creat(tmp, 0644), err = 0, dfd = -1;
	ssize_t n;
	size_t done = 0;

	if (fd < 0)
		return error_errno("creat", tmp);
	/* writev may be short: finish the rest with pwrite */
	n = writev(fd, iov, 3);
	while (n < 0 && errno == EINTR)
		n = writev(fd, iov, 3);
	if (n < 0) {
		err = error_errno("writev", tmp);
		goto out;
	}
	done = n;
	while (done < 2048) {
		n = pwrite(fd, content + done, 2048 - done, done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = error_errno("pwrite", tmp);
			goto out;
		}
		done += n;
	}
	while (done < SIZE) {
		struct iovec v = { content + done, SIZE - done };
		n = pwritev(fd, &v, 1, done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = error_errno("pwritev", tmp);
			goto out;
		}
		done += n;
	}
	if (sync_file_range(fd, 0, SIZE, SYNC_FILE_RANGE_WRITE) < 0) {
		err = error_errno("sync_file_range", tmp);
		goto out;
	}
	if (fallocate(fd, 0, 0, SIZE) < 0) {
		err = error_errno("fallocate", tmp);
		goto out;
	}
	if (fdatasync(fd) < 0) {
		err = error_errno("fdatasync", tmp);
		goto out;
	}
out:
	if (close(fd) < 0 && !err)
		err = error_errno("close", tmp);
	if (err)
		return err;
	/* a scratch file to truncate and unlink */
	fd = open(scratch, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return error_errno("open", scratch);
	if (close(fd) < 0)
		return error_errno("close", scratch);
	if (truncate(scratch, 10) < 0)
		return error_errno("truncate", scratch);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return error_errno("open", dir);
	if (unlinkat(dfd, "scratch", 0) < 0)
		err = error_errno("unlinkat", scratch);
	else if (renameat2(dfd, "target.tmp", dfd, "target", 0) < 0)
		err = error_errno("renameat2", tmp);
	else if (syncfs(dfd) < 0)
		err = error_errno("syncfs", dir);
	close(dfd);
	sync();
	return err;
}

static int mode_direct(const char *dir)
{
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644), err = 0;
	size_t done = 0;
	void *buf;

	if (fd < 0 && errno == EINVAL) {
		printf("smoke: O_DIRECT unsupported on this filesystem\n");
		return 77;
	}
	if (fd < 0)
		return error_errno("open", tmp);
	if (posix_memalign(&buf, 4096, 2 * SIZE)) {
		close(fd);
		return error_errno("posix_memalign", tmp);
	}
	memcpy(buf, content, SIZE);
	memcpy((char *)buf + SIZE, content, SIZE);
	while (done < 2 * SIZE) {
		ssize_t n = write(fd, (char *)buf + done, 2 * SIZE - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = error_errno("write", tmp);
			break;
		}
		done += n;
	}
	free(buf);
	if (!err && fsync(fd) < 0)
		err = error_errno("fsync", tmp);
	if (close(fd) < 0 && !err)
		err = error_errno("close", tmp);
	return err ? err : finish(dir);
}

static int mode_append(const char *file)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_APPEND, 0644), err = 0;

	if (fd < 0)
		return error_errno("open", file);
	if (write_all(fd, "x\n", 2) < 0)
		err = error_errno("write", file);
	if (close(fd) < 0 && !err)
		err = error_errno("close", file);
	return err;
}

int main(int argc, char **argv)
{
	const char *mode, *dir;

	if (argc != 3) {
		fprintf(stderr, "usage: smoke write|stdio|mmap|vec|direct|append DIR\n");
		return 2;
	}
	mode = argv[1];
	dir = argv[2];
	for (int i = 0; i < SIZE; i++)
		content[i] = 'a' + (i * 7 + i / 26) % 26;
	snprintf(tmp, sizeof(tmp), "%s/target.tmp", dir);
	snprintf(target, sizeof(target), "%s/target", dir);
	snprintf(scratch, sizeof(scratch), "%s/scratch", dir);
	if (!strcmp(mode, "write"))
		return mode_write(dir);
	if (!strcmp(mode, "stdio"))
		return mode_stdio(dir);
	if (!strcmp(mode, "mmap"))
		return mode_mmap(dir);
	if (!strcmp(mode, "vec"))
		return mode_vec(dir);
	if (!strcmp(mode, "direct"))
		return mode_direct(dir);
	if (!strcmp(mode, "append"))
		return mode_append(dir);
	fprintf(stderr, "smoke: unknown mode '%s'\n", mode);
	return 2;
}
