"""Two processes rendering one image's build context at once (two xdist workers, a study beside a test) each get a
folder of their own, and each folder is gone once its build is done: one shared folder, removed and made again by
every render, once failed the second with FileExistsError (.../context/transport)."""

import threading

from dlrepro.images import context
from dlrepro.images.matrix import load as load_matrix
from tests.helpers import REGISTRY_BASE


def test_renders_of_one_image_at_once_get_folders_of_their_own_and_remove_them(tmp_path, monkeypatch):
    monkeypatch.setenv("DLREPRO_CACHE", str(tmp_path / "cache"))
    image = load_matrix().entry("torch-2.13.0-cpu")
    inside, both_in = [], threading.Barrier(2, timeout=30)

    def render():
        with context.render(image, REGISTRY_BASE) as ctx:
            both_in.wait()  # each holds its context while the other renders
            inside.append((ctx.directory, (ctx.directory / "Dockerfile").is_file(), ctx.digest))

    threads = [threading.Thread(target=render) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    (first, first_ok, first_digest), (second, second_ok, second_digest) = inside
    assert first != second and first.parent == second.parent == tmp_path / "cache" / "builds" / "torch-2.13.0-cpu"
    assert first_ok and second_ok and first_digest == second_digest
    assert not first.exists() and not second.exists()
