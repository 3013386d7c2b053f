"""Every filter a user writes, on every one of the 15 columns, read through the store's Delta
table by deltalake (`to_pyarrow_table`/`to_pandas`/`to_pyarrow_dataset` with filters, and
`QueryBuilder`), Polars `scan_delta`, DuckDB over `to_pyarrow_dataset()` and DuckDB
`delta_scan` (the separate venv of LINEAGE_DUCKDB_DELTA_PYTHON, when set), against a
brute-force count over the sealed parts: `count(*)` and `count(col)`.

Issue 35: the `add.stats` leave out `event_id` and `feature_id` (no footer statistics, by
design) and delta-rs then skipped every file for a filter on them (0 rows, even for `!=`).
The table now declares its stats columns (`delta.dataSkippingStatsColumns`). A store sealed
before is rebuilt here as such a store wrote it (the log without the declaration, which
`verify` accepts) and then sealed once more: its newest version is right, the versions
written before stay as they were.

Run by scripts/test.sh with LINEAGE_BIN pointing at the built binary.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder

LINEAGE = os.environ.get("LINEAGE_BIN") or str(Path(__file__).resolve().parents[2] / "target/debug/lineage")
DUCKDB_DELTA = os.environ.get("LINEAGE_DUCKDB_DELTA_PYTHON")
RUNS = ["r-a", "nightly.42", "scheduled__2026-07-13T06:00:00+00:00"]
LONG_TAG = "long-audit-tag/" + "x" * 70  # longer than the 64 characters a stat states exactly
T0 = dt.datetime(2026, 7, 13, 6, 0, tzinfo=dt.timezone.utc)


def lineage(*args: str, stdin: bytes | None = None) -> str:
    r = subprocess.run([LINEAGE, *args], input=stdin, capture_output=True, check=False)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def row(i: int, long_tags: bool) -> dict:
    rejected = i % 10 == 7
    tag = None if i % 2 else ("inspire-tg:2026Q3" if i % 6 or not long_tags else LONG_TAG)
    return {
        "event_id": f"00000000-0000-4000-8000-{i:012d}",
        "run_id": RUNS[(i // 7) % 3],
        "sequence": i,
        "event_time_utc": (T0 + dt.timedelta(seconds=i, microseconds=i)).isoformat().replace("+00:00", "Z"),
        "stage": "validate" if i % 5 == 0 else "reproject",
        "event_type": "crs_check" if i % 7 == 0 else "crs_transform",
        "feature_id": "parcels:hot" if i % 45 == 0 else f"parcels:{i:08d}",
        "source_crs": None if i % 11 == 0 else ["EPSG:31467", "EPSG:3035"][i % 2],
        "target_crs": ["EPSG:4326", "EPSG:25832"][(i // 13) % 2],
        "outcome": "rejected" if rejected else "transformed",
        "strategy_index": None if rejected else i % 4,
        "accuracy_m": None if rejected else 0.25 * i,
        "rejection_reason": "outside_area_of_use" if rejected else None,
        "tool_version": "geostd/2.5.0" if i >= 200 else "geostd/2.4.1",
        "audit_tag": tag,
    }


def make_store(root: Path, long_tags: bool) -> Path:
    """360 rows in about 20 parts over 3 runs and 2 CRSs, two seals."""
    for lo, hi in ((0, 240), (240, 360)):
        data = "".join(json.dumps(row(i, long_tags)) + "\n" for i in range(lo, hi)).encode()
        # 1.2.0's 15 columns (every filter on every one of them); 1.3.0's are in test_contract_1_3.py.
        lineage("append", "--store", str(root), "--batch-rows", "20", "--schema-version", "1.2.0", stdin=data)
        lineage("seal", "--store", str(root))
    return root


def brute_force(root: Path) -> pl.DataFrame:
    parts = []
    for f in sorted((root / "_lineage/seals").glob("*.json")):
        for e in json.loads(f.read_text())["entries"]:
            p = json.loads((root / e["key"]).read_text())
            parts.append(pq.read_table(root / p["part_path"], partitioning=None))
    return pl.from_arrow(pa.concat_tables(parts))


def filters(every: pl.DataFrame) -> list[tuple[str, str, object]]:
    """Per column: `=` and `in` on values some but not all rows hold, `!=`, `is null`
    and a range cut at the median."""
    out = []
    for c in every.columns:
        s = every[c].drop_nulls().sort()
        counts = every.group_by(c).len().filter(pl.col(c).is_not_null()).sort(["len", c], descending=[True, False])
        common = counts[c][0]
        rare = counts[c][-1]
        mid = s[len(s) // 2]
        out += [(c, "=", common), (c, "=", rare), (c, "!=", common), (c, "in", [rare, common]),
                (c, "is null", None), (c, ">=", mid), (c, "<", mid)]
    return out


def brute(every: pl.DataFrame, c: str, op: str, v: object) -> tuple[int, int]:
    col = pl.col(c)
    e = {"=": lambda: col == v, "!=": lambda: col != v, "in": lambda: col.is_in(v),
         "is null": col.is_null, ">=": lambda: col >= v, "<": lambda: col < v}[op]()
    got = every.filter(e)
    return got.height, got.height - got[c].null_count()


def arrow_expr(c: str, op: str, v: object) -> pc.Expression:
    f = pc.field(c)
    if op == "is null":
        return f.is_null()
    if op == "in":
        return f.isin(v)
    return {"=": f == v, "!=": f != v, ">=": f >= v, "<": f < v}[op]


def dnf(c: str, op: str, v: object) -> list | pc.Expression:
    return arrow_expr(c, op, v) if op == "is null" else [(c, op, v)]


def sql_lit(v: object, engine: str) -> str:
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, dt.datetime):
        t = v.strftime("%Y-%m-%d %H:%M:%S.%f")
        return f"TIMESTAMPTZ '{t}+00'" if engine == "duckdb" else f"arrow_cast('{t}Z', 'Timestamp(Microsecond, Some(\"UTC\"))')"
    if isinstance(v, list):
        return "(" + ", ".join(sql_lit(x, engine) for x in v) + ")"
    return repr(v)


def sql_where(c: str, op: str, v: object, engine: str) -> str:
    if op == "is null":
        return f"{c} IS NULL"
    if op == "in":
        return f"{c} IN {sql_lit(v, engine)}"
    return f"{c} {'<>' if op == '!=' else op} {sql_lit(v, engine)}"


def counted(t: pa.Table, c: str) -> tuple[int, int]:
    return t.num_rows, t.num_rows - t.column(c).null_count


def readers(root: Path) -> dict:
    """Each reader as a function of one filter -> (count(*), count(col))."""
    t = DeltaTable(str(root))
    ds = t.to_pyarrow_dataset()
    qb = QueryBuilder().register("t", t)
    con = duckdb.connect()
    con.register("d", ds)

    def q(engine_run, c: str, op: str, v: object, engine: str) -> tuple[int, int]:
        return tuple(engine_run(f"SELECT count(*), count({c}) FROM {{}} WHERE {sql_where(c, op, v, engine)}"))

    def polars(c: str, op: str, v: object) -> tuple[int, int]:
        col = pl.col(c)
        e = {"=": lambda: col == v, "!=": lambda: col != v, "in": lambda: col.is_in(v),
             "is null": col.is_null, ">=": lambda: col >= v, "<": lambda: col < v}[op]()
        r = pl.scan_delta(str(root)).filter(e).select(pl.len(), pl.col(c).count()).collect()
        return int(r[0, 0]), int(r[0, 1])

    return {
        "to_pyarrow_table": lambda c, op, v: counted(t.to_pyarrow_table(filters=dnf(c, op, v)), c),
        "to_pandas": lambda c, op, v: (lambda d: (len(d), int(d[c].count())))(t.to_pandas(filters=dnf(c, op, v))),
        "to_pyarrow_dataset": lambda c, op, v: counted(ds.to_table(filter=arrow_expr(c, op, v)), c),
        "QueryBuilder": lambda c, op, v: q(
            lambda s: pa.table(qb.execute(s.format("t")).read_all()).to_pylist()[0].values(), c, op, v, "datafusion"),
        "duckdb(to_pyarrow_dataset)": lambda c, op, v: q(
            lambda s: con.execute(s.format("d")).fetchone(), c, op, v, "duckdb"),
        "polars scan_delta": polars,
    }


DUCKDB_SCRIPT = """
import duckdb, json, os, sys, duckdb_extension_delta as m
ext = os.path.join(os.path.dirname(m.__file__), "extensions", "v" + duckdb.__version__, "delta.duckdb_extension")
con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
con.execute(f"LOAD '{ext}'")
root = sys.argv[1]
print(json.dumps([list(con.execute(s.replace("{}", "delta_scan(?)"), [root]).fetchone()) for s in json.load(sys.stdin)]))
"""


def duckdb_delta_scan(root: Path, cases: list) -> list[tuple[int, int]]:
    sqls = [f"SELECT count(*), count({c}) FROM {{}} WHERE {sql_where(c, op, v, 'duckdb')}" for c, op, v in cases]
    r = subprocess.run([DUCKDB_DELTA, "-c", DUCKDB_SCRIPT, str(root)], input=json.dumps(sqls),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return [tuple(x) for x in json.loads(r.stdout)]


def wrong_answers(root: Path, every: pl.DataFrame, only: tuple[str, ...] = ()) -> list[str]:
    cases = filters(every)
    bad = []
    for name, read in readers(root).items():
        if only and name not in only:
            continue
        for c, op, v in cases:
            want, got = brute(every, c, op, v), read(c, op, v)
            if tuple(got) != want:
                bad.append(f"{name}: {c} {op} {v!r}: {got}, want {want}")
    if DUCKDB_DELTA and not only:
        for (c, op, v), got in zip(cases, duckdb_delta_scan(root, cases)):
            if got != brute(every, c, op, v):
                bad.append(f"delta_scan: {c} {op} {v!r}: {got}, want {brute(every, c, op, v)}")
    return bad


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return make_store(tmp_path_factory.mktemp("filters") / "store", long_tags=True)


def test_the_filters_are_non_trivial(store: Path) -> None:
    every = brute_force(store)
    assert every.height == 360 and len(every.columns) == 15
    cases = filters(every)
    assert len(cases) == 15 * 7
    answers = [brute(every, *case)[0] for case in cases]
    assert sum(0 < a < 360 for a in answers) >= 15 * 5, answers
    assert brute(every, "feature_id", "=", "parcels:hot")[0] == 8
    # Some part's audit_tag max is longer than a stat states exactly: its bounds are cut.
    assert "long-audit-tag/" in (store / "_delta_log/00000000000000000001.json").read_text()


def test_every_filter_on_every_column_gives_the_brute_force_counts(store: Path) -> None:
    t = DeltaTable(str(store))
    assert t.metadata().configuration["delta.dataSkippingStatsColumns"].split(",") == [
        c for c in brute_force(store).columns if c not in ("event_id", "run_id", "feature_id", "target_crs")]
    assert wrong_answers(store, brute_force(store)) == []


def legacy_log(root: Path) -> None:
    """Rewrite the Delta log as a lineage-store before issue 35 wrote it: no declared stats
    columns in the metaData, no `statsColumns` in the commitInfo (same bytes otherwise)."""
    for f in sorted((root / "_delta_log").glob("*.json")):
        lines = []
        for line in f.read_text().splitlines():
            a = json.loads(line)
            if "commitInfo" in a:
                a["commitInfo"]["lineageStore"].pop("statsColumns")
            if "metaData" in a:
                a["metaData"]["configuration"].pop("delta.dataSkippingStatsColumns")
            lines.append(json.dumps(a, separators=(",", ":"), ensure_ascii=False))
        f.write_text("".join(x + "\n" for x in lines))


def test_a_store_sealed_before_the_fix_is_right_from_its_next_seal_on(tmp_path: Path) -> None:
    root = make_store(tmp_path / "store", long_tags=False)
    legacy_log(root)
    assert "clean: no problems" in lineage("verify", "--store", str(root))
    every = brute_force(root)
    # What such a store gave: every file skipped for a filter on feature_id.
    before = DeltaTable(str(root)).to_pyarrow_table(filters=[("feature_id", "=", "parcels:hot")]).num_rows
    assert before == 0
    # The next seal (even one adding nothing) declares the stats columns.
    lineage("seal", "--store", str(root), "--allow-empty")
    t = DeltaTable(str(root))
    assert t.version() == 3
    assert "delta.dataSkippingStatsColumns" in t.metadata().configuration
    # (to_pandas and DuckDB share the paths of to_pyarrow_table and of the dataset: the
    # matrix above runs them; here the test stays fast.)
    assert wrong_answers(root, every, only=("to_pyarrow_table", "QueryBuilder", "polars scan_delta")) == []
    assert "clean: no problems" in lineage("verify", "--store", str(root))
    # The versions written before are create-only and stay as they were: reading the table
    # as of one of them still misses the rows.
    old = DeltaTable(str(root), version=2).to_pyarrow_table(filters=[("feature_id", "=", "parcels:hot")])
    assert old.num_rows == 0
