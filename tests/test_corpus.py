"""Every real case of tests/corpus through `diagnose` (rules of reading expected.yaml: corpus_expect.py)."""

from __future__ import annotations

import pytest

from api.diagnose import diagnose_paths
from api.render import events_json
from schemas.settings import Settings
from tests.conftest import CORPUS
from tests.corpus_expect import (initiator_matches, load_case, matching_events, member_ids, serious,
                                 symptoms)

CASES = sorted(p for p in CORPUS.iterdir() if p.is_dir())


def run_case(path, pipeline):
    case = load_case(path)
    _, batch, incidents = diagnose_paths([path / "input"], Settings(), symptoms=symptoms(case), pipeline=pipeline)
    return case, events_json(batch.events), incidents


@pytest.mark.parametrize("path", CASES, ids=[p.name[:3] for p in CASES])
def test_expected_events_found(path, pipeline):
    case, events, _ = run_case(path, pipeline)
    for exp in case.events:
        if exp["kind"] == "other":
            continue
        for group in matching_events(exp, events):
            assert group, f"{case.name}: no event matches {exp}"


@pytest.mark.parametrize("path", CASES, ids=[p.name[:3] for p in CASES])
def test_initiator(path, pipeline):
    case, events, incidents = run_case(path, pipeline)
    init = case.expected.get("initiator")
    if case.benign:
        loud = [(i["category"], i["severity"], i["pattern"]) for i in incidents if serious(i)]
        assert not loud, f"{case.name}: benign case raised {loud}"
        return
    assert incidents, f"{case.name}: no incident"
    needed = [g for exp in case.events if exp["kind"] != "other" for g in matching_events(exp, events)]
    if init == "unknown":
        holding = [i for i in incidents if all({e["event_id"] for e in g} & member_ids(i) for g in needed)]
        assert len(holding) == 1, f"{case.name}: expected one incident holding every event, got {len(holding)}"
        inc = holding[0]
        assert inc["initiator"]["device_type"] is None or inc["confidence"] < 0.5, inc["initiator"]
        assert inc["missing"], f"{case.name}: an unknown initiator must say what evidence is missing"
        assert serious(inc)
        return
    problems = {i["id"]: initiator_matches(init, i, case) for i in incidents}
    good = [i for i in incidents if not problems[i["id"]]]
    assert good, f"{case.name}: no incident names the initiator {init}: {problems}"
    inc = good[0]
    assert serious(inc), f"{case.name}: the incident is only {inc['severity']}"
    for g in needed:
        assert {e["event_id"] for e in g} & member_ids(inc), f"{case.name}: {g[0]['signature']} not in the incident"
    assert inc["explanation"] and inc["next_action"]
