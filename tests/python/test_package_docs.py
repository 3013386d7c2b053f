"""The package as a user meets it: the worked example in docs/python.md runs as written,
the type stubs describe the extension, and a built wheel installs into a clean venv."""
from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import lineage_store as ls
from lineage_store import _native

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs/python.md"
STUB = ROOT / "python/lineage_store/_native.pyi"


def test_the_worked_example_in_docs_python_md_runs(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 8
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{DOC}:block{i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    # The outputs the page shows in its comments.
    assert "1.2.0" in out
    assert "[('EPSG:25832', 400), ('EPSG:25832', 400), ('EPSG:25832', 200)]" in out
    assert "1 target_crs" in out and "[500, 100]" in out and "6 1900" in out and "True True" in out
    assert "[(1900,)]" in out and "[('rejected', 76), ('transformed', 1824)]" in out
    assert "2 ['nightly-2026-07-13', 'stream-2026-07-13']" in out
    assert namespace["store"].verify().clean


def stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text())


def stub_params(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg != "self"]


def runtime_params(obj) -> list[str]:
    return [p for p in inspect.signature(obj).parameters if p != "self"]


def test_the_stubs_describe_every_name_and_signature_of_the_extension():
    tree = stub_tree()
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    consts = {t.id for n in tree.body if isinstance(n, ast.AnnAssign) for t in [n.target]}
    public = [n for n in dir(_native) if not n.startswith("_")]
    for name in public:
        obj = getattr(_native, name)
        if inspect.isclass(obj):
            assert name in classes, f"class {name} has no stub"
            members = {m.name: m for m in classes[name].body if isinstance(m, ast.FunctionDef)}
            for attr, value in vars(obj).items():
                if attr.startswith("_") and attr not in ("__enter__", "__exit__"):
                    continue
                assert attr in members, f"{name}.{attr} has no stub"
                if callable(value) and not isinstance(value, property) and hasattr(value, "__text_signature__"):
                    assert stub_params(members[attr]) == runtime_params(getattr(obj, attr)), f"{name}.{attr}"
            for attr in members:
                assert hasattr(obj, attr), f"stub {name}.{attr} does not exist"
        elif callable(obj):
            assert name in funcs, f"function {name} has no stub"
            assert stub_params(funcs[name]) == runtime_params(obj), name
        else:
            assert name in consts, f"constant {name} has no stub"
    for name in list(funcs) + list(classes):
        if not name.startswith("Arrow"):
            assert hasattr(_native, name), f"stub {name} does not exist"
    # Docstrings are there for help().
    for name in ("open", "canonical_crs", "verify_proof", "keygen"):
        assert getattr(_native, name).__doc__
    for method in ("append", "append_file", "writer", "log", "verify", "seal", "prove"):
        assert getattr(ls.Store, method).__doc__


def test_a_built_wheel_installs_into_a_clean_venv(tmp_path):
    """What `maturin build --release` makes, installed where nothing else is (built here
    with the dev profile, reusing the test build, to keep CI short)."""
    maturin = Path(sys.executable).parent / "maturin"
    wheels = tmp_path / "wheels"
    r = subprocess.run([str(maturin), "build", "--locked", "-q", "--profile", "dev", "--strip", "-m", str(ROOT / "python/Cargo.toml"),
                        "--out", str(wheels)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (wheel,) = wheels.glob("*.whl")
    assert re.fullmatch(r"lineage_store-0\.1\.0-cp39-abi3-.*\.whl", wheel.name), wheel.name
    env_dir = tmp_path / "clean"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin/python"
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", str(wheel)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    code = f"""
import importlib.util, pathlib, sys
import lineage_store as ls
pkg = pathlib.Path(ls.__file__).parent
assert (pkg / "py.typed").exists() and (pkg / "_native.pyi").exists()
assert importlib.util.find_spec("pyarrow") is None
store = ls.open({str(tmp_path / "store")!r})
assert store.commits() == []
try:
    store.append(42)
except ls.InputError as e:
    print("refused:", e)
print(ls.canonical_crs("EPSG::4326"))
"""
    r = subprocess.run([str(py), "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "EPSG:4326"
    assert r.stdout.startswith("refused: expected Arrow data")
