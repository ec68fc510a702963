"""The text of command-line options, before they are validated (standard library only, so the tasks start fast)."""

import os
import re

UNSET = ""  # a number option left empty (not given) takes the spec's value; any number given is checked
WORDS = "\0"  # joins the words of a list positional (dlrepro.cli.main.joined): no command-line word holds one


def split(text, convert=str):
    """The items of ``text``, separated by commas or whitespace (one quoted argument "id1 id2"), converted by
    ``convert``, or None when there are none.

    Raises ValueError when an item does not convert."""
    return [convert(x) for x in re.split(r"[,\s]+", text) if x] or None


def names(text):
    """The items of a list positional (`report A B`: its words joined by WORDS): a word that names an existing file
    or folder is one item as typed (a path is data: a space or comma in it is part of it); any other word is split
    at commas and whitespace as ``split`` does (`report A,B`, `report "A B"`). None when there are none."""
    items = []
    for word in text.split(WORDS):
        items += [word] if word and os.path.exists(word) else split(word) or []
    return items or None
