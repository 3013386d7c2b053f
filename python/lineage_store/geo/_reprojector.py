"""PROJ's candidate operations for a CRS pair, their areas of use in the source CRS, and
the grouped transform: the points grouped by the areas containing them, PROJ asked once
per group, each group transformed with PROJ's operation (docs/geo.md, "How the grouping
picks what PROJ picks")."""

from __future__ import annotations

import functools
import math
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pyproj
from pyproj import CRS, Transformer
from pyproj.transformer import TransformerGroup

from ._operation import BALLPARK, MISSING_GRID, NO_OPERATION, NON_FINITE_INPUT, NON_FINITE_OUTPUT, Operation

# Points this close to an edge of an area of use (relative to the edge's magnitude) are
# transformed alone: rounding could put them on either side of PROJ's own edge.
_EDGE = 1e-9


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
        self._lock = threading.Lock()
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
        with self._lock:  # threads share a cached Reprojector (pyproj keeps a PJ per thread)
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
