"""Contract 1.3.0 (issue 37): a store holding 1.2.0 and 1.3.0 parts, sealed, read as one
table by deltalake, Polars (`scan_delta`), DuckDB (`delta_scan`, through
LINEAGE_DUCKDB_DELTA_PYTHON as in test_delta.py) and a pyarrow dataset: the 1.2.0 parts
read with nulls in the six columns 1.3.0 adds, and `count(col)` of each new column equals
the count made from the events written. `verify` is clean.

Run by scripts/test.sh with LINEAGE_BIN pointing at the built binary.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import lineage_store as ls
import polars as pl
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from test_interop import LINEAGE, event, ndjson

NEW = ["operation_code", "operation_name", "grids", "degraded", "input_dataset", "input_version"]
V13 = ls.contract_schema("1.3.0")


def lineage(*args: str, stdin: bytes | None = None) -> str:
    r = subprocess.run([LINEAGE, *args], input=stdin, capture_output=True, check=False)
    assert r.returncode == 0, r.stderr.decode() + r.stdout.decode()
    return r.stdout.decode()


def geo_event(i: int) -> dict:
    """Event `i` with 1.3.0 values, each new column null on some rows (a different set each)."""
    e = event(i, "run-geo", "EPSG:4326" if i % 2 else "EPSG:3857")
    e["source_crs"] = "EPSG:4267"
    e["operation_code"] = None if i % 5 == 0 else ("EPSG:1175" if i % 3 else "PROJ-SHA256:" + "0a" * 32)
    e["operation_name"] = None if i % 5 == 0 else "NAD27 to WGS 84 (6)"
    e["grids"] = None if i % 7 == 0 else ("" if i % 2 else "us_noaa_conus.tif")
    e["degraded"] = None if i % 4 == 0 else i % 3 == 0
    e["input_dataset"] = None if i % 6 == 0 else "parcels"
    e["input_version"] = None if i % 9 == 0 else "2026-07-01"
    return e


OLD = [event(i, "run-old", "EPSG:4326") for i in range(1, 41)]
GEO = [geo_event(i) for i in range(41, 71)]
LATE = [event(i, "run-old", "EPSG:3857") for i in range(71, 81)]
# `count(col)` made from the events written: the 1.2.0 rows hold null in every new column.
WANT = {c: sum(r.get(c) is not None for r in OLD + GEO + LATE) for c in NEW}
DEGRADED = sum(r["degraded"] is True for r in GEO)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Seal 1: 1.2.0 parts; seal 2: 1.3.0 parts (the schema change); seal 3: 1.2.0 again."""
    root = tmp_path_factory.mktemp("v13") / "store"
    s = str(root)
    lineage("append", "--store", s, "--schema-version", "1.2.0", "--batch-rows", "15", stdin=ndjson(OLD))
    lineage("seal", "--store", s)
    lineage("append", "--store", s, "--batch-rows", "10", stdin=ndjson(GEO))
    lineage("seal", "--store", s)
    lineage("append", "--store", s, "--schema-version", "1.2.0", stdin=ndjson(LATE))
    lineage("seal", "--store", s)
    return root


def part_versions(store: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in store.glob("run_id=*/target_crs=*/*.parquet"):
        v = pq.read_metadata(p).metadata[b"lineage_schema_version"].decode()
        out[v] = out.get(v, 0) + pq.read_metadata(p).num_rows
    return out


def test_the_store_holds_both_versions_and_verifies_clean(store: Path) -> None:
    assert part_versions(store) == {"1.2.0": 50, "1.3.0": 30}
    assert all(0 < n < 80 for n in WANT.values()), WANT  # every count is non-trivial
    report = json.loads(lineage("verify", "--store", str(store), "--json"))
    assert report["problems"] == [] and report["summary"] == "clean: no problems", report
    assert report["parts_ok"] == report["commits"] == len(list(store.glob("run_id=*/target_crs=*/*.parquet")))
    # The Delta log: only the seal that first sealed 1.3.0 parts carries a new schema.
    metas = {}
    for f in sorted((store / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            a = json.loads(line)
            if "metaData" in a:
                metas[int(f.stem)] = [x["name"] for x in json.loads(a["metaData"]["schemaString"])["fields"]]
    assert sorted(metas) == [0, 2], metas
    assert metas[0] == ls.SCHEMA.names and metas[2] == V13.names


def test_deltalake_reads_one_table_with_nulls_in_the_old_parts(store: Path) -> None:
    t = DeltaTable(str(store)).to_pyarrow_table()
    assert t.num_rows == 80
    assert t.schema.names == V13.names
    assert {c: len(t) - t.column(c).null_count for c in NEW} == WANT
    rows = {r["sequence"]: r for r in t.select(["sequence", *NEW]).to_pylist()}
    for r in OLD + LATE:
        assert all(rows[r["sequence"]][c] is None for c in NEW), r["sequence"]
    for r in GEO:
        assert {c: rows[r["sequence"]][c] for c in NEW} == {c: r[c] for c in NEW}, r["sequence"]
    got = DeltaTable(str(store)).to_pyarrow_table(filters=[("degraded", "=", True)]).num_rows
    assert got == DEGRADED > 0


def test_polars_scan_delta_counts_each_new_column(store: Path) -> None:
    counts = pl.scan_delta(str(store)).select([pl.col(c).count() for c in NEW]).collect().to_dicts()[0]
    assert counts == WANT
    assert pl.scan_delta(str(store)).filter(pl.col("degraded")).select(pl.len()).collect().item() == DEGRADED
    assert pl.scan_delta(str(store)).filter(pl.col("grids") == "").select(pl.len()).collect().item() == \
        sum(r.get("grids") == "" for r in GEO)


def test_a_pyarrow_dataset_with_the_1_3_0_schema_reads_both_versions(store: Path) -> None:
    files = ls.open(str(store)).files()
    t = ds.dataset(files, format="parquet", schema=V13.remove_metadata()).to_table()
    assert t.num_rows == 80
    assert {c: len(t) - t.column(c).null_count for c in NEW} == WANT


DUCKDB_DELTA = os.environ.get("LINEAGE_DUCKDB_DELTA_PYTHON")
DUCKDB_SCRIPT = """
import duckdb, json, os, sys, duckdb_extension_delta as m
ext = os.path.join(os.path.dirname(m.__file__), "extensions", "v" + duckdb.__version__, "delta.duckdb_extension")
con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
con.execute(f"LOAD '{ext}'")
root, cols = sys.argv[1], json.loads(sys.argv[2])
counts = con.execute("SELECT " + ", ".join(f"count({c})" for c in cols) + " FROM delta_scan(?)", [root]).fetchone()
degraded = con.execute("SELECT count(*) FROM delta_scan(?) WHERE degraded", [root]).fetchone()[0]
rows = con.execute("SELECT count(*) FROM delta_scan(?)", [root]).fetchone()[0]
print(json.dumps({"counts": dict(zip(cols, counts)), "degraded": degraded, "rows": rows}))
"""


@pytest.mark.skipif(not DUCKDB_DELTA, reason="LINEAGE_DUCKDB_DELTA_PYTHON not set (scripts/test.sh sets it)")
def test_duckdb_delta_scan_counts_each_new_column(store: Path) -> None:
    r = subprocess.run([DUCKDB_DELTA, "-c", DUCKDB_SCRIPT, str(store), json.dumps(NEW)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"counts": WANT, "degraded": DEGRADED, "rows": 80}


def test_compacting_1_3_0_parts_keeps_every_value(store: Path, tmp_path: Path) -> None:
    """Compaction merges parts of one contract version (the row digest covers `degraded`,
    the contract's first boolean); the compacted table reads the same."""
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    before = DeltaTable(str(copy)).to_pyarrow_table().sort_by("sequence").to_pylist()
    done = json.loads(lineage("compact", "--store", str(copy), "--target-rows", "100", "--json").splitlines()[0])
    versions = {c["schema_version"] for c in done["compactions"]}
    assert "1.3.0" in versions, done
    report = json.loads(lineage("verify", "--store", str(copy), "--json"))
    assert report["problems"] == [] and report["compacted_parts_ok"] == len(done["compactions"]), report
    t = DeltaTable(str(copy))
    assert len(t.file_uris()) < len(DeltaTable(str(store)).file_uris())
    assert t.to_pyarrow_table().sort_by("sequence").to_pylist() == before
