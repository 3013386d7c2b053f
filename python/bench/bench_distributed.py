"""Work spread over Dask (docs/performance.md, "Work spread over engines"): a store of
PARTS one-row-commit parts, sealed; then, fastest of REPEAT each,
- a full `verify` in one process against `verify(shard=(i, 2))` on a 2-worker
  `distributed.LocalCluster` (processes, loopback) merged by `merge_reports`;
- the rows of `Store.scan()` against `plan()` + `read_part` on the same cluster (refs in
  20 chunks), and `read_part` of every ref in one process.
Cluster start-up is not timed. Usage: python bench_distributed.py [PARTS] [ROWS_PER_PART]"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
from distributed import Client, LocalCluster

import lineage_store as ls

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests/python"))
from pkg_support import events  # noqa: E402

REPEAT = 3


def best(f: Callable[[], Any]) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(REPEAT):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def shard(store: ls.Store, i: int, n: int, seal: int) -> ls.VerifyReport:
    return store.verify(shard=(i, n), plan_seal=seal)


def read_parts(refs: list[ls.PartRef]) -> pa.Table:
    return pa.concat_tables([ls.read_part(r) for r in refs])


def main() -> None:
    parts = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    with tempfile.TemporaryDirectory() as d:
        store = ls.open(Path(d) / "store")
        store.append(events(parts * rows, runs=tuple(f"run-{i:02d}" for i in range(20))), batch_rows=rows)
        seal = store.seal()
        n = len(store.plan())
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster, Client(cluster) as client:
            client.gather(client.map(shard, [store] * 2, range(2), [2] * 2, [seal.seq] * 2))  # warm
            t1, whole = best(lambda: store.verify())
            t2, merged = best(lambda: ls.merge_reports(client.gather(
                client.map(shard, [store] * 2, range(2), [2] * 2, [seal.seq] * 2, pure=False))))
            assert whole.clean and merged.clean and merged.parts_ok == whole.parts_ok
            print(f"{n} parts, {parts * rows} rows")
            print(f"verify, one process:            {t1:.3f} s")
            print(f"verify, 2 shards on 2 workers:  {t2:.3f} s  ({t1 / t2:.2f}x)")
            refs = store.plan()
            total = parts * rows
            t3, a = best(lambda: store.scan().read_all())
            t4, b = best(lambda: pa.concat_tables(client.gather(client.map(
                read_parts, [refs[i::20] for i in range(20)], pure=False))))
            t5, c = best(lambda: read_parts(refs))
            assert a.num_rows == b.num_rows == c.num_rows == total
            for name, t in (("Store.scan()", t3), ("plan + read_part, 2 workers", t4),
                            ("plan + read_part, one process", t5)):
                print(f"{name:32s} {t:.3f} s  {total / t:10.0f} rows/s  {n / t:8.0f} parts/s")


if __name__ == "__main__":
    main()
