"""Writer keys from Python (issue 33, defect 1): `append(signing_key=…)` and
`writer(signing_key=…)` sign every part, `repair --writer-key` then adopts an orphan of
theirs; every pointer records who wrote it (`request_id`, the platform's variables), never
a secret."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import lineage_store as ls
from pkg_support import LINEAGE, events

SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "py-secret-aws-0001",
    "AWS_SESSION_TOKEN": "py-secret-token-0002",
    "AZURE_STORAGE_KEY": "py-secret-azure-0003",
}


def footer(path: Path) -> dict[str, str]:
    meta = pq.read_metadata(path).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items()}


def test_signed_parts_and_the_writer_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("AWS_BATCH_JOB_ID", "py-job-5")
    kid = ls.keygen(tmp_path / "w")
    store = ls.open(tmp_path / "store")

    commits = store.append(events(6, runs=("run-a",)), signing_key=tmp_path / "w.key", request_id="req-9")
    with store.writer(signing_key=tmp_path / "w.key") as w:
        w.write(events(4, runs=("run-b",), start=100))
    commits += w.commits
    assert {c.run_id for c in commits} == {"run-a", "run-b"}
    for c in commits:
        meta = footer(tmp_path / "store" / c.part_path)
        assert meta["lineage_writer_key_id"] == kid, meta
        assert "lineage_writer_signature" in meta
        assert c.writer is not None and c.writer["writer_key_id"] == kid
        assert c.writer["platform"]["AWS_BATCH_JOB_ID"] == "py-job-5"
        assert c.writer["process"].endswith(" python")
        text = (tmp_path / "store" / "_lineage" / "commits" / f"run_id={c.run_id}" / f"{c.commit_id}.json").read_text()
        for name, value in SECRETS.items():
            assert name not in text and value not in text, text
    first = commits[0].writer
    assert first is not None and first["request_id"] == "req-9"
    # Unsigned parts carry no signature entries.
    plain = store.append(events(3, runs=("run-c",), start=200))
    assert not any(k.startswith("lineage_writer_") for k in footer(tmp_path / "store" / plain[0].part_path))
    assert store.verify(grace=0).clean


def test_repair_with_the_writer_key_adopts_a_signed_orphan_and_refuses_an_unsigned_one(tmp_path: Path) -> None:
    ls.keygen(tmp_path / "w")
    store = ls.open(tmp_path / "store")
    signed = store.append(events(4, runs=("run-s",)), signing_key=tmp_path / "w.key")[0]
    unsigned = store.append(events(4, runs=("run-u",), start=50))[0]
    root = tmp_path / "store"
    for c in (signed, unsigned):  # the writer died before its pointer
        (root / "_lineage" / "commits" / f"run_id={c.run_id}" / f"{c.commit_id}.json").unlink()
        for entry in (root / "_lineage" / "index").rglob(f"*.{c.commit_id}.run_id={c.run_id}"):
            entry.unlink()
    out = subprocess.run(
        [LINEAGE, "repair", "--store", str(root), "--grace", "0s", "--writer-key", str(tmp_path / "w.pub"), "--json"],
        capture_output=True, text=True,
    )
    assert out.returncode == 1, out.stderr
    r = json.loads(out.stdout)
    assert r["adopted"] == [f"_lineage/commits/run_id=run-s/{signed.commit_id}.json"], r
    assert [k for k, _ in r["refused"]] == [unsigned.part_path], r
    assert r["refused"][0][1].startswith("unsigned"), r
