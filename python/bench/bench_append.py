#!/usr/bin/env python3
"""Benchmark of the Python package (a benchmark, not a test): append the shared bench's
1 M events from a pyarrow Table through `lineage_store`, beside, in the same run and on
the same input, the `lineage` CLI (the same events as an Arrow IPC file), the design
note's writer and pyarrow `write_dataset` (the shared bench's runners). Repeats are the
outer loop, so machine noise is spread over every engine.

    python python/bench/bench_append.py --events ev-1m.arrow --shared-bench ../shared/bench \
        --lineage-bin target/release/lineage [--batch-rows 1000,10000,100000] [--repeats 3]

Run it with a Python that has the package built with `--release` (a wheel from
`maturin build --release`) and the shared bench's requirements; `just bench-python`
makes that venv outside the repository. Prints one JSON line per run and the tables.

What is timed: the package, `store.append(table)` (Arrow import through the C data
interface, buffer checks, validation, grouping, encoding, sha256, publishing with
fsync); the CLI, the whole process (start, reading and decoding the IPC file, then the
same); the shared runners, their write loop only (their own JSON `seconds`; they do not
fsync). "Boundary" is the package's time minus the CLI's on the same input.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

import lineage_store as ls


def load(path: str) -> pa.Table:
    with pa.memory_map(path, "r") as src:
        return pa.ipc.open_file(src).read_all().combine_chunks()


def run_package(table: pa.Table, root: Path, batch_rows: int) -> dict:
    store = ls.open(root)
    t0 = time.perf_counter()
    commits = store.append(table, batch_rows=batch_rows)
    s = time.perf_counter() - t0
    assert sum(c.row_count for c in commits) == table.num_rows
    return {"seconds": s, "commits": len(commits)}


def run_cli(binary: str, events: str, root: Path, batch_rows: int) -> dict:
    t0 = time.perf_counter()
    r = subprocess.run([binary, "append", "--store", str(root), "--input", events, "--batch-rows", str(batch_rows)],
                       capture_output=True, text=True)
    s = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"lineage append failed: {r.stderr}")
    return {"seconds": s, "commits": int(r.stdout.strip().splitlines()[-1].split()[0])}


def run_shared(bench: Path, engine: str, events: str, root: Path, batch_rows: int) -> dict:
    cmd = [sys.executable]
    cmd += ["run_seed_ref.py", "write"] if engine == "seed_ref" else ["run_anchor.py", "--engine", engine]
    cmd += ["--events", events, "--root", str(root), "--batch-rows", str(batch_rows)]
    r = subprocess.run(cmd, cwd=bench, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{engine} failed: {r.stderr}")
    line = json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])
    return {"seconds": line["seconds"], "commits": line["flushes"]}


RSS_CHILD = r"""
import json, resource, sys, time
sys.path[:0] = [{here!r}]
import bench_append as b
import lineage_store as ls
t = b.load({events!r})
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
ls.open({root!r}).append(t, batch_rows={batch_rows})
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"table_mib": t.nbytes / 2**20, "rss_before_mib": before / 1024, "rss_after_mib": after / 1024}}))
"""


def peak_rss(events: str, scratch: Path, batch_rows: int) -> dict:
    """Peak RSS of a fresh process before and after appending the loaded table: a copy
    of the columns would add at least the table's size."""
    root = scratch / "rss"
    code = RSS_CHILD.format(here=str(Path(__file__).parent), events=events, root=str(root), batch_rows=batch_rows)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    shutil.rmtree(root, ignore_errors=True)
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", required=True)
    ap.add_argument("--shared-bench", required=True, type=Path)
    ap.add_argument("--lineage-bin", required=True)
    ap.add_argument("--batch-rows", default="1000,10000,100000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scratch", type=Path, default=None)
    a = ap.parse_args()
    events = str(Path(a.events).resolve())
    sizes = [int(x) for x in a.batch_rows.split(",")]
    scratch = Path(tempfile.mkdtemp(prefix="bench-py-", dir=a.scratch))
    table = load(events)
    engines = ["lineage_store (Python)", "lineage CLI", "seed_ref", "pyarrow_dataset"]
    runs: dict[tuple[str, int], list[float]] = {}
    try:
        for rep in range(a.repeats):
            for b in sizes:
                for e in engines:
                    root = scratch / f"{rep}-{b}-{e.split()[0]}"
                    if e.startswith("lineage_store"):
                        out = run_package(table, root, b)
                    elif e == "lineage CLI":
                        out = run_cli(a.lineage_bin, events, root, b)
                    else:
                        out = run_shared(a.shared_bench.resolve(), e, events, root, b)
                    shutil.rmtree(root, ignore_errors=True)
                    runs.setdefault((e, b), []).append(out["seconds"])
                    print(json.dumps({"engine": e, "batch_rows": b, "repeat": rep, **out,
                                      "loadavg1": os.getloadavg()[0]}), flush=True)
        rss = peak_rss(events, scratch, 100_000)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    n = table.num_rows
    print(f"\n{n:,} events, median of {a.repeats} (min-max), seconds; rows/s in brackets\n")
    print("| batch rows | " + " | ".join(engines) + " | boundary (Python - CLI) |")
    print("|---:|" + "---:|" * (len(engines) + 1))
    for b in sizes:
        cells = []
        for e in engines:
            v = runs[(e, b)]
            m = statistics.median(v)
            cells.append(f"{m:.2f} ({min(v):.2f}-{max(v):.2f}) [{n / m:,.0f}]")
        d = statistics.median(runs[(engines[0], b)]) - statistics.median(runs[(engines[1], b)])
        cells.append(f"{d:+.2f} s ({d / statistics.median(runs[(engines[1], b)]):+.0%})")
        print(f"| {b:,} | " + " | ".join(cells) + " |")
    print(f"\npeak RSS of a process appending the loaded table (100,000-row flushes): "
          f"{rss['rss_before_mib']:.0f} MiB after loading the {rss['table_mib']:.0f} MiB table, "
          f"{rss['rss_after_mib']:.0f} MiB after the append (+{rss['rss_after_mib'] - rss['rss_before_mib']:.0f} MiB)")


if __name__ == "__main__":
    main()
