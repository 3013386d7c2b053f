"""Scan throughput (issue 19), a benchmark, not a test:

    .venv/bin/python benches/scan_outputs.py LINEAGE_BIN STORE OUTPUT_DIR

`lineage scan --out F.parquet` (column chunks copied) against what this machine
can do without it: `lineage files` (fetch + check every part, no output) and `dd` of the
same number of bytes to the same file system; decoded scans against pyarrow and DuckDB
decoding the same parts. Medians of 5 after 2 warm-ups, whole processes, a new output file
per run (nothing deleted between timed runs)."""
import glob, os, statistics, subprocess, sys, time, uuid
import duckdb, pyarrow.parquet as pq

lineage, store, outdir = sys.argv[1], sys.argv[2], sys.argv[3]
files = sorted(glob.glob(f"{store}/run_id=*/target_crs=*/*.parquet"))
size = sum(os.path.getsize(f) for f in files)
rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)

def med(f, n=5, warm=2):
    for _ in range(warm): f()
    ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return statistics.median(ts)

def sh(*a):
    subprocess.run(a, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

def out(ext):
    return os.path.join(outdir, f"o-{uuid.uuid4().hex}.{ext}")

res = {
    "lineage files (fetch + check)": med(lambda: sh(lineage, "files", "--store", store)),
    "lineage scan --out F.parquet (copied)": med(lambda: sh(lineage, "scan", "--store", store, "--out", out("parquet"))),
    f"dd {size // 2**20} MiB, conv=fsync (the write alone)": med(lambda: sh("dd", "if=/dev/zero", f"of={out('dd')}", "bs=1M", f"count={size // 2**20}", "conv=fsync")),
    "lineage scan --out F.arrow (decoded)": med(lambda: sh(lineage, "scan", "--store", store, "--out", out("arrow"))),
    "pyarrow read_table of every part (decoded, in process)": med(lambda: [pq.read_table(f) for f in files]),
    "DuckDB read_parquet of every part to Arrow (in process)": med(lambda: duckdb.sql(f"select * from read_parquet({files})").fetch_arrow_table()),
}
print(f"{len(files)} parts, {size / 1e6:.1f} MB, {rows:,} rows; output to {outdir}")
print("| what | median | throughput of the parts |\n|---|---:|---:|")
for k, v in res.items():
    print(f"| {k} | {v:.3f} s | {size / v / 1e9:.2f} GB/s |")
