"""The text of command-line options, before they are validated (standard library only, so the tasks start fast)."""

UNSET = ""  # a number option left empty (not given) takes the spec's value; any number given is checked


def split(text, convert=str):
    """The comma-separated items of ``text`` converted by ``convert``, or None when there are none.

    Raises ValueError when an item does not convert."""
    return [convert(x.strip()) for x in text.split(",") if x.strip()] or None
