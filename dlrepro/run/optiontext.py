"""The text of command-line options, before they are validated (standard library only, so the tasks start fast)."""

UNSET = -1  # integer options left at -1 take the spec's value


def split(text, convert=str):
    """The comma-separated items of ``text`` converted by ``convert``, or None when there are none.

    Raises ValueError when an item does not convert."""
    return [convert(x.strip()) for x in text.split(",") if x.strip()] or None
