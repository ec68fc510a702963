"""Prepared arrays: a dataset whose loader is slow (runner.data.PREPARED_FORMATS: IMDB's 50,000 raw reviews, which
took each job 5-7 s to tokenise on 2 CPUs) is loaded once on the host, by the runner's own loader, and its arrays
kept in the dataset cache, so that a run's jobs read them instead of each running the loader. A job reads them only
where their key (runner.data.prepared_key: the format, the files' SHA-256, the options and the loader's source) is
its runner's own; the job's result says which arrays it read (environment.prepared_data).

Cache layout (under the dataset cache, datasets.root(), mounted read-only into containers): the .npz as
sha256/<hex> beside the dataset files, and prepared/<key>.json naming it.
"""

import contextlib
import hashlib
import json
import os
import tempfile
import time

from dlrepro.inputs import datasets
from runner import data as runner_data


def _record(key):
    return datasets.root() / "prepared" / ("%s.json" % key)


@contextlib.contextmanager
def _data_root():
    """runner.data's loaders read the cache that DLREPRO_DATA_ROOT names: here, the host's."""
    before = os.environ.get(runner_data.DATA_ROOT_ENV)
    os.environ[runner_data.DATA_ROOT_ENV] = str(datasets.root())
    try:
        yield
    finally:
        if before is None:
            del os.environ[runner_data.DATA_ROOT_ENV]
        else:
            os.environ[runner_data.DATA_ROOT_ENV] = before


def prepare(data, log=print):
    """The ``prepared`` section {key, sha256} for a job's resolved ``data`` section (name, format, files, options),
    its arrays made and stored where the cache does not hold them yet; None for a format that is not in
    runner.data.PREPARED_FORMATS. Raises runner.data.DataError where the loader cannot read the files."""
    if data.get("format") not in runner_data.PREPARED_FORMATS:
        return None
    key = runner_data.prepared_key(data)
    record = _record(key)
    if record.is_file():
        found = json.loads(record.read_text())
        if (datasets.root() / "sha256" / found["sha256"]).is_file():
            return found
    started = time.monotonic()
    with _data_root():
        arrays = runner_data.LOADERS[data["format"]](data["files"], data.get("options") or {})
    blob = runner_data.arrays_file(arrays)
    digest = hashlib.sha256(blob).hexdigest()
    _write(datasets.root() / "sha256" / digest, blob)
    _write(record, json.dumps({"key": key, "sha256": digest}).encode())
    log(
        "%s: loaded once for the run's jobs in %.1f s (prepared arrays sha256:%s)"
        % (data["name"], time.monotonic() - started, digest[:12])
    )
    return {"key": key, "sha256": digest}


def _write(path, blob):
    """``blob`` as ``path``, read-only, whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
        tmp.write(blob)
    os.chmod(tmp.name, 0o444)
    os.replace(tmp.name, path)
