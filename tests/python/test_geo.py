"""lineage_store.geo and lineage_store.Run with real pyproj and geopandas, PROJ's network
off: the operation each event names is the one PROJ reports point by point, the grouped
transform is geopandas' to_crs to the last bit, every trap is a rejection with its reason,
and a Run's events are deterministic. docs/geo.md describes what is tested here."""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

os.environ["PROJ_NETWORK"] = "OFF"
pyproj = pytest.importorskip("pyproj")
gpd = pytest.importorskip("geopandas")
import shapely  # noqa: E402  (geopandas brings it)
from pyproj import Transformer  # noqa: E402

import lineage_store as ls  # noqa: E402
from lineage_store import geo  # noqa: E402

pyproj.network.set_network_enabled(False)
UTC = dt.timezone.utc
T0 = dt.datetime(2026, 7, 13, 6, 0, tzinfo=UTC)
DEBIAN_GRIDS = Path("/usr/share/proj")


def fixed_clock() -> dt.datetime:
    return T0


def new_run(run_id: str = "geo-test", **kw: Any) -> ls.Run:
    kw.setdefault("tool_version", "geostd/2.4.1")
    kw.setdefault("clock", fixed_clock)
    return ls.Run(run_id, **kw)


def nad27_points() -> dict[str, tuple[Any, Any]]:
    """NAD27 points over CONUS, Alaska, Quebec and the Caribbean (lon, lat)."""
    rng = np.random.default_rng(37)

    def box(w: float, s: float, e: float, n: float, k: int) -> tuple[Any, Any]:
        return rng.uniform(w, e, k), rng.uniform(s, n, k)

    return {
        "conus": box(-124.0, 25.5, -67.5, 48.9, 1500),
        "alaska": box(-165.0, 55.0, -141.5, 70.5, 300),
        "quebec": box(-79.0, 45.1, -58.0, 62.0, 300),
        "caribbean": box(-85.0, 13.0, -60.0, 27.0, 400),
    }


def proj_per_point(source: str, target: str, x: Any, y: Any) -> tuple[list[str], Any, Any]:
    """What PROJ itself says, one point at a time: the operation get_last_used_operation()
    reports after each point, and the point's result."""
    t = Transformer.from_crs(source, target, always_xy=True)
    codes, xs, ys = [], [], []
    for xi, yi in zip(x.tolist(), y.tolist()):
        X, Y = t.transform(xi, yi)
        codes.append(geo.Operation.of(t.get_last_used_operation()).code)
        xs.append(X)
        ys.append(Y)
    return codes, np.array(xs), np.array(ys)


def same_bits(a: Any, b: Any) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool((a.view(np.int64) == b.view(np.int64)).all())


def test_events_name_the_operation_proj_reports_point_by_point() -> None:
    regions = nad27_points()
    x = np.concatenate([v[0] for v in regions.values()])
    y = np.concatenate([v[1] for v in regions.values()])
    region = np.concatenate([[k] * len(v[0]) for k, v in regions.items()])
    run = new_run()
    res = geo.transform_xy(x, y, source_crs="EPSG:4267", target_crs="EPSG:4326", run=run,
                           feature_ids=[f"p{i}" for i in range(len(x))], grid_tolerance_m=None, allow_ballpark=True)
    events = run.table()
    assert events.num_rows == len(x) == res.events
    codes, px, py = proj_per_point("EPSG:4267", "EPSG:4326", x, y)
    assert events.column("operation_code").to_pylist() == codes
    assert same_bits(res.data[0], px) and same_bits(res.data[1], py)
    # Not one operation for all: each region has its own, as PROJ picks them.
    per_region = {k: Counter(c for c, r in zip(codes, region) if r == k) for k in regions}
    assert {"EPSG:1175", "EPSG:1173"} <= set(per_region["conus"])          # NAD27 to WGS 84 (6), (4)
    assert "EPSG:1176" in per_region["alaska"]                             # NAD27 to WGS 84 (7)
    assert "EPSG:1181" in per_region["quebec"]                             # NAD27 to WGS 84 (12)
    assert len(per_region["caribbean"]) >= 3
    assert len(set(codes)) >= 8
    names = dict(zip(events.column("operation_code").to_pylist(), events.column("operation_name").to_pylist()))
    assert names["EPSG:1175"] == "NAD27 to WGS 84 (6)"
    acc = dict(zip(events.column("operation_code").to_pylist(), events.column("accuracy_m").to_pylist()))
    assert acc["EPSG:1175"] == 7.0 and acc["EPSG:1173"] == 10.0
    # No grid is installed: the CONUS points could have had us_noaa_conus.tif (5 m).
    degraded = events.column("degraded").to_pylist()
    assert all(d for d, r in zip(degraded, region) if r == "conus")
    assert set(events.column("grids").to_pylist()) == {""}


def test_a_vectorised_call_reports_only_its_last_point() -> None:
    """The trap the helper exists for: after one call over many points,
    get_last_used_operation() names the last point's operation only."""
    t = Transformer.from_crs("EPSG:4267", "EPSG:4326", always_xy=True)
    t.transform([-105.0, -74.0], [39.7, 40.7])                              # Colorado, New York
    assert geo.Operation.of(t.get_last_used_operation()).code == "EPSG:1173"  # New York's only
    run = new_run()
    res = geo.transform_xy(np.array([-105.0, -74.0]), np.array([39.7, 40.7]), source_crs="EPSG:4267",
                           target_crs="EPSG:4326", run=run, grid_tolerance_m=None)
    assert list(res.operation_codes) == ["EPSG:1175", "EPSG:1173"]


def mixed_frame() -> Any:
    rng = np.random.default_rng(5)
    x, y = rng.uniform(-120, -70, 2000), rng.uniform(27, 48, 2000)
    geoms = list(shapely.points(x, y))
    geoms += [shapely.LineString([(-105.1, 39.7), (-105.0, 39.8), (-104.9, 39.75)]),
              shapely.Polygon([(-80, 35), (-79.5, 35), (-79.5, 35.5), (-80, 35.5)]),
              shapely.Point(-104.0, 40.0, 1500.0),
              shapely.MultiPoint([(-90.0, 30.0), (-90.1, 30.2)])]
    return gpd.GeoDataFrame({"parcel": [f"parcel:{i:05d}" for i in range(len(geoms))]}, geometry=geoms, crs="EPSG:4267")


@pytest.mark.parametrize(("source", "target", "frame"), [
    ("EPSG:4267", "EPSG:4326", "nad27"),
    ("EPSG:31467", "EPSG:25832", "dhdn"),
    ("EPSG:27700", "EPSG:4326", "osgb"),
    ("EPSG:4326", "EPSG:3857", "wgs84"),
])
def test_the_grouped_transform_is_to_crs_to_the_last_bit(source: str, target: str, frame: str) -> None:
    if frame == "nad27":
        gdf = mixed_frame()
    else:
        rng = np.random.default_rng(11)
        bounds = {"dhdn": (3_400_000, 5_300_000, 3_600_000, 6_000_000),
                  "osgb": (100_000, 10_000, 650_000, 1_200_000),
                  "wgs84": (-179.0, -84.0, 179.0, 84.0)}[frame]
        x = rng.uniform(bounds[0], bounds[2], 3000)
        y = rng.uniform(bounds[1], bounds[3], 3000)
        gdf = gpd.GeoDataFrame({"parcel": [f"f{i}" for i in range(3000)]}, geometry=shapely.points(x, y), crs=source)
    expected = gdf.to_crs(target)
    run = new_run()
    res = geo.to_crs(gdf, target, run=run, feature_ids="parcel", grid_tolerance_m=None, allow_ballpark=True)
    got = res.data
    assert isinstance(got, gpd.GeoDataFrame) and got.crs == expected.crs
    assert list(shapely.to_wkb(got.geometry.values)) == list(shapely.to_wkb(expected.geometry.values))
    assert same_bits(shapely.get_coordinates(got.geometry.values, include_z=True),
                     shapely.get_coordinates(expected.geometry.values, include_z=True))
    assert list(got["parcel"]) == list(gdf["parcel"])
    events = run.table()
    assert events.column("feature_id").to_pylist() == list(gdf["parcel"])
    assert events.column("sequence").to_pylist() == list(range(1, len(gdf) + 1))


def test_check_runs_proj_itself_and_agrees() -> None:
    gdf = mixed_frame()
    plain = geo.to_crs(gdf, "EPSG:4326", run=new_run(), grid_tolerance_m=None, allow_ballpark=True)
    checked = geo.to_crs(gdf, "EPSG:4326", run=new_run(), grid_tolerance_m=None, allow_ballpark=True, check=True)
    assert list(shapely.to_wkb(plain.data.geometry.values)) == list(shapely.to_wkb(checked.data.geometry.values))
    assert list(plain.operation_codes) == list(checked.operation_codes)


def reasons(run: ls.Run) -> dict[str, str | None]:
    t = run.table()
    return dict(zip(t.column("feature_id").to_pylist(), t.column("rejection_reason").to_pylist()))


def test_a_ballpark_operation_is_a_rejection_unless_allowed() -> None:
    x, y = np.array([-140.0, -105.0]), np.array([10.0, 39.7])    # mid-Pacific, Colorado
    run = new_run()
    res = geo.transform_xy(x, y, source_crs="EPSG:4267", target_crs="EPSG:4326", run=run,
                           feature_ids=["pacific", "colorado"], grid_tolerance_m=None)
    why = reasons(run)
    assert why["pacific"] is not None and why["pacific"].startswith("ballpark: PROJ used PROJ-SHA256:")
    assert "Ballpark geographic offset from NAD27 to WGS 84" in why["pacific"]
    assert why["colorado"] is None
    assert list(res.accepted) == [False, True]
    t = run.table()
    assert t.column("outcome").to_pylist() == ["rejected", "transformed"]
    assert t.column("accuracy_m").to_pylist() == [None, 7.0]   # PROJ's -1 is never written
    allowed = new_run()
    geo.transform_xy(x, y, source_crs="EPSG:4267", target_crs="EPSG:4326", run=allowed,
                     feature_ids=["pacific", "colorado"], grid_tolerance_m=None, allow_ballpark=True)
    t = allowed.table()
    assert t.column("outcome").to_pylist() == ["transformed", "transformed"]
    assert t.column("accuracy_m").to_pylist() == [None, 7.0]   # ballpark: PROJ says -1, unknown
    assert t.column("operation_name").to_pylist()[0] == "Ballpark geographic offset from NAD27 to WGS 84"


def test_a_missing_grid_beyond_the_tolerance_is_a_rejection() -> None:
    # Stuttgart (Baden-Wuerttemberg): the best operation, DHDN to ETRS89 (9), needs BWTA2017.
    x, y = np.array([3_513_000.0]), np.array([5_404_000.0])
    strict = new_run()
    geo.transform_xy(x, y, source_crs="EPSG:31467", target_crs="EPSG:25832", run=strict, feature_ids=["stuttgart"])
    why = reasons(strict)["stuttgart"]
    assert why is not None and why.startswith("missing_grid: the best operation here, ")
    assert "de_lgl_bw_BWTA2017.tif" in why and "PROJ network off" in why and "(0.1 m)" in why
    t = strict.table()
    assert t.column("degraded").to_pylist() == [True]
    assert t.column("operation_code").to_pylist() != [None]     # what PROJ would have used
    tolerant = new_run()
    geo.transform_xy(x, y, source_crs="EPSG:31467", target_crs="EPSG:25832", run=tolerant,
                     feature_ids=["stuttgart"], grid_tolerance_m=1.0)
    t = tolerant.table()
    assert t.column("outcome").to_pylist() == ["transformed"] and t.column("degraded").to_pylist() == [True]
    assert t.column("accuracy_m").to_pylist() == [1.0]


def test_only_best_does_not_refuse_with_always_xy() -> None:
    """PROJ 9.5's trap: only_best=True is lost when always_xy normalises the operations,
    so the transform falls back without a word; the helper says it per feature."""
    t = Transformer.from_crs("EPSG:31467", "EPSG:25832", always_xy=True, only_best=True)
    X, _ = t.transform(3_513_000.0, 5_404_000.0)
    assert np.isfinite(X)                                          # no error
    assert geo.Operation.of(t.get_last_used_operation()).accuracy_m == 1.0


def test_inf_output_and_input_are_rejections() -> None:
    run = new_run()
    res = geo.transform_xy(np.array([-170.0, 10.0, np.inf]), np.array([-52.0, 50.0, 1.0]), source_crs="EPSG:4326",
                           target_crs="EPSG:3035", run=run, feature_ids=["antipode", "europe", "inf"])
    why = reasons(run)
    assert why["antipode"] is not None and why["antipode"].startswith("non_finite_output: PROJ returned inf or NaN")
    assert why["inf"] == "non_finite_input: a coordinate is inf or NaN"
    assert why["europe"] is None
    assert not np.isfinite(res.data[0][0]) and np.isfinite(res.data[0][1])
    assert run.table().column("operation_code").to_pylist()[2] is None


def test_invalid_empty_null_and_mixed_geometries_are_rejections() -> None:
    bowtie = shapely.Polygon([(-100, 40), (-99, 41), (-99, 40), (-100, 41)])
    straddling = shapely.LineString([(-105.0, 39.7), (-74.0, 40.7)])          # Colorado to New York
    gs = gpd.GeoSeries([bowtie, shapely.Point(), None, straddling, shapely.Point(-105.0, 39.7)],
                       index=["bowtie", "empty", "null", "straddling", "ok"], crs="EPSG:4267")
    run = new_run()
    res = geo.to_crs(gs, "EPSG:4326", run=run, grid_tolerance_m=None)
    why = reasons(run)
    assert why["bowtie"] is not None and why["bowtie"].startswith("invalid_geometry: Self-intersection")
    assert why["empty"] == "empty_geometry: the geometry is empty"
    assert why["null"] == "empty_geometry: no geometry (null)"
    assert why["straddling"] == ("mixed_operations: PROJ transformed this feature's vertices with 2 different "
                                 "operations (EPSG:1173, EPSG:1175): its shape is not one transformation's")
    assert why["ok"] is None
    assert list(res.valid.index) == ["ok"]
    assert res.data.geometry.equals(gs.to_crs("EPSG:4326"))
    assert run.table().column("outcome").to_pylist() == ["rejected"] * 4 + ["transformed"]


def test_plain_shapely_geometries_take_a_source_crs() -> None:
    geoms = [shapely.Point(-105.0, 39.7), shapely.LineString([(-74.0, 40.7), (-74.1, 40.8)])]
    run = new_run()
    res = geo.to_crs(geoms, "EPSG:4326", source_crs="EPSG:4267", run=run, feature_ids=["a", "b"],
                     grid_tolerance_m=None)
    expected = gpd.GeoSeries(geoms, crs="EPSG:4267").to_crs("EPSG:4326")
    assert isinstance(res.data, np.ndarray)
    assert list(shapely.to_wkb(res.data)) == list(shapely.to_wkb(expected.values))
    assert run.table().column("operation_code").to_pylist() == ["EPSG:1175", "EPSG:1173"]
    with pytest.raises(ValueError, match="source_crs is required"):
        geo.to_crs(geoms, "EPSG:4326", run=run)


def test_a_crs_without_an_epsg_code_is_refused_before_any_event() -> None:
    run = new_run()
    gs = gpd.GeoSeries([shapely.Point(1, 2)], crs="+proj=longlat +ellps=GRS80 +no_defs")
    with pytest.raises(ValueError, match="has no EPSG code"):
        geo.to_crs(gs, "EPSG:4326", run=run)
    assert run.pending == 0


# -- Run ---------------------------------------------------------------------------------

def test_run_fills_defaults_numbers_events_and_uses_its_clock() -> None:
    ticks = iter([T0, T0 + dt.timedelta(seconds=1), T0 + dt.timedelta(seconds=2)])
    run = ls.Run("nightly-2026-07-13", tool_version="geostd/2.4.1", audit_tag="inspire-tg:2026Q3", stage="load",
                 input_dataset="s3://parcels/bw.gpkg", input_version="2026-07-12", clock=lambda: next(ticks))
    run.mapped(["a", "b"], crs="EPSG:25832")
    run.transformed("a", source_crs="EPSG:31467", target_crs="EPSG:25832", stage="reproject", accuracy_m=1.0,
                    operation_code="EPSG:1776", operation_name="DHDN to ETRS89 (3)", grids="", degraded=True)
    run.rejected("b", "outside_area_of_use", source_crs="EPSG:31467", target_crs="EPSG:25832", stage="reproject")
    rows = run.table().to_pylist()
    assert [r["event_id"] for r in rows] == [f"nightly-2026-07-13-{i:09d}" for i in (1, 2, 3, 4)]
    assert [r["sequence"] for r in rows] == [1, 2, 3, 4]
    assert [r["event_time_utc"] for r in rows] == [T0, T0, T0 + dt.timedelta(seconds=1), T0 + dt.timedelta(seconds=2)]
    assert [r["outcome"] for r in rows] == ["mapped", "mapped", "transformed", "rejected"]
    assert [r["stage"] for r in rows] == ["load", "load", "reproject", "reproject"]
    assert rows[0]["source_crs"] == rows[0]["target_crs"] == "EPSG:25832" and rows[0]["event_type"] == "schema_mapping"
    assert rows[0]["operation_code"] is None and rows[0]["accuracy_m"] is None
    assert {(r["tool_version"], r["audit_tag"], r["input_dataset"], r["input_version"]) for r in rows} == {
        ("geostd/2.4.1", "inspire-tg:2026Q3", "s3://parcels/bw.gpkg", "2026-07-12")}
    assert rows[2]["operation_code"] == "EPSG:1776" and rows[2]["degraded"] is True
    assert rows[3]["rejection_reason"] == "outside_area_of_use"
    assert run.table().schema.names[15:] == list(ls.OPERATION_COLUMNS)


def test_a_rerun_rebuilds_the_same_events() -> None:
    def job() -> Any:
        run = new_run("rerun-1")
        geo.to_crs(mixed_frame(), "EPSG:4326", run=run, feature_ids="parcel", grid_tolerance_m=None)
        return run.table()
    assert job().equals(job())


def test_run_refuses_what_the_contract_would() -> None:
    run = new_run()
    with pytest.raises(ValueError, match="a rejection needs a reason"):
        run.rejected(["a", "b"], ["why", None], source_crs=None, target_crs="EPSG:4326")
    with pytest.raises(ValueError, match="feature_id 2 of 2 is ''"):
        run.mapped(["a", ""], crs="EPSG:4326")
    with pytest.raises(ValueError, match="accuracy_m: 3 values for 2 features"):
        run.transformed(["a", "b"], source_crs=None, target_crs="EPSG:4326", accuracy_m=[1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="run_id: filled by the run"):
        run.record("a", outcome="x", run_id="other")
    naive = ls.Run("r", tool_version="t/1", clock=lambda: dt.datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="a zone-aware datetime is required"):
        naive.mapped("a", crs="EPSG:4326")
    assert run.pending == 0 and run.next_sequence == 1
    with pytest.raises(ValueError, match="this run has no writer"):
        run.flush()


# -- a grid from Debian's proj-data --------------------------------------------------------

GRID_PROBE = r"""
import json, sys, numpy as np, pyproj
pyproj.network.set_network_enabled(False)
if sys.argv[1] == "debian":
    pyproj.datadir.append_data_dir("/usr/share/proj")
import lineage_store as ls
from lineage_store import geo
run = ls.Run("grid", tool_version="t/1")
# Hannover (Niedersachsen): BETA2007 covers it; no state grid is better there.
res = geo.transform_xy(np.array([3_550_000.0]), np.array([5_805_000.0]), source_crs="EPSG:31467",
                       target_crs="EPSG:25832", run=run, feature_ids=["hannover"], check=True)
row = run.table().to_pylist()[0]
print(json.dumps({k: row[k] for k in ("outcome", "operation_code", "operation_name", "grids", "degraded",
                                      "accuracy_m", "rejection_reason")} | {"x": res.data[0][0]}))
"""


def grid_probe(mode: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("PROJ_DATA", "PROJ_LIB")}  # pyproj's own data only
    r = subprocess.run([sys.executable, "-c", GRID_PROBE, mode], capture_output=True, text=True,
                       env={**env, "PROJ_NETWORK": "OFF"})
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


def test_a_grid_from_debians_proj_data_is_used_named_and_not_degraded() -> None:
    if not (DEBIAN_GRIDS / "BETA2007.gsb").is_file():
        pytest.fail("no /usr/share/proj/BETA2007.gsb: scripts/test.sh installs Debian's `proj-data` package")
    without = grid_probe("bundled")
    assert without["outcome"] == "rejected" and without["degraded"] is True and without["grids"] == ""
    assert without["rejection_reason"].startswith("missing_grid: the best operation here, EPSG:15948")
    with_grid = grid_probe("debian")
    assert with_grid["outcome"] == "transformed" and with_grid["degraded"] is False
    assert with_grid["operation_code"] == "EPSG:15948"
    assert with_grid["operation_name"] == "Inverse of 3-degree Gauss-Kruger zone 3 + DHDN to ETRS89 (8) + UTM zone 32N"
    assert "BETA2007" in with_grid["grids"] and with_grid["accuracy_m"] == 0.9
    assert with_grid["x"] != without["x"]                          # the grid moved the point


@pytest.fixture(autouse=True)
def _network_off() -> Iterator[None]:
    assert not pyproj.network.is_network_enabled()
    yield


# -- through a store (contract 1.3.0) -----------------------------------------------------

class Killed(Exception):
    pass


def geo_job(store: ls.Store, gdf: Any, *, die_after: int | None = None) -> list[ls.Commit]:
    """The job: 500 features at a time through the helper into a writer with a commit key
    and resume; killed (an injected exception) once `die_after` commits landed."""
    with store.writer(batch_rows=500, commit_key="nad27-2026-07-13", resume=True) as w:
        run = new_run("nad27-2026-07-13", writer=w, chunk_rows=500, input_dataset="s3://parcels/nad27.gpkg",
                      input_version="v7")
        for start in range(0, len(gdf), 500):
            geo.to_crs(gdf.iloc[start:start + 500], "EPSG:4326", run=run, feature_ids="parcel",
                       grid_tolerance_m=None)
            run.flush()
            if die_after is not None and len(w.flush()) >= die_after:
                raise Killed()
        run.close()
    return w.commits


def test_events_written_through_a_writer_read_back_as_recorded(tmp_path: Path) -> None:
    gdf = mixed_frame()
    store = ls.open(tmp_path / "store")
    commits = geo_job(store, gdf)
    assert sum(c.row_count for c in commits) == len(gdf)
    assert {c.schema_version for c in commits} == {"1.3.0"}
    store.seal()
    got = store.scan().read_all().sort_by("sequence")
    expected = geo.to_crs(gdf, "EPSG:4326", run=new_run("other"), feature_ids="parcel", grid_tolerance_m=None)
    assert got.column("feature_id").to_pylist() == list(gdf["parcel"])
    assert got.column("operation_code").to_pylist() == list(expected.operation_codes)
    assert got.column("degraded").to_pylist() == [bool(d) for d in expected.degraded]
    assert set(got.column("input_dataset").to_pylist()) == {"s3://parcels/nad27.gpkg"}
    assert Counter(got.column("outcome").to_pylist()) == Counter(
        "transformed" if a else "rejected" for a in expected.accepted)
    assert store.verify().clean


def test_a_job_killed_mid_run_and_rerun_has_every_event_once(tmp_path: Path) -> None:
    gdf = mixed_frame()
    store = ls.open(tmp_path / "store")
    with pytest.raises(Killed):
        geo_job(store, gdf, die_after=2)
    assert sum(c.row_count for c in store.commits()) == 1000
    commits = geo_job(store, gdf)
    kept = [c for c in commits if c.kept]
    assert len(kept) == 2 and all(c.payload_differs is False for c in kept)  # rebuilt byte for byte
    assert sum(c.row_count for c in commits) == len(gdf)
    store.seal()
    ids = Counter(store.scan(columns=["event_id"]).read_all().column("event_id").to_pylist())
    assert len(ids) == len(gdf) and set(ids.values()) == {1}
    assert store.verify().clean


def test_the_examples_in_docs_geo_md_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    doc = Path(__file__).resolve().parents[2] / "docs/geo.md"
    import re
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{doc}:block{i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "25832 [True, True, True, False]" in out and "invalid_geometry" in out
    assert "4 nightly-2026-07-13-000000001" in out
    store = namespace["store"]
    assert sum(c.row_count for c in store.commits()) == 7
