"""Input data for a job: synthetic mini-batches from a seed, or a dataset from the read-only cache.

Arrays handed to adapters are numpy: inputs float32 of shape (N,) + input_shape,
e.g. (N, C, H, W) or (N, F); labels int64 of shape (N,).

Dataset files live in the content-addressed cache as DATA_ROOT/sha256/<hex>; the
job names each file by role and SHA-256, and every file is re-hashed before use,
so a corrupted cache is an error, never a silent use.
"""
import gzip
import hashlib
import io
import os
import pickle
import tarfile

import numpy as np

DATA_ROOT_ENV = "DLREPRO_DATA_ROOT"


class DataError(RuntimeError):
    """A dataset file is missing, corrupt or not in the expected format."""


def synthetic_batch(input_shape, classes, batch_size, seed):
    """One mini-batch of uniform [0, 1) inputs and uniform labels, fixed by ``seed``."""
    rng = np.random.RandomState(seed)
    x = rng.random_sample((batch_size,) + tuple(input_shape)).astype(np.float32)
    y = rng.randint(0, classes, size=batch_size).astype(np.int64)
    return x, y


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
        raise DataError("cached file sha256:%s hashes to %s: the cache is corrupt, delete it and fetch again"
                        % (digest, actual))
    return blob


def parse_idx(blob):
    """Array from an IDX file (MNIST / Fashion-MNIST layout), raw or gzip-compressed."""
    if blob[:2] == b"\x1f\x8b":
        blob = gzip.decompress(blob)
    if blob[:2] != b"\x00\x00" or blob[2] != 0x08:
        raise DataError("not an unsigned-byte IDX file (magic %r)" % (blob[:4],))
    ndim = blob[3]
    dims = [int.from_bytes(blob[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(blob, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_mnist_idx(files):
    """(x_train, y_train, x_test, y_test) as uint8 arrays from the four IDX files."""
    parts = [parse_idx(read_verified(files[role]))
             for role in ("train_images", "train_labels", "test_images", "test_labels")]
    return tuple(parts)


def load_cifar10_python(files):
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


LOADERS = {"mnist-idx": load_mnist_idx, "cifar10-python": load_cifar10_python}


def load_dataset(data, input_shape):
    """Load, scale and reshape a dataset described by a job's ``data`` section.

    Returns float32 inputs (N,) + input_shape and int64 labels for train and test.
    ``scale`` multiplies the raw uint8 values (DLBench's Caffe nets use 1/256);
    ``subtract_mean: pixel`` subtracts the training set's mean image first (Caffe mean file).
    """
    loader = LOADERS.get(data["format"])
    if loader is None:
        raise DataError("unknown dataset format %r; known: %s" % (data["format"], ", ".join(sorted(LOADERS))))
    x_train, y_train, x_test, y_test = loader(data["files"])
    shape = (-1,) + tuple(input_shape)
    x_train = x_train.astype(np.float32).reshape(shape)
    x_test = x_test.astype(np.float32).reshape(shape)
    if data.get("subtract_mean") == "pixel":
        mean = x_train.mean(axis=0, keepdims=True)
        x_train -= mean
        x_test -= mean
    scale = data.get("scale", 1.0)
    x_train *= scale
    x_test *= scale
    return x_train, y_train.astype(np.int64), x_test, y_test.astype(np.int64)


def epoch_batches(n, batch_size, rng):
    """Index arrays of one shuffled epoch over ``n`` samples, complete mini-batches only."""
    order = rng.permutation(n)
    return [order[i:i + batch_size] for i in range(0, n - n % batch_size, batch_size)]
