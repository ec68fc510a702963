"""The words of `dlrepro plan`: each reason once (a reason that two rows share, or that the cells' line counts, is a
numbered note printed once under the table, the rows naming its tools and number), and what renting the host
would take (dlrepro.run.estimate): its price, the study's time and cost there with their source, what to fetch and
the command to run."""

from dlrepro import REPO_ROOT
from dlrepro.plan import coverage
from dlrepro.run import estimate

VERSIONS_OPTION = {"today": "", "published": " --versions published"}  # what `dlrepro study` takes for each set


class Notes:
    """Numbered notes: ``ref(text)`` gives a text its number (the same text the same number), ``lines()`` the notes
    in order ("[1] CNTK: the cntk adapter has ...")."""

    def __init__(self):
        self.numbers = {}

    def ref(self, text):
        return self.numbers.setdefault(text, len(self.numbers) + 1)

    def lines(self):
        return ["[%d] %s" % (n, text) for text, n in self.numbers.items()]


def _tool_groups(o):
    """[(reason, [tools])] of an Outcome's blocked tools, reasons sorted as the Outcome's reason joins them."""
    return [(why, sorted(t for t, w in o.tools.items() if w == why)) for why in sorted(set(o.tools.values()))]


def _parts(o):
    """The reasons of one claim row: its tools' (each once) when the Outcome names them, else its own."""
    if o.testable:
        return [o.caveat] if o.caveat else []
    return [why for why, _ in _tool_groups(o)] if o.tools else [o.reason]


def why_text(o, notes, shared):
    """A claim row's "why": its reason with each reason of ``shared`` (texts used more than once) as its tools and a
    note number ("CNTK, MXNet [2]"), the others as they are."""
    if o.testable:
        return (
            "caveat [%d]" % notes.ref(o.caveat) if o.caveat in shared else ("caveat: %s" % o.caveat if o.caveat else "")
        )
    if not o.tools:
        return "[%d]" % notes.ref(o.reason) if o.reason in shared else o.reason
    groups = _tool_groups(o)
    joined = "; ".join(why for why, _ in groups)
    said = "; ".join("%s [%d]" % (", ".join(tools), notes.ref(why)) if why in shared else why for why, tools in groups)
    return o.reason.replace(joined, said) if joined in o.reason else "%s (%s)" % (o.reason, said)


def shared_reasons(found):
    """The reason texts that more than one claim row gives, and every reason of a cell not judged (the cells are
    counted on one line, their reasons noted)."""
    seen = {}
    for o in found["claims"]:
        for part in _parts(o):
            seen[part] = seen.get(part, 0) + 1
    return {t for t, n in seen.items() if n > 1} | {o.reason for o in found["cells"] if not o.testable}


def cells_line(found, notes):
    """'published cells not judged: 10 a tool the suite does not run [3], 19 measured on other hardware (shown)':
    each cause in words (coverage.SHORT) with its count and the notes of its reasons; None when every cell is
    judged."""
    _, causes = coverage.counts(found["cells"])
    if not causes:
        return None
    said = []
    for cause, n in causes.items():
        if cause == "other hardware":
            said.append("%d measured on other hardware (shown)" % n)
            continue
        reasons = sorted({o.reason for o in found["cells"] if not o.testable and o.cause == cause})
        said.append("%d %s %s" % (n, coverage.SHORT[cause], " ".join("[%d]" % notes.ref(r) for r in reasons)))
    return "published cells not judged: %s" % ", ".join(said)


def duration(seconds):
    """'13 h 24 min', '52 min', '48 s'."""
    minutes = int(round(seconds / 60.0))
    if seconds < 60:
        return "%d s" % round(seconds)
    return "%d h %02d min" % divmod(minutes, 60) if minutes >= 60 else "%d min" % minutes


def gigabytes(n):
    return "%.2f GB" % (n / 1e9)


def price_line(price, hardware):
    """'price: 49.16 USD an hour (4 x 12.29 USD per device-hour: H100 80GB HBM3, p5.48xlarge ...; on-demand, 2023-07,
    launch price; dlrepro/inputs/prices.yaml aws-p5-h100)', or what is missing and how to give a price."""
    if price is None:
        return (
            "price: none in dlrepro/inputs/prices.yaml for %s (a row's names are the devices' as CUDA names them; a "
            "bare "
            "model matches one row only)" % (hardware.gpu or "a CPU core")
        )
    row = price.row
    return "price: %.2f USD an hour (%d x %s USD per %s-hour: %s; %s, %s%s; dlrepro/inputs/prices.yaml %s)" % (
        price.usd_per_hour,
        price.devices,
        format(row.usd_per_device_hour, "g"),
        "device" if row.names else "CPU",
        row.names[0] if row.names else "one logical CPU",
        row.instance,
        row.dated,
        ", launch price" if row.launch else "",
        row.id,
    )


def time_lines(runs, price):
    """The estimate's lines: the total (of the runs with a recorded pass; 'at least' when some have none) and its
    cost at ``price``, the GPU runs alone, then one line per run: its jobs x the seconds per job of its source."""

    def total(subset):
        known = [r.seconds for r in subset if r.seconds is not None]
        seconds = sum(known)
        bound = "at least" if len(known) < len(subset) else "about"
        cost = ", %s %.2f USD at that price" % (bound, seconds / 3600.0 * price.usd_per_hour) if price else ""
        return "%s %s for %d jobs%s" % (bound, duration(seconds), sum(r.jobs for r in subset), cost)

    lines = [
        "time: %s (each run's jobs here x the seconds per job of a recorded pass of its spec, device and mode "
        "at the spec's lengths: one of its variants first, then this GPU model, then the newest; not scaled to "
        "this host's speed)" % total(runs)
    ]
    gpu = [r for r in runs if r.device == "cuda"]
    if gpu and len(gpu) < len(runs):
        lines.append("  the GPU runs alone (--device cuda): %s" % total(gpu))
    for r in runs:
        if r.source is None:
            lines.append(
                "  %s: %d jobs, no recorded %s pass like it: not estimated"
                % (r.run, r.jobs, "GPU" if r.device == "cuda" else "CPU")
            )
        else:
            s = r.source
            lines.append(
                "  %s: %d jobs x %.1f s = %s (from %s: %d job%s of %s in %d s on %s%s)"
                % (
                    r.run,
                    r.jobs,
                    s.per_job,
                    duration(r.seconds),
                    s.bundle,
                    s.jobs,
                    "s"[s.jobs == 1 :],
                    ", ".join(sorted(s.variants)),
                    round(s.seconds),
                    s.host(),
                    ", --quick" if s.quick else "",
                )
            )
    return lines


def fetch_lines(runs, image_sizes, dataset_bytes):
    """What the runs need on the host, which the study builds and fetches when missing: the images (with the sizes
    recorded of those built and measured, ``image_sizes`` {name: bytes}) and the datasets (with their pinned bytes,
    ``dataset_bytes(name)``)."""
    images = sorted({name for r in runs for name in r.images})
    sized = [n for n in images if n in image_sizes]
    lines = [
        "images the study builds where missing: %d%s%s"
        % (
            len(images),
            "; sizes as built and measured (%s): %s, %s in all"
            % (
                estimate.IMAGE_RECORD.relative_to(REPO_ROOT),
                ", ".join("%s %s" % (n, gigabytes(image_sizes[n])) for n in sized),
                gigabytes(sum(image_sizes[n] for n in sized)),
            )
            if sized
            else "",
            "; size not recorded: %s" % ", ".join(n for n in images if n not in sized)
            if len(sized) < len(images)
            else "",
        )
    ]
    data = list(dict.fromkeys(name for r in runs for name in r.datasets))
    if data:
        lines.append(
            "datasets the study fetches where missing: %s"
            % ", ".join(
                "%s %s" % (n, gigabytes(dataset_bytes(n)) if dataset_bytes(n) else "(size not pinned)") for n in data
            )
        )
    return lines


def command_line(study, versions):
    return "run there: dlrepro study %s%s" % (study.name, VERSIONS_OPTION[versions])
