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

import functools
import hashlib
import math
import re
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pyproj
from pyproj import CRS, Transformer
from pyproj.transformer import TransformerGroup

from ._run import Run

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

#: The codes a rejection reason starts with (``<code>: <explanation>``).
BALLPARK = "ballpark"
MISSING_GRID = "missing_grid"
NON_FINITE_INPUT = "non_finite_input"
NON_FINITE_OUTPUT = "non_finite_output"
INVALID_GEOMETRY = "invalid_geometry"
EMPTY_GEOMETRY = "empty_geometry"
MIXED_OPERATIONS = "mixed_operations"
NO_OPERATION = "no_operation"

# Points this close to an edge of an area of use (relative to the edge's magnitude) are
# transformed alone: rounding could put them on either side of PROJ's own edge.
_EDGE = 1e-9


@dataclass(frozen=True)
class Operation:
    """One coordinate operation, as an event records it."""

    code: str
    """``EPSG:1175``; for a concatenation, the code of its one registered transformation
    when its other steps are conversions the two CRSs define; else ``PROJ-SHA256:<hex>``
    of its PROJ string."""
    name: str
    accuracy_m: Optional[float]
    """PROJ's accuracy in metres; None where PROJ says -1 (unknown)."""
    grids: str
    """The PROJ short names of the grids it reads, one space between; "" for none."""
    ballpark: bool
    proj_string: str

    @classmethod
    def of(cls, op: Any) -> "Operation":
        """From a Transformer (``get_last_used_operation()``) or a CoordinateOperation,
        through its PROJJSON and PROJ string only (PROJ cannot read back every
        concatenation ``always_xy`` makes)."""
        proj_string = op.to_proj4() or ""
        doc = op.to_json_dict()
        steps = _steps(doc)
        accuracy = op.accuracy
        return cls(
            code=_code(doc, steps, proj_string),
            # The axis order changes always_xy wraps around an operation are not its name.
            name=" + ".join(str(s.get("name")) for s in steps) or str(doc.get("name")),
            accuracy_m=None if accuracy is None or accuracy < 0 else float(accuracy),
            grids=" ".join(_grids(proj_string)),
            ballpark=any(str(s.get("name", "")).startswith("Ballpark") for s in steps),
            proj_string=proj_string,
        )

    def describe(self) -> str:
        acc = "accuracy unknown" if self.accuracy_m is None else f"{self.accuracy_m:g} m"
        return f'{self.code} "{self.name}" ({acc})'


def _steps(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The steps of an operation's PROJJSON (itself when not concatenated), without the
    axis order changes ``always_xy`` adds."""
    steps = doc.get("steps") if doc.get("type") == "ConcatenatedOperation" else [doc]
    return [s for s in steps or [] if isinstance(s, dict) and s.get("name") != "axis order change (2D)"]


def _step_code(step: Dict[str, Any]) -> Optional[str]:
    ident = step.get("id")
    if not isinstance(ident, dict):
        return None
    authority = str(ident.get("authority", ""))
    if authority.startswith("DERIVED_FROM(") and authority.endswith(")"):
        authority = authority[len("DERIVED_FROM("):-1]
    if not authority or authority.startswith("INVERSE("):
        return None
    return f"{authority}:{ident.get('code')}"


def _code(doc: Dict[str, Any], steps: List[Dict[str, Any]], proj_string: str) -> str:
    own = _step_code(doc)
    if own:
        return own
    transformations = [s for s in steps if s.get("type") != "Conversion"]
    for only in (steps, transformations):
        if len(only) == 1:
            code = _step_code(only[0])
            if code:
                return code
    return "PROJ-SHA256:" + hashlib.sha256(proj_string.encode()).hexdigest()


_GRID_PARAM = re.compile(r"\+(?:grids|geoidgrids|file|xy_grids|z_grids)=(\S+)")


def _grids(proj_string: str) -> List[str]:
    """The grid files a PROJ string reads (``@`` marks an optional one), in order, once each."""
    out: List[str] = []
    for value in _GRID_PARAM.findall(proj_string):
        for g in value.split(","):
            g = g.lstrip("@")
            if g and g not in out:
                out.append(g)
    return out


def canonical(crs: Any) -> str:
    """``EPSG:<code>`` of a CRS (how the contract stores one); ValueError without one."""
    c = CRS.from_user_input(crs)
    auth = c.to_authority(min_confidence=100)
    if auth is None or auth[0] != "EPSG":
        raise ValueError(f"CRS {c.name!r} has no EPSG code: the contract stores a CRS as EPSG:<code>")
    return f"EPSG:{auth[1]}"


@dataclass
class _Candidate:
    op: Any  # a Transformer (available) or a CoordinateOperation (its grids missing)
    available: bool
    accuracy: float
    offshore: bool
    pseudo_area: float
    box: Tuple[float, float, float, float]


class Reprojector:
    """One source → target CRS pair: PROJ's candidate operations with their areas of use
    in the source CRS, and the operations PROJ used so far (``operations``).

    ``allow_ballpark``: accept points PROJ transforms with a ballpark operation (a datum
    shift of nothing). ``grid_tolerance_m``: accept a degraded point (the best operation
    for it needs a grid that is not installed) when the operation PROJ used instead is at
    most this many metres less accurate; None accepts every degraded point (still
    flagged). ``check``: also run PROJ's own vectorised transform (what geopandas runs)
    and compare every coordinate bit for bit; a point that differs is redone alone
    through PROJ's choice (it costs that transform again; the tests show none differ).
    """

    def __init__(
        self,
        source_crs: Any,
        target_crs: Any,
        *,
        allow_ballpark: bool = False,
        grid_tolerance_m: Optional[float] = 0.0,
        check: bool = False,
    ) -> None:
        self.source = CRS.from_user_input(source_crs)
        self.target = CRS.from_user_input(target_crs)
        self.allow_ballpark = allow_ballpark
        self.grid_tolerance_m = grid_tolerance_m
        self.check = check
        # The transformer geopandas' to_crs makes: Transformer.from_crs(..., always_xy=True).
        self.transformer = Transformer.from_crs(self.source, self.target, always_xy=True)
        self.operations: List[Operation] = []
        self._index: Dict[str, int] = {}
        self._transformers: List[Transformer] = []
        self._known: Dict[bytes, int] = {}  # set of areas -> the operation PROJ used there
        self._verdicts: Dict[Tuple[str, int], Tuple[bool, Optional[str]]] = {}
        self._lonlat = self.source.is_geographic
        self.candidates = self._candidates()
        self._boxes = np.array([c.box for c in self.candidates], dtype=np.float64).reshape(-1, 4)

    # -- candidates and their areas ----------------------------------------------------

    def _candidates(self) -> List[_Candidate]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Best transformation is not available": said per feature
            group = TransformerGroup(self.source, self.target, always_xy=True, allow_ballpark=True)
        ops: List[Tuple[Any, bool]] = [(t, True) for t in group.transformers] + [
            (op, False) for op in group.unavailable_operations]
        to_src = self._geog_to_source()
        out: List[_Candidate] = []
        for op, available in ops:
            area = op.area_of_use
            w, s, e, n = area.bounds if area is not None else (-180.0, -90.0, 180.0, 90.0)
            name = area.name if area is not None else ""
            # PROJ splits an area across the antimeridian in two.
            for w2, s2, e2, n2 in [(w, s, e, n)] if w <= e else [(w, s, 180.0, n), (-180.0, s, e, n)]:
                box = _box(to_src, w2, s2, e2, n2)
                if box is not None:
                    out.append(_Candidate(op, available, -1.0 if op.accuracy is None else float(op.accuracy),
                                          "- offshore" in name, _pseudo_area(w2, s2, e2, n2), box))
        return out

    def _geog_to_source(self) -> Optional[Transformer]:
        """As PROJ measures an area in the source CRS: from longitude-latitude on the
        source's ellipsoid (prime meridian 0) to the source CRS (None: the source is
        geographic, the area is its own box)."""
        ell = self.source.ellipsoid
        if self.source.is_geographic or ell is None:
            return None
        geog = CRS.from_proj4(f"+proj=longlat +a={ell.semi_major_metre!r} +rf={ell.inverse_flattening!r} +no_defs +type=crs")
        return Transformer.from_crs(geog, self.source, always_xy=True)

    def _inside(self, x: Any, y: Any, side: float) -> Any:
        """(points × candidates): whether each area contains each point; ``side`` -1 shrinks
        every area by the edge margin, +1 grows it, 0 is exact. Longitudes wrap as in PROJ."""
        minx, miny, maxx, maxy = self._boxes.T
        mx = side * _EDGE * np.maximum(1.0, np.maximum(np.abs(_finite(minx)), np.abs(_finite(maxx))))
        my = side * _EDGE * np.maximum(1.0, np.maximum(np.abs(_finite(miny)), np.abs(_finite(maxy))))
        xc, yc = x[:, None], y[:, None]
        in_y = (yc >= miny - my) & (yc <= maxy + my)
        inside = (xc >= minx - mx) & (xc <= maxx + mx) & in_y
        if self._lonlat and ((x < -180.0) | (x > 180.0)).any():
            wrapped = _normalize_lon(x)[:, None]
            inside |= (wrapped >= minx - mx) & (wrapped <= maxx + mx) & in_y
        return inside

    def _best(self, inside: Any) -> Any:
        """Per point, the candidate PROJ ranks best among those whose area contains it,
        whether or not its grids are installed (-1: none): a known accuracy first, the
        smallest, ties to the smaller area, then the first listed; never an offshore area
        (PROJ does not pick one)."""
        cands = self.candidates
        big = len(cands)
        order = sorted(range(big), key=lambda c: (cands[c].accuracy < 0, cands[c].accuracy, cands[c].pseudo_area, c))
        rank = np.empty(big, dtype=np.int64)
        rank[order] = np.arange(big)
        usable = np.array([not c.offshore for c in cands], dtype=bool)
        top = np.where(inside & usable, rank, big).min(axis=1)
        return np.where(top < big, np.asarray(order, dtype=np.int64)[np.minimum(top, big - 1)], -1)

    # -- transforming ------------------------------------------------------------------

    def _operation(self, op_t: Transformer) -> int:
        key = op_t.to_proj4() or op_t.to_wkt() or ""
        if key not in self._index:
            self._index[key] = len(self.operations)
            self.operations.append(Operation.of(op_t))
            self._transformers.append(op_t)
        return self._index[key]

    def _probe(self, x: float, y: float, z: Optional[float]) -> Tuple[float, float, Optional[float], int]:
        """One point through PROJ's own choice: its result and the operation PROJ reports
        (-1: none, or the result is not finite)."""
        if z is None:
            X, Y = self.transformer.transform(x, y)
            Z = None
        else:
            X, Y, Z = self.transformer.transform(x, y, z)
        if not (math.isfinite(X) and math.isfinite(Y)):
            return X, Y, Z, -1
        try:
            return X, Y, Z, self._operation(self.transformer.get_last_used_operation())
        except pyproj.exceptions.ProjError:
            return X, Y, Z, -1

    def points(self, x: Any, y: Any, z: Any = None) -> "Points":
        """Transform points (x is easting or longitude, as ``always_xy``) and judge each:
        the operation PROJ used, degraded or not, rejected or not."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.float64)
        zz = None if z is None else np.ascontiguousarray(z, dtype=np.float64)
        n = len(x)
        out = _Out(np.full(n, np.nan), np.full(n, np.nan), None if zz is None else np.full(n, np.nan),
                   np.full(n, -1, dtype=np.int64))
        best = np.full(n, -1, dtype=np.int64)
        finite_in = np.isfinite(x) & np.isfinite(y)
        if zz is not None:
            finite_in &= np.isfinite(zz)
        idx = np.flatnonzero(finite_in)
        alone: List[int] = []
        if len(idx) and len(self.candidates):
            inner = self._inside(x[idx], y[idx], -1.0)
            sure = (inner == self._inside(x[idx], y[idx], 1.0)).all(axis=1)
            if not sure.all():
                best[idx[~sure]] = self._best(self._inside(x[idx[~sure]], y[idx[~sure]], 0.0))
            # A point on an edge of some area (to rounding) is done alone: PROJ decides.
            alone.extend(idx[~sure].tolist())
            sure_idx = idx[sure]
            if len(sure_idx):
                groups = _groups(inner[sure], sure_idx)
                # The best candidate depends only on the areas containing the point.
                group_best = self._best(np.stack([row for _, _, row in groups]))
                for (key, members, _), b in zip(groups, group_best.tolist()):
                    best[members] = b
                    alone.extend(self._group(members, key, x, y, zz, out))
        else:
            alone.extend(idx.tolist())
        for i in alone:
            self._alone(i, x, y, zz, out)
        if self.check and len(idx):
            if zz is None:
                rX, rY = self.transformer.transform(x, y)
            else:
                rX, rY, _ = self.transformer.transform(x, y, zz)
            for j in np.flatnonzero(~(_same_bits(rX, out.x) & _same_bits(rY, out.y)) & finite_in).tolist():
                self._alone(j, x, y, zz, out)
        return Points(self, out, best, finite_in)

    def _alone(self, i: int, x: Any, y: Any, z: Any, out: "_Out") -> None:
        out.x[i], out.y[i], zi, out.op[i] = self._probe(float(x[i]), float(y[i]), None if z is None else float(z[i]))
        if out.z is not None:
            out.z[i] = zi

    def _group(self, members: Any, key: bytes, x: Any, y: Any, z: Any, out: "_Out") -> List[int]:
        """Transform one group (points inside the same areas) with the operation PROJ
        reports for its first point (remembered per set of areas); return the members to
        do alone: all of them unless PROJ's own result at the group's extreme points is
        that operation's to the bit, else those the operation gives HUGE_VAL for (PROJ
        retries another operation there)."""
        gx, gy = x[members], y[members]
        gz = None if z is None else z[members]
        k = self._known.get(key, -1)
        if k < 0:
            k = self._probe(float(gx[0]), float(gy[0]), None if gz is None else float(gz[0]))[3]
            if k < 0:
                return [int(i) for i in members]
        op_t = self._transformers[k]
        if gz is None:
            gX, gY = op_t.transform(gx, gy)
        else:
            gX, gY, gZ = op_t.transform(gx, gy, gz)
        reps = np.unique([0, len(members) - 1, int(gx.argmin()), int(gx.argmax()), int(gy.argmin()), int(gy.argmax())])
        if gz is None:
            rX, rY = self.transformer.transform(gx[reps], gy[reps])
        else:
            rX, rY, _ = self.transformer.transform(gx[reps], gy[reps], gz[reps])
        if not (_same_bits(rX, gX[reps]) & _same_bits(rY, gY[reps])).all():
            return [int(i) for i in members]
        self._known[key] = k
        if gz is not None:
            out.z[members] = gZ
        out.x[members], out.y[members] = gX, gY
        out.op[members] = k
        return [int(i) for i in members[~(np.isfinite(gX) & np.isfinite(gY))]]

    # -- judging -----------------------------------------------------------------------

    def verdict(self, used: Operation, best: int) -> Tuple[bool, Optional[str]]:
        """For a point transformed with ``used``, whose best candidate is ``best``: whether
        it is degraded, and why it is rejected (None: accepted)."""
        key = (used.proj_string, best)
        if key not in self._verdicts:
            self._verdicts[key] = self._judge(used, best)
        return self._verdicts[key]

    def _judge(self, used: Operation, best: int) -> Tuple[bool, Optional[str]]:
        if used.ballpark and not self.allow_ballpark:
            return False, (f"{BALLPARK}: PROJ used {used.describe()}, which shifts no datum (errors up to "
                           "hundreds of metres): no operation whose area of use contains the point was usable")
        if best < 0 or self.candidates[best].available:
            return False, None
        b = self.candidates[best]
        cand = Operation.of(b.op)
        missing = " ".join(g.short_name for g in getattr(b.op, "grids", []) if not g.available) or cand.grids
        gap = math.inf if used.accuracy_m is None or b.accuracy < 0 else used.accuracy_m - b.accuracy
        tol = self.grid_tolerance_m
        if tol is None or gap <= tol:
            return True, None
        net = "on" if _network_enabled() else "off"
        worse = "of unknown accuracy" if math.isinf(gap) else f"{gap:g} m less accurate"
        return True, (f"{MISSING_GRID}: the best operation here, {cand.describe()}, needs {missing}, not "
                      f"installed (PROJ network {net}); PROJ used {used.describe()}, {worse}, beyond the "
                      f"tolerance of {tol:g} m")


@dataclass
class _Out:
    x: Any
    y: Any
    z: Any
    op: Any


class Points:
    """What ``Reprojector.points`` returns: the coordinates (``x``, ``y``, ``z``), and per
    point the operation PROJ used (``op_index`` into ``operations``; -1: none), whether
    the best operation for it was unavailable (``degraded``), and why it is rejected
    (``reason``; None: accepted)."""

    def __init__(self, rp: Reprojector, out: _Out, best: Any, finite_in: Any) -> None:
        self.x, self.y, self.z, self.op_index = out.x, out.y, out.z, out.op
        self.operations = list(rp.operations)
        n = len(out.x)
        reason = np.full(n, None, dtype=object)
        self.degraded = np.zeros(n, dtype=bool)
        finite_out = np.isfinite(out.x) & np.isfinite(out.y)
        if out.z is not None:
            finite_out &= np.isfinite(out.z)
        reason[~finite_in] = f"{NON_FINITE_INPUT}: a coordinate is inf or NaN"
        reason[finite_in & ~finite_out] = (
            f"{NON_FINITE_OUTPUT}: PROJ returned inf or NaN for finite coordinates (outside the "
            "projection's domain, or outside the grid of every usable operation)")
        reason[finite_in & finite_out & (out.op < 0)] = f"{NO_OPERATION}: PROJ did not say which operation it used"
        ok = finite_in & finite_out & (out.op >= 0)
        # A verdict depends on the point only through (operation used, best candidate).
        stride = len(rp.candidates) + 1
        pair = out.op * stride + (best + 1)
        for code in np.unique(pair[ok]).tolist():
            k, b = divmod(int(code), stride)
            degraded, why = rp.verdict(self.operations[k], b - 1)
            sel = ok & (pair == code)
            self.degraded[sel] = degraded
            if why is not None:
                reason[sel] = why
        self.reason = reason

    @property
    def accepted(self) -> Any:
        return _is_none(self.reason)


@functools.lru_cache(maxsize=16)
def _cached(source: str, target: str, allow_ballpark: bool, grid_tolerance_m: Optional[float], check: bool,
            data_dir: str, network: bool) -> Reprojector:
    return Reprojector(source, target, allow_ballpark=allow_ballpark, grid_tolerance_m=grid_tolerance_m, check=check)


def reprojector(source_crs: Any, target_crs: Any, *, allow_ballpark: bool = False,
                grid_tolerance_m: Optional[float] = 0.0, check: bool = False) -> Reprojector:
    """A ``Reprojector``, cached per CRS pair and options (and PROJ's data directory and
    network setting, which change the candidates)."""
    return _cached(CRS.from_user_input(source_crs).to_wkt(), CRS.from_user_input(target_crs).to_wkt(),
                   allow_ballpark, grid_tolerance_m, check, pyproj.datadir.get_data_dir(),
                   _network_enabled())


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
        source_crs=canonical(rp.source),
        target_crs=canonical(rp.target),
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
    import shapely

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


def _groups(inside: Any, idx: Any) -> List[Tuple[bytes, Any, Any]]:
    """``idx`` split by equal rows of ``inside`` (which areas contain the point), each
    with its row (as bytes, and as it is)."""
    packed = np.packbits(inside, axis=1)
    width = -(-packed.shape[1] // 8) * 8
    words = np.zeros((packed.shape[0], width), dtype=np.uint8)
    words[:, :packed.shape[1]] = packed
    cols = words.view(np.uint64)
    order = np.lexsort(cols.T[::-1]) if cols.shape[1] else np.arange(len(idx))
    sorted_cols = cols[order]
    cuts = np.flatnonzero((sorted_cols[1:] != sorted_cols[:-1]).any(axis=1)) + 1
    starts = np.concatenate([[0], cuts]).astype(np.int64)
    return [(sorted_cols[st].tobytes(), part, inside[order[st]])
            for st, part in zip(starts.tolist(), np.split(idx[order], cuts))]


def _box(to_src: Optional[Transformer], w: float, s: float, e: float, n: float) -> Optional[Tuple[float, float, float, float]]:
    """An area of use (degrees) as a box in the source CRS, as PROJ computes it: 21 points
    along each edge, transformed, their extent (the world stays unbounded)."""
    if w == -180.0 and e == 180.0 and s == -90.0 and n == 90.0 and to_src is not None:
        return (-math.inf, -math.inf, math.inf, math.inf)
    if to_src is None:
        return (w, s, e, n)
    steps = 20
    j = np.arange(steps + 1)
    lon = w + j * ((e - w) / steps)
    lat = s + j * ((n - s) / steps)
    xs = np.concatenate([lon, lon, np.full(steps + 1, w), np.full(steps + 1, e)])
    ys = np.concatenate([np.full(steps + 1, s), np.full(steps + 1, n), lat, lat])
    px, py = to_src.transform(xs, ys)
    ok = np.isfinite(px) & np.isfinite(py)
    if not ok.any():
        return None
    return (float(px[ok].min()), float(py[ok].min()), float(px[ok].max()), float(py[ok].max()))


def _pseudo_area(w: float, s: float, e: float, n: float) -> float:
    wr, sr, er, nr = (v / 180 * math.pi for v in (w, s, e, n))
    if wr > er:
        er += 2 * math.pi
    return (er - wr) * (math.sin(nr) - math.sin(sr))


def _normalize_lon(x: Any) -> Any:
    out = np.where(x > 180.0, x - 360.0, np.where(x < -180.0, x + 360.0, x))
    far = (out > 180.0) | (out < -180.0)
    return np.where(far, np.fmod(out + 180.0, 360.0) - 180.0, out)


def _is_none(a: Any) -> Any:
    return np.asarray(a == None, dtype=bool)  # noqa: E711 (element by element)


def _network_enabled() -> bool:
    return bool(pyproj.network.is_network_enabled())  # type: ignore[attr-defined]


def _finite(a: Any) -> Any:
    return np.where(np.isfinite(a), a, 0.0)


def _same_bits(a: Any, b: Any) -> Any:
    return np.asarray(a, dtype=np.float64).view(np.int64) == np.asarray(b, dtype=np.float64).view(np.int64)
