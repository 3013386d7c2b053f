"""Issue 33, 1 from Python: a planted part adopted by name (`lineage repair --adopt`) and
sealed stays marked: `Store.verify()` reports it as `adopted_commit` unless
`accept_adopted=True`, lists it in `adopted_commits`; `files(detail=True)` and
`report()` show it. Issue 33, 7: `files(detail=True)` names a compacted part by its
compaction, as `lineage files --json` does.

Run by scripts/test.sh with LINEAGE_BIN pointing at the built binary.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import lineage_store as ls
from pkg_support import events, lineage


def ok(*args: str) -> str:
    r = lineage(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def planted(tmp_path: Path, victim: Path) -> str:
    """A well-formed part naming the victim's store (its identity object copied), written
    by another store and copied in under its own key: the key."""
    forger = tmp_path / "forger"
    (forger / "_lineage").mkdir(parents=True)
    shutil.copy(victim / "_lineage" / "store.json", forger / "_lineage" / "store.json")
    ls.open(forger).append(events(4, runs=("planted",)), batch_rows=100)
    part = next(p for p in forger.rglob("*.parquet") if "_lineage" not in p.parts)
    key = str(part.relative_to(forger))
    (victim / key).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(part, victim / key)
    return key


def test_an_adopted_commit_is_a_problem_until_accepted_and_marked_in_files_and_report(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(root)
    store.append(events(40), batch_rows=10)
    head1 = store.seal().head
    key = planted(tmp_path, root)
    s = str(root)
    r = lineage("repair", "--store", s, "--grace", "0s")
    assert r.returncode == 1 and f"orphan: {key}" in r.stdout, r.stdout
    ok("repair", "--store", s, "--grace", "0s", "--adopt", key)
    ok("seal", "--store", s, "--rescan")

    report = store.verify(expect_head=head1, grace="0s")
    assert not report.clean
    assert [p.kind for p in report.problems] == ["adopted_commit"], report.problems
    assert report.adopted == 1
    (a,) = report.adopted_commits
    assert a["part_path"] == key and a["sealed_by"] == 2 and not a["anchored"] and not a["accepted"], a
    accepted = store.verify(expect_head=head1, grace="0s", accept_adopted=True)
    assert accepted.clean and accepted.adopted_commits[0]["accepted"], accepted.to_dict()
    assert "1 adopted commit accepted" in accepted.summary

    detail = store.files(detail=True)
    assert [f["part_path"] for f in detail if f["adopted"]] == [key]
    assert sorted(f["location"] for f in detail) == sorted(store.files())

    data = store.report(tmp_path / "r.json", "json", accept_adopted=True)
    assert data["verdict"]["clean"] and data["verdict"]["adopted_accepted"] == 1, data["verdict"]
    assert data["verdict"]["adopted"][0]["part_path"] == key


def test_files_detail_names_a_compacted_part_by_its_compaction_as_the_cli_does(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(root)
    store.append(events(120, runs=("run-a",)), batch_rows=10)
    store.seal()
    store.compact(target_rows=60)
    detail = store.files(detail=True)
    cli = [json.loads(l) for l in ok("files", "--store", str(root), "--json").splitlines()]
    assert detail == cli
    compacted = [f for f in detail if f.get("compaction")]
    assert compacted, detail
    for f in compacted:
        assert f["commit_id"] is None and f["compaction"]["compaction_id"] in f["part_path"], f
        assert all(not c["adopted"] for c in f["compaction"]["commits"])
