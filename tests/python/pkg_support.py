"""Shared by the tests of the Python package (test_package_*.py): sample events as a
pyarrow Table in the contract, the CLI, store snapshots and the emulator's endpoint."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lineage_store as ls

LINEAGE = os.environ.get("LINEAGE_BIN") or str(Path(__file__).resolve().parents[2] / "target/debug/lineage")
UTC = dt.timezone.utc

# Values chosen to exercise every column: nulls where allowed, every CRS spelling the
# CLI canonicalises, non-ASCII text, time zone edges and a pre-1970 time, large numbers.
CRS_SPELLINGS = [
    "EPSG:4326",
    "epsg:3857",
    "EPSG::25832",
    "urn:ogc:def:crs:EPSG::32633",
    "urn:ogc:def:crs:EPSG:9.8.1:27700",
    "http://www.opengis.net/def/crs/EPSG/0/4258",
]
TIMES = [
    dt.datetime(2026, 7, 13, 6, 0, 0, 123456, tzinfo=UTC),
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    dt.datetime(2038, 1, 19, 3, 14, 8, 1, tzinfo=UTC),
]


def event(i: int, run_id: str = "run-a", target_crs: str | None = None) -> dict[str, Any]:
    rejected = i % 10 == 7
    return {
        "event_id": f"00000000-0000-4000-8000-{i:012d}",
        "run_id": run_id,
        "sequence": i * 1_000_003 if i % 5 == 0 else i,
        "event_time_utc": TIMES[i % len(TIMES)] + dt.timedelta(microseconds=i),
        "stage": "reproject" if i % 3 else "Umprojektion ⟶ ETRS89",
        "event_type": "crs_transform",
        "feature_id": f"flurstücke:{i:08d}",
        "source_crs": None if i % 11 == 0 else CRS_SPELLINGS[(i + 2) % len(CRS_SPELLINGS)],
        "target_crs": target_crs or CRS_SPELLINGS[i % len(CRS_SPELLINGS)],
        "outcome": "rejected" if rejected else "transformed",
        "strategy_index": None if rejected else i % 4,
        "accuracy_m": None if rejected else (0.0 if i % 13 == 0 else 0.001 * i),
        "rejection_reason": "outside_area_of_use" if rejected else None,
        "tool_version": "geostd/2.4.1",
        "audit_tag": None if i % 2 else "inspire-tg:2026Q3",
    }


def events(n: int, runs: tuple[str, ...] = ("run-a", "run-b"), start: int = 1) -> pa.Table:
    rows = [event(i, runs[i % len(runs)]) for i in range(start, start + n)]
    return pa.Table.from_pylist(rows, schema=ls.SCHEMA)


def write_ipc(table: pa.Table, path: Path) -> Path:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    return path


def lineage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LINEAGE, *args], capture_output=True, text=True, check=False)


def cli_error(*args: str) -> str:
    """The message the CLI prints for a failing command: its `error: ` lines without the
    prefix (refused input has one per error) and its `hint: ` line, one per line."""
    r = lineage(*args)
    assert r.returncode != 0, r.stdout
    lines = [l[len("error: "):] if l.startswith("error: ") else l
             for l in r.stderr.splitlines() if l.startswith(("error: ", "hint: "))]
    assert lines, r.stderr
    return "\n".join(lines)


def added_lines(message: str, cli: str) -> list[str]:
    """The lines the package's `message` adds after the CLI's message `cli` for the same
    failure (a refused schema's fix in the caller's library), checking that it begins
    with exactly the CLI's message, every line of it."""
    assert message == cli or message.startswith(cli + "\n"), (message, cli)
    return message[len(cli):].splitlines()[1:]


def snapshot(root: Path) -> dict[str, str]:
    """Every file under root (temps too) → sha256."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*")) if p.is_file()
    }


def without_commit_time(pointer: dict[str, Any]) -> dict[str, Any]:
    """What the same commit's pointer says whichever front end wrote it: all but its commit
    time and the front end its `writer` record names (`lineage-store/<v> cli` / `… python`)."""
    out = {k: v for k, v in pointer.items() if k != "committed_utc"}
    w = out.get("writer")
    if isinstance(w, dict) and isinstance(w.get("process"), str):
        out["writer"] = {**w, "process": w["process"].rsplit(" ", 1)[0]}
    return out


def cli_pointers(out: str) -> list[dict[str, Any]]:
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def localstack_endpoint() -> str:
    """LocalStack's endpoint (started by scripts/test.sh); skips only when switched off."""
    if os.environ.get("LINEAGE_NO_LOCALSTACK") == "1":
        pytest.skip("LocalStack switched off by LINEAGE_NO_LOCALSTACK=1")
    ep = os.environ.get("LINEAGE_LOCALSTACK_ENDPOINT")
    if not ep:
        pytest.fail(
            "needs LocalStack, but LINEAGE_LOCALSTACK_ENDPOINT is not set: run scripts/test.sh, "
            "or `localstack/start.sh && . .emulators/env`, or set LINEAGE_NO_LOCALSTACK=1 to skip"
        )
    return ep


def s3_bucket() -> str:
    return os.environ.get("LINEAGE_S3_BUCKET", "lineage-test")


def append_worker(url: str, endpoint: str | None, run_id: str, n: int, start: int) -> list[str]:
    """Run in another process: append n events of run_id, return the commit ids."""
    store = ls.open(url, endpoint_url=endpoint)
    return [c.commit_id for c in store.append(events(n, runs=(run_id,), start=start), batch_rows=25)]


def unsigned_put(endpoint: str, bucket: str, key: str, body: bytes) -> None:
    """Overwrite an object behind lineage-store's back (a tamperer with bucket access)."""
    import urllib.request

    req = urllib.request.Request(f"{endpoint}/{bucket}/{key}", data=body, method="PUT")
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200, r.status


def flush_count(table: pa.Table, batch_rows: int) -> int:
    """Commits an append of `table` makes: per (run_id, canonical target_crs), one per
    `batch_rows` rows begun."""
    sizes: dict[tuple[str, str], int] = {}
    for run, crs in zip(table.column("run_id").to_pylist(), table.column("target_crs").to_pylist()):
        k = (run, ls.canonical_crs(crs))
        sizes[k] = sizes.get(k, 0) + 1
    return sum(-(-n // batch_rows) for n in sizes.values())


def results_worker(store: ls.Store, key_prefix: str, run_id: str) -> dict[str, Any]:
    """Run in another process (the store pickled to it): every kind of result the package
    gives, returned to the parent by pickling."""
    commits = store.append(events(30, runs=(run_id,)), batch_rows=10)
    report = store.verify()
    seal = store.seal(f"{key_prefix}.key")
    proof = store.prove(commits[0].commit_id, seal.head)
    summary = ls.verify_proof(proof, seal.head, public_key=f"{key_prefix}.pub")
    return {"store": store, "commits": commits, "report": report, "seal": seal, "proof": proof,
            "summary": summary}


def append_and_return(store: ls.Store, run_id: str) -> list[ls.Commit]:
    """A pool task that returns what `append` gave it."""
    return store.append(events(20, runs=(run_id,)), batch_rows=7)


def conform_and_return(n: int, run_id: str) -> ls.Conformed:
    """A pool task that returns what `conform` gave it (a natural table: int64 indices)."""
    rows = events(n, runs=(run_id,)).to_pylist()
    return ls.conform(pa.Table.from_pylist(rows))

