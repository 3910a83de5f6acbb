"""What the console shows of a case, beyond its one FINDING line."""

import re

# up to the first full stop followed by a space or the end: not the dot of
# a file name ('target.tmp') nor of "e.g." or "i.e."
_SENTENCE = re.compile(r"(.*?(?<!e\.g)(?<!i\.e)[.!?])(?=\s|$)")


def first_sentence(text):
    """The first sentence of a finding's explanation: the console's "why"
    under its FINDING line; the rest is in the reports."""
    text = " ".join((text or "").split())
    m = _SENTENCE.match(text)
    return m.group(1) if m else text
