"""Every real case of tests/corpus through `diagnose` (rules of reading expected.yaml: corpus_expect.py): each
case alone, and all of them at once as one fleet, each under a host name of its own."""

from __future__ import annotations

import pytest

from api.diagnose import diagnose_paths
from api.render import events_json
from schemas.hostname import canonical_host
from schemas.settings import Settings
from tests.conftest import CORPUS
from tests.corpus_expect import (Case, initiator_matches, load_case, matching_events, member_ids, renamed,
                                 serious, symptoms)

CASES = sorted(p for p in CORPUS.iterdir() if p.is_dir())


def run_case(path, pipeline):
    case = load_case(path)
    _, batch, incidents = diagnose_paths([path / "input"], Settings(), symptoms=symptoms(case), pipeline=pipeline)
    return case, events_json(batch.events), incidents


def check_events_found(case: Case, events: list[dict]) -> None:
    for exp in case.events:
        if exp["kind"] == "other":
            continue
        for group in matching_events(exp, events):
            assert group, f"{case.name}: no event matches {exp}"


def check_initiator(case: Case, events: list[dict], incidents: list[dict]) -> None:
    """``incidents``: those of the case's hosts (all of them when the case was diagnosed alone)."""
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


@pytest.mark.parametrize("path", CASES, ids=[p.name[:3] for p in CASES])
def test_expected_events_found(path, pipeline):
    case, events, _ = run_case(path, pipeline)
    check_events_found(case, events)


@pytest.mark.parametrize("path", CASES, ids=[p.name[:3] for p in CASES])
def test_initiator(path, pipeline):
    case, events, incidents = run_case(path, pipeline)
    check_initiator(case, events, incidents)


def _fleet_host(path) -> str:
    """A host name of the fleet for a case: nothing like the corpus's ``node01``, nor like samples/fleet's."""
    return f"gpu-{path.name[:3]}.rack{int(path.name[:3]) % 4}.example"


@pytest.fixture(scope="module")
def fleet(pipeline, tmp_path_factory):
    """Every case's input in one folder, each case's host renamed (``corpus_expect.renamed``), diagnosed in one
    run with every case's symptoms: (cases, events, incidents)."""
    root = tmp_path_factory.mktemp("fleet")
    cases, said = [], []
    for path in CASES:
        case, host = load_case(path), _fleet_host(path)
        old = {f.name.split(".")[0] for f in (path / "input").iterdir()}  # the files are named after their host
        assert len(old) == 1, f"{case.name}: a fleet of one host per case, not {old}"
        case, rename = renamed(case, old.pop(), host)
        for f in sorted((path / "input").iterdir()):
            (root / f"{host}.{f.name}").write_bytes(rename(f.read_bytes()))
        cases.append(case)
        said += symptoms(case)
    _, batch, incidents = diagnose_paths([root], Settings(), symptoms=said, pipeline=pipeline)
    return cases, events_json(batch.events), incidents


@pytest.mark.parametrize("index", range(len(CASES)), ids=[p.name[:3] for p in CASES])
def test_every_case_holds_in_one_fleet(fleet, index):
    """A fleet is many cases at once: each case's events are found and its initiator named as when it is alone,
    under a host name it never had (nothing is special to the corpus's ``node01``), and no incident of another
    case takes its events or its host — times of different cases overlap (a line with no stamp is timed by its
    file), so what keeps them apart is the relations, not luck."""
    cases, events, incidents = fleet
    case = cases[index]
    host = canonical_host(_fleet_host(CASES[index]))  # the name the fleet knows it by: gpu-001
    check_events_found(case, events)
    mine = [i for i in incidents if host in {p["host"] for p in [i["initiator"], *i["downstream"]]}]
    check_initiator(case, events, mine)
    for i in mine:
        hosts = {p["host"] for p in [i["initiator"], *i["downstream"]]}
        assert hosts == {host}, f"{case.name}: an incident of {sorted(hosts)} joins cases of different hosts"
