"""`append` of a stream holds one batch at a time, not the stream: a 3 M-row
`RecordBatchReader` whose batches are made as it is read is spooled to a temp file and
appended from it in bounded memory, as the CLI appends standard input (before, `append`
read the whole stream into memory first: 900 MiB for the 3 M rows). Peak RSS is read from
the kernel (ru_maxrss) in a fresh process."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent

CHILD = """
import json, resource, sys
sys.path.insert(0, {here!r})
import pyarrow as pa, pyarrow.compute as pc
import lineage_store as ls
from pkg_support import events

ROWS, BATCH = 3_000_000, 50_000
# The producer's freed batches go back to the OS at once (pyarrow's pool caches them
# otherwise, which would count against the call).
pa.jemalloc_set_decay_ms(0) if pa.default_memory_pool().backend_name == "jemalloc" else None
template = events(BATCH, runs=("run-big",)).combine_chunks()
made = []

def batches():
    for k in range(ROWS // BATCH):
        # A fresh copy per batch (as a query or a file reader makes them).
        b = template.take(pa.array(range(BATCH))).to_batches()[0]
        b = b.set_column(2, "sequence", pc.add(b.column(2), k * BATCH))
        made.append(b.nbytes)
        yield b

def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux

before = rss()
reader = pa.RecordBatchReader.from_batches(template.schema, batches())
commits = ls.open({store!r}).append(reader)
print(json.dumps({{"before_kib": before, "peak_kib": rss(), "input_bytes": sum(made),
                  "rows": sum(c.row_count for c in commits), "commits": len(commits)}}))
"""


def test_append_of_a_3m_row_reader_stays_bounded(tmp_path: Path) -> None:
    code = CHILD.format(here=str(ROOT), store=str(tmp_path / "store"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout.splitlines()[-1])
    assert m["rows"] == 3_000_000
    grew_mib = (m["peak_kib"] - m["before_kib"]) / 1024
    input_mib = m["input_bytes"] / 2**20
    print(f"input {input_mib:.0f} MiB of Arrow data; peak RSS {m['peak_kib'] / 1024:.0f} MiB, "
          f"{grew_mib:.0f} MiB over the {m['before_kib'] / 1024:.0f} MiB before the call")
    # Holding the stream would cost at least the input itself; the spool costs a batch,
    # the library's flush buffers (at most 256 MiB) and the parts in flight.
    assert input_mib > 500
    assert grew_mib < 0.8 * input_mib, (grew_mib, input_mib)
