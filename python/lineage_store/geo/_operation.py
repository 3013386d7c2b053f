"""One coordinate operation as an event records it (code, name, accuracy, grids), the
rejection codes, and a CRS as the contract stores it."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from pyproj import CRS

#: The codes a rejection reason starts with (``<code>: <explanation>``).
BALLPARK = "ballpark"
MISSING_GRID = "missing_grid"
NON_FINITE_INPUT = "non_finite_input"
NON_FINITE_OUTPUT = "non_finite_output"
INVALID_GEOMETRY = "invalid_geometry"
EMPTY_GEOMETRY = "empty_geometry"
MIXED_OPERATIONS = "mixed_operations"
NO_OPERATION = "no_operation"


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
