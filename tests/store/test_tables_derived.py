"""Tables derived from an older bundle's JSON files are derived once per process, again when a file changes."""

import shutil

from dlrepro.store import tables
from tests.store.real_bundles import REAL

CAFFE = 1.4972648284983734  # the caffe job's median in REAL's result.json


def test_derived_tables_follow_the_json_files_and_each_reader_gets_its_own_copy(tmp_path):
    bundle = tmp_path / REAL.name
    shutil.copytree(REAL, bundle)
    first = tables.summary(bundle)
    assert first.set_index("framework").loc["caffe", "median"] == CAFFE
    first["median"] = 0.0
    assert tables.summary(bundle).set_index("framework").loc["caffe", "median"] == CAFFE
    result = bundle / "jobs" / "alexnet-s.caffe.cpu.b16" / "result.json"
    result.write_text(result.read_text().replace('"median": 1.4972648284983734', '"median": 2.5', 1))
    assert tables.summary(bundle).set_index("framework").loc["caffe", "median"] == 2.5
    merged, samples = tables.merge([bundle])
    assert merged.set_index("framework").loc["caffe", "median"] == 2.5 and len(samples) == 168
