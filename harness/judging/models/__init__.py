"""The crash models, one module each, behind base.Model's policies.

MODELS names them in the order reports list them; get(name) gives the
model; parse(text) reads a --model value ("all", one name, or a comma
list). DEFAULT is what a sweep judges under when not told: the two
models crashcheck has always run, posix (the weakest) and ext4-ordered
(the commonest filesystem as mounted by default)."""

from . import btrfs, ext4_journal, ext4_ordered, ext4_writeback, posix, xfs
from .base import Model

_ALL = (posix.MODEL, ext4_ordered.MODEL, ext4_writeback.MODEL,
        ext4_journal.MODEL, xfs.MODEL, btrfs.MODEL)
BY_NAME = {m.name: m for m in _ALL}
MODELS = tuple(m.name for m in _ALL)
DEFAULT = ("posix", "ext4-ordered")

__all__ = ["Model", "MODELS", "DEFAULT", "BY_NAME", "get", "parse"]


def get(model):
    """The Model named MODEL (a Model is returned as it is); KeyError
    for an unknown name."""
    if isinstance(model, Model):
        return model
    return BY_NAME[model]


def parse(text):
    """The model names a --model value asks for, in MODELS' order:
    'all', one name, or names separated by commas. ValueError naming
    the problem."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"expected a model name, a comma list or 'all' "
                         f"(models: {', '.join(MODELS)})")
    if text.strip() == "all":
        return MODELS
    names = [t.strip() for t in text.split(",")]
    for n in names:
        if n == "all":
            raise ValueError("'all' cannot be part of a list")
        if n not in BY_NAME:
            raise ValueError(f"unknown model '{n}' "
                             f"(models: {', '.join(MODELS)}, or all)")
    return tuple(m for m in MODELS if m in names)
