"""Numbers for humans, one rule for every view (reports, terminal, Markdown): ms for sub-second times,
thousands separators for throughput, percentages for changes and accuracies, plural-aware counts, sizes
in the unit that fits.

Each function takes a float (or None/NaN, shown as '') and returns text; ``time_unit`` picks one unit for a
column of seconds so that every cell of the column is in it (say the unit in the header, not in the cell).
"""

import math


def _missing(value):
    return value is None or (isinstance(value, float) and math.isnan(value))


def significant(value, digits=3):
    """'1,365', '13.7', '0.0035': ``digits`` significant digits, thousands separators, no exponent."""
    if _missing(value):
        return ""
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(value)))))
    return "{:,.{}f}".format(round(value, decimals), decimals)


def time_unit(seconds):
    """'ms' when every finite value of the column (seconds) is below 1 s, else 's'."""
    finite = [abs(v) for v in seconds if not _missing(v)]
    return "ms" if finite and max(finite) < 1 else "s"


def in_unit(seconds, unit):
    """A time in seconds shown in ``unit`` ('ms' or 's', from time_unit), 3 significant digits: '3.50'."""
    if _missing(seconds):
        return ""
    return significant(seconds * 1000 if unit == "ms" else seconds)


def duration(seconds):
    """A time with its unit, ms below a second: '3.50 ms', '1.67 s', '25.0 min' from 1500 s up."""
    if _missing(seconds):
        return ""
    if abs(seconds) < 1:
        return "%s ms" % significant(seconds * 1000)
    if abs(seconds) >= 1200:
        return "%s min" % significant(seconds / 60)
    return "%s s" % significant(seconds)


def rate(value):
    """Samples per second with thousands separators, no exponent: '13,650', '45.7', '4.57'."""
    if _missing(value):
        return ""
    return "{:,.0f}".format(value) if abs(value) >= 100 else significant(value)


def percent(fraction, decimals=1):
    """A fraction as a percentage: 0.8694 -> '86.9%'."""
    return "" if _missing(fraction) else "%.*f%%" % (decimals, 100 * fraction)


def change(fraction, decimals=1):
    """A relative change as a signed percentage: -0.002608 -> '-0.3%', 0.5 -> '+50.0%'."""
    return "" if _missing(fraction) else "%+.*f%%" % (decimals, 100 * fraction)


def ratio(value):
    """A ratio with its sign of multiplication: 1.51 -> '1.51x'."""
    return "" if _missing(value) else "%sx" % significant(value)


def size(nbytes):
    """A size in bytes in the decimal unit that fits, 2 significant digits at least: 512 -> '512 bytes',
    22,300 -> '22 KB', 1,430,000 -> '1.4 MB', 999,700 -> '1.0 MB'."""
    if nbytes < 999.5:
        return "%d bytes" % round(nbytes)
    for unit in ("KB", "MB", "GB"):
        nbytes /= 1000
        if nbytes < 999.5 or unit == "GB":
            return "%s %s" % (significant(max(nbytes, 1.0), 2), unit)  # 999.7 KB is 0.9997 MB: '1.0 MB'


def count(n, noun, plural=None):
    """'1 repeat', '3 repeats' (``plural`` where adding s is wrong)."""
    return "%d %s" % (n, noun if n == 1 else plural or noun + "s")
