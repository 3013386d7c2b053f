"""The package as a user meets it: the worked example in docs/python.md runs as written,
the type stubs describe the extension, and a built wheel installs into a clean venv."""
from __future__ import annotations

import ast
import inspect
import os
import re
import struct
import subprocess
import sys
import venv
import zipfile
from pathlib import Path
from typing import Any

import pytest

import lineage_store as ls
from lineage_store import _native

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs/python.md"
STUB = ROOT / "python/lineage_store/_native.pyi"


def test_the_worked_example_in_docs_python_md_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 8
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{DOC}:block{i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    # The outputs the page shows in its comments.
    assert "1.2.0" in out
    assert "[('EPSG:25832', 400), ('EPSG:25832', 400), ('EPSG:25832', 200)]" in out
    assert "[(1990,)]" in out and "[('rejected', 77), ('transformed', 1913)]" in out
    assert "2 ['nightly-2026-07-13', 'stream-2026-07-13']" in out
    assert "1 target_crs" in out and "[500, 100]" in out and "10 1990" in out and "True True" in out
    assert "['strategy_index']" in out and "20 strategy_index" in out
    assert "fix in pyarrow: table = table.select(lineage_store.SCHEMA.names).cast(lineage_store.SCHEMA)" in out
    assert "['`strategy_index`: Float64 → Int32 (every value is a whole number that fits; NaN as null is null)']" in out
    assert namespace["store"].verify().clean
    # The geo helper's block (docs/geo.md has the rest).
    assert "['EPSG:1175', 'EPSG:1173', 'EPSG:1181', 'PROJ-SHA256:d3b7fcd1" in out
    assert "ballpark: PROJ used PROJ-SHA256:d3b7fcd1" in out and "[True, True, True, False]" in out
    assert "4 1.3.0" in out


def stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text())


def stub_params(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg != "self"]


def runtime_params(obj: Any) -> list[str]:
    return [p for p in inspect.signature(obj).parameters if p != "self"]


def test_the_stubs_describe_every_name_and_signature_of_the_extension() -> None:
    tree = stub_tree()
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    consts = {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
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


MYPY_INI = ROOT / "tests/python/mypy.ini"


def test_stubtest_finds_the_stub_true_to_the_extension(tmp_path: Path) -> None:
    """mypy's stubtest: every name, parameter, kind and default of the stub is the
    extension's (defaults are literals in the extension's signatures, so it can compare)."""
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "--mypy-config-file", str(MYPY_INI),
                        "--allowlist", str(ROOT / "tests/python/stubtest-allowlist.txt"), "lineage_store._native"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def is_optional(annotation: ast.expr | None) -> bool:
    text = ast.unparse(annotation) if annotation is not None else ""
    return text.startswith("Optional[") or "None" in re.split(r"[\[\],| ]+", text)


def test_a_parameter_is_optional_in_the_stub_exactly_where_the_extension_takes_none() -> None:
    """`writer(max_in_flight=None)` passed `mypy --strict` and raised TypeError: the stub said
    Optional where the extension takes an int. A parameter is Optional in the stub exactly
    when the extension's default is None (PyO3 takes None only for an `Option` argument,
    whose default is None)."""
    tree = stub_tree()
    targets: list[tuple[str, ast.FunctionDef, object]] = []
    for n in tree.body:
        if isinstance(n, ast.FunctionDef) and hasattr(_native, n.name):
            targets.append((n.name, n, getattr(_native, n.name)))
        if isinstance(n, ast.ClassDef) and hasattr(_native, n.name):
            cls = getattr(_native, n.name)
            for m in n.body:
                if isinstance(m, ast.FunctionDef) and not m.name.startswith("__"):
                    member = getattr(cls, m.name)
                    if callable(member) and not isinstance(member, property):
                        targets.append((f"{n.name}.{m.name}", m, member))
    checked = 0
    for name, fn, obj in targets:
        runtime = inspect.signature(obj).parameters  # type: ignore[arg-type]
        a = fn.args
        for p in a.posonlyargs + a.args + a.kwonlyargs:
            if p.arg == "self":
                continue
            default = runtime[p.arg].default
            assert is_optional(p.annotation) == (default is None), \
                f"{name}({p.arg}): stub {ast.unparse(p.annotation) if p.annotation else '?'}, runtime default {default!r}"
            checked += 1
    assert checked > 20
    # And the case that lied, at run time.
    assert inspect.signature(ls.Store.writer).parameters["max_in_flight"].default == 8


def docs_examples(tmp_path: Path) -> list[Path]:
    """The examples of docs/python.md and docs/geo.md, each page as one module."""
    paths = []
    for doc in (DOC, ROOT / "docs/geo.md"):
        blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)
        path = tmp_path / f"docs_{doc.stem}_md.py"
        path.write_text("\n".join(blocks))
        paths.append(path)
    return paths


def test_mypy_strict_over_the_docs_examples_and_the_package_tests(tmp_path: Path) -> None:
    tests = sorted((ROOT / "tests/python").glob("test_package_*.py")) + [
        ROOT / "tests/python/pkg_support.py", ROOT / "tests/python/test_geo.py"]
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(MYPY_INI), "--cache-dir",
                        str(tmp_path / ".mypy_cache"), *map(str, docs_examples(tmp_path)), *map(str, tests)],
                       capture_output=True, text=True, cwd=ROOT / "tests/python")
    assert r.returncode == 0, r.stdout + r.stderr


def elf_sections(data: bytes) -> list[str]:
    """The section names of a 64-bit little-endian ELF file."""
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab_off = headers[shstrndx][4]
    return [data[strtab_off + h[0]:data.index(b"\0", strtab_off + h[0])].decode() for h in headers]


def test_a_built_wheel_installs_into_a_clean_venv(tmp_path: Path) -> None:
    """What `maturin build --release` makes, installed where nothing else is (built here
    with the dev profile, reusing the test build, to keep CI short). The wheel is stripped
    by pyproject.toml's `strip = true` (no flag here): no symbol table, no debug info."""
    maturin = Path(sys.executable).parent / "maturin"
    wheels = tmp_path / "wheels"
    r = subprocess.run([str(maturin), "build", "--locked", "-q", "--profile", "dev", "-m", str(ROOT / "python/Cargo.toml"),
                        "--out", str(wheels)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (wheel,) = wheels.glob("*.whl")
    assert re.fullmatch(r"lineage_store-0\.1\.0-cp39-abi3-.*\.whl", wheel.name), wheel.name
    with zipfile.ZipFile(wheel) as z:
        (so,) = [n for n in z.namelist() if n.endswith(".so")]
        sections = elf_sections(z.read(so))
    assert ".text" in sections
    assert not [n for n in sections if n.startswith(".debug") or n == ".symtab"], sections
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
