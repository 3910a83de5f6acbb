#!/usr/bin/python3
"""leveldb/kv.py: the setup, driver and checker of examples/apps/leveldb.toml,
on Debian's python3-plyvel (LevelDB's C++ library).

  kv.py setup   a database in the current directory holding key0..key9 =
                "old"
  kv.py write   one write batch setting key0..key9 to "new", written
                with sync=True (LevelDB's fsync of its log), then close
  kv.py check   the checker, in a crash state's directory: exit 0 when the
                database opens (LevelDB recovers its log as any later user
                would; paranoid_checks on) and key0..key9 are all "old" or
                all "new" (a batch is atomic), only "new" once the write
                had exited 0 (CRASHCHECK_EXPECT=new); else one line saying
                what it found
"""

import os
import sys

import plyvel

KEYS = [b"key%d" % i for i in range(10)]


def setup():
    db = plyvel.DB(".", create_if_missing=True, error_if_exists=True)
    with db.write_batch(sync=True) as wb:
        for k in KEYS:
            wb.put(k, b"old")
    db.close()


def write():
    db = plyvel.DB(".")
    with db.write_batch(sync=True) as wb:
        for k in KEYS:
            wb.put(k, b"new")
    db.close()


def check():
    expect = os.environ.get("CRASHCHECK_EXPECT", "new")
    if not os.path.exists("CURRENT"):
        print("CURRENT is missing: no database here")
        return 1
    try:
        db = plyvel.DB(".", paranoid_checks=True)
        values = [db.get(k) for k in KEYS]
        db.close()
    except plyvel.Error as e:
        print(f"leveldb cannot open db: {str(e).splitlines()[0][:200]}")
        return 1
    got = set(values)
    if got == {b"new"} or (got == {b"old"} and expect == "old-or-new"):
        return 0
    shown = ", ".join(f"{k.decode()}={v!r}" for k, v in zip(KEYS, values))
    print(f"keys are {shown[:200]} (CRASHCHECK_EXPECT={expect})")
    return 1


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) == 2 else ""
    if what not in ("setup", "write", "check"):
        print("usage: kv.py setup|write|check", file=sys.stderr)
        sys.exit(2)
    sys.exit({"setup": setup, "write": write, "check": check}[what]() or 0)
