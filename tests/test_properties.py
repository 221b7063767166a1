"""Property-based tests of the pure input path (hypothesis): decode, pipeline, prefixes, example lines
behind stamps. The properties and strategies live in ``benchmarks/fuzz.py``; ``python -m benchmarks.fuzz``
runs the same properties for longer (its length and result are in docs/reliability.md)."""

from __future__ import annotations

import pytest

from benchmarks.fuzz import _props

PROPS = _props(150)


@pytest.mark.parametrize("name", sorted(PROPS))
def test_property(name):
    PROPS[name]()


def test_an_unknown_property_name_exits_2_instead_of_running_nothing():
    from benchmarks.fuzz import main

    with pytest.raises(SystemExit) as e:
        main(["--only", "line_numbers,bogus", "--examples", "1"])
    assert e.value.code == 2
