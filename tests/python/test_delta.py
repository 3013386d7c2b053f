"""The Delta Lake table every seal writes (`_delta_log/<N>.json` = seal N), read by real
clients: delta-rs (the `deltalake` package), Polars `read_delta`/`scan_delta`, and
`java.net.URI` for every raw `add.path` when a JDK is on the machine.

Run by scripts/test.sh with LINEAGE_BIN pointing at the built binary.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake
from test_interop import event

LINEAGE = os.environ.get("LINEAGE_BIN") or str(Path(__file__).resolve().parents[2] / "target/debug/lineage")
SCHEDULED = "scheduled__2026-07-13T06:00:00+00:00"


def lineage(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    r = subprocess.run([LINEAGE, *args], input=stdin, capture_output=True, check=False)
    assert r.returncode == 0, r.stderr.decode()
    return r


def append(store: Path, rows: list[dict], batch_rows: int = 40) -> None:
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    lineage("append", "--store", str(store), "--batch-rows", str(batch_rows), stdin=data)


def seal(store: Path) -> int:
    """A seal, also when nothing is new (`--allow-empty`: these tests count one version a seal)."""
    return json.loads(lineage("seal", "--store", str(store), "--allow-empty", "--json").stdout)["seq"]


def sealed_parts(store: Path) -> dict[int, list[dict]]:
    """Seal number -> the pointers it seals (from the seals and pointers themselves)."""
    out = {}
    for f in sorted((store / "_lineage/seals").glob("*.json")):
        s = json.loads(f.read_text())
        out[s["seq"]] = [json.loads((store / e["key"]).read_text()) for e in s["entries"]]
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Three seals (the third adds nothing), a run_id with `:` and `+`, two CRSs, then
    commits no seal covers."""
    root = tmp_path_factory.mktemp("delta") / "store"
    i = 0

    def rows(n: int, run: str, crs: str) -> list[dict]:
        nonlocal i
        out = [event(i + k, run, crs) for k in range(n)]
        i += n
        return out

    append(root, rows(100, SCHEDULED, "EPSG:4326") + rows(60, "nightly.42", "EPSG:25832"))
    assert seal(root) == 1
    append(root, rows(80, SCHEDULED, "EPSG:25832"))
    assert seal(root) == 2
    assert seal(root) == 3
    append(root, rows(50, "late", "EPSG:4326"))  # unsealed
    return root


def files_of(t: DeltaTable) -> set[str]:
    return {str(Path(u.removeprefix("file://"))) for u in t.file_uris()}


def test_the_table_version_is_the_newest_seal_and_its_txn_agrees(store: Path) -> None:
    t = DeltaTable(str(store))
    assert t.version() == 3
    assert t.transaction_version("lineage-store/seal") == 3
    assert DeltaTable(str(store), version=1).transaction_version("lineage-store/seal") == 1
    assert t.metadata().partition_columns == ["run_id", "target_crs"]
    assert t.metadata().configuration["delta.appendOnly"] == "true"
    p = t.protocol()
    assert (p.min_reader_version, p.min_writer_version) == (1, 7)


def test_every_version_holds_exactly_the_parts_and_rows_sealed_up_to_it(store: Path) -> None:
    # A planted copy of a sealed part and a planted file under _lineage/: invisible.
    first = sealed_parts(store)[1][0]
    planted = store / Path(first["part_path"]).parent / f"part-{uuid.uuid4()}.parquet"
    shutil.copy(store / first["part_path"], planted)
    shutil.copy(store / first["part_path"], store / "_lineage/stash.parquet")
    try:
        by_seal = sealed_parts(store)
        want_parts: set[str] = set()
        want_rows = 0
        for k in range(0, 4):
            for p in by_seal.get(k, []):
                want_parts.add(str(store / p["part_path"]))
                want_rows += p["row_count"]
            t = DeltaTable(str(store), version=k)
            assert files_of(t) == want_parts, k
            assert t.to_pyarrow_table().num_rows == want_rows, k
            assert pl.read_delta(str(store), version=k).height == want_rows, k
            assert pl.scan_delta(str(store), version=k).select(pl.len()).collect().item() == want_rows, k
        all_pointers = [
            json.loads(f.read_text()) for f in (store / "_lineage/commits").rglob("*.json")
        ]
        assert sum(p["row_count"] for p in all_pointers) == want_rows + 50  # the unsealed
        assert str(planted) not in files_of(DeltaTable(str(store)))
    finally:
        planted.unlink()
        (store / "_lineage/stash.parquet").unlink()


def brute_force(store: Path) -> pa.Table:
    parts = [p for ps in sealed_parts(store).values() for p in ps]
    return pa.concat_tables(pq.read_table(store / p["part_path"]) for p in parts)


def test_parts_carry_field_ids_and_delta_readers_read_every_column_unchanged(store: Path) -> None:
    """Part encoding 4 (issue 39): `PARQUET:field_id` 1..21 on the contract's columns (NDJSON
    is written as the newest version, 1.3.0: 1.2.0's 15 then the six 1.3.0 adds); the
    Delta log names no ids (no column mapping) and deltalake and Polars read every column's
    values as the parts hold them, not only the row count."""
    parts = [p for ps in sealed_parts(store).values() for p in ps]
    for p in parts:
        schema = pq.read_schema(store / p["part_path"])
        ids = [int(f.metadata[b"PARQUET:field_id"]) for f in schema]
        assert ids == list(range(1, 22)), p["part_path"]
    log = (store / "_delta_log/00000000000000000000.json").read_text()
    assert "field_id" not in log and "columnMapping" not in log
    want = sorted(brute_force(store).to_pylist(), key=lambda r: r["event_id"])
    assert len(want) == 240
    names = list(want[0])
    delta = DeltaTable(str(store)).to_pyarrow_table().select(names).to_pylist()
    assert sorted(delta, key=lambda r: r["event_id"]) == want
    polars = pl.read_delta(str(store)).select(names).sort("event_id").to_arrow().to_pylist()
    assert polars == want


def test_partition_and_time_filters_give_the_brute_force_counts(store: Path) -> None:
    every = pl.from_arrow(brute_force(store))
    t0 = dt.datetime(2026, 7, 13, 6, 0, 30, tzinfo=dt.timezone.utc)
    cases = [
        (pl.col("run_id") == SCHEDULED, "run_id"),
        (pl.col("target_crs") == "EPSG:25832", "target_crs"),
        (pl.col("event_time_utc") >= t0, "time"),
        ((pl.col("run_id") == SCHEDULED) & (pl.col("event_time_utc") < t0), "both"),
    ]
    for expr, name in cases:
        want = every.filter(expr).height
        assert want > 0, name
        assert pl.scan_delta(str(store)).filter(expr).select(pl.len()).collect().item() == want, name
        assert pl.read_delta(str(store)).filter(expr).height == want, name
    dtab = DeltaTable(str(store))
    got = dtab.to_pyarrow_table(filters=[("run_id", "=", SCHEDULED)]).num_rows
    assert got == every.filter(pl.col("run_id") == SCHEDULED).height
    # The run_id with `:` and `+` reads back as written.
    runs = set(pl.read_delta(str(store))["run_id"].unique().to_list())
    assert runs == {SCHEDULED, "nightly.42"}


def test_a_foreign_delta_writer_is_refused(store: Path) -> None:
    before = sorted(p.name for p in (store / "_delta_log").iterdir())
    one = DeltaTable(str(store)).to_pyarrow_table().slice(0, 1)
    with pytest.raises(Exception, match="lineageStoreSeals"):
        write_deltalake(str(store), one, mode="append")
    assert sorted(p.name for p in (store / "_delta_log").iterdir()) == before


def test_resealing_and_a_replica_leave_the_log_byte_identical(store: Path, tmp_path: Path) -> None:
    log = {p.name: p.read_bytes() for p in (store / "_delta_log").iterdir()}
    copy = tmp_path / "replica"
    lineage("replicate", "--from", str(store), "--to", str(copy))
    assert {p.name: p.read_bytes() for p in (copy / "_delta_log").iterdir()} == log
    a = DeltaTable(str(store)).to_pyarrow_table().sort_by("event_id")
    b = DeltaTable(str(copy)).to_pyarrow_table().sort_by("event_id")
    assert a.equals(b)
    # A store sealed before Delta versions (no log): its next seal writes 0..N, the same bytes.
    shutil.rmtree(copy / "_delta_log")
    seal(copy)
    again = {p.name: p.read_bytes() for p in (copy / "_delta_log").iterdir()}
    assert {k: v for k, v in again.items() if k in log} == log
    assert DeltaTable(str(copy)).version() == 4


@pytest.mark.skipif(shutil.which("java") is None, reason="no JDK on this machine")
def test_every_raw_add_path_parses_as_a_relative_uri_in_java(store: Path, tmp_path: Path) -> None:
    paths = []
    for f in sorted((store / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            a = json.loads(line).get("add")
            if a:
                paths.append(a["path"])
    assert any("%3A" in p and "%2B" in p for p in paths)
    (tmp_path / "paths.txt").write_text("\n".join(paths) + "\n")
    src = tmp_path / "ParsePaths.java"
    src.write_text(
        """
import java.net.URI;
import java.nio.file.*;
public class ParsePaths {
  public static void main(String[] a) throws Exception {
    for (String p : Files.readAllLines(Paths.get(a[0]))) {
      URI u = new URI(p);
      if (u.getScheme() != null || u.isAbsolute()) throw new Exception("scheme in " + p);
      System.out.println(u.getPath());
    }
  }
}
"""
    )
    r = subprocess.run(["java", str(src), str(tmp_path / "paths.txt")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    decoded = r.stdout.splitlines()
    want = sorted(p["part_path"] for ps in sealed_parts(store).values() for p in ps)
    assert sorted(decoded) == want


def test_the_python_package_names_the_table_version(store: Path, tmp_path: Path) -> None:
    import lineage_store

    assert lineage_store.open(store).delta_version() == DeltaTable(str(store)).version() == 3
    from pkg_support import events

    fresh = lineage_store.open(tmp_path / "fresh")
    fresh.append(events(10))
    assert fresh.delta_version() is None  # appended, never sealed: no table yet
    fresh.seal()
    assert fresh.delta_version() == 1
    assert not list((tmp_path / "fresh/_delta_log").glob("*.checkpoint.parquet"))  # off by default
    fresh.seal(allow_empty=True, delta_checkpoint_interval=1)
    assert [p.name for p in (tmp_path / "fresh/_delta_log").glob("*.checkpoint.parquet")] == [
        "00000000000000000002.checkpoint.parquet"]
    assert DeltaTable(str(tmp_path / "fresh")).to_pyarrow_table().num_rows == 10


DUCKDB_DELTA = os.environ.get("LINEAGE_DUCKDB_DELTA_PYTHON")
DUCKDB_SCRIPT = """
import duckdb, json, os, sys, duckdb_extension_delta as m
ext = os.path.join(os.path.dirname(m.__file__), "extensions", "v" + duckdb.__version__, "delta.duckdb_extension")
con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
con.execute(f"LOAD '{ext}'")
root, run = sys.argv[1], sys.argv[2]
q = lambda s, *p: con.execute(s, list(p)).fetchone()[0]
print(json.dumps({
    "rows": q("SELECT count(*) FROM delta_scan(?)", root),
    "run": q("SELECT count(*) FROM delta_scan(?) WHERE run_id = ?", root, run),
    "crs": q("SELECT count(*) FROM delta_scan(?) WHERE target_crs = 'EPSG:25832'", root),
}))
"""


@pytest.mark.skipif(not DUCKDB_DELTA, reason="LINEAGE_DUCKDB_DELTA_PYTHON not set (scripts/test.sh sets it)")
def test_duckdb_delta_scan_reads_the_sealed_commits(store: Path) -> None:
    r = subprocess.run([DUCKDB_DELTA, "-c", DUCKDB_SCRIPT, str(store), SCHEDULED], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    every = pl.from_arrow(brute_force(store))
    assert got == {
        "rows": every.height,
        "run": every.filter(pl.col("run_id") == SCHEDULED).height,
        "crs": every.filter(pl.col("target_crs") == "EPSG:25832").height,
    }


def test_checkpoints_are_read_by_every_delta_reader_in_place_of_the_versions(store: Path, tmp_path: Path) -> None:
    """`seal --delta-checkpoint-interval 2` and `compact --delta-checkpoint` write
    `N.checkpoint.parquet`; with every JSON version before it deleted (so a reader that did
    not use the checkpoint would fail or read nothing), delta-rs, Polars and DuckDB
    `delta_scan` read the same rows as the brute-force read of the sealed parts, and the
    time travel to the checkpoint's version too. No `_last_checkpoint` is written."""
    copy = tmp_path / "cp"
    shutil.copytree(store, copy)
    append(copy, [event(10_000 + k, "cp-run", "EPSG:4326") for k in range(30)], batch_rows=5)
    r = json.loads(lineage("seal", "--store", str(copy), "--delta-checkpoint-interval", "2", "--json").stdout)
    assert r["seq"] == 4
    log = copy / "_delta_log"
    assert (log / "00000000000000000004.checkpoint.parquet").exists()
    out = json.loads(lineage("compact", "--store", str(copy), "--target-rows", "40",
                             "--delta-checkpoint", "--json").stdout)
    assert out["seal"]["seq"] == 5 and out["compactions"]
    assert sorted(p.name for p in log.glob("*.checkpoint.parquet")) == [
        "00000000000000000004.checkpoint.parquet", "00000000000000000005.checkpoint.parquet"]
    assert not (log / "_last_checkpoint").exists()
    lineage("verify", "--store", str(copy))
    want = pl.from_arrow(brute_force(copy)).sort(["event_id", "sequence"])
    v4 = DeltaTable(str(copy), version=4)
    assert v4.to_pyarrow_table().num_rows == want.height  # compaction changes no row
    files4 = len(v4.file_uris())
    for v in range(5):  # only the checkpoint stands for versions 0..4
        (log / f"{v:020}.json").unlink()
    t = DeltaTable(str(copy))
    assert t.version() == 5
    merged = sum(len(c["commits"]) for c in out["compactions"])
    assert len(t.file_uris()) == files4 - merged + len(out["compactions"]) < files4
    got = pl.from_arrow(t.to_pyarrow_table()).sort(["event_id", "sequence"])
    assert got.select(sorted(got.columns)).equals(want.select(sorted(want.columns)))
    assert pl.scan_delta(str(copy)).select(pl.len()).collect().item() == want.height
    assert pl.read_delta(str(copy), version=4).height == want.height
    assert t.transaction_version("lineage-store/seal") == 5
    if DUCKDB_DELTA:
        r = subprocess.run([DUCKDB_DELTA, "-c", DUCKDB_SCRIPT, str(copy), SCHEDULED], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["rows"] == want.height
