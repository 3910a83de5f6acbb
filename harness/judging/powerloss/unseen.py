"""Changes to the tree that no intercepted call accounts for
(explorer.unseen()): a mixin of the replay's world, which notes them as
it replays when its audit list is not None."""

from __future__ import annotations

import os

from .records import DATA_CALLS, NAME_CALLS, OPEN_CALLS, _is_file


class Audit:
    """The unseen-change bookkeeping of replay.World."""

    def _unseen(self, path, what, rec, key):
        """Note a change no call of REC accounts for: KEY is
        ("name", dino, name) or ("content", ino), for excuse()."""
        n = rec.get("n")
        self.audit.append({"path": path, "what": what, "seq": rec["seq"],
                           "at": f"{rec['call']}#{n}" if "call" in rec
                           else "start", "key": key, "pid": rec.get("pid")})

    def excuse(self, rec):
        """Drop the unseen changes noted at earlier records of other
        processes that REC's call may have made: that call was in flight
        when their snapshot was taken, its record numbered after it."""
        pid = rec.get("pid")
        if not self.audit or not isinstance(pid, int):
            return
        names = None
        ino = self._target_ino(rec)
        keep = []
        for u in self.audit:
            if isinstance(u["pid"], int) and u["pid"] != pid:
                if u["key"][0] == "content":
                    if u["key"][1] == ino and (
                            rec.get("call") in DATA_CALLS
                            or rec.get("call") in OPEN_CALLS):
                        continue
                else:
                    if names is None:
                        names = self._accounts_names(rec)
                    if u["key"][1:] in names:
                        continue
            keep.append(u)
        self.audit = keep

    def settled(self):
        """The unseen changes noted, once per path and kind, in trace
        order, without excuse()'s keys."""
        out = []
        for u in self.audit:
            if not any(o["path"] == u["path"] and o["what"] == u["what"]
                       for o in out):
                out.append({k: u[k] for k in ("path", "what", "seq", "at")})
        return out

    def _accounts_data(self, rec, ino):
        """Whether REC's call may have changed the content of file INO:
        a call on it that changes data (a write, a copy into it, a
        truncating open), a file written through stdio (libc writes its
        buffer out when it likes) or through a shared mapping."""
        if ino in self.stdio_inos or ino in self.mapped_inos:
            return True
        name = rec.get("call")
        return self._rec_target == ino and (name in DATA_CALLS
                                            or name in OPEN_CALLS)

    def _accounts_names(self, rec):
        """{(dino, name)}: the names REC's call may have changed."""
        name, flags = rec.get("call"), rec.get("flags") or ()
        if name in OPEN_CALLS:
            paths = [rec.get("path")] if {"O_CREAT", "O_TRUNC"} & set(
                flags) else []
        elif name in ("rename", "renameat", "renameat2"):
            paths = [rec.get("path"), rec.get("path2")]
        elif name in ("link", "linkat"):
            paths = [rec.get("path2")]
        elif name in NAME_CALLS:
            paths = [rec.get("path")]
        else:
            paths = []
        out = set()
        for p in paths:
            rel = self._rel(p)
            if not rel:
                continue
            parent, base = os.path.split(rel)
            if not parent:
                out.add((self.root, base))
                continue
            e = self.lookup(self.vis, parent)
            if e is not None and not _is_file(e) and e[0] == "d":
                out.add((e[1], base))
        return out

    def on_disk(self, workdir, seq):
        """What the tree under WORKDIR holds that the replay's last view
        of it does not (or the other way round): the changes made after
        the last snapshot that showed them by calls no one saw."""
        out = []
        end = {"call": "exit", "seq": seq}
        files, dirs, links = self.tree(self.vis)
        seen_files, seen_dirs, seen_links = {}, set(), {}
        root = os.fspath(workdir)
        for base, subdirs, names in os.walk(root):
            rel = os.path.relpath(base, root)
            rel = "" if rel == "." else rel + "/"
            for d in list(subdirs):
                path = os.path.join(base, d)
                if os.path.islink(path):
                    subdirs.remove(d)
                    seen_links[rel + d] = os.readlink(path)
                else:
                    seen_dirs.add(rel + d)
            for n in names:
                path = os.path.join(base, n)
                if os.path.islink(path):
                    seen_links[rel + n] = os.readlink(path)
                elif os.path.isfile(path):
                    seen_files[rel + n] = path
        for p in sorted(set(files) ^ set(seen_files)) + sorted(
                set(dirs) ^ seen_dirs) + sorted(
                k for k in set(links) | set(seen_links)
                if links.get(k) != seen_links.get(k)):
            self._unseen_at_exit(out, p, "name", end)
        for p in sorted(set(files) & set(seen_files)):
            ino = files[p]
            if ino in self.stdio_inos or ino in self.mapped_inos:
                continue        # libc's flush at exit, stores to a map
            try:
                st = os.stat(seen_files[p])
                if st.st_ino != ino:
                    self._unseen_at_exit(out, p, "name", end)
                    continue
                with open(seen_files[p], "rb") as f:
                    data = f.read()
            except OSError:
                continue
            if data != self.inodes[ino].vis:
                self._unseen_at_exit(out, p, "content", end)
        return out

    def _unseen_at_exit(self, out, path, what, rec):
        if not any(u["path"] == path and u["what"] == what
                   for u in (self.audit or []) + out):
            out.append({"path": path, "what": what, "seq": rec["seq"],
                        "at": "exit"})

