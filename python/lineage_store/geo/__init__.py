"""Coordinate transformations with lineage per feature (``pip install lineage-store[geo]``).

``to_crs`` (a GeoSeries, a GeoDataFrame, an array of shapely geometries) and
``transform_xy`` (numpy x/y) transform exactly as ``geopandas.GeoSeries.to_crs`` does,
to the last bit, and record one event per feature in a ``lineage_store.Run``: which
operation PROJ used (its authority code, else a digest of its PROJ string; its name),
its accuracy (PROJ's -1, unknown, as null), the grids it read, and whether the best
operation for the feature was unavailable (``degraded``). A ballpark operation, a
missing grid that costs more accuracy than ``grid_tolerance_m``, an ``inf``/NaN result,
and an invalid, empty or null geometry make a rejected event with its reason: never
silent.

It does not transform vertex by vertex to learn the operation
(``Transformer.get_last_used_operation()`` knows only the last point of a vectorised
call): the vertices are grouped by the set of candidate operations whose area of use
contains them (all PROJ's choice depends on), PROJ is asked which operation it uses for
each group (at its first, last and extreme points), and each group is transformed with
that operation in one call. A point PROJ would treat otherwise (on the edge of an area,
a HUGE_VAL that makes PROJ retry another operation) is done alone through PROJ's own
choice. See docs/geo.md.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from .._run import Run
from ._operation import (
    BALLPARK,
    EMPTY_GEOMETRY,
    INVALID_GEOMETRY,
    MISSING_GRID,
    MIXED_OPERATIONS,
    NO_OPERATION,
    NON_FINITE_INPUT,
    NON_FINITE_OUTPUT,
    Operation,
    canonical,
)
from ._reprojector import Points, Reprojector, _is_none, reprojector

__all__ = [
    "BALLPARK",
    "EMPTY_GEOMETRY",
    "INVALID_GEOMETRY",
    "MISSING_GRID",
    "MIXED_OPERATIONS",
    "NON_FINITE_INPUT",
    "NON_FINITE_OUTPUT",
    "NO_OPERATION",
    "Operation",
    "Points",
    "Reprojector",
    "Transformed",
    "canonical",
    "reprojector",
    "to_crs",
    "transform_xy",
]


class Transformed:
    """What ``to_crs`` and ``transform_xy`` return: ``data`` transformed (every feature, as
    geopandas' ``to_crs`` returns it, rejected ones too), and per feature ``accepted``,
    ``reasons`` (None where accepted), ``operation_codes`` and ``degraded``; ``events``:
    how many events were recorded."""

    def __init__(self, data: Any, accepted: Any, reasons: Any, codes: Any, degraded: Any, events: int) -> None:
        self.data = data
        self.accepted = accepted
        self.reasons = reasons
        self.operation_codes = codes
        self.degraded = degraded
        self.events = events

    @property
    def valid(self) -> Any:
        """``data`` without the rejected features."""
        d = self.data
        if isinstance(d, tuple):
            return tuple(a[self.accepted] for a in d)
        return d[self.accepted]


def _crs_codes(rp: Reprojector) -> Tuple[str, str]:
    """The pair as the contract stores it; refused before any work when either has no EPSG code."""
    return canonical(rp.source), canonical(rp.target)


def _record(run: Run, rp: Reprojector, feature_ids: Sequence[str], op: Any, degraded: Any, reason: Any,
            *, stage: Optional[str], event_type: str) -> int:
    """One event per feature, in feature order (columns built as Arrow arrays)."""
    import pyarrow as pa

    ops = rp.operations
    known = op >= 0
    pick = pa.array(np.where(known, op, 0).astype(np.int32), mask=~known)

    def column(values: List[Any]) -> Any:
        return pa.DictionaryArray.from_arrays(pick, pa.array(values or [""], type=pa.string())).cast(pa.string())

    accepted = _is_none(reason)
    acc = np.asarray([o.accuracy_m if o.accuracy_m is not None else np.nan for o in ops] + [np.nan])[
        np.where(known, op, len(ops))]
    acc[~accepted] = np.nan
    outcome = pa.DictionaryArray.from_arrays(pa.array(accepted.astype(np.int8)), pa.array(["rejected", "transformed"]))
    return run.record(
        pa.array(list(feature_ids), type=pa.string()),
        outcome=outcome.cast(pa.string()),
        stage=stage,
        event_type=event_type,
        source_crs=_crs_codes(rp)[0],
        target_crs=_crs_codes(rp)[1],
        accuracy_m=pa.array(acc, mask=np.isnan(acc)),
        rejection_reason=pa.array(reason, type=pa.string()),
        operation_code=column([o.code for o in ops]),
        operation_name=column([o.name for o in ops]),
        grids=column([o.grids for o in ops]),
        degraded=pa.array(degraded, type=pa.bool_(), mask=~known),
    )


def _feature_ids(feature_ids: Any, n: int, index: Any = None) -> List[str]:
    if feature_ids is None:
        values = np.asarray(index) if index is not None else np.arange(n)
    else:
        values = np.asarray(list(feature_ids) if not hasattr(feature_ids, "__array__") else feature_ids)
    if len(values) != n:
        raise ValueError(f"feature_ids: {len(values)} ids for {n} features")
    return [str(v) for v in values.tolist()]


def transform_xy(
    x: Any,
    y: Any,
    *,
    source_crs: Any,
    target_crs: Any,
    run: Run,
    feature_ids: Any = None,
    z: Any = None,
    stage: Optional[str] = None,
    event_type: str = "crs_transform",
    allow_ballpark: bool = False,
    grid_tolerance_m: Optional[float] = 0.0,
    check: bool = False,
) -> Transformed:
    """Transform points given as arrays (x is easting or longitude, as geopandas and
    ``always_xy``), one feature per point (``feature_ids``: one per point; default its
    position), recording one event each in ``run``. ``data`` is ``(x, y)`` or ``(x, y, z)``."""
    rp = reprojector(source_crs, target_crs, allow_ballpark=allow_ballpark,
                     grid_tolerance_m=grid_tolerance_m, check=check)
    _crs_codes(rp)
    pts = rp.points(x, y, z)
    ids = _feature_ids(feature_ids, len(pts.x))
    events = _record(run, rp, ids, pts.op_index, pts.degraded, pts.reason, stage=stage, event_type=event_type)
    data = (pts.x, pts.y) if pts.z is None else (pts.x, pts.y, pts.z)
    codes = np.asarray([o.code for o in rp.operations] + [None], dtype=object)[
        np.where(pts.op_index >= 0, pts.op_index, len(rp.operations))]
    return Transformed(data, pts.accepted, pts.reason, codes, pts.degraded, events)


def to_crs(
    data: Any,
    crs: Any,
    *,
    run: Run,
    feature_ids: Any = None,
    source_crs: Any = None,
    stage: Optional[str] = None,
    event_type: str = "crs_transform",
    allow_ballpark: bool = False,
    grid_tolerance_m: Optional[float] = 0.0,
    check: bool = False,
) -> Transformed:
    """Transform geometries to ``crs`` as ``GeoSeries.to_crs`` does (the same bits),
    recording one event per feature in ``run``.

    ``data``: a GeoDataFrame (its active geometry column), a GeoSeries (CRS from
    ``data.crs``), or a sequence of shapely geometries (``source_crs`` required).
    ``feature_ids``: a column name of the GeoDataFrame, or one id per feature; default
    the index (a position for a plain sequence). ``data`` of the result is of the input's
    kind, every feature transformed as ``to_crs`` would (use ``.valid`` or ``.accepted``
    to drop the rejected ones)."""
    frame = None
    series = None
    if hasattr(data, "geometry") and hasattr(data, "set_geometry"):  # GeoDataFrame
        frame = data
        series = data.geometry
        if isinstance(feature_ids, str):
            feature_ids = data[feature_ids]
    elif hasattr(data, "crs") and hasattr(data, "values") and hasattr(data, "index"):  # GeoSeries
        series = data
    if series is not None:
        if series.crs is None:
            raise ValueError("the geometries have no CRS: set one (set_crs) before transforming")
        source = series.crs
        geoms = np.asarray(series.values, dtype=object)
        index = series.index
    else:
        if source_crs is None:
            raise ValueError("source_crs is required for geometries without a CRS of their own")
        source = source_crs
        geoms = np.asarray(list(data), dtype=object)
        index = None
    ids = _feature_ids(feature_ids, len(geoms), index)
    rp = reprojector(source, crs, allow_ballpark=allow_ballpark, grid_tolerance_m=grid_tolerance_m, check=check)
    _crs_codes(rp)
    new, op, degraded, reason = _geometries(rp, geoms)
    events = _record(run, rp, ids, op, degraded, reason, stage=stage, event_type=event_type)
    if frame is not None:
        result: Any = frame.copy()
        result[frame.geometry.name] = type(frame.geometry)(new, index=frame.index, crs=rp.target)
        result = result.set_crs(rp.target, allow_override=True)
    elif series is not None:
        result = type(series)(new, index=series.index, crs=rp.target, name=series.name)
    else:
        result = new
    accepted = _is_none(reason)
    codes = np.asarray([o.code for o in rp.operations] + [None], dtype=object)[np.where(op >= 0, op, len(rp.operations))]
    return Transformed(result, accepted, reason, codes, degraded, events)


def _geometries(rp: Reprojector, geoms: Any) -> Tuple[Any, Any, Any, Any]:
    """Transform an array of geometries as geopandas does (2D and 3D apart), then judge
    each feature from its vertices and its validity."""
    import shapely

    m = len(geoms)
    new = np.empty_like(geoms)
    op = np.full(m, -1, dtype=np.int64)
    degraded = np.zeros(m, dtype=bool)
    reason = np.full(m, None, dtype=object)
    has_z = shapely.has_z(geoms)
    for part in (~has_z, has_z):
        where = np.flatnonzero(part)
        sub = geoms[where]
        coords, index = shapely.get_coordinates(sub, include_z=bool(part is has_z), return_index=True)
        pts = rp.points(coords[:, 0], coords[:, 1], coords[:, 2] if part is has_z else None)
        moved = np.column_stack([pts.x, pts.y] if pts.z is None else [pts.x, pts.y, pts.z])
        new[where] = shapely.set_coordinates(sub.copy(), moved)
        _judge(where, index, pts, op, degraded, reason)
    missing = shapely.is_missing(geoms)
    empty = ~missing & shapely.is_empty(geoms)
    reason[missing] = f"{EMPTY_GEOMETRY}: no geometry (null)"
    reason[empty] = f"{EMPTY_GEOMETRY}: the geometry is empty"
    present = np.flatnonzero(~missing & ~empty)
    invalid = present[~shapely.is_valid(geoms[present])]
    if len(invalid):
        why = shapely.is_valid_reason(geoms[invalid])
        for i, w in zip(invalid, why):
            reason[i] = f"{INVALID_GEOMETRY}: {w}"
    return new, op, degraded, reason


def _judge(where: Any, index: Any, pts: Points, op: Any, degraded: Any, reason: Any) -> None:
    """A feature's verdict from its vertices': one operation for all (else rejected as
    mixed), degraded if any is, rejected with the first rejected vertex's reason."""
    if len(index) == 0:
        return
    m = len(where)
    counts = np.bincount(index, minlength=m)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    has = counts > 0
    lo = np.full(m, -1, dtype=np.int64)
    hi = np.full(m, -1, dtype=np.int64)
    lo[has] = np.minimum.reduceat(pts.op_index, starts[has])
    hi[has] = np.maximum.reduceat(pts.op_index, starts[has])
    single = has & (lo == hi)
    op[where[single]] = lo[single]
    degraded[where] = np.bincount(index, weights=pts.degraded, minlength=m) > 0
    bad_v = np.flatnonzero(~_is_none(pts.reason))
    n_bad = np.bincount(index[bad_v], minlength=m)
    firsts = np.unique(index[bad_v], return_index=True)
    for f, at in zip(*firsts):
        text = str(pts.reason[bad_v[at]])
        reason[where[f]] = text if counts[f] == 1 else f"{text} ({n_bad[f]} of {counts[f]} vertices)"
    mixed = np.flatnonzero(has & (lo != hi) & (n_bad == 0))
    for f in mixed:
        used = sorted({int(k) for k in pts.op_index[starts[f]:starts[f] + counts[f]]})
        names = ", ".join(sorted(pts.operations[k].code if k >= 0 else "none" for k in used))
        reason[where[f]] = (f"{MIXED_OPERATIONS}: PROJ transformed this feature's vertices with "
                            f"{len(used)} different operations ({names}): its shape is not one transformation's")
