"""A content, or a checker's answer on a state, against the case's
contract (docs/crash-model.md's verdict table): None when it keeps the
contract, else the verdict and what was found."""

from . import payload
from .outcome import CHECKED


def visible_failure(o, claimed):
    """Judge a content against the contract; None when acceptable, else
    (verdict, found) where found describes the content."""
    return state_failure(o, o.target, o.check, claimed, visible=True)


def state_failure(o, target, check, claimed, visible=False):
    if o.contract in CHECKED:
        if check is None:
            raise ValueError("outcome: check contract without a checker result")
        want = "new" if claimed else "old-or-new"
        if check.expect != want:
            raise ValueError(f"outcome: checker ran with CRASHCHECK_EXPECT={check.expect}, "
                             f"the state needs {want}")
        if check.ok:
            return None
        if claimed:
            return ("lost-update" if visible else "not-durable"), check.summary()
        # a tree has no target to be missing: a state its checker refuses
        # is neither its old nor its new self
        if o.contract == "check" and target is None:
            return "missing", check.summary()
        return "torn", check.summary()
    state = payload.classify(target, o.old, o.new)
    if claimed:
        if state == "new":
            return None
        verdict = "lost-update" if visible else "not-durable"
    elif o.contract == "in-place" or state in ("old", "new"):
        return None
    else:
        verdict = "missing" if state == "missing" else "torn"
    # Described only on failure: a sweep judges thousands of good states.
    return verdict, payload.describe(target, o.old, o.new)
