"""invoke archive / verify: a real bundle round-trips, and tampering with any byte is caught and named."""

import gzip
import hashlib
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from dlrepro import REPO_ROOT, checkout
from dlrepro.errors import DlreproError
from dlrepro.store import archive
from dlrepro.store.archive import checks as archive_checks
from dlrepro.store.archive import write as archive_write
from tests.helpers import dlrepro_here
from tests.store.archives import copied_bundle, flip, named, rewrite


@pytest.fixture
def bundle(tmp_path):
    return copied_bundle(tmp_path)


@pytest.fixture
def archived(bundle, tmp_path):
    return archive.create(bundle, tmp_path / "a.tar.gz", log=lambda m: None)


def test_round_trip_and_crate_lists_every_file(archived, tmp_path):
    result = archive.verify(archived.path)
    assert result.ok, "\n".join(map(str, result.problems))
    assert result.bundle_id == archived.bundle_id and result.files == len(archived.members)

    out = tmp_path / "unpacked"
    with tarfile.open(archived.path) as tar:
        tar.extractall(out, filter="data")
    root = out / archived.bundle_id
    body = json.loads((root / "bundle" / "bundle.json").read_text())
    spec = body["spec"]
    resolved = root / "specs" / ("%s.resolved.json" % spec["name"])
    assert hashlib.sha256(resolved.read_bytes()).hexdigest() == spec["sha256"]
    original = root / "specs" / ("%s.yaml" % spec["name"])
    if original.exists():
        assert hashlib.sha256(original.read_bytes()).hexdigest() == spec["file_sha256"]
    for image in body["images"]:
        assert (root / "bundle" / "images" / image["name"] / "Dockerfile").is_file()
        assert (root / "bundle" / "images" / image["name"] / "requirements.lock").is_file()

    from rocrate.rocrate import ROCrate

    crate = ROCrate(root)
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    listed = {e.id: e for e in crate.data_entities}
    for name in files:
        if name in (archive.CRATE, archive.MANIFEST):
            continue
        assert name in listed, name
        assert listed[name]["sha256"] == hashlib.sha256((root / name).read_bytes()).hexdigest(), name
        assert listed[name]["encodingFormat"]
    assert set(listed) == set(files) - {archive.CRATE, archive.MANIFEST}
    assert crate.license.id.endswith("CC-BY-4.0")
    action = crate.get_by_type("CreateAction")[0]
    instruments = [i.id for i in action["instrument"]]
    assert "#dlrepro" in instruments
    assert {"#image-%s" % i["name"] for i in body["images"]} <= set(instruments)
    assert crate.dereference("bundle/bundle.json")["schemaVersion"] == body["schema"]
    manifest = (root / archive.MANIFEST).read_text().splitlines()
    assert len(manifest) == len(files) - 1


def test_the_same_bundle_archives_to_the_same_bytes(archived, bundle, tmp_path):
    again = archive.create(bundle, tmp_path / "b.tar.gz", log=lambda m: None)
    assert again.path.read_bytes() == archived.path.read_bytes()


def _tamper_targets(archived):
    names = sorted(m.name for m in archived.members)
    job = next(n for n in names if n.startswith("bundle/jobs/") and n.endswith("/result.json"))
    lock_in = next((n for n in names if n.startswith("images/") and n.endswith("requirements.in")), None)
    return [
        job,
        "bundle/bundle.json",
        "bundle/SHA256SUMS",
        next(n for n in names if n.endswith(".resolved.json")),
        archive.CRATE,
        archive.MANIFEST,
    ] + ([lock_in] if lock_in else [])


@pytest.mark.parametrize("which", range(7))
def test_one_flipped_byte_fails_verify_and_names_the_file(archived, which):
    targets = _tamper_targets(archived)
    if which >= len(targets):
        pytest.skip("this bundle has no lock input to tamper with")
    name = targets[which]
    rewrite(archived.path, lambda files: files.__setitem__(name, flip(files[name])))
    result = archive.verify(archived.path)
    assert not result.ok
    assert named(result.problems, name), "%s not named in:\n%s" % (name, "\n".join(map(str, result.problems)))


def test_a_flipped_hash_digit_in_the_manifest_blames_the_manifest(archived):
    def change(files):
        lines = files[archive.MANIFEST].decode().splitlines(True)
        digest, name = lines[0].split("  ", 1)
        lines[0] = "%s  %s" % (("0" if digest[0] != "0" else "1") + digest[1:], name)
        files[archive.MANIFEST] = "".join(lines).encode()

    rewrite(archived.path, change)
    problems = archive.verify(archived.path).problems
    assert [p.file for p in problems] == [archive.MANIFEST]


def test_a_missing_file_is_named(archived):
    name = next(m.name for m in archived.members if m.name.endswith("/log.txt"))
    rewrite(archived.path, lambda files: files.pop(name))
    problems = archive.verify(archived.path).problems
    missing = named(problems, name)
    assert missing and all("missing" in p.message for p in missing)


def test_an_added_file_is_named(archived):
    rewrite(archived.path, lambda files: files.__setitem__("bundle/jobs/extra.txt", b"not measured\n"))
    problems = archive.verify(archived.path).problems
    assert {p.check for p in named(problems, "bundle/jobs/extra.txt")} >= {"manifest", "sha256sums", "ro-crate"}


def test_a_corrupt_gzip_stream_is_reported_once(archived):
    data = archived.path.read_bytes()
    archived.path.write_bytes(flip(data, len(data) // 3))
    problems = archive.verify(archived.path).problems
    assert len(problems) == 1 and problems[0].check in ("gzip", "tar"), "\n".join(map(str, problems))
    assert problems[0].file == str(archived.path)


def _end_of_last_member(tar_bytes):
    """Offset in the tar stream just after the last member's data and padding, and that member."""
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        last = tar.getmembers()[-1]
    return last.offset_data + -(-last.size // 512) * 512, last


def _damage_tar(path, where):
    """Decompress the archive, flip one byte of the tar stream at ``where(tar bytes)``, recompress."""
    data = gzip.decompress(path.read_bytes())
    path.write_bytes(gzip.compress(flip(data, where(data)), mtime=0))


DAMAGE = {
    "last 10 bytes cut": (lambda p: p.write_bytes(p.read_bytes()[:-10]), "gzip", "truncated"),
    "half cut": (lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]), "gzip", "truncated"),
    "gzip CRC flipped": (lambda p: p.write_bytes(flip(p.read_bytes(), p.stat().st_size - 8)), "gzip", "CRC mismatch"),
    "gzip length flipped": (lambda p: p.write_bytes(flip(p.read_bytes(), p.stat().st_size - 1)), "gzip", "length"),
    "byte in the trailing zeros": (
        lambda p: _damage_tar(p, lambda d: _end_of_last_member(d)[0] + 700),
        "tar",
        "non-zero bytes after the end-of-archive marker",
    ),
    "last byte of the tar": (
        lambda p: _damage_tar(p, lambda d: len(d) - 1),
        "tar",
        "non-zero bytes after the end-of-archive marker",
    ),
    "byte in the end-of-archive marker": (
        lambda p: _damage_tar(p, lambda d: _end_of_last_member(d)[0] + 3),
        "tar",
        "damaged block",
    ),
    "byte in a member's padding": (
        lambda p: _damage_tar(p, lambda d: _end_of_last_member(d)[0] - 1),
        "tar",
        "padding after member",
    ),
    "tar without its end-of-archive marker": (
        lambda p: p.write_bytes(
            gzip.compress(
                gzip.decompress(p.read_bytes())[: _end_of_last_member(gzip.decompress(p.read_bytes()))[0]], mtime=0
            )
        ),
        "tar",
        "truncated",
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_archive_fails_verify_once_naming_the_archive(archived, damage):
    change, check, words = DAMAGE[damage]
    if damage == "byte in a member's padding":
        _, last = _end_of_last_member(gzip.decompress(archived.path.read_bytes()))
        if last.size % 512 in (0, 511):
            pytest.skip("the last member fills its last block")
    change(archived.path)
    result = archive.verify(archived.path)
    assert not result.ok
    assert [(p.check, p.file) for p in result.problems] == [(check, str(archived.path))], "\n".join(
        map(str, result.problems)
    )
    assert words in result.problems[0].message and "dlrepro-verify" not in result.problems[0].message


def test_problems_name_members_below_the_bundle_id_never_temporary_paths(archived):
    name = next(m.name for m in archived.members if m.name.endswith("/job.json"))
    rewrite(archived.path, lambda files: files.pop(name))
    problems = archive.verify(archived.path).problems
    assert named(problems, name)
    for p in problems:
        assert "dlrepro-verify" not in p.file + p.message and "//" not in p.file, p
    assert archive_checks._in_bundle(Path("/tmp/x/b"), "/tmp/x/b/jobs/j/job.json") == "bundle/jobs/j/job.json"
    assert archive_checks._in_bundle(Path("/tmp/x/b"), "bundle") == "bundle/"


def test_an_invalid_bundle_is_not_archived(bundle, tmp_path):
    result = next((bundle / "jobs").glob("*/result.json"))
    result.write_text("garbage, not JSON")
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(archive.ArchiveError, match="not a valid bundle") as raised:
        archive.create(bundle, out / "x.tar.gz", log=lambda m: None)
    assert "dlrepro validate %s" % bundle in str(raised.value)
    assert not list(out.iterdir())


def test_out_may_be_a_folder(bundle, tmp_path):
    made = archive.create(bundle, tmp_path, log=lambda m: None)
    assert made.path == tmp_path / ("%s.tar.gz" % made.bundle_id) and archive.verify(made.path).ok
    with pytest.raises(archive.ArchiveError, match="does not exist"):
        archive.create(bundle, tmp_path / "no" / "x.tar.gz", log=lambda m: None)


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_no_partial_file_is_left_behind(bundle, tmp_path, monkeypatch, error):
    out = tmp_path / "out"
    out.mkdir()

    def fail(*args):
        raise error

    monkeypatch.setattr(archive_write, "add_member", fail)
    with pytest.raises(archive.ArchiveError if isinstance(error, OSError) else KeyboardInterrupt):
        archive.create(bundle, out, log=lambda m: None)
    assert not list(out.iterdir())


def test_unsafe_members_are_rejected_and_not_extracted(tmp_path):
    path = tmp_path / "evil.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, data in (("/abs.txt", b"y"), ("b/../../escaped.txt", b"x"), ("b/ok.txt", b"z")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("b/link")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    problems = archive.verify(path).problems
    unsafe = {p.file for p in problems if p.check == "archive"}
    assert {"b/../../escaped.txt", "/abs.txt", "b/link"} <= unsafe
    assert not (tmp_path / "escaped.txt").exists() and not list(tmp_path.rglob("abs.txt"))
    assert "b/ok.txt" not in unsafe  # the first safe member sets the top folder


def test_verify_and_archive_name_the_file_on_user_errors(tmp_path):
    with pytest.raises(DlreproError, match="no bundle.json"):
        archive.create(tmp_path, tmp_path / "x.tar.gz")
    with pytest.raises(archive.ArchiveError, match="no such archive"):
        archive.verify(tmp_path / "nothing.tar.gz")
    with pytest.raises(archive.ArchiveError, match="is a folder, not a .tar.gz archive"):
        archive.verify(tmp_path)


def test_invoke_archive_and_verify_exit_codes(bundle, tmp_path):
    invoke = [str(Path(sys.executable).with_name("invoke")), "--search-root", str(REPO_ROOT)]
    out = tmp_path / "cli.tar.gz"
    made = subprocess.run(invoke + ["archive", str(bundle), "--out", str(out)], capture_output=True, text=True)
    assert made.returncode == 0, made.stdout + made.stderr
    good = subprocess.run(invoke + ["verify", str(out)], capture_output=True, text=True)
    assert good.returncode == 0 and "ok" in good.stdout, good.stdout + good.stderr
    rewrite(out, lambda files: files.__setitem__("bundle/bundle.json", flip(files["bundle/bundle.json"])))
    bad = dlrepro_here("verify", str(out))  # the rest in this process: the two above were the commands themselves
    assert bad.returncode == 1 and "bundle/bundle.json" in bad.stdout, bad.stdout + bad.stderr
    into = dlrepro_here("archive", str(bundle), "--out", str(tmp_path))
    assert into.returncode == 0 and (tmp_path / ("%s.tar.gz" % bundle.name)).is_file(), into.stdout + into.stderr
    folder = dlrepro_here("verify", str(tmp_path))
    assert folder.returncode == 2 and "is a folder" in folder.stdout and "Traceback" not in folder.stderr


def test_a_spec_edited_since_the_run_comes_from_git_history():
    revs = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "log", "--format=%H", "--", "specs/alexnet.yaml"], capture_output=True, text=True
    ).stdout.split()
    if len(revs) < 2:
        pytest.skip("specs/alexnet.yaml has fewer than two versions in git history here")
    old = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "show", "%s:specs/alexnet.yaml" % revs[-1]], capture_output=True
    ).stdout
    found = checkout.versioned_file("specs/alexnet.yaml", hashlib.sha256(old).hexdigest())
    assert found and found[0] == old
    assert checkout.versioned_file("specs/alexnet.yaml", "0" * 64) is None


def test_author_and_license_are_recorded(bundle, tmp_path):
    made = archive.create(bundle, tmp_path / "a.tar.gz", license_id="CC0-1.0", author="A. Reviewer", log=print)
    with tarfile.open(made.path) as tar:
        graph = json.loads(tar.extractfile("%s/%s" % (made.bundle_id, archive.CRATE)).read())["@graph"]
    entities = {e["@id"]: e for e in graph}
    assert entities["./"]["license"] == {"@id": "https://spdx.org/licenses/CC0-1.0"}
    assert entities["#author"]["name"] == "A. Reviewer" and entities["#author"]["@type"] == "Person"
    assert entities["#run-%s" % made.bundle_id]["agent"] == {"@id": "#author"}
