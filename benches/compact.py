"""Compaction benchmark (issue 20): a store of >= 2,000 small parts, read before and after
`lineage compact`, and after a Delta checkpoint of the compacted table (`lineage seal
--allow-empty --delta-checkpoint-interval 1`), against the same rows written as one file by
pyarrow and by deltalake as a Delta table of one version with one file per partition (the
floor of any Delta read of these rows in this layout).

    .venv/bin/python benches/compact.py --lineage target/release/lineage \
        [--events 20800] [--batch-rows 10] [--repeat 5] [--out DIR]

Measures (medians of --repeat runs, page cache hot after one warm-up):
- DuckDB count(*) and a group-by over the Delta table (deltalake's pyarrow dataset), over
  the parts `lineage files` lists (read_parquet of the list), and over the one-file copy;
- Polars scan_delta count and group-by, and scan_parquet over the one-file copy;
- bytes of the table's files, files per partition;
- compaction wall time, rows/s, and peak RSS of the `lineage compact` process
  (/usr/bin/time -v);
- the same Delta reads of the rows written by deltalake (`write_deltalake`, partitioned by
  run_id and target_crs: one version, one file per partition).
Prints a markdown table (and the JSON of all figures on the last line). Not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake


def run(*args: str) -> str:
    r = subprocess.run(args, capture_output=True, check=False, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{args}: {r.stderr}")
    return r.stdout


def median_s(f, repeat: int) -> float:
    f()  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


GROUP = "select target_crs, count(*) from {src} group by target_crs"


def delta_count(store: Path) -> int:
    dset = DeltaTable(str(store)).to_pyarrow_dataset()
    return duckdb.sql("select count(*) from dset").fetchall()[0][0]


def delta_group(store: Path) -> list:
    dset = DeltaTable(str(store)).to_pyarrow_dataset()
    return duckdb.sql(GROUP.format(src="dset")).fetchall()


def polars_count(store: Path) -> int:
    return pl.scan_delta(str(store)).select(pl.len()).collect().item()


def polars_group(store: Path) -> pl.DataFrame:
    return pl.scan_delta(str(store)).group_by("target_crs").len().collect()


def delta_reads(store: Path, repeat: int) -> dict:
    """The Delta reads alone (any Delta table)."""
    return {
        "duckdb_delta_count_s": median_s(lambda: delta_count(store), repeat),
        "duckdb_delta_groupby_s": median_s(lambda: delta_group(store), repeat),
        "polars_scan_delta_count_s": median_s(lambda: polars_count(store), repeat),
        "polars_scan_delta_groupby_s": median_s(lambda: polars_group(store), repeat),
        "open_table_s": median_s(lambda: DeltaTable(str(store)), repeat),
    }


def reads(store: Path, lineage: str, repeat: int) -> dict:
    def files() -> list[str]:
        return run(lineage, "files", "--store", str(store)).split()

    listed = files()

    def files_count() -> int:
        return duckdb.sql(f"select count(*) from read_parquet({listed})").fetchall()[0][0]

    def files_group() -> list:
        return duckdb.sql(GROUP.format(src=f"read_parquet({listed})")).fetchall()

    t = DeltaTable(str(store))
    uris = t.file_uris()
    sizes = [os.path.getsize(u.removeprefix("file://")) for u in uris]
    parts = {}
    for u in uris:
        m = re.search(r"run_id=[^/]+/target_crs=[^/]+", u)
        parts[m.group(0) if m else "?"] = parts.get(m.group(0) if m else "?", 0) + 1
    rows = delta_count(store)
    assert rows == files_count() == polars_count(store)
    return {
        "rows": rows,
        "table_files": len(uris),
        "table_bytes": sum(sizes),
        "files_per_partition": sorted(parts.values()),
        "duckdb_files_count_s": median_s(files_count, repeat),
        "duckdb_files_groupby_s": median_s(files_group, repeat),
        "lineage_files_s": median_s(files, repeat),
        **delta_reads(store, repeat),
    }


def one_file(store: Path, out: Path, repeat: int) -> dict:
    table = DeltaTable(str(store)).to_pyarrow_table()
    pq.write_table(table, out, compression="zstd")
    src = f"read_parquet('{out}')"
    # The floor of any Delta read of these rows in this layout: the rows written by
    # deltalake itself in one version, one file per (run_id, target_crs) partition.
    one_delta = out.parent / "one-delta"
    write_deltalake(str(one_delta), table, partition_by=["run_id", "target_crs"])
    return {
        "delta": delta_reads(one_delta, repeat),
        "bytes": out.stat().st_size,
        "duckdb_count_s": median_s(lambda: duckdb.sql(f"select count(*) from {src}").fetchall(), repeat),
        "duckdb_groupby_s": median_s(lambda: duckdb.sql(GROUP.format(src=src)).fetchall(), repeat),
        "polars_count_s": median_s(lambda: pl.scan_parquet(out).select(pl.len()).collect(), repeat),
        "polars_groupby_s": median_s(
            lambda: pl.scan_parquet(out).group_by("target_crs").len().collect(), repeat
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lineage", default="target/release/lineage")
    ap.add_argument("--events", type=int, default=20_800)
    ap.add_argument("--batch-rows", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    work = Path(a.out or tempfile.mkdtemp(prefix="compact-bench-"))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    store = work / "store"
    run(a.lineage, "demo", "--store", str(store), "--events", str(a.events), "--runs", "1",
        "--batch-rows", str(a.batch_rows), "--seed", "1")
    before = reads(store, a.lineage, a.repeat)
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-v", a.lineage, "compact", "--store", str(store), "--json"],
                       capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    out = json.loads(r.stdout.splitlines()[0])
    after = reads(store, a.lineage, a.repeat)
    t = time.perf_counter()
    run(a.lineage, "verify", "--store", str(store))
    verify_s = time.perf_counter() - t
    run(a.lineage, "seal", "--store", str(store), "--allow-empty", "--delta-checkpoint-interval", "1")
    checkpoints = sorted(p.name for p in (store / "_delta_log").glob("*.checkpoint.parquet"))
    assert checkpoints, "no checkpoint written"
    after_cp = reads(store, a.lineage, a.repeat)
    single = one_file(store, work / "one.parquet", a.repeat)
    figures = {
        "events": a.events, "batch_rows": a.batch_rows, "before": before, "after": after,
        "after_checkpoint": after_cp, "checkpoints": checkpoints,
        "one_file": single, "compact_wall_s": wall, "compact_rows_per_s": before["rows"] / wall,
        "compact_peak_rss_mb": rss_kb / 1024, "compactions": len(out["compactions"]),
        "verify_after_s": verify_s,
    }
    print("| read | before (%d files) | after (%d files) | after + checkpoint | one file (pyarrow) "
          "| deltalake's own table (1 version, 1 file a partition) | after + checkpoint / one file | / deltalake's table |"
          % (before["table_files"], after["table_files"]))
    print("|---|---|---|---|---|---|---|---|")
    for name, key, one in [
        ("DuckDB count, Delta (deltalake dataset, table opened each time)", "duckdb_delta_count_s", "duckdb_count_s"),
        ("DuckDB group-by, Delta (deltalake dataset, table opened each time)", "duckdb_delta_groupby_s", "duckdb_groupby_s"),
        ("DuckDB count, `lineage files` list", "duckdb_files_count_s", "duckdb_count_s"),
        ("DuckDB group-by, `lineage files` list", "duckdb_files_groupby_s", "duckdb_groupby_s"),
        ("Polars `scan_delta` count", "polars_scan_delta_count_s", "polars_count_s"),
        ("Polars `scan_delta` group-by", "polars_scan_delta_groupby_s", "polars_groupby_s"),
        ("open the Delta table (`DeltaTable(store)`)", "open_table_s", None),
    ]:
        b, f, c = before[key], after[key], after_cp[key]
        o = single[one] if one else None
        d = single["delta"].get(key)
        ms = lambda x: "" if x is None else f"{x * 1000:.1f} ms"
        ratio = lambda x, y: "" if x is None or y is None else f"{x / y:.1f}×"
        print(f"| {name} | {ms(b)} | {ms(f)} | {ms(c)} | {ms(o)} | {ms(d)} | {ratio(c, o)} | {ratio(c, d)} |")
    print(f"| `lineage files` (checks every part) | {before['lineage_files_s'] * 1000:.0f} ms | "
          f"{after['lineage_files_s'] * 1000:.0f} ms | | |")
    print(f"| table bytes | {before['table_bytes']:,} | {after['table_bytes']:,} | {single['bytes']:,} | "
          f"{after['table_bytes'] / single['bytes']:.2f}× |")
    print(f"| files per partition | {before['files_per_partition']} | {after['files_per_partition']} | 1 | |")
    print(f"\ncompaction: {before['rows']:,} rows in {wall:.2f} s ({before['rows'] / wall:,.0f} rows/s), "
          f"peak RSS {rss_kb / 1024:.0f} MB, {len(out['compactions'])} compacted parts; verify after: {verify_s:.2f} s")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
