#!/usr/bin/python3
"""jsonsave: save a JSON document the way many small Python programs do.

Method: jsonsave.py TARGET NEW reads the document in NEW and writes it over
TARGET with open(TARGET, "w") and json.dump. Defect: open(..., "w")
truncates TARGET first, and the document is written after: a crash
between the two, or a power cut before the data reaches the disk, leaves
TARGET empty or cut (no temporary file, no fsync).

Exit status: 0 saved, 1 failed (Python's own message), 2 usage.
"""
import json
import sys

if len(sys.argv) != 3:
    sys.exit("usage: jsonsave.py TARGET NEW")
with open(sys.argv[2]) as fh:
    doc = json.load(fh)
with open(sys.argv[1], "w") as fh:
    json.dump(doc, fh)
