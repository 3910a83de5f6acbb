/*
 * The O_DIRECT alignment of a file, for short writes on O_DIRECT fds: a
 * short write there must stay a multiple of the file's logical block size,
 * or the kernel answers EINVAL instead of writing fewer bytes.
 *
 * Its own file because <linux/stat.h> (which knows STATX_DIOALIGN) and
 * glibc's <sys/stat.h> both define struct statx.
 */
#include <fcntl.h>
#include <linux/stat.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cc.h"

unsigned cc_dio_align(int fd)
{
#ifdef STATX_DIOALIGN
	struct statx stx;

	memset(&stx, 0, sizeof(stx));
	if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align)
		return stx.stx_dio_offset_align;
#else
	(void)fd;
#endif
	/* kernels before 6.1 cannot say: 512 is the classic sector size */
	return 512;
}
