"""Input from ordinary tools, the rest of issue 37 item 4: `conform(fill_missing=True,
drop_extra=True)` adds the nullable columns a table lacks and drops the ones no contract
version has; a GeoDataFrame is named by its geometry column; `InputError.errors` is
never empty, also when `conform` refuses."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import lineage_store as ls
from pkg_support import events

N = 12


def stored(root: Path) -> pa.Table:
    return ds.dataset(root, format="parquet", partitioning="hive").to_table().sort_by("event_id")


def test_fill_missing_adds_the_nullable_columns_a_table_lacks(tmp_path: Path) -> None:
    t = events(N).drop_columns(["audit_tag", "source_crs"])
    with pytest.raises(ls.InputError) as e:
        ls.conform(t)
    assert [x["field"] for x in e.value.errors] == ["source_crs", "audit_tag"]
    assert all("fill_missing adds a nullable column" in x["reason"] for x in e.value.errors)
    c = ls.conform(t, fill_missing=True)
    got = c.to_pyarrow()
    assert got.schema.names == ls.SCHEMA.names  # 1.2.0: the oldest version holding the input
    assert got.column("audit_tag").null_count == got.column("source_crs").null_count == N
    assert c.changes == ["`source_crs`: added as Utf8, all null (a nullable column the input lacks)",
                         "`audit_tag`: added as Utf8, all null (a nullable column the input lacks)"]
    ls.open(tmp_path / "store").append(c)
    assert stored(tmp_path / "store").num_rows == N


def test_fill_missing_never_invents_a_required_column() -> None:
    t = events(N).drop_columns(["event_id", "audit_tag"])
    with pytest.raises(ls.InputError) as e:
        ls.conform(t, fill_missing=True)
    [err] = e.value.errors
    assert err["field"] == "event_id" and "a required column, which fill_missing does not invent" in err["reason"]


def test_fill_missing_conforms_to_the_version_that_has_the_columns_given(tmp_path: Path) -> None:
    t = events(N).append_column("operation_code", pa.array(["EPSG:1175"] * N))
    t = t.append_column("degraded", pa.array([i % 2 == 0 for i in range(N)]))
    with pytest.raises(ls.InputError) as e:
        ls.open(tmp_path / "refused").append(t)  # 1.3.0's other four columns are missing
    assert "operation_name" in e.value.fields
    got = ls.conform(t, fill_missing=True).to_pyarrow()
    assert got.schema.names == ls.contract_schema("1.3.0").names
    for c in ["operation_name", "grids", "input_dataset", "input_version"]:
        assert got.column(c).null_count == N, c
    assert got.column("degraded").to_pylist() == [i % 2 == 0 for i in range(N)]
    commits = ls.open(tmp_path / "store").append(got)
    assert {c.schema_version for c in commits} == {"1.3.0"}
    back = stored(tmp_path / "store")
    assert back.column("operation_code").to_pylist() == ["EPSG:1175"] * N


def test_drop_extra_drops_columns_of_no_contract_version(tmp_path: Path) -> None:
    t = events(N).append_column("colour", pa.array(["red"] * N)).append_column("weight", pa.array([1.5] * N))
    with pytest.raises(ls.InputError) as e:
        ls.conform(t)
    assert [x["field"] for x in e.value.errors] == ["colour", "weight"]
    assert all("drop_extra drops a column" in x["reason"] for x in e.value.errors)
    c = ls.conform(t, drop_extra=True)
    assert c.to_pyarrow().schema.names == ls.SCHEMA.names
    assert c.changes == ["`colour`: Utf8, dropped (not a column of any contract version)",
                         "`weight`: Float64, dropped (not a column of any contract version)"]
    ls.open(tmp_path / "store").append(c)
    assert stored(tmp_path / "store").num_rows == N


def test_a_geodataframe_is_named_by_its_geometry_column(tmp_path: Path) -> None:
    gpd = pytest.importorskip("geopandas")
    shapely = pytest.importorskip("shapely")
    df = events(N).to_pandas()
    gdf = gpd.GeoDataFrame(df, geometry=[shapely.Point(7.0 + i, 50.0) for i in range(N)], crs="EPSG:4326")
    gdf = gdf.rename_geometry("footprint")
    store = ls.open(tmp_path / "store")
    for call in (lambda: store.append(gdf), lambda: ls.check(gdf), lambda: ls.conform(gdf)):
        with pytest.raises(ls.InputError) as e:
            call()
        assert e.value.field == "footprint" and e.value.fields == ["footprint"]
        [err] = e.value.errors
        assert err["field"] == "footprint" and "geometry column `footprint`" in err["reason"]
        assert "drop_extra=True" in str(e.value) and 'gdf.drop(columns=["footprint"])' in str(e.value)
    assert not (tmp_path / "store").exists()
    c = ls.conform(gdf, drop_extra=True)
    assert c.changes[0] == "`footprint`: geometry, dropped (a GeoDataFrame's geometry column)"
    store.append(c)
    assert stored(tmp_path / "store").num_rows == N


def test_input_error_errors_is_never_empty(tmp_path: Path) -> None:
    # A conversion refused as a whole: one entry per field.
    t = events(N).set_column(2, "sequence", pa.array([str(i) for i in range(N)]))
    with pytest.raises(ls.InputError) as e:
        ls.conform(t)
    assert [x["field"] for x in e.value.errors] == ["sequence"]
    assert "has no lossless conversion" in e.value.errors[0]["reason"]
    # A value that cannot be converted: its row.
    t = events(N).set_column(10, "strategy_index", pa.array([0.5] + [1.0] * (N - 1)))
    with pytest.raises(ls.InputError) as e:
        ls.conform(t)
    assert e.value.errors and e.value.errors[0]["row"] == 1 and e.value.errors[0]["field"] == "strategy_index"
    # A usage error: its one entry is the error itself.
    with pytest.raises(ls.InputError) as e:
        ls.open(tmp_path / "store").append(events(N), batch_rows=0)
    assert len(e.value.errors) == 1 and e.value.errors[0]["reason"] == e.value.reason
    # Not given by the library at all: the same.
    assert ls.InputError("x", field="f").errors == [
        {"line": None, "row": None, "field": "f", "value": None, "reason": "x"}]
