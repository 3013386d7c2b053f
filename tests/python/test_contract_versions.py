"""A store that mixes contract versions, read by pyarrow, DuckDB and Polars with the
union schema: parts of 1.2.0 and of the test-only 1.4.0 (the released 1.3.0 + a nullable
`transform_pipeline`), written by examples/lineage_test_contract (the `lineage` CLI with
1.4.0 registered; `cargo test` builds it next to $LINEAGE_BIN).
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import duckdb
import lineage_store as ls
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from test_interop import LINEAGE, LINEAGE_ARROW_SCHEMA, PARTITIONING, event, ndjson

TEST_CLI = Path(LINEAGE).parent / "examples" / "lineage_test_contract"
V140 = ls.contract_schema("1.3.0").remove_metadata().append(pa.field("transform_pipeline", pa.string()))


def run(*args: str, stdin: bytes | None = None) -> str:
    assert TEST_CLI.is_file(), f"{TEST_CLI} is built by `cargo test`"
    p = subprocess.run([str(TEST_CLI), *args], input=stdin, capture_output=True, check=False)
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout.decode()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("versions")
    root = tmp / "store"
    old = [event(i, "r1", "EPSG:4326") for i in range(1, 41)]
    run("append", "--store", str(root), "--schema-version", "1.2.0", stdin=ndjson(old))
    new = [event(i, "r1", "EPSG:4326" if i % 2 else "EPSG:3857") for i in range(41, 71)]
    for r in new:
        r["transform_pipeline"] = f"+proj=pipeline +step={r['sequence'] % 3}"
    columns = {f.name: [r.get(f.name) for r in new] for f in V140}
    times = pa.array(columns.pop("event_time_utc")).cast(pa.timestamp("us", tz="UTC"))
    table = pa.table(
        {f.name: times if f.name == "event_time_utc" else pa.array(columns[f.name], f.type) for f in V140},
        schema=V140,
    )
    src = tmp / "new.parquet"
    pq.write_table(table, src)
    run("append", "--store", str(root), "--input", str(src))
    return root


def parts(store: Path) -> list[Path]:
    return sorted(store.glob("run_id=*/target_crs=*/*.parquet"))


def test_each_part_records_its_version(store):
    versions = {}
    for p in parts(store):
        v = pq.read_metadata(p).metadata[b"lineage_schema_version"].decode()
        versions[v] = versions.get(v, 0) + pq.read_metadata(p).num_rows
        schema = pq.read_schema(p)
        assert schema.names == (V140 if v == "1.4.0" else LINEAGE_ARROW_SCHEMA).names
        # Part encoding 4: each column's Parquet field id is its contract column id (its
        # position from 1): 1.2.0's 1..15, and a newer version's added columns the next ids.
        assert [int(f.metadata[b"PARQUET:field_id"]) for f in schema] == list(range(1, len(schema) + 1))
    assert versions == {"1.2.0": 40, "1.4.0": 30}
    log = [json.loads(l) for l in run("log", "--store", str(store), "--json").splitlines()]
    assert sorted({p["schema_version"] for p in log}) == ["1.2.0", "1.4.0"]
    p = subprocess.run([str(TEST_CLI), "verify", "--store", str(store)], capture_output=True)
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()


def check(rows: list[dict]):
    assert len(rows) == 70
    by_seq = {r["sequence"]: r for r in rows}
    for s in range(1, 41):
        assert by_seq[s]["transform_pipeline"] is None
    for s in range(41, 71):
        assert by_seq[s]["transform_pipeline"] == f"+proj=pipeline +step={s % 3}"


def test_pyarrow_reads_the_union_schema(store):
    union = pa.unify_schemas([pq.read_schema(p) for p in parts(store)])
    assert union.names == V140.names
    t = ds.dataset(store, format="parquet", partitioning=PARTITIONING, schema=union).to_table()
    check(t.to_pylist())


def test_duckdb_reads_by_name(store):
    glob = f"{store}/**/*.parquet"
    rel = duckdb.sql(
        f"select sequence, transform_pipeline from read_parquet('{glob}', hive_partitioning = true, union_by_name = true)"
    )
    check([dict(zip(["sequence", "transform_pipeline"], r)) for r in rel.fetchall()])


def test_polars_inserts_missing_columns(store):
    df = pl.scan_parquet(
        [str(p) for p in parts(store)], missing_columns="insert", schema=pl.Schema(V140)
    ).collect()
    check(df.select("sequence", "transform_pipeline").to_dicts())
