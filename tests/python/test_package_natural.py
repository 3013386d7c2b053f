"""Events built the way pandas, Polars, DuckDB and pyarrow users build them, without
`schema=lineage_store.SCHEMA`: `append` stays strict but names every difference at once
with the cast that fixes it in the caller's library (the test runs that line), and
`lineage_store.conform` makes the lossless conversions when asked, saying what it changed
and refusing anything lossy by row and field. Also: Polars `Null` columns, DuckDB's
`TIMESTAMPTZ` in a session zone that is not UTC, and empty input of the wrong schema."""
from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any, Callable

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import lineage_store as ls
from pkg_support import added_lines, cli_error, snapshot, write_ipc

UTC = dt.timezone.utc
N = 40


def natural_rows(n: int = N, run: str = "natural-1") -> list[dict[str, Any]]:
    """Rows as a job writes them: Python ints and floats, aware datetimes, None."""
    rows = []
    for i in range(1, n + 1):
        rejected = i % 10 == 0
        rows.append({
            "event_id": f"{run}-{i:05d}", "run_id": run, "sequence": i,
            "event_time_utc": dt.datetime(2026, 7, 13, 6, 0, tzinfo=UTC) + dt.timedelta(seconds=i),
            "stage": "reproject", "event_type": "crs_transform", "feature_id": f"parcels:{i:08d}",
            "source_crs": "EPSG:31467", "target_crs": "EPSG:25832",
            "outcome": "rejected" if rejected else "transformed",
            "strategy_index": None if rejected else 2, "accuracy_m": None if rejected else 0.02,
            "rejection_reason": "outside_area_of_use" if rejected else None,
            "tool_version": "geostd/2.4.1", "audit_tag": None,
        })
    return rows


def duckdb_relation(con: duckdb.DuckDBPyConnection, n: int = N, run: str = "natural-1") -> duckdb.DuckDBPyRelation:
    """The same events as a DuckDB user selects them: integer and decimal literals,
    TIMESTAMPTZ, NULL."""
    return con.sql(f"""
        SELECT '{run}-' || lpad(i::VARCHAR, 5, '0') AS event_id, '{run}' AS run_id, i AS sequence,
               TIMESTAMPTZ '2026-07-13 06:00:00+00' + to_seconds(i) AS event_time_utc,
               'reproject' AS stage, 'crs_transform' AS event_type,
               'parcels:' || lpad(i::VARCHAR, 8, '0') AS feature_id,
               'EPSG:31467' AS source_crs, 'EPSG:25832' AS target_crs,
               CASE WHEN i % 10 = 0 THEN 'rejected' ELSE 'transformed' END AS outcome,
               CASE WHEN i % 10 = 0 THEN NULL ELSE 2 END AS strategy_index,
               CASE WHEN i % 10 = 0 THEN NULL ELSE 0.02 END AS accuracy_m,
               CASE WHEN i % 10 = 0 THEN 'outside_area_of_use' END AS rejection_reason,
               'geostd/2.4.1' AS tool_version, NULL::VARCHAR AS audit_tag
        FROM range(1, {n + 1}) t(i) ORDER BY i""")


# name → (make the data, the fields append names, the variable its fix line assigns)
NATURAL: dict[str, tuple[Callable[[], Any], list[str], str]] = {
    "pyarrow from_pylist": (lambda: pa.Table.from_pylist(natural_rows()), ["strategy_index"], "table"),
    "pandas DataFrame": (lambda: pd.DataFrame(natural_rows()), ["strategy_index"], "table"),
    "Polars DataFrame": (lambda: pl.DataFrame(natural_rows()), ["strategy_index"], "df"),
    "DuckDB relation": (lambda: duckdb_relation(duckdb.connect()), ["accuracy_m"], "rel"),
}


def stored_rows(root: Path) -> list[dict[str, Any]]:
    t = ds.dataset(root, format="parquet", partitioning="hive").to_table(columns=ls.SCHEMA.names)
    return sorted(t.to_pylist(), key=lambda r: r["sequence"])


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """What the same events are stored as when built with schema=SCHEMA."""
    root = tmp_path_factory.mktemp("reference") / "store"
    ls.open(root).append(pa.Table.from_pylist(natural_rows(), schema=ls.SCHEMA))
    return stored_rows(root)


@pytest.mark.parametrize("name", list(NATURAL))
def test_append_names_every_difference_and_the_fix_in_the_callers_library(
        name: str, reference: list[dict[str, Any]], tmp_path: Path) -> None:
    make, fields, var = NATURAL[name]
    data = make()
    root = tmp_path / "store"
    store = ls.open(root)
    with pytest.raises(ls.InputError) as e:
        store.append(data)
    assert e.value.fields == fields and e.value.field == fields[0]
    assert [x["field"] for x in e.value.errors] == fields
    # First exactly the CLI's message for the same data in an Arrow IPC file: one line per
    # differing field (each with its cast), then the hint.
    cli = cli_error("append", "--store", str(tmp_path / "cli"), "--input",
                    str(write_ipc(pa.table(make()), tmp_path / "natural.arrow")))
    lines = added_lines(str(e.value), cli)
    *errors, hint = cli.splitlines()
    assert [l.split("`")[1] for l in errors] == fields
    assert all(l.startswith("schema mismatch: ") and "the contract expects" in l for l in errors)
    assert hint.startswith("hint: ") and "nothing is cast implicitly" in hint
    # Then the fix, in the caller's own library, which the test runs as written.
    producer = {"pyarrow from_pylist": "pyarrow", "pandas DataFrame": "pandas",
                "Polars DataFrame": "polars", "DuckDB relation": "duckdb"}[name]
    fix = [l for l in lines if l.startswith(f"fix in {producer}: ")]
    assert len(fix) == 1, lines
    code = fix[0].split(": ", 1)[1].split("  (in SQL")[0]
    namespace = {"pa": pa, "pl": pl, "lineage_store": ls, "table": data, "df": data, "rel": data}
    exec(code, namespace)
    assert snapshot(root) == {}
    store.append(namespace[var])
    assert stored_rows(root) == reference
    assert any("lineage_store.conform(data)" in l for l in lines)


@pytest.mark.parametrize("name", list(NATURAL))
def test_conform_makes_the_lossless_conversions_and_says_what_it_changed(
        name: str, reference: list[dict[str, Any]], tmp_path: Path) -> None:
    make, fields, _ = NATURAL[name]
    conformed = ls.conform(make())
    assert [c.split("`")[1] for c in conformed.changes] == fields, conformed.changes
    assert conformed.num_rows == len(conformed) == N
    assert conformed.to_pyarrow().schema.equals(ls.SCHEMA, check_metadata=False)
    root = tmp_path / "store"
    commits = ls.open(root).append(conformed)
    assert sum(c.row_count for c in commits) == N
    assert stored_rows(root) == reference


def test_conform_reports_each_change_in_words() -> None:
    conformed = ls.conform(pa.Table.from_pylist(natural_rows()))
    assert conformed.changes == ["`strategy_index`: Int64 → Int32 (every value fits)"]
    assert "Conformed(num_rows=40" in repr(conformed)
    # Nothing to change: nothing said.
    assert ls.conform(pa.Table.from_pylist(natural_rows(), schema=ls.SCHEMA)).changes == []


def with_column(t: pa.Table, name: str, arr: pa.Array) -> pa.Table:
    return t.set_column(t.schema.get_field_index(name), name, arr)


def test_conform_refuses_anything_lossy_naming_the_row_and_field() -> None:
    base = pa.Table.from_pylist(natural_rows(), schema=ls.SCHEMA)
    big = [2] * N
    big[6] = 3_000_000_000
    with pytest.raises(ls.InputError) as e:
        ls.conform(with_column(base, "strategy_index", pa.array(big, pa.int64())))
    assert (e.value.row, e.value.field) == (7, "strategy_index")
    assert "3000000000 does not fit Int32" in str(e.value)
    ns_values = base.column("event_time_utc").cast(pa.timestamp("ns", tz="UTC")).cast(pa.int64()).to_pylist()
    ns_values[2] += 1
    ns = pa.array(ns_values, pa.int64()).cast(pa.timestamp("ns", tz="UTC"))
    with pytest.raises(ls.InputError) as e:
        ls.conform(with_column(base, "event_time_utc", ns))
    assert (e.value.row, e.value.field) == (3, "event_time_utc")
    assert "sub-microsecond part (1 ns)" in str(e.value)
    exact, more = decimal.Decimal("0.02"), decimal.Decimal("0.123456789012345678901234567891")
    inexact = pa.array([exact] * 4 + [more] + [None] * (N - 5), pa.decimal128(38, 30))
    with pytest.raises(ls.InputError) as e:
        ls.conform(with_column(base, "accuracy_m", inexact))
    assert (e.value.row, e.value.field) == (5, "accuracy_m")
    assert "has no exact float64" in str(e.value)
    # A column no value of which can be converted: every such field at once.
    naive = base.column("event_time_utc").cast(pa.timestamp("us"))
    with pytest.raises(ls.InputError) as e:
        ls.conform(with_column(with_column(base, "event_time_utc", naive), "sequence",
                               pa.array([str(i) for i in range(N)])))
    assert "`event_time_utc` (Timestamp(µs)) has no time zone" in str(e.value)
    assert "`sequence` (Utf8) has no lossless conversion" in str(e.value)


def test_a_polars_null_column_is_all_null_for_an_optional_field_and_named_for_a_required_one(
        tmp_path: Path) -> None:
    df = pl.DataFrame(natural_rows(5, run="nulls")).with_columns(pl.col("strategy_index").cast(pl.Int32))
    assert df.schema["audit_tag"] == pl.Null
    root = tmp_path / "store"
    store = ls.open(root)
    # pl.lit(None) and an all-None column: Polars' Null type, for optional fields taken as null.
    commits = store.append(df.with_columns(pl.lit(None).alias("source_crs")))
    assert sum(c.row_count for c in commits) == 5
    assert {r["source_crs"] for r in stored_rows(root)} == {None}
    before = snapshot(root)
    bad = df.with_columns(pl.lit(None).alias("feature_id"))
    with pytest.raises(ls.InputError) as e:
        store.append(bad)
    assert (e.value.row, e.value.field) == (1, "feature_id")
    path = tmp_path / "bad.arrow"
    bad.write_ipc(path)
    assert str(e.value) == cli_error("append", "--store", str(root), "--input", str(path))
    # Every row at once, as the CLI lists them.
    assert str(e.value) == "\n".join(
        f"row {r}, field `feature_id`: is null, but the contract requires a value" for r in range(1, 6))
    assert [(x["row"], x["field"]) for x in e.value.errors] == [(r, "feature_id") for r in range(1, 6)]
    assert snapshot(root) == before
    with store.writer() as w:
        with pytest.raises(ls.InputError) as e:
            w.write(bad)
        assert e.value.field == "feature_id"


def test_duckdb_timestamptz_in_a_session_zone_that_is_not_utc(tmp_path: Path) -> None:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'Europe/Berlin'")
    rel = duckdb_relation(con, 12, run="berlin").project(
        "* REPLACE (CAST(sequence AS BIGINT) AS sequence, CAST(accuracy_m AS DOUBLE) AS accuracy_m)")
    arrow = pa.table(rel)
    assert arrow.schema.field("event_time_utc").type == pa.timestamp("us", tz="Europe/Berlin")
    root = tmp_path / "store"
    ls.open(root).append(rel)
    got = [r["event_time_utc"] for r in stored_rows(root)]
    assert got == [dt.datetime(2026, 7, 13, 6, 0, i, tzinfo=UTC) for i in range(1, 13)]
    # The CLI takes the same Arrow file the same way.
    r_cli = tmp_path / "cli"
    from pkg_support import lineage
    r = lineage("append", "--store", str(r_cli), "--input", str(write_ipc(arrow, tmp_path / "berlin.arrow")))
    assert r.returncode == 0, r.stderr
    assert stored_rows(r_cli) == stored_rows(root)


def test_empty_input_of_the_wrong_schema_is_refused_as_the_cli_refuses_it(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(root)
    right = pa.Table.from_pylist([], schema=ls.SCHEMA)
    wrong = pa.table({"event_id": pa.array([], pa.string()), "sequence": pa.array([], pa.int32())})
    assert store.append(right) == []
    cli = cli_error("append", "--store", str(root), "--input", str(write_ipc(wrong, tmp_path / "wrong.arrow")))
    for data in (wrong, wrong.to_reader(), pl.from_arrow(wrong), wrong.to_batches() or pa.record_batch(
            [pa.array([], pa.string()), pa.array([], pa.int32())], names=["event_id", "sequence"])):
        with pytest.raises(ls.InputError) as e:
            store.append(data)
        added_lines(str(e.value), cli)
        with store.writer() as w:
            with pytest.raises(ls.InputError) as e:
                w.write(data)
            added_lines(str(e.value), cli)
    assert snapshot(root) == {}
    # The CLI's empty Arrow file in the contract is a no-op, as the package's empty table.
    r = __import__("pkg_support").lineage("append", "--store", str(root), "--input",
                                          str(write_ipc(right, tmp_path / "right.arrow")))
    assert r.returncode == 0 and "the input holds no events" in r.stdout
