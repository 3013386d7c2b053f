"""The Iceberg snapshot `lineage seal --iceberg` makes of every seal
(`_iceberg/metadata/v<N>.metadata.json`), read by real clients: pyiceberg
(`StaticTable.from_metadata`), Polars `scan_iceberg`, DuckDB `iceberg_scan` and Daft
`read_iceberg` (the last two in venvs of their own), each seal against the parts that
seals 1..k cover, read here with pyarrow (brute force); the location `files --iceberg`
and the report give; a replica's own metadata, and a copy's that names its source's files.

Run by scripts/test.sh with LINEAGE_BIN pointing at the built binary.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import jsonschema
from pyiceberg.expressions import EqualTo
from pyiceberg.table import StaticTable
from test_interop import event

LINEAGE = os.environ.get("LINEAGE_BIN") or str(Path(__file__).resolve().parents[2] / "target/debug/lineage")
SCHEDULED = "scheduled__2026-07-13T06:00:00+00:00"
PARTITIONS = ("run_id", "target_crs")


def lineage(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    r = subprocess.run([LINEAGE, *args], input=stdin, capture_output=True, check=False)
    assert r.returncode == 0, r.stderr.decode()
    return r


def append(store: Path, rows: list[dict], batch_rows: int = 40) -> None:
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    lineage("append", "--store", str(store), "--batch-rows", str(batch_rows), stdin=data)


def seal(store: Path) -> dict:
    return json.loads(lineage("seal", "--store", str(store), "--allow-empty", "--iceberg", "--json").stdout)


def metadata(store: Path, k: int) -> str:
    return str(store / f"_iceberg/metadata/v{k}.metadata.json")


def sealed_parts(store: Path) -> dict[int, list[dict]]:
    """Seal number -> the pointers it seals (from the seals and pointers themselves)."""
    out = {}
    for f in sorted((store / "_lineage/seals").glob("*.json")):
        s = json.loads(f.read_text())
        out[s["seq"]] = [json.loads((store / e["key"]).read_text()) for e in s["entries"]]
    return out


def brute_force(store: Path, k: int) -> pa.Table:
    """The rows of the commits sealed by seals 1..k, read part by part with pyarrow."""
    parts = [p for seq, ps in sealed_parts(store).items() if seq <= k for p in ps]
    return pa.concat_tables(pq.read_table(store / p["part_path"]) for p in parts)


def columns(t: pa.Table) -> dict[str, list]:
    """Every column as Python values, rows ordered by event_id."""
    t = t.sort_by("event_id")
    return {n: t.column(n).to_pylist() for n in t.schema.names}


def assert_same_rows(got: pa.Table, want: pa.Table, what: str) -> None:
    assert got.num_rows == want.num_rows, what
    assert sorted(got.schema.names) == sorted(want.schema.names), what
    g, w = columns(got), columns(want)
    for name in want.schema.names:
        assert g[name] == w[name], f"{what}: column {name}"
        # Partition values come from the manifests; the others from the parts: a part
        # read without its field ids would give nulls here, not a wrong count(*).
        assert got.column(name).null_count == want.column(name).null_count, f"{what}: {name}"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Three seals (the third adds nothing), a run_id with `:` and `+`, two CRSs, then
    commits no seal covers."""
    root = tmp_path_factory.mktemp("iceberg") / "store"
    i = 0

    def rows(n: int, run: str, crs: str) -> list[dict]:
        nonlocal i
        out = [event(i + k, run, crs) for k in range(n)]
        i += n
        return out

    append(root, rows(100, SCHEDULED, "EPSG:4326") + rows(60, "nightly.42", "EPSG:25832"))
    assert seal(root)["iceberg"]["metadata_location"] == metadata(root, 1)
    append(root, rows(80, SCHEDULED, "EPSG:25832"))
    assert seal(root)["seq"] == 2
    assert seal(root)["seq"] == 3
    append(root, rows(50, "late", "EPSG:4326"))  # unsealed
    return root


def test_pyiceberg_reads_every_seal_as_exactly_its_sealed_rows(store: Path) -> None:
    for k in (1, 2, 3):
        t = StaticTable.from_metadata(metadata(store, k))
        assert t.current_snapshot().snapshot_id == k
        assert t.current_snapshot().summary["lineage.seal-seq"] == str(k)
        assert [f.name for f in t.spec().fields] == list(PARTITIONS)
        got = t.scan().to_arrow()
        assert_same_rows(got, brute_force(store, k), f"pyiceberg v{k}")
        assert pc.count(got.column("event_id")).as_py() == got.num_rows > 0


def test_polars_scan_iceberg_reads_every_seal_as_exactly_its_sealed_rows(store: Path) -> None:
    for k in (1, 2, 3):
        want = brute_force(store, k)
        lf = pl.scan_iceberg(metadata(store, k))
        got = lf.collect().to_arrow()
        assert_same_rows(got, want, f"polars v{k}")
        counts = lf.select(pl.len(), pl.col("event_id").count(), pl.col("accuracy_m").count()).collect().row(0)
        assert counts == (want.num_rows, want.num_rows, want.num_rows - want.column("accuracy_m").null_count)


def test_time_travel_by_snapshot_id_is_the_store_as_of_that_seal(store: Path) -> None:
    t = StaticTable.from_metadata(metadata(store, 3))
    assert [s.snapshot_id for s in t.snapshots()] == [1, 2, 3]
    for k in (1, 2, 3):
        assert_same_rows(t.scan(snapshot_id=k).to_arrow(), brute_force(store, k), f"snapshot {k}")
        got = pl.scan_iceberg(t, snapshot_id=k).select(pl.col("event_id").count()).collect().item()
        assert got == brute_force(store, k).num_rows


def test_partition_and_column_filters_give_brute_force_counts(store: Path) -> None:
    t = StaticTable.from_metadata(metadata(store, 3))
    want = brute_force(store, 3)
    for crs in ("EPSG:4326", "EPSG:25832"):
        n = pc.sum(pc.equal(want.column("target_crs"), crs)).as_py()
        assert t.scan(row_filter=EqualTo("target_crs", crs)).to_arrow().num_rows == n
    n = pc.sum(pc.equal(want.column("run_id"), SCHEDULED)).as_py()
    got = pl.scan_iceberg(t).filter(pl.col("run_id") == SCHEDULED).select(pl.col("event_id").count()).collect()
    assert got.item() == n
    n = pc.sum(pc.equal(want.column("outcome"), "rejected")).as_py()
    assert t.scan(row_filter=EqualTo("outcome", "rejected")).to_arrow().num_rows == n > 0


def test_a_compacted_store_reads_identically(tmp_path: Path) -> None:
    root = tmp_path / "store"
    append(root, [event(i, SCHEDULED, "EPSG:4326") for i in range(200)], batch_rows=20)
    seal(root)
    lineage("compact", "--store", str(root), "--target-rows", "100", "--iceberg")
    t = StaticTable.from_metadata(metadata(root, 2))
    assert t.current_snapshot().summary.operation.value == "replace"
    files = [f.file.file_path for f in t.scan().plan_files()]
    assert files and all("/_lineage/compacted/parts/" in f for f in files)
    before = brute_force(root, 1)
    assert_same_rows(t.scan().to_arrow(), before, "compacted")
    assert_same_rows(pl.scan_iceberg(t).collect().to_arrow(), before, "compacted, polars")
    assert_same_rows(t.scan(snapshot_id=1).to_arrow(), before, "before the compaction")


DUCKDB_ICEBERG = os.environ.get("LINEAGE_DUCKDB_ICEBERG_PYTHON")
DUCKDB_SCRIPT = """
import duckdb, json, os, sys, duckdb_extension_iceberg as mi, duckdb_extension_avro as ma
ext = lambda m, n: os.path.join(os.path.dirname(m.__file__), "extensions", "v" + duckdb.__version__, n + ".duckdb_extension")
con = duckdb.connect(config={"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false",
                             "autoload_known_extensions": "false"})
con.execute(f"LOAD '{ext(ma, 'avro')}'")
con.execute(f"LOAD '{ext(mi, 'iceberg')}'")
path, run, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
q = lambda s, *p: con.execute(s, list(p)).fetchone()
cols = [r[0] for r in con.execute("DESCRIBE SELECT * FROM iceberg_scan(?)", [path]).fetchall()]
print(json.dumps({
    "counts": q("SELECT count(*), " + ", ".join(f'count("{c}")' for c in cols) + " FROM iceberg_scan(?)", path),
    "columns": cols,
    "run": q("SELECT count(event_id) FROM iceberg_scan(?) WHERE run_id = ?", path, run)[0],
    "crs": q("SELECT count(event_id) FROM iceberg_scan(?) WHERE target_crs = 'EPSG:25832'", path)[0],
    "as_of": q("SELECT count(event_id) FROM iceberg_scan(?, snapshot_from_id = ?)", path, k)[0],
}))
"""


@pytest.mark.skipif(not DUCKDB_ICEBERG, reason="LINEAGE_DUCKDB_ICEBERG_PYTHON not set (scripts/test.sh sets it)")
def test_duckdb_iceberg_scan_reads_every_seal(store: Path) -> None:
    for k in (1, 2, 3):
        r = subprocess.run([DUCKDB_ICEBERG, "-c", DUCKDB_SCRIPT, metadata(store, 3), SCHEDULED, str(k)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout)
        every, as_of = brute_force(store, 3), brute_force(store, k)
        assert got["columns"] == every.schema.names
        # count(*) and count(c) of every column: a part read without field ids gives nulls.
        assert got["counts"] == [every.num_rows] + [every.num_rows - every.column(c).null_count for c in got["columns"]]
        assert got["run"] == pc.sum(pc.equal(every.column("run_id"), SCHEDULED)).as_py()
        assert got["crs"] == pc.sum(pc.equal(every.column("target_crs"), "EPSG:25832")).as_py()
        assert got["as_of"] == as_of.num_rows
        r2 = subprocess.run([DUCKDB_ICEBERG, "-c", DUCKDB_SCRIPT, metadata(store, k), SCHEDULED, str(k)],
                            capture_output=True, text=True)
        assert json.loads(r2.stdout)["counts"][0] == as_of.num_rows


def test_verify_names_a_changed_iceberg_object(tmp_path: Path) -> None:
    root = tmp_path / "store"
    append(root, [event(i, SCHEDULED, "EPSG:4326") for i in range(50)])
    seal(root)
    m = root / "_iceberg/metadata/v1.metadata.json"
    m.write_text(m.read_text().replace('"total-records":"50"', '"total-records":"51"'))
    (root / "_iceberg/metadata/version-hint.text").write_text("1")
    r = subprocess.run([LINEAGE, "verify", "--store", str(root)], capture_output=True, check=False)
    out = r.stdout.decode()
    assert r.returncode == 1, out
    assert "bad_iceberg_object: _iceberg/metadata/v1.metadata.json" in out, out
    assert "unknown_iceberg_object: _iceberg/metadata/version-hint.text" in out, out


DAFT = os.environ.get("LINEAGE_DAFT_PYTHON")
DAFT_SCRIPT = """
import daft, json, sys
from pyiceberg.table import StaticTable
path, k = sys.argv[1], int(sys.argv[2])
t = StaticTable.from_metadata(path)
cols = [f.name for f in t.schema().fields]
out = {}
for name, df in (("current", daft.read_iceberg(t)), ("as_of", daft.read_iceberg(t, snapshot_id=k))):
    agg = df.agg(*[daft.col(c).count().alias(c) for c in cols]).to_pydict()
    out[name] = {"rows": df.count_rows(), "counts": {c: agg[c][0] for c in cols}}
print(json.dumps(out))
"""


def counts(t: pa.Table) -> dict[str, int]:
    """count(col) of every column: non-null values."""
    return {c: t.num_rows - t.column(c).null_count for c in t.schema.names}


@pytest.mark.skipif(not DAFT, reason="LINEAGE_DAFT_PYTHON not set (scripts/test.sh sets it)")
def test_daft_read_iceberg_counts_every_column_of_every_seal(store: Path) -> None:
    for k in (1, 2, 3):
        r = subprocess.run([DAFT, "-c", DAFT_SCRIPT, metadata(store, k), str(k)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        got, want = json.loads(r.stdout), brute_force(store, k)
        # count(*) and count(event_id) and every other column: a part read without its
        # field ids gives nulls, not a wrong count(*).
        for name in ("current", "as_of"):
            assert got[name]["rows"] == want.num_rows > 0, (k, name)
            assert got[name]["counts"] == counts(want), (k, name)
            assert got[name]["counts"]["event_id"] == want.num_rows


def test_files_and_report_give_the_newest_metadata_location(store: Path, tmp_path: Path) -> None:
    r = lineage("files", "--store", str(store), "--iceberg")
    assert r.stdout.decode() == metadata(store, 3) + "\n"
    assert "the Iceberg table as of seal 3" in r.stderr.decode()
    got = json.loads(lineage("files", "--store", str(store), "--iceberg", "--json", "--as-of-seal", "2").stdout)
    assert got == {"seq": 2, "metadata_key": "_iceberg/metadata/v2.metadata.json", "metadata_location": metadata(store, 2)}
    # The report: its identity names it, and its pyiceberg recipe reads the sealed rows.
    rep = json.loads(lineage("report", "--store", str(store), "--format", "json", "--out", "-").stdout)
    jsonschema.validate(rep, json.loads((Path(__file__).resolve().parents[2] / "docs/report.schema.json").read_text()))
    assert (rep["identity"]["iceberg_metadata_location"], rep["identity"]["iceberg_seal"]) == (metadata(store, 3), 3)
    [recipe] = [x for x in rep["independent"] if "Iceberg" in x["what"]]
    assert metadata(store, 3) in recipe["command"] and recipe["caveat"]
    run = subprocess.run([sys.executable, "-c", recipe["command"] + "\nprint(t.num_rows)"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert int(run.stdout.split()[-1]) == brute_force(store, 3).num_rows
    md = lineage("report", "--store", str(store), "--format", "md", "--out", "-").stdout.decode()
    assert f"Iceberg table as of seal 3: `{metadata(store, 3)}`" in md
    # A store sealed without --iceberg has none: named, exit 2.
    plain = tmp_path / "plain"
    append(plain, [event(i, SCHEDULED, "EPSG:4326") for i in range(10)])
    lineage("seal", "--store", str(plain))
    r = subprocess.run([LINEAGE, "files", "--store", str(plain), "--iceberg"], capture_output=True, check=False)
    assert r.returncode == 2 and b"no Iceberg metadata of a seal at or before seal 1" in r.stderr, r.stderr
    rep = json.loads(lineage("report", "--store", str(plain), "--format", "json", "--out", "-").stdout)
    assert rep["identity"]["iceberg_metadata_location"] is None
    assert not [x for x in rep["independent"] if "Iceberg" in x["what"]]


def test_a_replica_reads_its_own_parts_and_a_copy_of_the_sources_metadata_is_named(store: Path, tmp_path: Path) -> None:
    replica = tmp_path / "replica"
    out = lineage("replicate", "--from", str(store), "--to", str(replica)).stdout.decode()
    assert f"iceberg {metadata(replica, 3)} (the destination's own table as of seal 3" in out, out
    lineage("verify", "--store", str(replica))
    for k in (1, 2, 3):
        t = StaticTable.from_metadata(metadata(replica, k))
        files = [f.file.file_path for f in t.scan().plan_files()]
        assert files and all(f.startswith(str(replica) + "/") for f in files), files
        assert_same_rows(t.scan().to_arrow(), brute_force(replica, k), f"replica v{k}")
    # A copy made by other means still names the source's files: verify says so.
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    t = StaticTable.from_metadata(metadata(copy, 3))
    assert all(f.file.file_path.startswith(str(store) + "/") for f in t.scan().plan_files())
    for since in ([], ["--since-seal"]):
        r = subprocess.run([LINEAGE, "verify", "--store", str(copy), *since], capture_output=True, check=False)
        text = r.stdout.decode()
        assert r.returncode == 1, text
        assert f"iceberg_location_mismatch: _iceberg/metadata/v3.metadata.json: records the table at {store}, but this store is at {copy}" in text, text
