#!/usr/bin/python3
"""redis/redis.py: the setup, driver and checker of examples/apps/redis.toml,
on Debian's redis-server, in the current directory.

  redis.py setup MODE   a server started here saves the key k = "old" and
                        stops: dump.rdb (MODE rdb) or the append-only
                        files in appendonlydir/ (MODE aof)
  redis.py drive MODE   the audited run: a server started here, SET k new,
                        then SAVE (rdb: a new dump.rdb written beside it,
                        fsynced, renamed over it) or nothing more (aof:
                        appendfsync always, the SET is in the log, fsynced,
                        before the server answers it); then SHUTDOWN
                        NOSAVE, and the server's exit status
  redis.py check MODE   the checker, in a crash state's directory: exit 0
                        when redis-check-rdb (or redis-check-aof) accepts
                        the files, a server started on them loads them, and
                        k is "old" or "new" (only "new" once the run had
                        exited 0: CRASHCHECK_EXPECT=new); else one line.
                        An append-only file whose last command is cut
                        short is one redis-check-aof rejects and the
                        server loads without it (aof-load-truncated, on
                        by default): Redis's own recovery from a crash in
                        the middle of an append, so k decides

A driver script in the sense of the crash model: every process it starts
(the server) is traced and faulted with it. It waits for the server by
reading its log from a pipe until it is ready, then talks to it over a
Unix socket in this directory with its own few lines of RESP: no retry,
no poll, and nothing written until the end, so every run makes the same
calls crashcheck counts, in the same order.
"""

import os
import socket
import subprocess
import sys

SOCKET = "redis.sock"


def config(mode):
    """redis-server's arguments: no TCP, a socket here, no automatic
    saves, the persistence MODE asks for."""
    args = ["redis-server", "--port", "0", "--unixsocket", SOCKET,
            "--dir", ".", "--save", "", "--daemonize", "no",
            "--logfile", "", "--loglevel", "notice",
            "--databases", "1"]
    if mode == "aof":
        args += ["--appendonly", "yes", "--appendfsync", "always",
                 "--aof-use-rdb-preamble", "no",
                 "--auto-aof-rewrite-percentage", "0"]
    else:
        args += ["--appendonly", "no"]
    return args


class Server:
    """A redis-server in this directory and a connection to it. Its log
    is read from a pipe until it says it is ready (after loading its
    files), then the socket is connected once; the log is kept, for a
    message. Neither the pipe's reads nor the socket's traffic are calls
    crashcheck counts."""

    def __init__(self, mode):
        self.proc = subprocess.Popen(config(mode), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.log = []
        for line in self.proc.stdout:
            self.log.append(line)
            if b"ready to accept connections" in line.lower():
                break
        else:
            status = self.proc.wait()
            raise RuntimeError(f"redis-server exited {status} before it was "
                               f"ready: {self.last_line()}")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(SOCKET)
        self.buf = b""

    def last_line(self):
        """The server's last line of log that says something."""
        for line in reversed(self.log):
            text = line.decode(errors="replace").strip()
            if text:
                return text.split(" # ", 1)[-1].split(" * ", 1)[-1][:200]
        return "no log"

    def command(self, *words):
        """One command; its reply, as bytes (a bulk string, a status) or
        None (a null bulk string). RuntimeError on an error reply or a
        connection lost."""
        msg = b"*%d\r\n" % len(words) + b"".join(
            b"$%d\r\n%s\r\n" % (len(w), w) for w in
            (x.encode() if isinstance(x, str) else x for x in words))
        self.sock.sendall(msg)
        line = self._line()
        if line[:1] in (b"+", b":"):
            return line[1:]
        if line[:1] == b"-":
            raise RuntimeError(f"{words[0]}: {line[1:].decode(errors='replace')}")
        if line[:1] == b"$":
            n = int(line[1:])
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._more()
            value, self.buf = self.buf[:n], self.buf[n + 2:]
            return value
        raise RuntimeError(f"{words[0]}: unexpected reply {line[:40]!r}")

    def _more(self):
        data = self.sock.recv(65536)
        if not data:
            raise RuntimeError("the server closed the connection")
        self.buf += data

    def _line(self):
        while b"\r\n" not in self.buf:
            self._more()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def stop(self, kill=False):
        """SHUTDOWN NOSAVE (or SIGKILL); the server's exit status, once
        its log is read to the end."""
        if kill:
            self.proc.kill()
        else:
            try:
                self.sock.sendall(b"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n")
                self.sock.recv(1024)        # the server closes as it goes
            except OSError:
                pass
        self.sock.close()
        self.log += self.proc.stdout.readlines()
        self.proc.stdout.close()
        return self.proc.wait()


def setup(mode):
    try:
        server = Server(mode)
        server.command("SET", "k", "old")
        if mode == "rdb":
            server.command("SAVE")
    except (RuntimeError, OSError) as e:
        print(f"redis.py: {e}", file=sys.stderr)
        return 1
    status = server.stop()
    if status != 0:
        print(f"redis.py: redis-server exited {status}: {server.last_line()}",
              file=sys.stderr)
    return status


def drive(mode):
    """The run; on failure one line, with the server's last word."""
    try:
        server = Server(mode)
    except (RuntimeError, OSError) as e:
        print(f"redis.py: {e}", file=sys.stderr)
        return 1
    try:
        server.command("SET", "k", "new")
        if mode == "rdb":
            server.command("SAVE")
    except (RuntimeError, OSError) as e:
        server.stop(kill=True)
        print(f"redis.py: {e} (redis-server: {server.last_line()})",
              file=sys.stderr)
        return 1
    status = server.stop()
    if status != 0:
        print(f"redis.py: redis-server exited {status}: {server.last_line()}",
              file=sys.stderr)
        return 1
    return 0


def tool_said(out):
    """The line of redis-check-rdb's or redis-check-aof's output that
    names the damage."""
    lines = [li.strip() for li in out.decode(errors="replace").splitlines()
             if li.strip()]
    for i, li in enumerate(lines):
        if li == "--- RDB ERROR DETECTED ---" and i + 1 < len(lines):
            return lines[i + 1][:200]
    for li in lines:
        if "Expected" in li or "Bad file format" in li or "not valid" in li:
            return li[:200]
    return lines[-1][:200] if lines else ""


# What redis-server logs when it loads an append-only file whose last
# command a crash cut short: Redis's documented recovery (aof-load-truncated
# yes, the default), which redis-check-aof reports as damage
TRUNCATED_LOADED = b"loaded anyway because aof-load-truncated is enabled"


def check(mode):
    expect = os.environ.get("CRASHCHECK_EXPECT", "new")
    if mode == "rdb":
        if not os.path.exists("dump.rdb"):
            print("dump.rdb is missing")
            return 1
        tool = ["redis-check-rdb", "dump.rdb"]
    else:
        manifest = "appendonlydir/appendonly.aof.manifest"
        if not os.path.exists(manifest):
            print(f"{manifest} is missing")
            return 1
        tool = ["redis-check-aof", manifest]
    run = subprocess.run(tool, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    damage = f"{tool[0]} failed: {tool_said(run.stdout)}" \
        if run.returncode != 0 else ""
    if damage and mode == "rdb":
        print(damage)
        return 1
    try:
        server = Server(mode)
    except (RuntimeError, OSError) as e:
        print(damage or f"redis-server cannot load the state: {e}")
        return 1
    if damage and not any(TRUNCATED_LOADED in line for line in server.log):
        server.stop()
        print(damage)
        return 1
    try:
        value = server.command("GET", "k")
    except (RuntimeError, OSError) as e:
        print(f"GET k failed: {e}")
        return 1
    finally:
        server.stop()
    if value == b"new" or (value == b"old" and expect == "old-or-new"):
        return 0
    print(f"k is {value!r} (CRASHCHECK_EXPECT={expect})"
          + (" after redis-server cut a torn last command" if damage else ""))
    return 1


def main(argv):
    if len(argv) != 3 or argv[1] not in ("setup", "drive", "check") \
            or argv[2] not in ("rdb", "aof"):
        print("usage: redis.py setup|drive|check rdb|aof", file=sys.stderr)
        return 2
    return {"setup": setup, "drive": drive, "check": check}[argv[1]](argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
