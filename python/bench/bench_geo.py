"""The cost of lineage (docs/performance.md, "lineage_store.geo"): events/s of
``lineage_store.geo.to_crs`` against a bare ``GeoSeries.to_crs`` on the same points, PROJ's
network off, no grids installed.

    python python/bench/bench_geo.py [--points 100000] [--repeat 5] [--pair EPSG:4267,EPSG:4326]

The points are NAD27 (EPSG:4267) longitudes and latitudes spread over CONUS, Alaska,
Quebec and the Caribbean (seeded), so PROJ uses ten operations. Each figure is the
median (min-max) of ``--repeat`` runs, wall clock and CPU seconds, in this process after one warm-up run of each (the
warm-up builds PROJ's candidate list once: the first call of a process pays it, given
apart as "first call"). For the helper a run ends with the events as a pyarrow table in
the contract's schema, ready for ``Store.append``. Also timed: the per-vertex way
(``transform`` + ``get_last_used_operation()`` point by point) on 5,000 of the points,
which is what a job without the helper has to do. Prints one JSON object.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import time
from typing import Any, Callable

os.environ.setdefault("PROJ_NETWORK", "OFF")

import geopandas as gpd  # noqa: E402
import numpy as np  # noqa: E402
import pyproj  # noqa: E402
import shapely  # noqa: E402

import lineage_store as ls  # noqa: E402
from lineage_store import geo  # noqa: E402

pyproj.network.set_network_enabled(False)  # type: ignore[attr-defined]
T0 = dt.datetime(2026, 7, 13, 6, 0, tzinfo=dt.timezone.utc)


def points(n: int, seed: int = 42) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    # Shares by area: CONUS 70 %, Alaska 10 %, Quebec 10 %, the Caribbean 10 %.
    boxes = [((-124.0, 25.5, -67.5, 48.9), 0.7), ((-165.0, 55.0, -141.5, 70.5), 0.1),
             ((-79.0, 45.1, -58.0, 62.0), 0.1), ((-85.0, 13.0, -60.0, 27.0), 0.1)]
    xs, ys = [], []
    for (w, s, e, nn), share in boxes:
        k = int(round(n * share))
        xs.append(rng.uniform(w, e, k))
        ys.append(rng.uniform(s, nn, k))
    x, y = np.concatenate(xs)[:n], np.concatenate(ys)[:n]
    return x, y


def timed(fn: Callable[[], Any], repeat: int) -> dict[str, float]:
    """Wall-clock and CPU seconds (this process: a loaded machine moves the first more)."""
    fn()  # warm-up
    seconds, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        seconds.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return {"median_s": round(statistics.median(seconds), 3), "min_s": round(min(seconds), 3),
            "max_s": round(max(seconds), 3), "median_cpu_s": round(statistics.median(cpu), 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pair", default="EPSG:4267,EPSG:4326")
    a = ap.parse_args()
    source, target = a.pair.split(",")
    x, y = points(a.points)
    gs = gpd.GeoSeries(shapely.points(x, y), crs=source)
    ids = [f"p{i:07d}" for i in range(a.points)]

    def helper(check: bool = False) -> Callable[[], Any]:
        def run_once() -> Any:
            run = ls.Run("bench-geo", tool_version="bench/1", clock=lambda: T0)
            res = geo.to_crs(gs, target, run=run, feature_ids=ids, grid_tolerance_m=None, check=check)
            return res, run.drain()
        return run_once

    t = time.perf_counter()
    geo.reprojector(source, target, grid_tolerance_m=None)
    first_call = time.perf_counter() - t
    bare = timed(lambda: gs.to_crs(target), a.repeat)
    lineage = timed(helper(), a.repeat)
    checked = timed(helper(check=True), a.repeat)
    res, events = helper()()
    same = bool(gs.to_crs(target).geom_equals_exact(res.data, tolerance=0).all())
    k = min(5_000, a.points)
    tr = pyproj.Transformer.from_crs(source, target, always_xy=True)

    def per_vertex() -> None:
        for xi, yi in zip(x[:k].tolist(), y[:k].tolist()):
            tr.transform(xi, yi)
            tr.get_last_used_operation()
    vertex = timed(per_vertex, 1)
    print(json.dumps({
        "points": a.points, "pair": a.pair, "repeat": a.repeat,
        "pyproj": pyproj.__version__, "proj": pyproj.proj_version_str, "geopandas": gpd.__version__,
        "operations_used": len(set(res.operation_codes.tolist())), "events": events.num_rows,
        "identical_to_to_crs": same,
        "reprojector_first_call_s": round(first_call, 3),
        "bare_to_crs": bare, "points_per_s_bare": round(a.points / bare["median_s"]),
        "helper": lineage, "events_per_s_helper": round(a.points / lineage["median_s"]),
        "helper_check": checked, "events_per_s_helper_check": round(a.points / checked["median_s"]),
        "per_vertex_5000": vertex, "points_per_s_per_vertex": round(k / vertex["median_s"]),
        "load_average": os.getloadavg(),
    }, indent=1))


if __name__ == "__main__":
    main()
