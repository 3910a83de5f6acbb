// writer: tests/progs/writer.c in Go. Go's runtime makes its own system
// calls, on several threads, without the C library: only the syscall
// backend sees it.
//
// Method: read NEWFILE, create TARGET.tmp (O_EXCL), write it in chunks of
// -chunk bytes with syscall.Write in a loop that retries EINTR and goes on
// after a short write (os.File.Write would hide both), fsync it, close
// it, rename it over TARGET, and fsync the directory. Every failure is
// one line on stderr naming the call, the path and the error, and exit 1
// (the temp file removed); a usage error exits 2.
//
// Each defect option breaks one rule, for the tests to catch:
//
//	-no-dir-fsync    no fsync of the directory after the rename
//	-no-fsync        no fsync of the temp file before the rename
//	-eintr-fatal     an EINTR from write is treated as a failure
//	-short-ignored   a short write is taken as complete
package main

import (
	"flag"
	"fmt"
	"os"
	"syscall"
)

var (
	noDirFsync   = flag.Bool("no-dir-fsync", false, "no fsync of the directory")
	noFsync      = flag.Bool("no-fsync", false, "no fsync of the temp file")
	eintrFatal   = flag.Bool("eintr-fatal", false, "EINTR from write is fatal")
	shortIgnored = flag.Bool("short-ignored", false, "a short write is complete")
	chunk        = flag.Int("chunk", 4096, "bytes per write")
)

func fail(call, path string, err error) {
	fmt.Fprintf(os.Stderr, "writer: %s '%s': %v\n", call, path, err)
	os.Exit(1)
}

func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		want := len(data)
		if want > *chunk {
			want = *chunk
		}
		n, err := syscall.Write(fd, data[:want])
		if err == syscall.EINTR && !*eintrFatal {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return syscall.ENOSPC
		}
		if *shortIgnored {
			n = want
		}
		data = data[n:]
	}
	return nil
}

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: writer [-no-dir-fsync] [-no-fsync] "+
			"[-eintr-fatal] [-short-ignored] [-chunk N] TARGET NEWFILE")
		os.Exit(2)
	}
	flag.Parse()
	if flag.NArg() != 2 || *chunk < 1 {
		flag.Usage()
	}
	target, newfile := flag.Arg(0), flag.Arg(1)
	data, err := os.ReadFile(newfile)
	if err != nil {
		fail("read", newfile, err)
	}
	tmp := target + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0666)
	if err != nil {
		fail("open", tmp, err)
	}
	if err := writeAll(int(f.Fd()), data); err != nil {
		os.Remove(tmp)
		fail("write", tmp, err)
	}
	if !*noFsync {
		if err := f.Sync(); err != nil {
			os.Remove(tmp)
			fail("fsync", tmp, err)
		}
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		fail("close", tmp, err)
	}
	if err := os.Rename(tmp, target); err != nil {
		os.Remove(tmp)
		fail("rename", tmp, err)
	}
	if *noDirFsync {
		return
	}
	dir, err := os.Open(".")
	if err != nil {
		fail("open", ".", err)
	}
	if err := dir.Sync(); err != nil {
		fail("fsync", ".", err)
	}
	if err := dir.Close(); err != nil {
		fail("close", ".", err)
	}
}
