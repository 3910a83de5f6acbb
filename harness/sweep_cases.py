"""The sweep's one test function; harness/plugin.py parametrizes it with
every case. Run through `scripts/crashcheck run` or `make run`."""

import json

from harness import sweep


def test_case(cc_case, cc_sweep):
    judge = cc_sweep.judge()
    res = judge.execute(cc_case)
    path = cc_sweep.work / "results" / (sweep.safe_name(res["id"]) + ".json")
    with open(path, "w") as fh:
        json.dump(res, fh)
    assert res["passed"], (f"{res['id']}: {res['verdict']}: {res['finding']}\n"
                           f"{res['explanation']}\nreproduce: {res['reproduce']}")
