"""Interop: stores written by `lineage` read back with pyarrow (the design note's
PARTITIONING), DuckDB and Polars; the design note's append-only check across appends.

Run by scripts/test.sh with LINEAGE_BIN pointing at the built binary.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

LINEAGE = os.environ.get("LINEAGE_BIN") or str(Path(__file__).resolve().parents[2] / "target/debug/lineage")

# The design note's contract, as written there.
LINEAGE_ARROW_SCHEMA = pa.schema([
    ("event_id", pa.string()),
    ("run_id", pa.string()),
    ("sequence", pa.int64()),
    ("event_time_utc", pa.timestamp("us", tz="UTC")),
    ("stage", pa.string()),
    ("event_type", pa.string()),
    ("feature_id", pa.string()),
    ("source_crs", pa.string()),
    ("target_crs", pa.string()),
    ("outcome", pa.string()),
    ("strategy_index", pa.int32()),
    ("accuracy_m", pa.float64()),
    ("rejection_reason", pa.string()),
    ("tool_version", pa.string()),
    ("audit_tag", pa.string()),
])
PARTITIONING = ds.partitioning(
    pa.schema([("run_id", pa.string()), ("target_crs", pa.string())]), flavor="hive"
)


def lineage(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([LINEAGE, *args], input=stdin, capture_output=True, check=False)


def event(i: int, run_id: str, crs: str) -> dict:
    rejected = i % 10 == 7
    return {
        "event_id": f"00000000-0000-4000-8000-{i:012d}",
        "run_id": run_id,
        "sequence": i,
        "event_time_utc": f"2026-07-13T06:00:{i % 60:02d}.{i:06d}Z",
        "stage": "reproject",
        "event_type": "crs_transform",
        "feature_id": f"parcels:{i:08d}",
        "source_crs": "EPSG:31467",
        "target_crs": crs,
        "outcome": "rejected" if rejected else "transformed",
        "strategy_index": None if rejected else i % 4,
        "accuracy_m": None if rejected else 0.5 * i,
        "rejection_reason": "outside_area_of_use" if rejected else None,
        "tool_version": "geostd/2.4.1",
        "audit_tag": None if i % 2 else "inspire-tg:2026Q3",
    }


def ndjson(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def checksums(root: Path) -> dict[str, str]:
    """The design note's _checksums, over the whole store (temps included, so a left
    temp shows up as a new file)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*")) if p.is_file()
    }


def assert_append_only(before: dict[str, str], after: dict[str, str], new_parts: int) -> None:
    for name, digest in before.items():
        assert name in after, f"prior file vanished: {name}"
        assert after[name] == digest, f"prior file mutated: {name}"
    new = set(after) - set(before)
    assert len([n for n in new if n.endswith(".parquet")]) == new_parts, new
    assert not [n for n in after if n.endswith(".tmp")], "temp file left"


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


def test_pyarrow_reads_rows_values_and_schema(store: Path) -> None:
    rows = [event(i, "run-a" if i <= 12 else "run-b", "urn:ogc:def:crs:EPSG::25832" if i % 3 else "EPSG:4326")
            for i in range(1, 21)]
    r = lineage("append", "--store", str(store), "--json", "--batch-rows", "5", stdin=ndjson(rows))
    assert r.returncode == 0, r.stderr.decode()
    pointers = [json.loads(line) for line in r.stdout.decode().splitlines()]
    assert sum(p["row_count"] for p in pointers) == 20

    dataset = ds.dataset(store, format="parquet", partitioning=PARTITIONING)
    table = dataset.to_table().sort_by("sequence")
    assert table.num_rows == 20
    # The schema round-trips unchanged (the design note's Verification, step 3): NDJSON is
    # written as the newest version, 1.3.0, whose first 15 columns are the design note's
    # schema exactly; the six it adds are null here (they are not in the input).
    schema = table.schema.remove_metadata()
    assert pa.schema(list(schema)[:15]).equals(LINEAGE_ARROW_SCHEMA)
    assert schema.names[15:] == ["operation_code", "operation_name", "grids", "degraded",
                                 "input_dataset", "input_version"]
    assert all(table.column(c).null_count == 20 for c in schema.names[15:])
    got = table.to_pylist()
    for row, want in zip(got, rows):
        crs = "EPSG:25832" if want["sequence"] % 3 else "EPSG:4326"
        assert row["target_crs"] == crs
        assert row["event_time_utc"] == dt.datetime.fromisoformat(want["event_time_utc"].replace("Z", "+00:00"))
        for k in ("event_id", "run_id", "sequence", "source_crs", "outcome", "strategy_index",
                  "accuracy_m", "rejection_reason", "tool_version", "audit_tag"):
            assert row[k] == want[k], (k, row[k], want[k])
    # Pruning to one run, as audit queries do.
    run_a = dataset.to_table(filter=ds.field("run_id") == "run-a")
    assert run_a.num_rows == 12

    for p in pointers:
        part = store / p["part_path"]
        meta = pq.read_schema(part).metadata
        assert meta[b"lineage_schema_version"] == b"1.3.0"
        assert meta[b"lineage_commit_id"].decode() == p["commit_id"]
        assert part.name == f"part-{p['commit_id']}.parquet"
        footer = pq.read_metadata(part)
        assert footer.metadata[b"lineage_schema_version"] == b"1.3.0"
        assert footer.num_rows == p["row_count"]
        assert footer.row_group(0).column(0).compression == "ZSTD"
        assert footer.row_group(0).column(2).statistics.has_min_max
        assert hashlib.sha256(part.read_bytes()).hexdigest() == p["sha256"]
        assert part.stat().st_size == p["size_bytes"]


def test_duckdb_and_polars_read_the_store(store: Path) -> None:
    r = lineage("demo", "--store", str(store), "--events", "3000", "--batch-rows", "400")
    assert r.returncode == 0, r.stderr.decode()
    glob = f"{store}/**/*.parquet"
    n, crss, rejected = duckdb.sql(
        f"select count(*), count(distinct target_crs), count(*) filter (where outcome = 'rejected') "
        f"from read_parquet('{glob}', hive_partitioning=true)"
    ).fetchall()[0]
    assert n == 3000
    assert crss == 5
    assert 0 < rejected < 300
    df = pl.scan_parquet(glob, hive_partitioning=True).collect()
    assert df.height == 3000
    assert set(df["target_crs"].unique()) == {"EPSG:4326", "EPSG:3857", "EPSG:25832", "EPSG:32633", "EPSG:27700"}
    assert df["accuracy_m"].null_count() > 0


def test_second_identical_append_adds_parts_and_changes_nothing(store: Path) -> None:
    rows = ndjson([event(i, "run-a", "EPSG:4326") for i in range(1, 11)])
    assert lineage("append", "--store", str(store), stdin=rows).returncode == 0
    before = checksums(store)
    r = lineage("append", "--store", str(store), stdin=rows)
    assert r.returncode == 0, r.stderr.decode()
    assert_append_only(before, checksums(store), new_parts=1)
    assert ds.dataset(store, format="parquet", partitioning=PARTITIONING).count_rows() == 20
    assert lineage("verify", "--store", str(store)).returncode == 0


def test_refused_input_publishes_nothing(store: Path) -> None:
    good = [event(i, "run-a", "EPSG:4326") for i in range(1, 6)]
    assert lineage("append", "--store", str(store), stdin=ndjson(good)).returncode == 0
    before = checksums(store)
    bad = good + [dict(event(6, "run-a", "EPSG:4326"), target_crs="OGC:CRS84")]
    r = lineage("append", "--store", str(store), stdin=ndjson(bad))
    assert r.returncode == 2
    assert "line 6, field `target_crs`" in r.stderr.decode()
    assert checksums(store) == before


def test_arrow_and_parquet_inputs_from_pyarrow(store: Path, tmp_path: Path) -> None:
    rows = [event(i, "run-p", "EPSG:4326") for i in range(1, 8)]
    for r in rows:
        r["event_time_utc"] = dt.datetime.fromisoformat(r["event_time_utc"].replace("Z", "+00:00"))
    table = pa.Table.from_pylist(rows, schema=LINEAGE_ARROW_SCHEMA)
    arrow_file = tmp_path / "in.arrow"
    with pa.OSFile(str(arrow_file), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table, max_chunksize=3)
    pq_file = tmp_path / "in.parquet"
    pq.write_table(table, pq_file)  # snappy, pyarrow's default
    for f in (arrow_file, pq_file):
        r = lineage("append", "--store", str(store), "--input", str(f))
        assert r.returncode == 0, r.stderr.decode()
    assert ds.dataset(store, format="parquet", partitioning=PARTITIONING).count_rows() == 14
    # A drifted type is refused, never cast (the design note's first troubleshooting row).
    drifted = table.set_column(2, "sequence", table.column("sequence").cast(pa.int32()))
    bad = tmp_path / "drifted.parquet"
    pq.write_table(drifted, bad)
    r = lineage("append", "--store", str(store), "--input", str(bad))
    assert r.returncode == 2
    assert "`sequence` has type Int32, the contract expects Int64" in r.stderr.decode()


def test_python_written_floats_come_back_bit_for_bit(store: Path, tmp_path: Path) -> None:
    """Issue 7, defect 1: accuracy_m written by json.dumps (and csv.writer) came back one
    ulp off for ~12 % of 5,000 values. Every value must be stored exactly as written."""
    import csv
    import random
    import struct

    rng = random.Random(20261130)
    values = [rng.random() * 10 ** rng.randint(-3, 4) for _ in range(5000)]
    values += [0.011325567542033023, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -0.0]
    rows = [dict(event(i, "run-f", "EPSG:4326"), outcome="transformed", rejection_reason=None,
                 strategy_index=0, accuracy_m=v) for i, v in enumerate(values, start=1)]
    ndjson_file = tmp_path / "floats.ndjson"
    ndjson_file.write_bytes(ndjson(rows))
    csv_file = tmp_path / "floats.csv"
    with csv_file.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    bits = lambda x: struct.pack("<d", x)  # noqa: E731  (compares -0.0 and 0.0 apart)
    for i, f in enumerate((ndjson_file, csv_file)):
        target = store / str(i)
        r = lineage("append", "--store", str(target), "--input", str(f))
        assert r.returncode == 0, r.stderr.decode()
        table = ds.dataset(target, format="parquet", partitioning=PARTITIONING).to_table().sort_by("sequence")
        got = table.column("accuracy_m").to_pylist()
        wrong = [(v, g) for v, g in zip(values, got) if bits(v) != bits(g)]
        assert not wrong, f"{f.name}: {len(wrong)} of {len(values)} values changed, e.g. {wrong[:3]}"


def test_pyarrow_encodings_of_the_same_values_are_accepted(tmp_path: Path) -> None:
    """Issue 7, item 6: columns in another order, dictionary-encoded and large strings, as
    pyarrow and Polars write them, are the same values: stored exactly as the plain table."""
    rows = [event(i, "run-e", "EPSG:4326") for i in range(1, 9)]
    for r in rows:
        r["event_time_utc"] = dt.datetime.fromisoformat(r["event_time_utc"].replace("Z", "+00:00"))
    plain = pa.Table.from_pylist(rows, schema=LINEAGE_ARROW_SCHEMA)
    variant = plain.select(list(reversed(plain.column_names)))
    variant = variant.set_column(variant.schema.get_field_index("run_id"), "run_id",
                                 variant.column("run_id").dictionary_encode())
    variant = variant.set_column(variant.schema.get_field_index("event_id"), "event_id",
                                 variant.column("event_id").cast(pa.large_string()))

    def stored(table: pa.Table, name: str) -> pa.Table:
        target = tmp_path / name
        for fmt, path in (("parquet", tmp_path / f"{name}.parquet"), ("arrow", tmp_path / f"{name}.arrow")):
            if fmt == "parquet":
                pq.write_table(table, path)
            else:
                with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
                    w.write_table(table)
            r = lineage("append", "--store", str(target), "--input", str(path))
            assert r.returncode == 0, r.stderr.decode()
        return ds.dataset(target, format="parquet", partitioning=PARTITIONING).to_table().sort_by("sequence")

    assert stored(variant, "variant").equals(stored(plain, "plain"))
