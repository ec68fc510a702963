"""A build's progress as events: Docker BuildKit's protobuf trace decoded, Podman's classic stream as it comes; images
built several at once, one failure not stopping the rest; a base made once when several builds need it."""

import base64
import threading
import time

import pytest

from dlrepro import engine
from dlrepro.errors import ImageError
from dlrepro.images import bases, build, buildkit


def _varint(n):
    out = b""
    while True:
        out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


def _field(number, value):
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _trace(*parts):
    return {"id": buildkit.TRACE, "aux": base64.b64encode(b"".join(parts)).decode()}


def _vertex(digest, name, started=False, cached=False, completed=False, error=None):
    stamp = _field(1, 1764900000)  # a google.protobuf.Timestamp: seconds = 1
    body = _field(1, digest.encode()) + _field(3, name.encode())
    body += (_field(4, 1) if cached else b"") + (_field(5, stamp) if started else b"")
    body += (_field(6, stamp) if completed else b"") + (_field(7, error.encode()) if error else b"")
    return _field(1, body)


def _log(digest, text):
    return _field(3, _field(1, digest.encode()) + _field(2, _field(1, 5)) + _field(3, 1) + _field(4, text.encode()))


def test_protobuf_fields_are_read_by_number_and_wire_type():
    message = (
        _field(1, b"sha256:ab") + _field(4, 1) + _field(3, "[system 2/5] RUN apt-get update".encode()) + _field(4, 300)
    )
    assert buildkit.fields(message) == {1: [b"sha256:ab"], 3: [b"[system 2/5] RUN apt-get update"], 4: [1, 300]}
    with pytest.raises(ValueError, match="wire type 3"):
        buildkit.fields(_varint(1 << 3 | 3))


def test_buildkit_trace_gives_each_step_once_when_it_starts_and_every_log_line():
    events = buildkit.Events()
    assert events.events(_trace(_vertex("sha256:1", "[system 1/4] FROM dlrepro/base:x"))) == []  # not started yet
    assert events.events(
        _trace(
            _vertex("sha256:1", "[system 1/4] FROM dlrepro/base:x", cached=True, completed=True),
            _vertex("sha256:2", "[system 2/4] RUN apt-get update", started=True),
        )
    ) == [("step", "CACHED [system 1/4] FROM dlrepro/base:x"), ("step", "[system 2/4] RUN apt-get update")]
    assert events.events(
        _trace(
            _vertex("sha256:2", "[system 2/4] RUN apt-get update", started=True, completed=True),
            _log("sha256:2", "Get:1 http://deb.example bookworm InRelease\n"),
        )
    ) == [("line", "Get:1 http://deb.example bookworm InRelease\n")]
    assert events.events(
        _trace(
            _vertex(
                "sha256:3",
                "[stage-1 3/4] RUN pip install",
                started=True,
                error="process did not complete successfully: exit code: 1",
            )
        )
    ) == [
        ("step", "[stage-1 3/4] RUN pip install"),
        ("line", "[stage-1 3/4] RUN pip install: process did not complete successfully: exit code: 1\n"),
    ]
    assert events.events({"errorDetail": {"message": "failed"}, "error": "failed to solve"}) == [
        ("error", "failed to solve")
    ]
    assert events.events({"id": "moby.image.id", "aux": {"ID": "sha256:" + "a" * 64}}) == []


def test_the_classic_stream_of_podman_passes_as_it_comes():
    events = buildkit.Events()
    assert events.events({"stream": "STEP 2/9: RUN apt-get update\n"}) == [("step", "STEP 2/9: RUN apt-get update\n")]
    assert events.events({"stream": "--> 3f2a9c81d0e\n"}) == [("line", "--> 3f2a9c81d0e\n")]
    assert build.STEP_NUMBER.search("CACHED [system 2/4] RUN apt-get update").group(0) == "[system 2/4]"
    assert build.STEP_NUMBER.search("STEP 2/9: RUN apt-get update").group(0) == "STEP 2/9"


def test_images_build_at_once_and_one_that_fails_does_not_stop_the_others(matrix, monkeypatch):
    running, most = [0], [0]
    lock = threading.Lock()

    def ensure(matrix, image, options, log):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.2)
        with lock:
            running[0] -= 1
        if image.framework == "jax":
            raise ImageError("building %s failed; log: x" % image.name)
        return "built " + image.name

    made = []
    monkeypatch.setattr(build, "ensure", ensure)
    monkeypatch.setattr(bases, "ensure", lambda matrix, name, source, log: made.append(name))
    images = [matrix.find(name, "cpu") for name in ("torch", "jax", "caffe", "cntk")]
    done = build.ensure_all(matrix, images, build.BuildOptions(), log=lambda m: None, at_once=3)
    assert list(done) == ["torch-2.13.0-cpu", "jax-0.10.2-cpu", "caffe-1.0.0-cpu", "cntk-2.7.post2-cpu"]
    assert (
        done["torch-2.13.0-cpu"] == "built torch-2.13.0-cpu"
        and done["cntk-2.7.post2-cpu"] == "built cntk-2.7.post2-cpu"
    )
    assert isinstance(done["jax-0.10.2-cpu"], ImageError) and most[0] == 3
    # the bases first, each once: torch's and jax's, caffe's, and the one cntk's Python 3.6 goes onto (torch's)
    assert made == ["debian-bookworm", "debian-bullseye"]


def test_an_image_whose_base_cannot_be_made_gets_its_error_and_the_base_is_tried_once(matrix, monkeypatch):
    tried = []

    def make_base(matrix, name, source, log):
        tried.append(name)
        if name == "debian-bullseye":
            raise ImageError("mmdebstrap failed for base debian-bullseye; see base-debian-bullseye.bootstrap.log")

    monkeypatch.setattr(bases, "ensure", make_base)
    monkeypatch.setattr(build, "ensure", lambda matrix, image, options, log: "built " + image.name)
    monkeypatch.setattr(engine, "answers", lambda: True)  # the base's own failure, not an engine gone away
    images = [matrix.find("caffe", "cpu"), matrix.find("torch", "cpu"), matrix.find("chainer", "cpu")]
    done = build.ensure_all(matrix, images, build.BuildOptions(), log=lambda m: None, at_once=2)
    assert (
        sorted(tried) == ["debian-bookworm", "debian-bullseye"] and done["torch-2.13.0-cpu"] == "built torch-2.13.0-cpu"
    )
    assert [str(done[name]) for name in ("caffe-1.0.0-cpu", "chainer-7.8.1-cpu")] == [
        "mmdebstrap failed for base debian-bullseye; see base-debian-bullseye.bootstrap.log"
    ] * 2


def test_an_error_that_is_no_image_error_stops_the_builds_not_yet_started(matrix, monkeypatch):
    started = []

    def ensure(matrix, image, options, log):
        started.append(image.name)
        time.sleep(0.2)
        raise RuntimeError("the engine went away")

    monkeypatch.setattr(bases, "ensure", lambda *a: None)
    monkeypatch.setattr(build, "ensure", ensure)
    images = [matrix.find(name, "cpu") for name in ("torch", "jax", "mxnet", "tensorflow", "cntk")]
    with pytest.raises(RuntimeError, match="the engine went away"):
        build.ensure_all(matrix, images, build.BuildOptions(), log=lambda m: None, at_once=2)
    assert len(started) <= 4 and "cntk-2.7.post2-cpu" not in started  # the two running when the first failed and
    # the two that took their places meanwhile; the last was cancelled


def test_a_base_that_builds_at_once_need_is_made_once(matrix, monkeypatch):
    made = []

    def make(matrix, name, source, log):
        found = bases.BaseRef(name, "dlrepro/base:%s-1" % name, "bootstrap", "sha256:1", "sha256:2", {})
        if not made.count(name):
            time.sleep(0.3)  # bootstrapping
            made.append(name)
        return found

    monkeypatch.setattr(bases, "_ensure", make)
    threads = [threading.Thread(target=bases.ensure, args=(matrix, "debian-bullseye")) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == ["debian-bullseye"]
