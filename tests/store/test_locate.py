"""A bundle named by a relative path, or under a relative results folder, is found as an absolute folder: a
container engine mounts absolute paths only (`dlrepro run --resume results/BUNDLE --rerun JOB` once failed its
jobs with "includes invalid characters for a local volume name")."""

from dlrepro.folders import results_root
from dlrepro.store import bundle
from tests import bundles


def test_a_relative_bundle_path_and_a_relative_results_folder_are_made_absolute(tmp_path, monkeypatch):
    folder = bundles.make(tmp_path / "results", "fcn", [bundles.Job("torch", "fcn-r", 64)])
    monkeypatch.chdir(tmp_path)
    relative = "results/" + folder.name
    assert bundle.locate(relative) == folder and bundle.locate(relative).is_absolute()
    assert bundle.locate(folder.name, "results") == folder
    assert results_root("results") == tmp_path / "results"
