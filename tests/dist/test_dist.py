"""The portable artefacts of scripts/dist.sh, checked as a user on an old distribution
would meet them: the newest glibc symbol version the `lineage` binary and the extension
module need, read from their ELF version-need tables (not assumed from the build
flags); the wheel's platform tag by `auditwheel show`; the wheel installed into a fresh
venv without pyarrow, appending and verifying; the Lambda zip's handler importing the
package from the zip's root, as the Lambda runtime does; the binary's demo and verify.

Run by scripts/test.sh with .venv-dist's Python (pyelftools and auditwheel come with it)
on what `scripts/dist.sh --profile dev --out target/dist-dev` built; LINEAGE_DIST names
another directory (e.g. dist/, the release artefacts).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

REPO = Path(__file__).resolve().parents[2]
DIST = Path(os.environ.get("LINEAGE_DIST", REPO / "target/dist-dev"))
GLIBC_FLOOR = (2, 17)
# What manylinux2014 (PEP 599) lets an extension link against, and what the binary may.
ALLOWED_LIBS = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
                "libgcc_s.so.1", "ld-linux-x86-64.so.2", "libutil.so.1"}


def artefact(pattern: str) -> Path:
    found = sorted(DIST.glob(pattern))
    assert len(found) == 1, f"{DIST}/{pattern}: expected one artefact, found {found}: run scripts/dist.sh"
    return found[0]


def glibc_needs(path: Path) -> tuple[set[str], dict[str, tuple[int, ...]]]:
    """The shared libraries an ELF file needs, and per library the newest GLIBC_x.y
    version it asks of it (from .gnu.version_r)."""
    with path.open("rb") as f:
        elf = ELFFile(f)
        dynamic = elf.get_section_by_name(".dynamic")
        needed = {t.needed for t in dynamic.iter_tags() if t.entry.d_tag == "DT_NEEDED"}
        newest: dict[str, tuple[int, ...]] = {}
        verneed = elf.get_section_by_name(".gnu.version_r")
        assert verneed is not None, f"{path}: no version-need table (a static or stripped-of-versions binary?)"
        for need, auxes in verneed.iter_versions():
            for aux in auxes:
                m = re.fullmatch(r"GLIBC_(\d+(?:\.\d+)+)", aux.name)
                if m:
                    v = tuple(int(x) for x in m.group(1).split("."))
                    newest[need.name] = max(newest.get(need.name, ()), v)
    return needed, newest


def assert_portable(path: Path) -> None:
    needed, newest = glibc_needs(path)
    assert newest, f"{path}: no GLIBC symbol versions at all: not a glibc-linked ELF?"
    overall = max(newest.values())
    print(f"{path.name}: newest GLIBC symbol version {'.'.join(map(str, overall))}; needs {sorted(needed)}")
    too_new = {lib: v for lib, v in newest.items() if v > GLIBC_FLOOR}
    assert not too_new, f"{path}: needs glibc newer than 2.17: {too_new}"
    assert needed <= ALLOWED_LIBS, f"{path}: links libraries outside manylinux2014: {needed - ALLOWED_LIBS}"


def test_the_binary_needs_at_most_glibc_2_17() -> None:
    assert_portable(artefact("lineage-x86_64-unknown-linux-gnu"))


def test_the_extension_module_needs_at_most_glibc_2_17(tmp_path: Path) -> None:
    wheel = artefact("lineage_store-*.whl")
    assert re.search(r"-cp39-abi3-.*manylinux_2_17_x86_64", wheel.name), wheel.name
    with zipfile.ZipFile(wheel) as z:
        [so] = [n for n in z.namelist() if n.startswith("lineage_store/_native") and n.endswith(".so")]
        z.extract(so, tmp_path)
    assert so == "lineage_store/_native.abi3.so", so
    assert_portable(tmp_path / so)


def test_auditwheel_names_manylinux2014() -> None:
    wheel = artefact("lineage_store-*.whl")
    r = subprocess.run([str(Path(sys.executable).parent / "auditwheel"), "show", str(wheel)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    text = " ".join(r.stdout.split())
    print(text)
    # manylinux2014 is PEP 600's manylinux_2_17; auditwheel names the tag it is
    # consistent with (the newest a wheel may carry).
    assert 'consistent with the following platform tag: "manylinux_2_17_x86_64"' in text, text


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    assert r.returncode == 0, f"{cmd} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


EVENT = {"event_id": "e-{i}", "run_id": "dist-{run}", "sequence": 0, "event_time_utc": "2026-07-13T06:00:00Z",
         "stage": "reproject", "event_type": "crs_transform", "feature_id": "f:{i}", "source_crs": None,
         "target_crs": "EPSG:25832", "outcome": "transformed", "strategy_index": 1, "accuracy_m": 0.5,
         "rejection_reason": None, "tool_version": "geostd/2.4.1", "audit_tag": None}


def ndjson(n: int, run: str = "a") -> str:
    out = []
    for i in range(n):
        e = {k: (v.format(i=i, run=run) if isinstance(v, str) else v) for k, v in EVENT.items()}
        e["sequence"] = i
        out.append(json.dumps(e))
    return "\n".join(out) + "\n"


def test_the_wheel_installs_without_pyarrow_and_appends(tmp_path: Path) -> None:
    wheel = artefact("lineage_store-*.whl")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = str(env_dir / "bin/python")
    run([py, "-m", "pip", "install", "--quiet", "--no-index", "--disable-pip-version-check", str(wheel)])
    r = subprocess.run([py, "-c", "import pyarrow"], capture_output=True, text=True)
    assert r.returncode != 0 and "No module named 'pyarrow'" in r.stderr, "the fresh venv has pyarrow"
    events = tmp_path / "events.ndjson"
    events.write_text(ndjson(250))
    bad = tmp_path / "bad.ndjson"
    bad.write_text(ndjson(3).replace('"EPSG:25832"', '"OGC:CRS84"', 1))
    script = f"""
import json, sys, lineage_store as ls
store = ls.open({str(tmp_path / 'store')!r})
commits = store.append_file({str(events)!r}, batch_rows=100, commit_key="dist-check")
again = store.append_file({str(events)!r}, batch_rows=100, commit_key="dist-check")
try:
    store.append_file({str(bad)!r})
    raise SystemExit("bad input was accepted")
except ls.InputError as e:
    refused = [e.row, e.field]
report = store.verify()
print(json.dumps({{"commits": [c.row_count for c in commits], "same": [c.commit_id for c in commits] == [c.commit_id for c in again],
                  "refused": refused, "clean": report.clean, "rows": report.rows, "pyarrow": "pyarrow" in sys.modules}}))
"""
    out = json.loads(run([py, "-c", script]).stdout)
    assert out == {"commits": [100, 100, 50], "same": True, "refused": [1, "target_crs"], "clean": True,
                   "rows": 250, "pyarrow": False}, out


def test_the_lambda_zip_runs_its_handler_from_the_zip_root(tmp_path: Path) -> None:
    """As the Lambda runtime does: the zip unpacked into a directory on sys.path (no pip, no
    pyarrow, no boto3 needed for an SQS batch), `handler.handler(event, context)`."""
    task = tmp_path / "task"
    with zipfile.ZipFile(artefact("lambda-writer.zip")) as z:
        names = z.namelist()
        z.extractall(task)
    assert "handler.py" in names and "lineage_store/_native.abi3.so" in names, names[:20]
    script = f"""
import json, sys
sys.path.insert(0, {str(task)!r})
import handler
class Context:
    def get_remaining_time_in_millis(self): return 60_000
records = [{{"messageId": f"m-{{i}}", "body": body, "eventSource": "aws:sqs",
             "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:q", "attributes": {{}}}}
           for i, body in enumerate(json.load(sys.stdin))]
print(json.dumps([handler.handler({{"Records": records}}, Context()) for _ in range(2)]))
import lineage_store
print(json.dumps([len(lineage_store.open({str(tmp_path / 'store')!r}).commits()), lineage_store.__file__]))
"""
    bodies = [ndjson(20, "q1"), ndjson(2, "q2").replace('"EPSG:25832"', '"EPSG:99999"', 1)]
    r = run([sys.executable, "-I", "-c", script], input=json.dumps(bodies),
            env={"LINEAGE_STORE": str(tmp_path / "store"), "PATH": os.environ.get("PATH", "")})
    first, counts = r.stdout.splitlines()
    # The bad message is refused, logged and (no LINEAGE_REFUSED_QUEUE_URL here) dropped:
    # never reported for a retry.
    assert json.loads(first) == [{"batchItemFailures": []}] * 2, first
    assert r.stderr.count('"what": "refused"') == 2 and '"set_aside": "dropped"' in r.stderr, r.stderr[-2000:]
    commits, module = json.loads(counts)
    assert commits == 1 and module.startswith(str(task)), counts


# Lambda's quotas for a zip package: 50 MB uploaded directly (zipped), 250 MB unzipped
# (function and layers together). https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html
LAMBDA_ZIP_DIRECT_UPLOAD = 50 * 1024 * 1024
LAMBDA_UNZIPPED = 250 * 1024 * 1024


def test_the_lambda_zip_fits_lambdas_size_limits() -> None:
    path = artefact("lambda-writer.zip")
    zipped = path.stat().st_size
    with zipfile.ZipFile(path) as z:
        unzipped = sum(i.file_size for i in z.infolist())
    print(f"{path}: {zipped:,} bytes zipped, {unzipped:,} unzipped")
    assert zipped < LAMBDA_ZIP_DIRECT_UPLOAD, f"{path}: {zipped:,} bytes, over Lambda's 50 MB direct upload"
    assert unzipped < LAMBDA_UNZIPPED, f"{path}: {unzipped:,} bytes unzipped, over Lambda's 250 MB"


def test_the_portable_binary_runs_demo_and_verify(tmp_path: Path) -> None:
    binary = str(artefact("lineage-x86_64-unknown-linux-gnu"))
    store = str(tmp_path / "store")
    r = run([binary, "demo", "--store", store, "--events", "3000", "--runs", "2"])
    assert re.search(r"^verify: \d+ commits in the store, \d+ parts byte-identical, 0 problems$", r.stdout, re.M), r.stdout
    r = run([binary, "verify", "--store", store, "--json"])
    report = json.loads(r.stdout)
    assert report["problems"] == [] and report["rows"] > 0 and report["seals"] == 1, report
