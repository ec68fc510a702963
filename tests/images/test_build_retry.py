"""A build that broke off in a download (pip's read timed out: fresh CI runs 8, 10 and 13 each lost a wheel this way) is
built again once, saying why; any other failure is not retried. The engine's answer is a stand-in (Podman's classic
stream, which buildkit.Events passes as it comes); no engine needed."""

from types import SimpleNamespace

import pytest

from dlrepro.errors import ImageError
from dlrepro.images import build

# the end of run 13's failed cntk-2.7.post2-cpu build (the index's host name left out)
TIMED_OUT = """  File "/opt/venv/lib/python3.6/site-packages/pip/_vendor/urllib3/response.py", line 430, in read
    raise IncompleteRead(self._fp_bytes_read, self.length_remaining)
  File "/opt/venv/lib/python3.6/site-packages/pip/_vendor/urllib3/response.py", line 336, in _error_catcher
    raise ReadTimeoutError(self._pool, None, 'Read timed out.')
pip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='index', port=443): Read timed out.
"""
MISMATCH = """ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.
    cntk==2.7.post2 from https://index/packages/cntk-2.7.post2-cp36-cp36m-manylinux1_x86_64.whl:
        Expected sha256 1f5a0b0c
             Got        9e8d7c6b
"""
STEP = {"stream": "STEP 2/4: RUN pip install --require-hashes -r /opt/dlrepro/requirements.lock\n"}
FAILED = {"error": "executor failed running [/bin/sh -c pip install ...]: exit code: 2"}


def _ctx(tmp_path):
    (tmp_path / "context").mkdir()
    return SimpleNamespace(
        directory=tmp_path / "context", digest="4e9079cc77aa0123", image=SimpleNamespace(name="cntk-2.7.post2-cpu")
    )


def _answers(monkeypatch, *answers):
    """The engine answers each build with the next of ``answers`` (lists of chunks); returns the list of calls."""
    calls = []

    def answer(ctx):
        calls.append(ctx)
        return iter(answers[len(calls) - 1])

    monkeypatch.setattr(build, "_answer", answer)
    return calls


def test_the_line_that_says_a_download_broke_off_is_found_and_other_failures_have_none():
    assert build.broken_download(TIMED_OUT.splitlines()) == (
        "pip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='index', port=443): Read timed out."
    )
    assert build.broken_download(["Connection reset by peer"]) == "Connection reset by peer"
    assert build.broken_download(MISMATCH.splitlines()) is None
    assert build.broken_download(["ERROR: No matching distribution found for torch==2.13.0+cpu"]) is None


def test_a_build_that_broke_off_in_a_download_runs_again_once_and_says_why(tmp_path, monkeypatch):
    calls = _answers(monkeypatch, [STEP, {"stream": TIMED_OUT}, FAILED], [STEP, {"stream": "Successfully installed\n"}])
    said = []
    assert build._build(_ctx(tmp_path), said.append) == [] and len(calls) == 2
    assert (
        "cntk-2.7.post2-cpu: a download broke off (pip._vendor.urllib3.exceptions.ReadTimeoutError: "
        "HTTPSConnectionPool(host='index', port=443): Read timed out.); building again"
    ) in said


def test_a_second_broken_download_fails_the_build_with_its_log(tmp_path, monkeypatch):
    calls = _answers(monkeypatch, [STEP, {"stream": TIMED_OUT}, FAILED], [STEP, {"stream": TIMED_OUT}, FAILED])
    with pytest.raises(build.DownloadBroken) as failed:
        build._build(_ctx(tmp_path), lambda line: None)
    assert len(calls) == 2 and str(failed.value).startswith(
        "building cntk-2.7.post2-cpu failed; log: %s" % (tmp_path / "4e9079cc77aa.log")
    )


def test_a_hash_mismatch_is_not_built_again(tmp_path, monkeypatch):
    calls = _answers(monkeypatch, [STEP, {"stream": MISMATCH}, FAILED])
    with pytest.raises(ImageError) as failed:
        build._build(_ctx(tmp_path), lambda line: None)
    assert len(calls) == 1 and not isinstance(failed.value, build.DownloadBroken)
    assert "the index serves other bytes than the lock pins" in str(failed.value)
