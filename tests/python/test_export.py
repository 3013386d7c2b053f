"""Exports checked by the ecosystems' own tools.

- OpenLineage: every event is rebuilt with openlineage-python's model (its attrs classes
  and their validators) and must serialise back, through the client's own Serde, to the
  event we wrote. Our custom facets validate (jsonschema, draft 2020-12) against the
  schemas we publish in docs/openlineage/facets/. openlineage-python ships no JSON
  Schema files (only classes generated from them), so the core spec is checked through
  the model; the base-facet definitions our facet schemas `$ref` are a stand-in below.
- ISO 19139: OWSLib's MD_Metadata parser reads the record back; process steps (which
  OWSLib does not model) are read with lxml XPath. The record validates against the
  ISO 19139 gmd XSDs (2007-04-17) and the ISO 19115-2 gmi 1.0 XSDs shipped in the
  ckanext-iso19115 package (gmi imports gmx, which the package lacks: a stand-in below
  declares the one gmx type gmi names, which our records never use).
- ISO 19115-3: validates against the official ISO 19115-3 XSDs (mdb 2.0) and ISO 19157-2
  (mdq 1.0, the data quality) shipped in ckanext-iso19115 (xmlschema, offline: every
  schema URL is mapped to the package's copy); process steps checked structurally with
  lxml; OWSLib's iso3 parser reads it (its DQ_DataQuality looks for the lineage inside
  the data quality, where ISO 19115-3 has none: the statement is read with lxml).

Every count is recomputed independently from the store with pyarrow.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import subprocess
import uuid
from collections import Counter
from pathlib import Path

import attr
import jsonschema
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
import referencing
import xmlschema
from lxml import etree
from openlineage.client.event_v2 import Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    OutputDatasetFacet,
    RunFacet,
    dataset_version_dataset,
    datasource_dataset,
    job_type_job,
    output_statistics_output_dataset,
    schema_dataset,
)
from openlineage.client.serde import Serde
from owslib.iso import MD_Metadata
from owslib.iso3 import MD_Metadata as MD_Metadata3

from test_interop import PARTITIONING, event, lineage, ndjson

ROOT = Path(__file__).resolve().parents[2]
FACETS = ROOT / "docs/openlineage/facets/1-0-0"
OL_RUN_NS = uuid.uuid5(uuid.NAMESPACE_URL, "urn:lineage-store:run_id")


def run_uuid(store, run_id: str) -> str:
    """An export's run id: the UUIDv5 of the store's identity and the run_id."""
    store_id = json.loads((Path(store) / "_lineage/store.json").read_text())["store_id"]
    return str(uuid.uuid5(OL_RUN_NS, f"{store_id}/{run_id}"))
NS3 = {
    "mdb": "http://standards.iso.org/iso/19115/-3/mdb/2.0",
    "mrl": "http://standards.iso.org/iso/19115/-3/mrl/2.0",
    "mrs": "http://standards.iso.org/iso/19115/-3/mrs/1.0",
    "mcc": "http://standards.iso.org/iso/19115/-3/mcc/1.0",
    "cit": "http://standards.iso.org/iso/19115/-3/cit/2.0",
    "gco": "http://standards.iso.org/iso/19115/-3/gco/1.0",
    "gml": "http://www.opengis.net/gml/3.2",
    "mdq": "http://standards.iso.org/iso/19157/-2/mdq/1.0",
    "mri": "http://standards.iso.org/iso/19115/-3/mri/1.0",
    "gex": "http://standards.iso.org/iso/19115/-3/gex/1.0",
}
NS139 = {
    "gmd": "http://www.isotc211.org/2005/gmd",
    "gco": "http://www.isotc211.org/2005/gco",
    "gmi": "http://standards.iso.org/iso/19115/-2/gmi/1.0",
}


def ok(*args: str, stdin: bytes | None = None) -> str:
    p = lineage(*args, stdin=stdin)
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout.decode()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Run r1: two stages into two target CRSs, rejections with two reasons, sealed.
    Run r2: one more commit, not sealed."""
    root = tmp_path_factory.mktemp("export") / "store"
    rows = []
    for i in range(1, 241):
        e = event(i, "r1", "EPSG:4326" if i % 3 else "EPSG:25832")
        if i % 4 == 0:
            e["stage"], e["event_type"] = "validate", "accuracy_check"
        if e["outcome"] == "rejected" and i % 20 == 17:
            e["rejection_reason"] = "no_transform_path"
        if i % 5 == 0:
            e["source_crs"] = "EPSG:4258"
        if i % 11 == 0:
            e["source_crs"] = None
        rows.append(e)
    ok("append", "--store", str(root), "--batch-rows", "50", stdin=ndjson(rows))
    ok("seal", "--store", str(root))
    ok("append", "--store", str(root), stdin=ndjson([event(i, "r2", "EPSG:3857") for i in range(1, 11)]))
    return root


def table(store: Path):
    return ds.dataset(store, format="parquet", partitioning=PARTITIONING).to_table()


def counts(store: Path, run: str, *keys: str) -> Counter:
    t = table(store).filter(pc.field("run_id") == run)
    return Counter(zip(*(t.column(k).to_pylist() for k in keys)))


def seal_digest(store: Path, seq: int) -> str:
    return hashlib.sha256((store / f"_lineage/seals/{seq:020d}.json").read_bytes()).hexdigest()


# ---------------------------------------------------------------- OpenLineage


def custom_facet(base, schema_url: str, producer: str, fields: dict):
    """An attrs facet class like the generated ones, for one of our custom facets."""
    cls = attr.make_class(
        "Custom", {k: attr.ib(default=None, kw_only=True) for k in fields}, bases=(base,)
    )
    cls._get_schema = staticmethod(lambda: schema_url)
    return cls(producer=producer, **fields)


def facet_kwargs(d: dict) -> tuple[str, dict]:
    d = dict(d)
    producer = d.pop("_producer")
    d.pop("_schemaURL")
    return producer, d


def rebuild(e: dict) -> RunEvent:
    """The event built with openlineage-python's classes (their validators run)."""
    run_facets = {}
    for k, f in e["run"]["facets"].items():
        producer, fields = facet_kwargs(f)
        run_facets[k] = custom_facet(RunFacet, f["_schemaURL"], producer, fields)
    jt = e["job"]["facets"]["jobType"]
    producer, fields = facet_kwargs(jt)
    job = Job(
        namespace=e["job"]["namespace"],
        name=e["job"]["name"],
        facets={"jobType": job_type_job.JobTypeJobFacet(producer=producer, **fields)},
    )
    outputs = []
    for o in e["outputs"]:
        producer, schema = facet_kwargs(o["facets"]["schema"])
        fields = [schema_dataset.SchemaDatasetFacetFields(**f) for f in schema["fields"]]
        _, src = facet_kwargs(o["facets"]["dataSource"])
        facets = {
            "schema": schema_dataset.SchemaDatasetFacet(fields=fields, producer=producer),
            "dataSource": datasource_dataset.DatasourceDatasetFacet(producer=producer, **src),
        }
        if "version" in o["facets"]:
            _, version = facet_kwargs(o["facets"]["version"])
            facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(producer=producer, **version)
        _, stats = facet_kwargs(o["outputFacets"]["outputStatistics"])
        out_facets = {
            "outputStatistics": output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                producer=producer, **stats
            )
        }
        for k in ("lineageStore_commits", "lineageStore_outcomes"):
            f = o["outputFacets"][k]
            p, fs = facet_kwargs(f)
            out_facets[k] = custom_facet(OutputDatasetFacet, f["_schemaURL"], p, fs)
        outputs.append(
            OutputDataset(
                namespace=o["namespace"],
                name=o["name"],
                facets=facets,
                outputFacets=out_facets,
            )
        )
    return RunEvent(
        eventType=RunState(e["eventType"]),
        eventTime=e["eventTime"],
        run=Run(runId=e["run"]["runId"], facets=run_facets),
        job=job,
        producer=e["producer"],
        inputs=[],
        outputs=outputs,
    )


def drop_model_defaults(model: object, ours: object) -> object:
    """The model adds `fields: []` to every schema field (a default): drop what the
    model added as an empty list where our event has no key, nothing else."""
    if isinstance(model, dict) and isinstance(ours, dict):
        return {
            k: drop_model_defaults(v, ours.get(k))
            for k, v in model.items()
            if k in ours or v != []
        }
    if isinstance(model, list) and isinstance(ours, list) and len(model) == len(ours):
        return [drop_model_defaults(m, o) for m, o in zip(model, ours)]
    return model


# The part of OpenLineage.json (2-0-2) our facet schemas reference: BaseFacet's two
# required fields. A stand-in written here: no package ships the spec's JSON Schemas.
OL_BASE_STANDIN = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://openlineage.io/spec/2-0-2/OpenLineage.json",
    "$defs": {
        "BaseFacet": {
            "type": "object",
            "properties": {
                "_producer": {"type": "string", "format": "uri"},
                "_schemaURL": {"type": "string", "format": "uri"},
            },
            "required": ["_producer", "_schemaURL"],
        },
        "RunFacet": {"$ref": "#/$defs/BaseFacet"},
        "OutputDatasetFacet": {"$ref": "#/$defs/BaseFacet"},
    },
}


def facet_validators() -> dict[str, jsonschema.Draft202012Validator]:
    resources = [(OL_BASE_STANDIN["$id"], referencing.Resource.from_contents(OL_BASE_STANDIN))]
    schemas = {}
    for p in FACETS.glob("*.json"):
        doc = json.loads(p.read_text())
        resources.append((doc["$id"], referencing.Resource.from_contents(doc)))
        schemas[doc["$id"]] = doc
    registry = referencing.Registry().with_resources(resources)
    out = {}
    for sid, doc in schemas.items():
        jsonschema.Draft202012Validator.check_schema(doc)
        name = sid.rsplit("/", 1)[1].removesuffix(".json")
        out[f"{sid}#/$defs/{name}"] = jsonschema.Draft202012Validator(
            {"$ref": f"{sid}#/$defs/{name}"}, registry=registry
        )
    return out


def test_openlineage_events_parse_with_the_official_model_and_match_the_store(store):
    lines = ok("export", "openlineage", "--store", str(store)).splitlines()
    assert [(json.loads(x)["eventType"], json.loads(x)["run"]["facets"]["lineageStore_run"]["runId"]) for x in lines] == [
        ("START", "r1"), ("COMPLETE", "r1"), ("START", "r2"), ("COMPLETE", "r2")
    ]
    validators = facet_validators()
    assert len(validators) == 3
    for line in lines:
        ours = json.loads(line)
        model = Serde.to_dict(rebuild(ours))
        assert drop_model_defaults(model, ours) == ours
        run = ours["run"]["facets"]["lineageStore_run"]["runId"]
        assert ours["run"]["runId"] == run_uuid(store, run)
        assert ours["run"]["facets"]["lineageStore_run"]["storeId"] in (store / "_lineage/store.json").read_text()
        custom = [ours["run"]["facets"]["lineageStore_run"]] + [
            o["outputFacets"][k] for o in ours["outputs"] for k in ("lineageStore_commits", "lineageStore_outcomes")
        ]
        for f in custom:
            errors = list(validators[f["_schemaURL"]].iter_errors(f))
            assert not errors, [e.message for e in errors]
        # The job's own time: the run's first event for START, its last for COMPLETE.
        times = table(store).filter(pc.field("run_id") == run).column("event_time_utc").to_pylist()
        if ours["eventType"] == "START":
            assert ours["eventTime"] == iso_time(min(times)) and ours["outputs"] == []
            continue
        assert ours["eventTime"] == iso_time(max(times))
        # Counts per target CRS, recomputed by pyarrow.
        per = counts(store, run, "target_crs", "outcome")
        reasons = counts(store, run, "target_crs", "rejection_reason")
        for o in ours["outputs"]:
            f = o["outputFacets"]["lineageStore_outcomes"]
            crs = f["targetCrs"]
            assert f["transformed"] == per[(crs, "transformed")]
            assert f["rejected"] == per[(crs, "rejected")]
            assert f["rejectionReasons"] == {r: n for (c, r), n in reasons.items() if c == crs and r}
            # The Delta version (= seal) that first holds the partition's commits.
            if run == "r1":
                assert o["facets"]["version"]["datasetVersion"] == "1"
                assert (store / "_delta_log/00000000000000000001.json").is_file()
            else:
                assert "version" not in o["facets"], "r2 is not sealed: no Delta version holds it"
            for c in o["outputFacets"]["lineageStore_commits"]["commits"]:
                part = store / c["partPath"]
                assert hashlib.sha256(part.read_bytes()).hexdigest() == c["sha256"]
                if run == "r1":
                    assert c["sealedBy"] == {"seq": 1, "sha256": seal_digest(store, 1)}
                else:
                    assert "sealedBy" not in c


# ---------------------------------------------------------------- ISO 19115


def iso_schemas_root() -> Path:
    dist = importlib.metadata.distribution("ckanext-iso19115")
    root = Path(dist.locate_file("ckanext/iso19115/namespaces"))
    assert (root / "19115/-3/mdb/2.0/mdb.xsd").is_file(), "ckanext-iso19115 ships the XSDs"
    return root


# A stand-in for ISO 19139's gmx schema, which ckanext-iso19115 does not ship: gmi 1.0
# imports it for one type (gmi:QE_CoverageResult's resultFile), which no record of ours has.
GMX_STAND_IN = """<?xml version="1.0"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified"
    targetNamespace="http://www.isotc211.org/2005/gmx">
  <xs:complexType name="MX_DataFile_PropertyType"/>
</xs:schema>
"""


def xsd(*entries: str, tmp: Path | None = None) -> xmlschema.XMLSchema:
    """The schemas of `entries` (paths under the package's namespaces directory), every
    import resolved offline (gmx to the stand-in, written under `tmp`)."""
    root = iso_schemas_root()
    xlink = Path(xmlschema.__file__).parent / "schemas/XLINK/xlink.xsd"
    gmx = None
    if tmp is not None:
        gmx = tmp / "gmx-stand-in.xsd"
        gmx.write_text(GMX_STAND_IN)

    def local(uri: str) -> str:
        if gmx is not None and uri.endswith("/gmx/gmx.xsd"):
            return gmx.as_uri()
        for prefix, path in [
            ("http://schemas.opengis.net/", root / "schemas.opengis.net"),
            ("https://schemas.opengis.net/", root / "schemas.opengis.net"),
            ("http://standards.iso.org/iso/19115/", root / "19115"),
            (
                "http://standards.iso.org/ittf/PubliclyAvailableStandards/ISO_19139_Schemas/",
                root / "schemas.opengis.net/iso/19139/20070417",
            ),
        ]:
            if uri.startswith(prefix):
                return (path / uri[len(prefix):]).as_uri()
        if uri == "http://www.w3.org/1999/xlink.xsd":
            return xlink.as_uri()
        return uri

    # allow="local": a schema location we did not map fails instead of going online.
    return xmlschema.XMLSchema([str(root / e) for e in entries], uri_mapper=local, allow="local")


@pytest.fixture(scope="module")
def xsd_19115_3() -> xmlschema.XMLSchema:
    """ISO 19115-3 (mdb 2.0) with ISO 19157-2's data quality (mdq 1.0), loaded once."""
    return xsd("19115/-3/mdb/2.0/mdb.xsd", "19157/-2/mdq/1.0/mdq.xsd")


@pytest.fixture(scope="module")
def xsd_19139(tmp_path_factory) -> xmlschema.XMLSchema:
    """ISO 19139 (gmd 2007-04-17) with ISO 19115-2's gmi 1.0, loaded once."""
    return xsd(
        "schemas.opengis.net/iso/19139/20070417/gmd/gmd.xsd",
        "19115/-2/gmi/1.0/gmi.xsd",
        tmp=tmp_path_factory.mktemp("gmx"),
    )


@pytest.fixture(scope="module")
def steps(store):
    """(stage, target) → the pyarrow view of the step."""
    t = table(store).filter(pc.field("run_id") == "r1").to_pylist()
    out = {}
    for r in t:
        s = out.setdefault((r["stage"], r["target_crs"]), {"rows": [], "sources": Counter()})
        s["rows"].append(r)
        if r["source_crs"]:
            s["sources"][r["source_crs"]] += 1
    return out


def iso_time(dt) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_iso19115_3_is_schema_valid_and_has_one_step_per_stage_and_crs(store, steps, tmp_path, xsd_19115_3):
    out = tmp_path / "r1.xml"
    ok("export", "iso19115", "--store", str(store), "--run-id", "r1", "--out", str(out))
    errors = [str(e) for e in xsd_19115_3.iter_errors(str(out))]
    assert not errors, errors[:3]
    doc = etree.parse(str(out))
    found = doc.findall(".//mrl:processStep/mrl:LE_ProcessStep", NS3)
    assert len(found) == len(steps) == 4
    head = seal_digest(store, 1)
    for ps in found:
        target = ps.findtext("mrl:output/mrl:LE_Source/mrl:sourceReferenceSystem//mcc:code/gco:CharacterString", namespaces=NS3)
        desc = ps.findtext("mrl:description/gco:CharacterString", namespaces=NS3)
        stage = desc.split()[1]
        want = steps[(stage, target)]
        times = [r["event_time_utc"] for r in want["rows"]]
        assert ps.findtext(".//gml:beginPosition", namespaces=NS3) == iso_time(min(times))
        assert ps.findtext(".//gml:endPosition", namespaces=NS3) == iso_time(max(times))
        rejected = sum(r["outcome"] == "rejected" for r in want["rows"])
        report = ps.findtext("mrl:report//mrl:description/gco:CharacterString", namespaces=NS3)
        assert report.startswith(f"{len(want['rows']) - rejected} transformed, {rejected} rejected")
        reasons = Counter(r["rejection_reason"] for r in want["rows"] if r["rejection_reason"])
        for reason, n in reasons.items():
            assert f"{reason} ({n})" in report
        sources = {
            s.findtext(".//mcc:code/gco:CharacterString", namespaces=NS3)
            for s in ps.findall("mrl:source/mrl:LI_Source", NS3)
            if s.find("mrl:sourceReferenceSystem", NS3) is not None
        }
        assert sources == set(want["sources"])
        assert ps.findtext("mrl:processor//cit:name/gco:CharacterString", namespaces=NS3) == "geostd/2.4.1"
        ids = [i.text for i in ps.findall("mrl:reference//mcc:code/gco:CharacterString", NS3)]
        assert head in ids
    md = MD_Metadata3(doc.getroot())
    assert md.identifier == run_uuid(store, "r1")
    assert md.referencesystem.code == "EPSG:25832"


def test_iso19139_reads_back_with_owslib_and_is_schema_valid(store, steps, tmp_path, xsd_19139):
    out = tmp_path / "r1-19139.xml"
    ok("export", "iso19115", "--store", str(store), "--run-id", "r1", "--format", "iso19139", "--out", str(out))
    errors = [str(e) for e in xsd_19139.iter_errors(str(out))]
    assert not errors, errors[:3]
    root = etree.parse(str(out)).getroot()
    md = MD_Metadata(root)
    t = table(store).filter(pc.field("run_id") == "r1")
    times = t.column("event_time_utc").to_pylist()
    assert md.identifier == run_uuid(store, "r1")
    assert md.referencesystem.code == "EPSG:25832" and md.referencesystem.codeSpace == "EPSG"
    ident = md.identification[0]
    assert ident.title == "Lineage of run r1"
    assert ident.temporalextent_start == iso_time(min(times))
    assert ident.temporalextent_end == iso_time(max(times))
    head = seal_digest(store, 1)
    assert f"seal 1 of the store, head digest sha256 {head}" in md.dataquality.lineage
    # Process steps: OWSLib does not model them; read them from the same document.
    found = root.findall(".//gmd:processStep/gmi:LE_ProcessStep", NS139)
    assert len(found) == len(steps)
    for ps in found:
        desc = ps.findtext("gmd:description/gco:CharacterString", namespaces=NS139)
        stage = desc.split()[1]
        target = next(t for (s, t) in steps if s == stage and f" into {t} of " in desc)
        want = steps[(stage, target)]
        assert ps.findtext("gmd:dateTime/gco:DateTime", namespaces=NS139) == iso_time(
            max(r["event_time_utc"] for r in want["rows"])
        )
        assert ps.findtext(".//gmd:organisationName/gco:CharacterString", namespaces=NS139) == "geostd/2.4.1"
        sources = {s.text for s in ps.findall("gmd:source//gmd:code/gco:CharacterString", NS139)}
        assert sources == set(want["sources"])
        assert head in ps.findtext("gmd:rationale/gco:CharacterString", namespaces=NS139)


def test_an_unsealed_run_says_so_and_exports_are_stable(store):
    a = ok("export", "iso19115", "--store", str(store), "--run-id", "r2")
    assert "1 of 1 commits are not sealed yet" in a
    assert a == ok("export", "iso19115", "--store", str(store), "--run-id", "r2")
    p = lineage("export", "iso19115", "--store", str(store), "--run-id", "nope")
    assert p.returncode == 2 and b"no commits of run_id nope" in p.stderr


# ---------------------------------------------------------------- a catalogue's record

CATALOGUE = [
    "--contact", "Geodata team", "--contact-email", "geodata@example.org",
    "--bbox", "-125.0,24.5,-66.9,49.4",
    "--keyword", "NAD27", "--keyword", "coordinate transformation",
    "--topic-category", "transportation", "--topic-category", "location",
]


@pytest.fixture(scope="module")
def geo_store(tmp_path_factory) -> Path:
    """Run g1, contract 1.3.0: NAD27 points through two operations (one with a grid, one
    degraded for some points, some without accuracy), rejections, sealed."""
    root = tmp_path_factory.mktemp("geo") / "store"
    rows = []
    for i in range(1, 121):
        e = event(i, "g1", "EPSG:4326")
        e["source_crs"] = "EPSG:4267" if i % 6 else "EPSG:4269"
        if e["outcome"] == "transformed":
            if i % 3:
                e.update(operation_code="EPSG:1175", operation_name="NAD27 to WGS 84 (6)",
                         grids="us_noaa_conus.tif", degraded=False, accuracy_m=0.15 + i / 1000)
            else:
                e.update(operation_code="EPSG:15851", operation_name="NAD27 to WGS 84 (79)",
                         grids="", degraded=i % 2 == 0, accuracy_m=None if i % 9 == 0 else 5.0 + i / 100)
        rows.append(e)
    ok("append", "--store", str(root), "--batch-rows", "50", stdin=ndjson(rows))
    ok("seal", "--store", str(root))
    return root


def accuracy_truth(store: Path) -> dict[str, tuple[float, float, int, int]]:
    """Per operation code ("" for all): (max, mean, events with accuracy_m, transformed
    events), from pyarrow."""
    t = table(store).filter((pc.field("run_id") == "g1") & (pc.field("outcome") == "transformed")).to_pylist()
    groups: dict[str, list] = {"": t}
    for r in t:
        groups.setdefault(r["operation_code"], []).append(r)
    out = {}
    for code, rs in groups.items():
        v = [r["accuracy_m"] for r in rs if r["accuracy_m"] is not None]
        out[code] = (max(v), sum(v) / len(v), len(v), len(rs))
    return out


def test_iso19115_3_carries_what_a_catalogue_needs_and_is_schema_valid(geo_store, tmp_path, xsd_19115_3):
    out = tmp_path / "g1.xml"
    ok("export", "iso19115", "--store", str(geo_store), "--run-id", "g1", "--out", str(out), *CATALOGUE)
    errors = [str(e) for e in xsd_19115_3.iter_errors(str(out))]
    assert not errors, errors[:3]
    text = out.read_text()
    assert "`" not in text, "no Markdown in XML"
    assert str(geo_store) not in text and "file://" not in text, "no local path names the store"
    store_id = json.loads((geo_store / "_lineage/store.json").read_text())["store_id"]
    doc = etree.parse(str(out))
    # Positional accuracy: max and mean over all operations, then per operation, each
    # equal to what pyarrow computes from the store.
    truth = accuracy_truth(geo_store)
    reports = doc.findall(".//mdb:dataQualityInfo/mdq:DQ_DataQuality/mdq:report/mdq:DQ_AbsoluteExternalPositionalAccuracy", NS3)
    assert len(reports) == 2 * 3
    got = {}
    for r in reports:
        name = r.findtext(".//mdq:nameOfMeasure/gco:CharacterString", namespaces=NS3)
        value = float(r.findtext(".//mdq:value/gco:Record", namespaces=NS3))
        assert r.find(".//mdq:valueUnit", NS3).get("{http://www.w3.org/1999/xlink}href").endswith("/EPSG/0/9001")
        got[name] = value
    for code, (mx, mean, n, events) in truth.items():
        of = "" if not code else f" of {code} ("
        [max_name] = [k for k in got if k.startswith(f"maximum accuracy_m{of}") and (code or " of " not in k)]
        [mean_name] = [k for k in got if k.startswith(f"mean accuracy_m{of}") and (code or " of " not in k)]
        assert got[max_name] == pytest.approx(mx, abs=1e-6)
        assert got[mean_name] == pytest.approx(mean, abs=1e-6)
    # LE_Processing: an algorithm per operation, the tool, CRSs and grids.
    [ps] = doc.findall(".//mrl:processStep/mrl:LE_ProcessStep", NS3)
    proc = ps.find("mrl:processingInformation/mrl:LE_Processing", NS3)
    algos = {
        a.findtext(".//mcc:code/gco:CharacterString", namespaces=NS3): a.findtext("mrl:description/gco:CharacterString", namespaces=NS3)
        for a in proc.findall("mrl:algorithm/mrl:LE_Algorithm", NS3)
    }
    assert set(algos) == {"EPSG:1175", "EPSG:15851"}
    assert algos["EPSG:1175"].startswith(f"{truth['EPSG:1175'][3]} features") and "grids us_noaa_conus.tif" in algos["EPSG:1175"]
    degraded = sum(1 for r in table(geo_store).to_pylist() if r["degraded"])
    assert f"{degraded} degraded" in algos["EPSG:15851"] and "no grid used" in algos["EPSG:15851"]
    assert proc.findtext("mrl:softwareReference//cit:title/gco:CharacterString", namespaces=NS3) == "geostd/2.4.1"
    params = proc.findtext("mrl:runTimeParameters/gco:CharacterString", namespaces=NS3)
    sources = counts(geo_store, "g1", "source_crs")
    assert params.startswith(f"source CRS: EPSG:4267 ({sources[('EPSG:4267',)]}), EPSG:4269 ({sources[('EPSG:4269',)]}); target CRS: EPSG:4326; grids: us_noaa_conus.tif")
    assert {s.findtext(".//mcc:code/gco:CharacterString", namespaces=NS3) for s in ps.findall("mrl:source/mrl:LI_Source", NS3)} == {"EPSG:4267", "EPSG:4269"}
    # The INSPIRE lineage statement, from the counts; the store by its identity.
    statement = doc.findtext(".//mrl:LI_Lineage/mrl:statement/gco:CharacterString", namespaces=NS3)
    rejected = sum(1 for r in table(geo_store).to_pylist() if r["outcome"] == "rejected")
    assert f"processed 120 events" in statement and f"{120 - rejected} transformed, {rejected} rejected" in statement
    assert f"EPSG:1175 (NAD27 to WGS 84 (6)): {truth['EPSG:1175'][3]} features" in statement
    assert f"lineage-store {store_id}" in statement and "seal 1 of the store" in statement
    # What OWSLib's reader sees: contact with e-mail, extent, keywords, topic categories.
    md = MD_Metadata3(doc.getroot())
    assert (md.contact[0].organization, md.contact[0].email) == ("Geodata team", "geodata@example.org")
    ident = md.identification[0]
    assert (ident.contact[0].organization, ident.contact[0].email) == ("Geodata team", "geodata@example.org")
    assert [float(v) for v in (ident.bbox.minx, ident.bbox.miny, ident.bbox.maxx, ident.bbox.maxy)] == [-125.0, 24.5, -66.9, 49.4]
    assert [k.name for kw in ident.keywords for k in kw.keywords] == ["NAD27", "coordinate transformation"]
    assert ident.topiccategory == ["transportation", "location"]


def test_iso19139_carries_the_same_and_is_schema_valid(geo_store, tmp_path, xsd_19139):
    out = tmp_path / "g1-19139.xml"
    ok("export", "iso19115", "--store", str(geo_store), "--run-id", "g1", "--format", "iso19139", "--out", str(out), *CATALOGUE)
    errors = [str(e) for e in xsd_19139.iter_errors(str(out))]
    assert not errors, errors[:3]
    text = out.read_text()
    assert "`" not in text and str(geo_store) not in text and "file://" not in text
    root = etree.parse(str(out)).getroot()
    truth = accuracy_truth(geo_store)
    reports = root.findall(".//gmd:DQ_DataQuality/gmd:report/gmd:DQ_AbsoluteExternalPositionalAccuracy", NS139)
    got = {
        r.findtext("gmd:nameOfMeasure/gco:CharacterString", namespaces=NS139): float(r.findtext(".//gmd:value/gco:Record", namespaces=NS139))
        for r in reports
    }
    assert got["maximum accuracy_m"] == pytest.approx(truth[""][0], abs=1e-6)
    assert got["mean accuracy_m"] == pytest.approx(truth[""][1], abs=1e-6)
    assert got["mean accuracy_m of EPSG:15851 (NAD27 to WGS 84 (79))"] == pytest.approx(truth["EPSG:15851"][1], abs=1e-6)
    [ps] = root.findall(".//gmd:processStep/gmi:LE_ProcessStep", NS139)
    proc = ps.find("gmi:processingInformation/gmi:LE_Processing", NS139)
    codes = {a.findtext(".//gmd:code/gco:CharacterString", namespaces=NS139) for a in proc.findall("gmi:algorithm/gmi:LE_Algorithm", NS139)}
    assert codes == {"EPSG:1175", "EPSG:15851"}
    assert "grids: us_noaa_conus.tif" in proc.findtext("gmi:runTimeParameters/gco:CharacterString", namespaces=NS139)
    md = MD_Metadata(root)
    assert md.contact[0].email == "geodata@example.org"
    ident = md.identification[0]
    assert [float(ident.bbox.minx), float(ident.bbox.maxy)] == [-125.0, 49.4]
    assert ident.topiccategory == ["transportation", "location"]
    assert [k.name for kw in ident.keywords for k in kw.keywords] == ["NAD27", "coordinate transformation"]
    assert "Coordinate operations: EPSG:1175 (NAD27 to WGS 84 (6))" in md.dataquality.lineage


@pytest.mark.parametrize(
    "args, names",
    [
        (["--contact-email", "a@b.org"], "--contact-email needs --contact"),
        (["--contact", "X", "--contact-email", "not-an-address"], "--contact-email"),
        (["--bbox", "10,60,20,50"], "--bbox"),
        (["--bbox", "1,2,3"], "--bbox"),
        (["--topic-category", "roads"], "--topic-category"),
        (["--topic-category", "disaster", "--format", "iso19139"], "ISO 19139 does not have"),
    ],
)
def test_what_a_record_cannot_carry_is_refused_naming_the_flag(geo_store, tmp_path, args, names):
    out = tmp_path / "never.xml"
    p = lineage("export", "iso19115", "--store", str(geo_store), "--run-id", "g1", "--out", str(out), *args)
    assert p.returncode == 2, p.stderr.decode()
    assert names in p.stderr.decode()
    assert not out.exists()
