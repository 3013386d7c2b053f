"""`Store.append_file`: a file appended through the package is what `lineage append
--input` makes of it, byte for byte (every format, same flushes and commit key); refused
input names the line and field as the CLI does and publishes nothing; a retry with the
same commit key publishes nothing new; empty input commits nothing."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import lineage_store as ls
from pkg_support import cli_error, cli_pointers, events, lineage, snapshot, without_commit_time, write_ipc

N = 500
BATCH = 64
KEY = "s3://landing/events/2026-11-30.ndjson?versionId=3HL4kqtJlcpXroDTDmJ"


def write(kind: str, path: Path) -> Path:
    table = events(N, runs=("run-a", "run-b"))
    if kind == "arrow":
        return write_ipc(table, path.with_suffix(".arrow"))
    if kind == "parquet":
        pq.write_table(table, path.with_suffix(".parquet"))
        return path.with_suffix(".parquet")
    rows = table.to_pylist()
    for r in rows:
        r["event_time_utc"] = r["event_time_utc"].isoformat().replace("+00:00", "Z")
    if kind == "ndjson":
        p = path.with_suffix(".ndjson")
        p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        return p
    p = path.with_suffix(".csv")
    with p.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: "" if v is None else v for k, v in r.items()})
    return p


@pytest.mark.parametrize("kind", ["ndjson", "csv", "arrow", "parquet"])
def test_a_file_makes_the_clis_parts_byte_for_byte_and_a_retry_adds_nothing(kind: str, tmp_path: Path) -> None:
    src = write(kind, tmp_path / "events")
    r = lineage("append", "--store", str(tmp_path / "cli"), "--input", str(src), "--batch-rows", str(BATCH),
                "--commit-key", KEY, "--json")
    assert r.returncode == 0, r.stderr
    by_id = {p["commit_id"]: p for p in cli_pointers(r.stdout)}
    # Parts name their store: the package's store takes the CLI store's identity, so the
    # same input makes the same bytes.
    (tmp_path / "pkg" / "_lineage").mkdir(parents=True)
    (tmp_path / "pkg" / "_lineage" / "store.json").write_bytes((tmp_path / "cli" / "_lineage" / "store.json").read_bytes())
    store = ls.open(tmp_path / "pkg")
    commits = store.append_file(src, batch_rows=BATCH, commit_key=KEY)
    assert sorted(c.commit_id for c in commits) == sorted(by_id)
    assert sum(c.row_count for c in commits) == N
    for c in commits:
        assert without_commit_time(c.to_dict()) == without_commit_time(by_id[c.commit_id])
        assert (tmp_path / "pkg" / c.part_path).read_bytes() == (tmp_path / "cli" / c.part_path).read_bytes()
    before = snapshot(tmp_path / "pkg")
    again = store.append_file(str(src), batch_rows=BATCH, commit_key=KEY)  # a str path works too
    assert [c.commit_id for c in again] == [c.commit_id for c in commits]
    assert snapshot(tmp_path / "pkg") == before
    assert store.verify().clean


def test_refused_input_names_line_and_field_as_the_cli_and_publishes_nothing(tmp_path: Path) -> None:
    src = write("ndjson", tmp_path / "events")
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    bad = json.loads(lines[6])
    bad["target_crs"] = "EPSG:99999"
    lines[6] = json.dumps(bad) + "\n"
    src.write_text("".join(lines), encoding="utf-8")
    store = ls.open(tmp_path / "store")
    with pytest.raises(ls.InputError) as e:
        store.append_file(src)
    assert (e.value.row, e.value.field) == (7, "target_crs")
    assert str(e.value) == cli_error("append", "--store", str(tmp_path / "cli"), "--input", str(src))
    assert snapshot(tmp_path / "store") == {}


def test_format_from_the_argument_or_the_extension_and_empty_input(tmp_path: Path) -> None:
    src = write("ndjson", tmp_path / "events")
    plain = tmp_path / "events.txt"
    plain.write_bytes(src.read_bytes())
    store = ls.open(tmp_path / "store")
    with pytest.raises(ls.InputError, match="cannot tell the format"):
        store.append_file(plain)
    with pytest.raises(ls.InputError, match='format="xml": expected ndjson, csv, arrow or parquet'):
        store.append_file(plain, format="xml")
    assert sum(c.row_count for c in store.append_file(plain, format="ndjson")) == N
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert store.append_file(empty) == []
    with pytest.raises(ls.StoreError):
        store.append_file(tmp_path / "missing.ndjson")
    # A file named `-` is that file, never standard input.
    dash = tmp_path / "-"
    dash.write_bytes(src.read_bytes())
    with pytest.raises(ls.StoreError):
        ls.open(tmp_path / "other").append_file("-", format="ndjson")  # not in the cwd
