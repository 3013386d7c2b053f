"""Signing that starts later and rotates, from Python (issue 21, defect 7): `seal`'s
`allow_empty` and `allow_unsigned`, `verify`'s several public keys and `signed_from`, as
`lineage seal --allow-empty/--unsigned` and `lineage verify --public-key ... --signed-from`."""
from __future__ import annotations

from pathlib import Path

import pytest

import lineage_store as ls
from pkg_support import events


def test_keys_rotate_signing_starts_later_and_empty_seals_are_asked_for(tmp_path: Path) -> None:
    store = ls.open(tmp_path / "store")
    store.append(events(10, runs=("run-a",)))
    first = store.seal()  # seal 1, unsigned: signing starts later
    assert first.seq == 1 and first.key_id is None
    a, b = ls.keygen(tmp_path / "a"), ls.keygen(tmp_path / "b")
    store.append(events(10, runs=("run-b",)))
    assert store.seal(tmp_path / "a.key").key_id == a  # seal 2
    store.append(events(10, runs=("run-c",)))
    assert store.seal(tmp_path / "b.key").key_id == b  # seal 3: the key rotated

    both = [tmp_path / "a.pub", tmp_path / "b.pub"]
    report = store.verify(public_key=both, signed_from=2)
    assert report.clean and report.signed_seals == 2, report.summary
    # Under one key only, the seal the other signed is named; seal 1 unsigned from 1 too.
    only_a = store.verify(public_key=tmp_path / "a.pub", signed_from=2)
    assert not only_a.clean
    assert any("seal" in p.key and "00000000000000000003" in p.key for p in only_a.problems), only_a.problems
    from_one = store.verify(public_key=tuple(both), signed_from=1)
    assert not from_one.clean
    assert any("00000000000000000001" in p.key for p in from_one.problems), from_one.problems

    # Nothing new: no seal unless asked for (a heartbeat).
    same = store.seal(tmp_path / "b.key")
    assert same.seq == 3 and same.added == 0
    beat = store.seal(tmp_path / "b.key", allow_empty=True)
    assert (beat.seq, beat.added) == (4, 0)
    # Signing does not stop unnoticed: without a key it raises, unless asked for.
    store.append(events(5, runs=("run-d",)))
    with pytest.raises(ls.InputError, match="signed"):
        store.seal()
    unsigned = store.seal(allow_unsigned=True)
    assert unsigned.seq == 5 and unsigned.key_id is None
    gap = store.verify(public_key=both, signed_from=2)
    assert not gap.clean
    assert any("00000000000000000005" in p.key for p in gap.problems), gap.problems
