"""`lineage compact` with real clients (issue 20): the rows before and after are equal
through delta-rs (`deltalake`) and Polars (sorted, every column); a directory glob of the
store (DuckDB `**/*.parquet`, Polars' recursive glob, pyarrow's dataset discovery) counts
the same rows before and after, because compacted parts are named so no glob reads them;
older table versions still read the originals; `lineage files` feeds DuckDB the compacted
parts; `verify` is clean.

Run by scripts/test.sh with LINEAGE_BIN pointing at the built binary.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from deltalake import DeltaTable
from test_interop import event

LINEAGE = os.environ.get("LINEAGE_BIN") or str(Path(__file__).resolve().parents[2] / "target/debug/lineage")
ROWS = 400


def lineage(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    r = subprocess.run([LINEAGE, *args], input=stdin, capture_output=True, check=False)
    assert r.returncode == 0, r.stderr.decode()
    return r


def sort_all(t: pa.Table) -> pa.Table:
    cols = sorted(t.column_names)
    t = t.select(cols)
    return t.sort_by([(c, "ascending") for c in ["event_id", "sequence"]])


def glob_counts(store: Path) -> dict[str, int]:
    pattern = f"{store}/**/*.parquet"
    return {
        "duckdb": duckdb.sql(f"select count(*) from read_parquet('{pattern}')").fetchall()[0][0],
        "polars": pl.scan_parquet(pattern, hive_partitioning=False).select(pl.len()).collect().item(),
        "pyarrow": ds.dataset(str(store), format="parquet").count_rows(),
    }


@pytest.fixture(scope="module")
def compacted(tmp_path_factory) -> dict:
    """400 events of two runs and two CRSs in commits of 5 rows, sealed (seal 1); what the
    readers see then; compacted (seal 2) into parts of about 100 rows."""
    store = tmp_path_factory.mktemp("compact") / "store"
    rows = [event(i, f"run-{i % 2}", "EPSG:4326" if i % 4 < 2 else "EPSG:25832") for i in range(ROWS)]
    lineage("append", "--store", str(store), "--batch-rows", "5",
            stdin="".join(json.dumps(r) + "\n" for r in rows).encode())
    lineage("seal", "--store", str(store))
    before = {
        "delta": sort_all(DeltaTable(str(store)).to_pyarrow_table()),
        "delta_files": len(DeltaTable(str(store)).file_uris()),
        "polars": pl.read_delta(str(store)).sort(["event_id", "sequence"]),
        "globs": glob_counts(store),
        "parquet_files": sorted(str(p) for p in store.rglob("*.parquet")),
    }
    out = json.loads(lineage("compact", "--store", str(store), "--target-rows", "100", "--json").stdout)
    return {"store": store, "before": before, "out": out}


def test_the_compaction_took_seal_2_with_far_fewer_files(compacted: dict) -> None:
    out, store = compacted["out"], compacted["store"]
    assert out["as_of_seal"] == 1 and out["seal"]["seq"] == 2
    t = DeltaTable(str(store))
    assert t.version() == 2
    files = t.file_uris()
    assert compacted["before"]["delta_files"] == 80
    assert len(files) == len(out["compactions"]) <= 8
    assert all(f.endswith(".compacted") and "/_lineage/compacted/parts/" in f for f in files)
    # The version <-> seal mapping, read from the log: txn and commitInfo of version 2.
    actions = [json.loads(l) for l in (store / "_delta_log/00000000000000000002.json").read_text().splitlines()]
    txn = next(a["txn"] for a in actions if "txn" in a)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert txn == {"appId": "lineage-store/seal", "version": 2, "lastUpdated": txn["lastUpdated"]}
    assert info["lineageStore"]["sealSeq"] == 2
    assert len(info["lineageStore"]["compactions"]) == len(out["compactions"])
    removes = [a["remove"] for a in actions if "remove" in a]
    assert len(removes) == 80 and all(r["dataChange"] is False for r in removes)
    adds = [a["add"] for a in actions if "add" in a]
    assert all(a["dataChange"] is False for a in adds)


def test_rows_are_equal_through_deltalake_and_polars(compacted: dict) -> None:
    store, before = compacted["store"], compacted["before"]
    after = sort_all(DeltaTable(str(store)).to_pyarrow_table())
    assert after.num_rows == ROWS
    assert after.equals(before["delta"])
    got = pl.read_delta(str(store)).sort(["event_id", "sequence"])
    assert got.equals(before["polars"])
    lazy = pl.scan_delta(str(store)).select(pl.len()).collect().item()
    assert lazy == ROWS
    # The version before the compaction still reads the originals.
    old = DeltaTable(str(store), version=1)
    assert len(old.file_uris()) == before["delta_files"]
    assert sort_all(old.to_pyarrow_table()).equals(before["delta"])


def test_a_directory_glob_counts_the_same_rows_before_and_after(compacted: dict) -> None:
    store, before = compacted["store"], compacted["before"]
    assert before["globs"] == {"duckdb": ROWS, "polars": ROWS, "pyarrow": ROWS}
    assert glob_counts(store) == before["globs"]
    assert sorted(str(p) for p in store.rglob("*.parquet")) == before["parquet_files"]


def test_lineage_files_feeds_duckdb_the_compacted_parts(compacted: dict) -> None:
    store = compacted["store"]
    files = lineage("files", "--store", str(store)).stdout.decode().split()
    assert all(f.endswith(".compacted") for f in files)
    got = duckdb.sql(f"select count(*), count(distinct event_id) from read_parquet({files})").fetchall()[0]
    assert got == (ROWS, ROWS)
    originals = lineage("files", "--store", str(store), "--originals").stdout.decode().split()
    assert len(originals) == 80
    by_run = duckdb.sql(
        f"select run_id, count(*) from read_parquet({files}) group by run_id order by run_id"
    ).fetchall()
    assert by_run == [("run-0", ROWS // 2), ("run-1", ROWS // 2)]


def test_verify_is_clean_and_a_second_compact_does_nothing(compacted: dict) -> None:
    store = compacted["store"]
    lineage("verify", "--store", str(store))
    before = sorted((str(p), p.stat().st_size) for p in store.rglob("*") if p.is_file())
    out = json.loads(lineage("compact", "--store", str(store), "--target-rows", "100", "--json").stdout)
    assert out["compactions"] == [] and out["seal"] is None
    assert sorted((str(p), p.stat().st_size) for p in store.rglob("*") if p.is_file()) == before


def test_store_compact_from_python_and_the_reads_that_prefer_its_parts(tmp_path: Path) -> None:
    import lineage_store as ls
    from pkg_support import events

    store = ls.open(tmp_path / "store")
    store.append(events(120, runs=("run-a",)), batch_rows=10)
    store.seal()
    before = store.files()
    rows_before = store.scan().read_all().sort_by([("sequence", "ascending"), ("event_id", "ascending")])
    plan = store.compact(dry_run=True)
    assert plan["dry_run"] is True and plan["seal"] is None and plan["compactions"], plan
    assert store.files() == before, "a dry run publishes nothing"
    out = store.compact(target_rows=60)
    assert out["seal"]["seq"] == 2 and len(out["compactions"]) >= 1, out
    after = store.files()
    assert len(after) < len(before)
    assert all(not f.endswith(".parquet") for f in after if "_lineage/compacted/" in f)
    assert store.files(originals=True) == before
    rows_after = store.scan().read_all().sort_by([("sequence", "ascending"), ("event_id", "ascending")])
    assert rows_after.equals(rows_before)
    assert store.scan(originals=True).read_all().num_rows == rows_before.num_rows
    assert store.verify().clean
    # Nothing left to do: nothing published.
    again = store.compact()
    assert again["seal"] is None and again["compactions"] == []
