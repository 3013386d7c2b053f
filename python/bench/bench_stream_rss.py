"""Peak RSS of `Store.append(reader)` on a stream made as it is read (docs/python.md,
Performance): a `pyarrow.RecordBatchReader` over a generator of fresh 50,000-row batches
of the test suite's sample events, appended to a new local store in this process.

    python python/bench/bench_stream_rss.py --rows 3000000 [--store DIR]

Prints one JSON line: rows, the input's Arrow bytes, ru_maxrss before the call and at its
end (KiB), seconds. Run it in a fresh process per figure (ru_maxrss only grows).
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests/python"))

import lineage_store as ls  # noqa: E402
from pkg_support import events  # noqa: E402

BATCH = 50_000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--store", default=None)
    a = ap.parse_args()
    template = events(BATCH, runs=("run-big",)).combine_chunks()
    made: list[int] = []

    def batches() -> Iterator[pa.RecordBatch]:
        for k in range(a.rows // BATCH):
            # A fresh copy per batch, as a query or a file reader makes them.
            b = template.take(pa.array(range(BATCH))).to_batches()[0]
            b = b.set_column(2, "sequence", pc.add(b.column(2), k * BATCH))
            made.append(b.nbytes)
            yield b

    store = a.store or tempfile.mkdtemp(prefix="lineage-rss-")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    commits = ls.open(store).append(pa.RecordBatchReader.from_batches(template.schema, batches()))
    print(json.dumps({
        "rows": sum(c.row_count for c in commits), "commits": len(commits), "input_bytes": sum(made),
        "before_kib": before, "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "seconds": round(time.monotonic() - started, 2),
    }))


if __name__ == "__main__":
    main()
