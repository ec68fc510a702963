"""Telling a user which name they meant: a near miss ("did you mean alexnet?") and a look-alike letter (a
Cyrillic "о" typed for the Latin "o" of "torch" looks identical on the terminal). Standard library only."""

import difflib
import unicodedata


def near_miss(name, known):
    """ " (did you mean X?)" when ``name`` is a near miss of one of ``known`` (difflib ratio >= 0.6), else ""."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return " (did you mean %s?)" % close[0] if close else ""


def odd_letters(name):
    """ " (character N is U+043E CYRILLIC SMALL LETTER O, not ASCII)" for each non-ASCII character of ``name``,
    joined; "" when it is all ASCII."""
    return "".join(
        " (character %d, %r, is U+%04X %s, not ASCII)" % (i + 1, ch, ord(ch), unicodedata.name(ch, "?"))
        for i, ch in enumerate(name)
        if ord(ch) > 127
    )


def unknown(name, known):
    """``name`` quoted, with what is odd about it: its non-ASCII characters, else the near miss among ``known``."""
    return "%r%s" % (name, odd_letters(name) or near_miss(name, known))
