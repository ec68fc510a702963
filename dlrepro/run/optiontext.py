"""The text of command-line options, before they are validated (standard library only, so the tasks start fast)."""
import re

UNSET = ""  # a number option left empty (not given) takes the spec's value; any number given is checked


def split(text, convert=str):
    """The items of ``text``, separated by commas or whitespace (one quoted argument "id1 id2"), converted by
    ``convert``, or None when there are none.

    Raises ValueError when an item does not convert."""
    return [convert(x) for x in re.split(r"[,\s]+", text) if x] or None
