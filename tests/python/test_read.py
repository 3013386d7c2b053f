"""The trusted read path with real clients: `lineage files` into DuckDB's read_parquet,
`Store.files()` / `Store.scan()` into DuckDB, Polars and pyarrow give the exact sealed
rows; a planted part, which raw globs read, is never read; a flipped byte or a deleted
sealed pointer is refused by files, scan and the exports, naming the object."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lineage_store as ls
from pkg_support import events, lineage

SEALED = 300
UNSEALED = 40


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    s = ls.open(str(root))
    s.append(events(200), batch_rows=25)
    s.seal()
    s.append(events(100, start=201), batch_rows=25)
    s.seal()
    s.append(events(UNSEALED, start=301), batch_rows=25)
    return root


def ok(*args: str) -> str:
    r = lineage(*args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def duck_count(files: list[str]) -> int:
    return duckdb.sql(f"select count(*) from read_parquet({files})").fetchall()[0][0]


def a_sealed_part(root: Path) -> tuple[Path, Path]:
    seal = json.loads((root / "_lineage/seals/00000000000000000001.json").read_text())
    ptr = root / seal["entries"][0]["key"]
    return ptr, root / json.loads(ptr.read_text())["part_path"]


def plant(root: Path, part: Path) -> None:
    shutil.copy(part, part.parent / "part-01a00000-0000-7000-8000-000000000001.parquet")
    shutil.copy(part, root / "_lineage/stash.parquet")


def test_lineage_files_into_duckdb_gives_the_sealed_counts(store: Path) -> None:
    files = ok("files", "--store", str(store)).split()
    assert duck_count(files) == SEALED
    assert duck_count(ok("files", "--store", str(store), "--as-of-seal", "1").split()) == 200
    run_a = ok("files", "--store", str(store), "--run-id", "run-a").split()
    want = duckdb.sql(f"select count(*) from read_parquet({files}) where run_id = 'run-a'").fetchall()[0][0]
    assert duck_count(run_a) == want == 150
    # pyarrow and Polars take the same list.
    # The parts hold run_id and target_crs as columns: no hive partitioning from the paths.
    assert pq.ParquetDataset(files, partitioning=None).read().num_rows == SEALED
    assert pl.scan_parquet(files).select(pl.len()).collect().item() == SEALED
    assert ls.open(str(store)).files() == files


def test_scan_is_a_record_batch_reader_for_duckdb_and_polars(store: Path) -> None:
    s = ls.open(str(store))
    reader = s.scan()
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema == ls.SCHEMA.remove_metadata() or reader.schema.names == ls.SCHEMA.names
    got = duckdb.sql("select count(*), count(distinct event_id) from reader").fetchall()[0]
    assert got == (SEALED, SEALED)
    frame = pl.from_arrow(s.scan(as_of_seal=1, columns=["sequence", "run_id"]))
    assert frame.columns == ["sequence", "run_id"] and frame.height == 200
    assert s.scan(include_unsealed=True).read_all().num_rows == SEALED + UNSEALED
    crs = s.scan(filter={"target_crs": "EPSG:4326"}).read_all()
    assert crs.num_rows > 0 and set(crs.column("target_crs").to_pylist()) == {"EPSG:4326"}
    one = s.scan(filter={"feature_id": "flurstücke:00000042"}).read_all()
    assert one.column("sequence").to_pylist() == [42]
    with pytest.raises(ls.InputError, match="no filter on"):
        s.scan(filter={"outcome": "rejected"})


def test_a_planted_part_is_read_by_globs_but_not_by_the_trusted_path(store: Path) -> None:
    _, part = a_sealed_part(store)
    plant(store, part)
    extra = pq.read_metadata(part).num_rows
    glob = str(store / "run_id=*/target_crs=*/*.parquet")
    assert duckdb.sql(f"select count(*) from read_parquet('{glob}')").fetchall()[0][0] == SEALED + UNSEALED + extra
    everything = str(store / "**/*.parquet")
    assert duckdb.sql(f"select count(*) from read_parquet('{everything}')").fetchall()[0][0] == SEALED + UNSEALED + 2 * extra
    s = ls.open(str(store))
    assert duck_count(s.files()) == SEALED
    assert s.scan().read_all().num_rows == SEALED
    assert duck_count(ok("files", "--store", str(store)).split()) == SEALED


@pytest.mark.parametrize("tamper", ["flip", "delete_pointer"])
def test_a_tampered_store_is_refused_naming_the_object(store: Path, tmp_path: Path, tamper: str) -> None:
    ptr, part = a_sealed_part(store)
    if tamper == "flip":
        b = bytearray(part.read_bytes())
        b[len(b) // 2] ^= 0x01
        part.write_bytes(bytes(b))
        name = part.name
    else:
        ptr.unlink()
        name = ptr.name
    s = ls.open(str(store))
    with pytest.raises(ls.ConflictError, match=name):
        s.files()
    if tamper == "flip":
        with pytest.raises(Exception, match=name):
            s.scan().read_all()
    else:
        with pytest.raises(ls.ConflictError, match=name):
            s.scan()
    for args, code in [
        (["files"], 1),
        (["scan", "--out", str(tmp_path / "o.parquet")], 1),
        (["export", "openlineage"], 1),
    ]:
        cmd = args[:1] + (["openlineage"] if args[0] == "export" else []) + ["--store", str(store)] + args[2 if args[0] == "export" else 1:]
        r = lineage(*cmd)
        assert r.returncode == code, (cmd, r.stderr)
        assert name in r.stderr, r.stderr
        assert r.stdout == ""
    assert not (tmp_path / "o.parquet").exists()


def test_reads_bound_to_an_anchor_refuse_a_rolled_back_copy_and_another_key(
    store: Path, tmp_path: Path
) -> None:
    """files() and scan() take verify's anchors: a copy kept after seal 2 and read with the
    head of seal 3, or a store read with another sealer's key, raises naming the anchor;
    verify() states each anchor's outcome."""
    old = tmp_path / "old"
    shutil.copytree(store, old)
    s = ls.open(str(store))
    key = ls.keygen(str(tmp_path / "sealer"))
    ls.keygen(str(tmp_path / "other"))
    head = s.seal(str(tmp_path / "sealer.key")).head
    assert len(s.files(expect_head=head)) > 0
    assert s.scan(expect_head=head).read_all().num_rows == SEALED + UNSEALED
    back = ls.open(str(old))
    assert len(back.files()) > 0, "without the anchor the copy reads as of its newest seal"
    for read in (lambda: back.files(expect_head=head), lambda: back.scan(expect_head=head)):
        with pytest.raises(ls.ConflictError, match=f"no seal has the expected head digest {head} \\(expect_head"):
            read()
    signed = dict(public_key=str(tmp_path / "sealer.pub"), signed_from=3)
    assert len(s.files(**signed)) > 0
    other = dict(public_key=str(tmp_path / "other.pub"), signed_from=3)
    for read in (lambda: s.files(**other), lambda: s.scan(**other)):
        with pytest.raises(ls.ConflictError, match="00000000000000000003.json: signed by key .* which is not a key given"):
            read()
    # verify() says what held, and without anchors what its verdict is worth.
    r = s.verify(expect_head=head, **signed)
    assert r.clean and r.anchored
    assert [(a["anchor"], a["held"]) for a in r.anchors] == [("head", True), ("keys", True)]
    assert r.anchors[0]["statement"] == f"expected head {head[:12]}… found at seal 3, the newest"
    assert r.anchors[1]["statement"] == f"seal 3 signed by key {key} (given); 2 unsigned before seal 3 (allowed)"
    bare = s.verify()
    assert bare.clean and not bare.anchored and bare.anchors == []
    assert bare.anchoring == (
        "internally consistent; no head, key or witness given: a rewrite or a cut-off would not show"
    )
    assert json.loads(r.to_json())["anchors"] == r.anchors


def sorted_rows(table: pa.Table) -> list[dict[str, object]]:
    return sorted(table.to_pylist(), key=lambda r: r["event_id"])


def test_plan_takes_the_anchors_of_scan_and_plans_nothing_when_one_fails(
    store: Path, tmp_path: Path
) -> None:
    """plan() takes the anchors of files() and scan(), checked on the driver: a copy kept
    after seal 2 planned with the head of seal 3, or the store planned with another
    sealer's key, raises as scan() does, naming the anchor; with anchors that hold, the
    refs read back scan()'s rows, and each ref says what held."""
    old = tmp_path / "old"
    shutil.copytree(store, old)
    s = ls.open(str(store))
    key = ls.keygen(str(tmp_path / "sealer"))
    ls.keygen(str(tmp_path / "other"))
    head = s.seal(str(tmp_path / "sealer.key")).head
    signed = dict(public_key=str(tmp_path / "sealer.pub"), signed_from=3)
    refs = s.plan(expect_head=head, **signed)
    assert len(refs) == len(s.files()) > 1
    got = pa.concat_tables([ls.read_part(r) for r in refs])
    assert got.num_rows == SEALED + UNSEALED
    assert sorted_rows(got) == sorted_rows(s.scan(expect_head=head, **signed).read_all())
    assert {tuple(r.anchors) for r in refs} == {(
        f"anchor head held: expected head {head[:12]}… found at seal 3, the newest",
        f"anchor keys held: seal 3 signed by key {key} (given); 2 unsigned before seal 3 (allowed)",
    )}
    assert s.plan()[0].anchors == [
        "internally consistent; no head, key or witness given: a rewrite or a cut-off would not show"
    ]
    back = ls.open(str(old))
    for read in (lambda: back.plan(expect_head=head), lambda: back.scan(expect_head=head)):
        with pytest.raises(ls.ConflictError, match=f"no seal has the expected head digest {head} \\(expect_head"):
            read()
    other = dict(public_key=str(tmp_path / "other.pub"), signed_from=3)
    for read in (lambda: s.plan(**other), lambda: s.scan(**other)):
        with pytest.raises(ls.ConflictError, match="00000000000000000003.json: signed by key .* which is not a key given"):
            read()
    with pytest.raises(ls.InputError, match='expect_head="x" is not a sha256'):
        s.plan(expect_head="x")


def test_plan_refuses_a_store_rolled_back_behind_its_witness(store: Path, tmp_path: Path) -> None:
    """plan(witness=…): a store put back to a copy from before its witnessed seal 3 is
    refused as scan(witness=…) refuses it; the store itself is no witness."""
    old = tmp_path / "old"
    shutil.copytree(store, old)
    s = ls.open(str(store))
    s.seal()
    witness = str(tmp_path / "witness")
    ok("witness", "--store", str(store), "--witness", witness)
    (held,) = {tuple(r.anchors) for r in s.plan(witness=witness)}
    assert held[0].startswith(f"anchor witness held: witness file://{witness}: 1 record of store ")
    shutil.rmtree(store)
    shutil.copytree(old, store)
    back = ls.open(str(store))
    for read in (lambda: back.plan(witness=witness), lambda: back.scan(witness=witness)):
        with pytest.raises(ls.ConflictError, match="00000000000000000003.json: witnessed_seal_missing: seal 3 was witnessed"):
            read()
    with pytest.raises(ls.InputError, match="is the store itself"):
        back.plan(witness=str(store))
