"""Tables derived from an older bundle's JSON files are kept in the cache between runs, keyed by the files' bytes."""

import pyarrow.parquet as pq
import pytest

from dlrepro.store import tables
from tests.bundles import Job, make


def _older(folder):
    """Declare the bundle's parquet tables of tables v7, as a bundle written before v8 has them."""
    for name in tables.FILES:
        table = pq.read_table(folder / name)
        pq.write_table(table.replace_schema_metadata({tables.METADATA_KEY: b"dlrepro.tables/7"}), folder / name)


def _new_process():
    """Forget what this process derived, as a second `dlrepro` run starts without it."""
    tables._derived.cache_clear()
    tables._derived_tables.cache_clear()


def test_a_second_run_reads_the_kept_tables_and_an_edited_result_is_derived_again(tmp_path, monkeypatch):
    monkeypatch.setenv("DLREPRO_CACHE", str(tmp_path / "cache"))
    bundle = make(tmp_path / "results", "alexnet", [Job("torch", "alexnet-s", 16, medians=[0.25] * 6)])
    _older(bundle)
    before = sorted(p.relative_to(bundle) for p in bundle.rglob("*"))
    _new_process()
    first = tables.summary(bundle), tables.samples(bundle)
    assert first[0]["median"].tolist() == [0.25] and len(first[1]) == 24  # 6 repeats x 4 iterations
    (kept,) = (tmp_path / "cache" / "tables").iterdir()
    assert sorted(p.name for p in kept.iterdir()) == ["samples.parquet", "summary.parquet"]

    _new_process()
    built = tables.build
    monkeypatch.setattr(tables, "build", lambda *a: pytest.fail("the JSON files were parsed again"))
    second = tables.summary(bundle), tables.samples(bundle)
    for was, now in zip(first, second):
        assert now.dtypes.equals(was.dtypes)
        assert now.equals(was)
    merged, samples = tables.merge([bundle])
    assert merged["median"].tolist() == [0.25] and samples["seconds"].equals(second[1]["seconds"])
    assert sorted(p.relative_to(bundle) for p in bundle.rglob("*")) == before  # the bundle itself not written

    monkeypatch.setattr(tables, "build", built)
    (result,) = bundle.glob("jobs/*/result.json")
    result.write_text(result.read_text().replace('"median": 0.25', '"median": 0.5', 1))
    _new_process()
    assert tables.summary(bundle)["median"].tolist() == [0.5]
    assert len(list((tmp_path / "cache" / "tables").iterdir())) == 2
