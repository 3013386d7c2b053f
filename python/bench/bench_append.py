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
from lineage_store import _native


def load(path: str) -> pa.Table:
    """The events in memory (not a map of the file), as the shared bench's runners hold them."""
    with pa.memory_map(path, "r") as src:
        mapped = pa.ipc.open_file(src).read_all()
    return mapped.combine_chunks() if mapped.num_rows else mapped


def run_package(table: pa.Table, root: Path, batch_rows: int) -> dict:
    store = ls.open(root)
    t0 = time.perf_counter()
    commits = store.append(table, batch_rows=batch_rows)
    s = time.perf_counter() - t0
    assert sum(c.row_count for c in commits) == table.num_rows
    # The boundary alone: the Arrow import and buffer checks append starts with.
    t0 = time.perf_counter()
    assert _native._arrow_import_check(table) == table.num_rows
    return {"seconds": s, "commits": len(commits), "boundary_s": time.perf_counter() - t0}


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
import json, sys
sys.path[:0] = [{here!r}]
import bench_append as b
import lineage_store as ls
t = b.load({events!r})
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
def peak_growth(f):
    before = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as c:
        c.write("5")  # reset the peak (VmHWM) to what is resident now
    f()
    return before, status("VmHWM") - before
from lineage_store import _native
_, crossing = peak_growth(lambda: _native._arrow_import_check(t))
before, append = peak_growth(lambda: ls.open({root!r}).append(t, batch_rows={batch_rows}))
print(json.dumps({{"table_mib": t.nbytes / 2**20, "rss_before_mib": before, "crossing_mib": crossing, "append_mib": append}}))
"""


def peak_rss(cli: str, events: str, scratch: Path, batch_rows: int) -> dict:
    """Peak RSS of a fresh process before and after appending the loaded table: a copy
    of the columns would add at least the table's size."""
    root = scratch / "rss"
    code = RSS_CHILD.format(here=str(Path(__file__).parent), events=events, root=str(root), batch_rows=batch_rows)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    shutil.rmtree(root, ignore_errors=True)
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["cli_mib"] = cli_peak_rss(cli, events, root, batch_rows)
    shutil.rmtree(root, ignore_errors=True)
    return out


def cli_peak_rss(cli: str, events: str, root: Path, batch_rows: int) -> float:
    """Peak RSS (MiB) of one `lineage append` process (a fresh child: its own maximum)."""
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, capture_output=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    r = subprocess.run([sys.executable, "-c", code, cli, "append", "--store", str(root), "--input", events,
                        "--batch-rows", str(batch_rows)], capture_output=True, text=True, check=True)
    return int(r.stdout.strip()) / 1024


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
    boundary: dict[int, list[float]] = {}
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
                    if "boundary_s" in out:
                        boundary.setdefault(b, []).append(out["boundary_s"])
                    print(json.dumps({"engine": e, "batch_rows": b, "repeat": rep, **out,
                                      "loadavg1": os.getloadavg()[0]}), flush=True)
        rss = peak_rss(a.lineage_bin, events, scratch, 100_000)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    n = table.num_rows
    print(f"\n{n:,} events, median of {a.repeats} (min-max), seconds; rows/s in brackets\n")
    print("| batch rows | " + " | ".join(engines) + " | Python - CLI | boundary alone |")
    print("|---:|" + "---:|" * (len(engines) + 2))
    for b in sizes:
        cells = []
        for e in engines:
            v = runs[(e, b)]
            m = statistics.median(v)
            cells.append(f"{m:.2f} ({min(v):.2f}-{max(v):.2f}) [{n / m:,.0f}]")
        d = statistics.median(runs[(engines[0], b)]) - statistics.median(runs[(engines[1], b)])
        cells.append(f"{d:+.2f} s ({d / statistics.median(runs[(engines[1], b)]):+.0%})")
        bs = statistics.median(boundary[b])
        cells.append(f"{bs:.3f} s ({bs / statistics.median(runs[(engines[0], b)]):.1%} of the append)")
        print(f"| {b:,} | " + " | ".join(cells) + " |")
    print(f"\npeak memory growth with the {rss['table_mib']:.0f} MiB table loaded ({rss['rss_before_mib']:.0f} MiB resident): "
          f"taking it through the C data interface and checking it +{rss['crossing_mib']:.0f} MiB; "
          f"the whole append (100,000-row flushes) +{rss['append_mib']:.0f} MiB; "
          f"`lineage append` of the same events as a file: peak {rss['cli_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
