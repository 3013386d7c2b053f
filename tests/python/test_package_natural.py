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


def run_fix(lines: list[str], producer: str, data: Any) -> Any:
    """Run every `fix in <producer>: ` line as written; the data the last line assigns."""
    code = [l.split(": ", 1)[1].split("  (in SQL")[0] for l in lines if l.startswith(f"fix in {producer}: ")]
    assert code, lines
    namespace = {"pa": pa, "pl": pl, "lineage_store": ls, "table": data, "df": data, "rel": data}
    for c in code:
        exec(c, namespace)
    return namespace[code[-1].split(";")[-1].split("=")[0].strip()]


def pandas_ns_frame(n: int = N) -> pd.DataFrame:
    """The issue's `pd.DataFrame(rows)`, its times as pandas made them before pandas 3
    (`datetime64[ns]`) and as it still makes them from epoch nanoseconds (`time.time_ns()`)."""
    df = pd.DataFrame(natural_rows(n))
    ns = [int(t.timestamp()) * 1_000_000_000 for t in df["event_time_utc"]]
    df["event_time_utc"] = pd.to_datetime(ns, unit="ns", utc=True)
    assert str(df["event_time_utc"].dtype) == "datetime64[ns, UTC]"
    return df


def test_a_pandas_frame_in_nanoseconds_is_named_conformed_and_refused_by_row_below_a_microsecond(
        reference: list[dict[str, Any]], tmp_path: Path) -> None:
    # pandas 3 makes `pd.DataFrame(rows)` of datetimes in µs: the frame as it is now.
    assert str(pd.DataFrame(natural_rows())["event_time_utc"].dtype) == "datetime64[us, UTC]"
    df = pandas_ns_frame()
    root = tmp_path / "store"
    store = ls.open(root)
    with pytest.raises(ls.InputError) as e:
        store.append(df)
    assert e.value.fields == ["event_time_utc", "strategy_index"]
    cli = cli_error("append", "--store", str(tmp_path / "cli"), "--input",
                    str(write_ipc(pa.table(df), tmp_path / "ns.arrow")))
    lines = added_lines(str(e.value), cli)
    assert "Timestamp(ns" in cli.splitlines()[0]
    assert snapshot(root) == {}
    store.append(run_fix(lines, "pandas", df))
    assert stored_rows(root) == reference
    # conform: nanoseconds with no sub-microsecond part are the same instants in µs.
    conformed = ls.conform(df)
    assert conformed.changes == [
        '`event_time_utc`: Timestamp(ns, "UTC") → Timestamp(µs, "UTC") (no value has a '
        'sub-microsecond part; the same instants, in UTC)',
        "`strategy_index`: Float64 → Int32 (every value is a whole number that fits; NaN as null is null)",
    ], conformed.changes
    root2 = tmp_path / "conformed"
    ls.open(root2).append(conformed)
    assert stored_rows(root2) == reference
    # One nanosecond more in row 3: refused, naming the row and field.
    df.loc[2, "event_time_utc"] += pd.Timedelta(1, "ns")
    with pytest.raises(ls.InputError) as e:
        ls.conform(df)
    assert (e.value.row, e.value.field) == (3, "event_time_utc")
    assert "has a sub-microsecond part (1 ns)" in str(e.value)


def test_conform_makes_numbers_exact_or_refuses_them_by_row(tmp_path: Path) -> None:
    base = pa.Table.from_pylist(natural_rows(), schema=ls.SCHEMA)
    accuracy = [None if i % 10 == 9 else float(i % 7) for i in range(N)]
    # int → float64: each value exact.
    ints = pa.array([None if a is None else int(a) for a in accuracy], pa.int64())
    c = ls.conform(with_column(base, "accuracy_m", ints))
    assert c.changes == ["`accuracy_m`: Int64 → Float64 (every value is exact in float64)"]
    assert c.to_pyarrow().column("accuracy_m").to_pylist() == accuracy
    beyond = ints.to_pylist()
    beyond[3] = 2**53 + 1
    with pytest.raises(ls.InputError) as e:
        ls.conform(with_column(base, "accuracy_m", pa.array(beyond, pa.int64())))
    assert (e.value.row, e.value.field) == (4, "accuracy_m")
    assert f"{2**53 + 1} has no exact float64 (beyond 2^53)" in str(e.value)
    # float32 → float64: every float32 is a float64 (0.1f stays the float32's value).
    f32 = pa.array([None if a is None else a + 0.1 for a in accuracy], pa.float32())
    c = ls.conform(with_column(base, "accuracy_m", f32))
    assert c.changes == ["`accuracy_m`: Float32 → Float64 (float64 holds every value exactly)"]
    assert c.to_pyarrow().column("accuracy_m").to_pylist() == f32.to_pylist()
    # decimal → int32: whole numbers that fit.
    idx = [None if i % 10 == 9 else i % 5 for i in range(N)]
    dec = pa.array([None if v is None else decimal.Decimal(v) for v in idx], pa.decimal128(10, 0))
    c = ls.conform(with_column(base, "strategy_index", dec))
    assert c.changes == ["`strategy_index`: Decimal128(10, 0) → Int32 (every value is a whole number that fits)"]
    assert c.to_pyarrow().column("strategy_index").to_pylist() == idx
    half = [None if v is None else decimal.Decimal(v) for v in idx]
    half[5] = decimal.Decimal("2.5")
    with pytest.raises(ls.InputError) as e:
        ls.conform(with_column(base, "strategy_index", pa.array(half, pa.decimal128(10, 1))))
    assert (e.value.row, e.value.field) == (6, "strategy_index")
    assert "2.5 is not a whole number" in str(e.value)
    big = half[:5] + [decimal.Decimal(3_000_000_000)] + half[6:]
    with pytest.raises(ls.InputError) as e:
        ls.conform(with_column(base, "strategy_index", pa.array(big, pa.decimal128(12, 0))))
    assert (e.value.row, e.value.field) == (6, "strategy_index")
    assert "3000000000 does not fit Int32" in str(e.value)
    # Every conformed table appends as the contract's table.
    ls.open(tmp_path / "store").append(c)


@pytest.mark.parametrize("unit,per_second", [("s", 1), ("ms", 1_000)])
def test_conform_takes_seconds_and_milliseconds_to_microseconds_or_refuses_an_overflow(
        unit: str, per_second: int) -> None:
    base = pa.Table.from_pylist(natural_rows(), schema=ls.SCHEMA)
    us = base.column("event_time_utc").cast(pa.int64()).to_pylist()
    coarse = [v // 1_000_000 * per_second for v in us]
    times = pa.array(coarse, pa.int64()).cast(pa.timestamp(unit, tz="UTC"))
    c = ls.conform(with_column(base, "event_time_utc", times))
    assert c.changes == [
        f'`event_time_utc`: Timestamp({"s" if unit == "s" else "ms"}, "UTC") → Timestamp(µs, "UTC") '
        "(the same instants, in UTC)"]
    assert c.to_pyarrow().column("event_time_utc").to_pylist() == base.column("event_time_utc").to_pylist()
    # A value whose microseconds do not fit in 64 bits: refused with its row.
    coarse[9] = 10**19 // (1_000_000 // per_second)
    with pytest.raises(ls.InputError) as e:
        ls.conform(with_column(base, "event_time_utc", pa.array(coarse, pa.int64()).cast(pa.timestamp(unit, tz="UTC"))))
    assert (e.value.row, e.value.field) == (10, "event_time_utc")
    assert f"{coarse[9]} is out of the range of microseconds since 1970" in str(e.value)


# producer → (natural data without `audit_tag` and with an extra `note`, the fields named)
COLUMNS: dict[str, tuple[Callable[[], Any], list[str]]] = {
    "pandas": (lambda: pd.DataFrame(natural_rows()).drop(columns=["audit_tag"]).assign(note="x"),
               ["audit_tag", "note", "strategy_index"]),
    "polars": (lambda: pl.DataFrame(natural_rows()).drop("audit_tag").with_columns(pl.lit("x").alias("note")),
               ["audit_tag", "note", "strategy_index"]),
    "duckdb": (lambda: duckdb_relation(duckdb.connect()).project("* EXCLUDE (audit_tag), 'x' AS note"),
               ["audit_tag", "note", "accuracy_m"]),
}


@pytest.mark.parametrize("producer", list(COLUMNS))
def test_the_fix_for_a_missing_and_an_extra_column_runs_in_the_callers_library(
        producer: str, reference: list[dict[str, Any]], tmp_path: Path) -> None:
    make, fields = COLUMNS[producer]
    data = make()
    root = tmp_path / "store"
    store = ls.open(root)
    with pytest.raises(ls.InputError) as e:
        store.append(data)
    assert sorted(e.value.fields) == sorted(fields), e.value.fields
    cli = cli_error("append", "--store", str(tmp_path / "cli"), "--input",
                    str(write_ipc(pa.table(make()), tmp_path / "cols.arrow")))
    lines = added_lines(str(e.value), cli)
    assert snapshot(root) == {}
    store.append(run_fix(lines, producer, data))
    assert stored_rows(root) == reference


def uuid_text(i: int) -> str:
    return f"0190a000-0000-7000-8000-{i:012d}"


def test_a_uuid_event_id_is_written_as_its_text_by_the_fix(reference: list[dict[str, Any]], tmp_path: Path) -> None:
    """DuckDB's UUID leaves as 16 bytes (`arrow.uuid`) with `arrow_lossless_conversion`:
    no cast writes its text in pyarrow; the fix lines of DuckDB and pyarrow do."""
    con = duckdb.connect()
    con.execute("SET arrow_lossless_conversion = true")
    rel = duckdb_relation(con).project(
        "* REPLACE (CAST(printf('0190a000-0000-7000-8000-%012d', sequence) AS UUID) AS event_id)")
    table = pa.table(rel)
    assert table.schema.field("event_id").type.storage_type == pa.binary(16)
    want = [{**r, "event_id": uuid_text(r["sequence"])} for r in reference]
    frame = rel.df()  # uuid.UUID objects, which pandas hands on as `arrow.uuid`
    for producer, data, fields in (("duckdb", rel, ["event_id", "accuracy_m"]),
                                   ("pyarrow", table, ["event_id", "accuracy_m"]),
                                   ("pandas", frame, ["event_id"])):
        root = tmp_path / producer
        store = ls.open(root)
        with pytest.raises(ls.InputError) as e:
            store.append(data)
        assert e.value.fields == fields, e.value.fields
        assert "a UUID? Write its text form" in str(e.value)
        lines = str(e.value).splitlines()
        store.append(run_fix(lines, producer, data))
        assert stored_rows(root) == want, producer
    # What DuckDB exports by default (UUIDs as text) is stored the same.
    con.execute("SET arrow_lossless_conversion = false")
    root = tmp_path / "default"
    ls.open(root).append(ls.conform(rel))
    assert stored_rows(root) == want
