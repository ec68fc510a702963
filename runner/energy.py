"""CPU package energy from the Linux powercap interface (Intel RAPL, AMD's RAPL-compatible counters), where the
host lets this process read it.

Each package domain ``/sys/class/powercap/<intel-rapl:N>/energy_uj`` counts microjoules since boot and wraps at
``max_energy_range_uj``. Since 2020 (CVE-2020-8694) the files are readable by root only, and a container sees
them only when the host's sysfs shows them, so a CPU job records either the package energy over its measured
window or why there is none. The value is the whole package's (every core, the uncore), not the job's share:
other work on the machine counts too. Board-level GPU energy comes from NVML (runner.telemetry).
"""

import glob
import os

POWERCAP = "/sys/class/powercap"


def _read(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (IOError, OSError, ValueError):
        return None


def _name(folder):
    try:
        with open(os.path.join(folder, "name")) as f:
            return f.read().strip()
    except (IOError, OSError):
        return os.path.basename(folder)


def packages(root=POWERCAP):
    """[(name, energy_uj path, max range in uJ)] of the readable package domains, which do not overlap.

    Kept: top-level domains (``intel-rapl:N``; ``intel-rapl:N:M`` is a sub-domain of N) named ``package-N``.
    Left out: ``psys`` (the whole platform, packages included, on Intel client CPUs) and every domain of the
    MMIO tree (``intel-rapl-mmio:N``, the same package counted through another interface) when the MSR tree
    (``intel-rapl:N``) has a package; where only the MMIO tree exists, its packages are the ones read."""
    domains = {}
    for folder in sorted(glob.glob(os.path.join(root, "*"))):
        base = os.path.basename(folder)
        tree, _, index = base.partition(":")
        if ":" in index or not _name(folder).startswith("package"):
            continue
        energy = os.path.join(folder, "energy_uj")
        if _read(energy) is not None:
            domains.setdefault(tree, []).append(
                (_name(folder), energy, _read(os.path.join(folder, "max_energy_range_uj")))
            )
    return domains.get("intel-rapl") or domains.get("intel-rapl-mmio") or []


class Counter(object):
    """Package energy between ``start()`` and ``stop()``, less what ``pause()`` .. ``resume()`` spans (each
    pause's counters are subtracted); ``result(seconds)`` gives the record."""

    def __init__(self, root=POWERCAP):
        self.domains = packages(root)
        self.begin = self.end = None
        self._mark, self._uj = None, [0] * len(self.domains)

    def _now(self):
        return [_read(path) for _, path, _ in self.domains]

    def _add(self):
        """Add the microjoules since the last mark to the total (a counter that wrapped, corrected)."""
        for i, ((_, _, wrap), a, b) in enumerate(zip(self.domains, self._mark, self._now())):
            self._uj[i] += b - a + (wrap if b < a and wrap else 0)
        self._mark = None

    def start(self):
        self.begin = self._mark = self._now()

    def pause(self):
        if self._mark is not None and self.end is None:
            self._add()

    def resume(self):
        if self.begin is not None and self._mark is None and self.end is None:
            self._mark = self._now()

    def stop(self):
        if self.begin is not None and self.end is None:
            if self._mark is not None:
                self._add()
            self.end = self._now()

    def result(self, seconds):
        """{"status", "joules", "seconds", "mean_w", "method", "domains", "note"}; "unavailable" with the reason
        when the counters cannot be read here. ``seconds``: the window's length less its pauses (its counters are
        read next to its edges: runner.window)."""
        if not self.domains:
            return {
                "status": "unavailable",
                "reason": "no readable RAPL package counter under %s (root-only since "
                "2020; absent on this CPU or hidden from the container)" % POWERCAP,
            }
        if self.begin is None or self.end is None:
            return {"status": "unavailable", "reason": "nothing was measured"}
        joules = sum(self._uj) / 1e6
        return {
            "status": "ok",
            "joules": joules,
            "seconds": seconds,
            "mean_w": joules / seconds if seconds else None,
            "method": "RAPL package counters (powercap)",
            "domains": [d[0] for d in self.domains],
            "note": "whole CPU packages, other work on the machine included; not a certified measurement",
        }
