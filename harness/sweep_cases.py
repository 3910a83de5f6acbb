"""The sweep's one test function; harness/plugin.py parametrizes it with
every case. Run through `scripts/crashcheck run` or `make run`.
The case runs in the plugin's pool (or here, with one job); the item
waits for its result."""


def test_case(cc_case, cc_sweep):
    res = cc_sweep.outcome(cc_case)
    assert res["passed"], (f"{res['id']}: {res['verdict']}: {res['finding']}\n"
                           f"{res['explanation']}\nreproduce: {res['reproduce']}")
