"""The dataset cache: real MNIST, checksum enforcement, and the CIFAR-10 loader on a small archive
written in the canonical format (the real archive cannot be fetched on the CI machine)."""
import gzip
import hashlib
import io
import pickle
import tarfile

import numpy as np
import pytest

from dlrepro import datasets
from dlrepro.errors import DatasetError
from runner import data


def test_mnist_is_the_canonical_set(mnist, monkeypatch):
    assert mnist.files["train_images"] == "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"
    monkeypatch.setenv(data.DATA_ROOT_ENV, str(datasets.root()))
    x_train, y_train, x_test, y_test = data.load_mnist_idx(mnist.files)
    assert x_train.shape == (60000, 28, 28) and x_test.shape == (10000, 28, 28)
    assert np.bincount(y_train).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert np.bincount(y_test).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert y_train[:5].tolist() == [5, 0, 4, 1, 9]
    assert round(float(x_train.mean()) / 255, 4) == 0.1307


def test_fcn_r_inputs_are_scaled_by_1_over_256(mnist, monkeypatch):
    monkeypatch.setenv(data.DATA_ROOT_ENV, str(datasets.root()))
    job_data = {"format": "mnist-idx", "files": mnist.files, "scale": 1 / 256}
    x_train, y_train, x_test, _ = data.load_dataset(job_data, [784])
    assert x_train.shape == (60000, 784) and x_train.dtype == np.float32
    assert float(x_train.max()) == 255 / 256 and y_train.dtype == np.int64


def test_bundle_record_names_the_source(mnist):
    files = mnist.record["files"]
    assert set(files) == {"train_images", "train_labels", "test_images", "test_labels"}
    assert all(f["source"]["mirror"] for f in files.values())


def write_cifar_like(path, per_batch=4):
    """A CIFAR-10 python archive in the canonical layout, with ``per_batch`` images per batch."""
    rng = np.random.RandomState(0)
    with tarfile.open(path, "w:gz") as tar:
        for name in ["data_batch_%d" % i for i in range(1, 6)] + ["test_batch"]:
            body = pickle.dumps({b"data": rng.randint(0, 256, (per_batch, 3072)).astype(np.uint8),
                                 b"labels": list(range(per_batch)), b"batch_label": name.encode()})
            info = tarfile.TarInfo("cifar-10-batches-py/" + name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_cifar10_loader_reads_the_canonical_layout(tmp_path, monkeypatch):
    digest = write_cifar_like(tmp_path / "c.tar.gz")
    (tmp_path / "sha256").mkdir()
    (tmp_path / "c.tar.gz").rename(tmp_path / "sha256" / digest)
    monkeypatch.setenv(data.DATA_ROOT_ENV, str(tmp_path))
    x_train, y_train, x_test, y_test = data.load_cifar10_python({"archive": digest})
    assert x_train.shape == (20, 3, 32, 32) and x_test.shape == (4, 3, 32, 32) and y_train.tolist()[:4] == [0, 1, 2, 3]
    x, _, xt, _ = data.load_dataset({"format": "cifar10-python", "files": {"archive": digest},
                                     "subtract_mean": "pixel"}, [3, 32, 32])
    assert abs(float(x.mean())) < 1e-4 and x.dtype == np.float32


def test_a_corrupt_cache_file_is_refused(tmp_path, monkeypatch):
    (tmp_path / "sha256").mkdir()
    fake = "0" * 64
    (tmp_path / "sha256" / fake).write_bytes(b"not what the hash says")
    monkeypatch.setenv(data.DATA_ROOT_ENV, str(tmp_path))
    with pytest.raises(data.DataError, match="the cache is corrupt"):
        data.read_verified(fake)


def test_importing_a_file_with_the_wrong_checksum_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("DLREPRO_CACHE", str(tmp_path / "cache"))
    digest = write_cifar_like(tmp_path / "cifar-10-python.tar.gz")
    with pytest.raises(DatasetError) as err:
        datasets.import_local("cifar10", tmp_path / "cifar-10-python.tar.gz")
    size = (tmp_path / "cifar-10-python.tar.gz").stat().st_size
    assert "has %d bytes, expected 170498071: not used" % size in str(err.value)
    same_size = datasets.File(name="x", bytes=size, sha256="6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce")
    with pytest.raises(DatasetError, match="x from here has sha256 %s, expected 6d958be0" % digest):
        datasets._store(tmp_path / "cifar-10-python.tar.gz", same_size, "here")
    assert not list((tmp_path / "cache" / "datasets").rglob("sha256/*"))


def test_importing_a_gzipped_local_copy(tmp_path, monkeypatch, mnist):
    """A folder of .gz files (as the canonical mirrors serve them) is decompressed and verified."""
    originals = {f.name: datasets._blob(f.sha256).read_bytes() for f in datasets.lookup("mnist").files.values()}
    monkeypatch.setenv("DLREPRO_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "mnist"
    source.mkdir()
    for name, blob in originals.items():
        (source / (name + ".gz")).write_bytes(gzip.compress(blob))
    assert set(datasets.missing("mnist")) == {"train_images", "train_labels", "test_images", "test_labels"}
    record = datasets.import_local("mnist", source)
    assert record.files == mnist.files and datasets.missing("mnist") == {}
    assert record.record["files"]["train_images"]["source"]["mirror"].startswith("local file ")


def test_cifar10_unreachable_gives_reason_and_remedy(tmp_path, monkeypatch):
    monkeypatch.setenv("DLREPRO_CACHE", str(tmp_path / "cache"))
    with pytest.raises(DatasetError) as err:
        datasets.ensure("cifar10")
    assert "no mirror supplied it" in str(err.value)
    assert "invoke fetch cifar10 --source PATH" in err.value.remedy and "6d958be0" in err.value.remedy
