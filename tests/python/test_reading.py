"""README "Read.": the one-liners of pandas, pyarrow and Polars on a store and on
`files()` either give the sealed rows or fail as the README says, naming the call to use
(issue 35); and one rule for a run the store never had.

Run by scripts/test.sh with LINEAGE_BIN pointing at the built binary.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

import lineage_store
from test_interop import event

ROOT = Path(__file__).resolve().parents[2]
LINEAGE = os.environ.get("LINEAGE_BIN") or str(ROOT / "target/debug/lineage")


def lineage(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([LINEAGE, *args], input=stdin, capture_output=True, check=False)


@pytest.fixture(scope="module")
def tour(tmp_path_factory) -> Path:
    """60 rows sealed in two runs, 10 more not sealed."""
    d = tmp_path_factory.mktemp("reading")
    rows = [event(i, "run-a" if i % 2 else "run-b", "EPSG:4326") for i in range(70)]
    data = "".join(json.dumps(r) + "\n" for r in rows[:60]).encode()
    store = d / "tour"
    assert lineage("append", "--store", str(store), "--batch-rows", "10", stdin=data).returncode == 0
    assert lineage("seal", "--store", str(store)).returncode == 0
    rest = "".join(json.dumps(r) + "\n" for r in rows[60:]).encode()
    assert lineage("append", "--store", str(store), stdin=rest).returncode == 0
    return store


def readme_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    read = text[text.index("**Read.**"):text.index("## The CLI")]
    (block,) = re.findall(r"```python\n(.*?)```", read, flags=re.S)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_readme_one_liners_give_the_sealed_rows(tour: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tour.parent)
    ns = {"lineage_store": lineage_store, "pd": pd, "pl": pl, "pq": pq, "DeltaTable": DeltaTable}
    lines = readme_block()
    assert len(lines) == 4
    exec(lines[0], ns)
    assert len(ns["files"]) == 6
    for line in lines[1:]:
        got = eval(line, ns)
        assert len(got) == 60, line
        assert set(got["run_id"]) == {"run-a", "run-b"}, line
    assert pq.read_table(ns["files"], partitioning=None).num_rows == 60  # the comment's pyarrow call
    assert lineage_store.open("tour").scan().read_all().num_rows == 60


def test_the_one_liners_the_readme_warns_of_fail_as_it_says(tour: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tour.parent)
    files = lineage_store.open("tour").files()
    merge = "Unable to merge: Field run_id has incompatible types: string vs dictionary"
    for call in (lambda: pd.read_parquet("tour"), lambda: pq.read_table(files), lambda: pd.read_parquet(files)):
        with pytest.raises(Exception, match=merge):
            call()
    with pytest.raises(Exception, match="_lineage/store.json"):
        pl.scan_parquet("tour/").collect()
    readme = (ROOT / "README.md").read_text().replace("\n", " ")
    assert merge in readme and "pass `partitioning=None`" in readme and "_lineage/store.json`: pass `files`" in readme


def test_a_run_the_store_never_had_is_refused_by_files_and_scan(tour: Path) -> None:
    store = lineage_store.open(str(tour))
    for call in (lambda: store.files(run_id="nope"), lambda: store.scan(run_id="nope")):
        with pytest.raises(lineage_store.StoreError, match="no commits of run_id nope"):
            call()
    assert store.files(run_id="run-a")
    r = lineage("files", "--store", str(tour), "--run-id", "nope")
    assert r.returncode == 2 and b"no commits of run_id nope" in r.stderr
