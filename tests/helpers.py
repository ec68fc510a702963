"""Helpers shared by test modules."""
import hashlib
import json

from dlrepro import datasets, spec
from dlrepro.run import jobs
from dlrepro.run.options import RunOptions


def check_sums(bundle):
    for line in (bundle / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((bundle / name).read_bytes()).hexdigest() == digest, name


def bad_and_good_jobs():
    found = jobs.expand(spec.load("fcn"), RunOptions(frameworks=["torch"], variants=["fcn-s"], batch_sizes=[8, 16], quick=True))
    bad, good = found
    bad["model"] = dict(bad["model"], parameters=bad["model"]["parameters"] + 1)
    return bad, good


def run_executor(executor, image, tmp_path):
    """Run a job that fails inside the runner (wrong expected parameter count), then a good one."""
    bad, good = bad_and_good_jobs()
    events = []
    executor.run(image, [bad, good], tmp_path, datasets.root(),
                 lambda kind, job_id, result: events.append((kind, job_id, result and result["status"])))
    results = {j["id"]: json.loads((tmp_path / j["id"] / "result.json").read_text()) for j in (bad, good)}
    return bad, good, results, events


def unreachable(monkeypatch, *names):
    """Make the mirrors of datasets ``names`` unreachable (a closed local port), whatever the network allows."""
    from dlrepro.datasets import UrlMirror

    catalogue = datasets.catalogue()
    mirror = UrlMirror(kind="url", url="http://127.0.0.1:9/{name}")
    patched = catalogue.model_copy(update={"datasets": {
        n: d.model_copy(update={"mirrors": [mirror]}) if n in names else d for n, d in catalogue.datasets.items()}})
    monkeypatch.setattr(datasets, "catalogue", lambda: patched)


def fresh_cache(monkeypatch, path, **copies):
    """Point DLREPRO_CACHE at ``path``; ``copies`` {dataset: DatasetRecord of the real cache} are imported into it."""
    import shutil

    folders = {}
    for name, record in copies.items():
        folder = path / ("source-" + name)
        folder.mkdir(parents=True)
        for role, f in record.dataset.files.items():
            shutil.copyfile(str(datasets._blob(record.files[role])), str(folder / f.name))
        folders[name] = folder
    monkeypatch.setenv("DLREPRO_CACHE", str(path / "cache"))
    for name, folder in folders.items():
        datasets.import_local(name, folder)
    return path / "cache"


def assert_learned(epoch):
    """One epoch of FCN-R (DLBench's recipe, 937 mini-batches of 64 MNIST images) has trained: it leaves its first
    plateau, the loss of the uniform prediction (ln 10 = 2.303), after some 700-850 iterations (the committed
    5-epoch bundle results/fcn-20261130T022354Z-cc755c44, epoch 1: test accuracy 0.44-0.69, last loss-curve point
    0.87-1.66). Asked: a test accuracy of 0.25, which no constant predictor reaches (the commonest digit, 1, is
    1,135 of the 10,000 test images), and a last loss-curve point at most 2.0 and 0.25 below the first half's."""
    curve = epoch["loss_curve"]
    assert curve[-1] <= 2.0 and curve[-1] < min(curve[:len(curve) // 2]) - 0.25, curve
    assert epoch["test_accuracy"] >= 0.25, epoch["test_accuracy"]
