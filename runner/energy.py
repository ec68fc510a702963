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


def packages(root=POWERCAP):
    """[(name, energy_uj path, max range in uJ)] of the readable package domains (not their sub-domains)."""
    found = []
    for folder in sorted(glob.glob(os.path.join(root, "*"))):
        base = os.path.basename(folder)
        if base.count(":") != 1:  # intel-rapl:0 is a package; intel-rapl:0:1 one of its sub-domains
            continue
        energy = os.path.join(folder, "energy_uj")
        if _read(energy) is not None:
            try:
                with open(os.path.join(folder, "name")) as f:
                    name = f.read().strip()
            except (IOError, OSError):
                name = base
            found.append((name, energy, _read(os.path.join(folder, "max_energy_range_uj"))))
    return found


class Counter(object):
    """Package energy between ``start()`` and ``stop()``; ``result(seconds)`` gives the record."""

    def __init__(self, root=POWERCAP):
        self.domains = packages(root)
        self.begin = self.end = None

    def _now(self):
        return [_read(path) for _, path, _ in self.domains]

    def start(self):
        self.begin = self._now()

    def stop(self):
        if self.begin is not None and self.end is None:
            self.end = self._now()

    def result(self, seconds):
        """{"status", "joules", "mean_w", "method", "domains", "note"}; "unavailable" with the reason when the
        counters cannot be read here."""
        if not self.domains:
            return {"status": "unavailable", "reason": "no readable RAPL package counter under %s (root-only since "
                    "2020; absent on this CPU or hidden from the container)" % POWERCAP}
        if self.begin is None or self.end is None:
            return {"status": "unavailable", "reason": "nothing was measured"}
        joules = 0.0
        for (_, _, wrap), a, b in zip(self.domains, self.begin, self.end):
            delta = b - a
            if delta < 0 and wrap:  # the counter wrapped during the window
                delta += wrap
            joules += delta / 1e6
        return {"status": "ok", "joules": joules, "mean_w": joules / seconds if seconds else None,
                "method": "RAPL package counters (powercap)", "domains": [d[0] for d in self.domains],
                "note": "whole CPU packages, other work on the machine included; not a certified measurement"}
