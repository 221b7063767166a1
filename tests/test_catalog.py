"""The signature catalog as the service loads it: every entry's real lines match, near misses do not,
fields come out right, and the Hyperscan matcher agrees with the plain-`re` reference matcher."""

from __future__ import annotations

import os
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from correlate.attribute import OPTIONAL_PART
from ingest.catalog import CatalogError, literal_requirements, load_catalog, required_literal, to_hyperscan
from ingest.decode import Decoded, Segment
from ingest.extract import columns, fields
from ingest.match import HyperscanMatcher, ReferenceMatcher, best
from ingest.prefix import from_us, parse_prefix
from tests.conftest import CORPUS

from ingest.catalog import default_catalog

CAT = default_catalog()
EXAMPLES = [(c.sig.id, i, ex) for c in CAT.entries for i, ex in enumerate(c.sig.examples)]
NEAR = [(c.sig.id, i, line) for c in CAT.entries for i, line in enumerate(c.sig.near_misses)]


def test_every_signature_has_real_examples_with_sources():
    for c in CAT.entries:
        assert c.sig.examples, c.sig.id
        for ex in c.sig.examples:
            assert ex.src.startswith("http"), (c.sig.id, ex.src)


def test_every_signature_an_incident_can_start_from_says_what_to_do(catalog):
    """An incident's next action is its initiator's catalog ``action`` (``correlate.incident.default_action``):
    a signature without one gave incidents with an empty "next" (a PyTorch watchdog line alone, an NCCL NET/IB
    completion error; a fresh-user trial). Every signature of an event that is not context has one, or is an
    Xid or SXid line (the Xid and SXid catalogs say it); the fields its text names are fields every example gives
    (or the device and GPU every event may carry): a field the pattern may not capture was printed as "<field>"
    (GSP's heartbeat line without "GPU<n>": "the driver's GPU<rm_gpu> is /dev/nvidia<rm_gpu>", a real-logs pass)."""
    missing = [c.sig.id for c in catalog.entries if c.sig.emit == "event" and c.sig.role != "context"
               and not c.sig.action and c.sig.kind not in ("xid", "sxid", "gsp_error")]
    assert missing == []
    for c in catalog.entries:
        if c.sig.emit != "event" or not c.sig.action:
            continue
        for ex in c.sig.examples:
            assert _named(c.sig.action) <= _given(c, ex.line, catalog), (c.sig.id, ex.line)


def _named(text: str) -> set[str]:
    """The fields a catalog text needs: those it names outside its optional parts (``attribute.OPTIONAL_PART``)."""
    return set(re.findall(r"{(\w+)}", OPTIONAL_PART.sub("", text)))


def _given(c, line: str, catalog) -> set[str]:
    """The template fields the event of ``line`` gives: its columns and details with a value, and what every event
    may carry (``correlate.attribute._fields``)."""
    found = fields(c, line)
    row = columns(c, found[0], catalog) if found else {"details": {}}
    return ({k for k, v in row.items() if v is not None} | {k for k, v in row["details"].items() if v is not None}
            | {"device", "device_short", "gpu_index", "host"})


def test_every_device_signature_an_incident_can_start_from_says_how_to_check_it(catalog):
    """An incident's ``verify`` commands are its initiator's catalog ``verify`` (``correlate.attribute.
    verify_commands``): a critical Xid 149 incident, a Fabric Manager error, an SXid with a severity, PCIe AER
    lines and eight other kernel and NVML signatures had none (a fresh-user trial). Every non-context event
    signature of the kernel log or NVML has some (NCCL and PyTorch lines are checked in the job's own logs);
    the fields they name are fields every example gives (or the device and GPU every event may carry)."""
    missing = [c.sig.id for c in catalog.entries if c.sig.emit == "event" and c.sig.role != "context"
               and c.sig.source in ("dmesg", "nvml") and not c.sig.verify]
    assert missing == []
    for c in catalog.entries:
        templates = [*c.sig.verify, *(t for ts in getattr(c.sig, "verify_by_category", {}).values() for t in ts)]
        if c.sig.emit != "event" or not templates:
            continue
        for ex in c.sig.examples:
            assert {f for t in templates for f in _named(t)} <= _given(c, ex.line, catalog), (c.sig.id, ex.line)
    # the categories a signature's verify_by_category names are categories of the Xid catalog
    categories = {x.category for x in catalog.xids.values()}
    assert all(set(getattr(c.sig, "verify_by_category", {})) <= categories for c in catalog.entries)


@pytest.fixture(scope="module")
def hsm(catalog):
    return HyperscanMatcher(catalog)


@pytest.mark.parametrize("sid,i,ex", EXAMPLES, ids=[f"{s}#{i}" for s, i, _ in EXAMPLES])
def test_example_matches_its_signature(sid, i, ex, catalog, hsm):
    hs = hsm.scan(ex.line.encode())
    ref = ReferenceMatcher(catalog).scan(ex.line.encode())
    assert hs == ref
    assert 0 in hs, f"{sid}: example {i} matched nothing"
    assert catalog.by_id[sid].index in hs[0], f"{sid}: example {i} matched {[catalog.entries[j].sig.id for j in hs[0]]}"


@pytest.mark.parametrize("sid,i,ex", [e for e in EXAMPLES if e[2].expect], ids=[f"{s}#{i}" for s, i, e in EXAMPLES
                                                                               if e.expect])
def test_example_fields(sid, i, ex, catalog):
    """Fields from the pure extraction (entry regex + extras, prefix parser) of the example line."""
    c = catalog.by_id[sid]
    found = fields(c, ex.line)
    assert found, f"{sid}: the full regex does not match {ex.line!r}"
    row = columns(c, found[0], catalog)
    p = parse_prefix(ex.line, ref_us=1_700_000_000_000_000)
    row.setdefault("host", p.host)
    for k in ("pid", "gpu_index", "rank"):
        if row.get(k) is None:
            row[k] = getattr(p, k)
    row.update({k: v for k, v in row.pop("details").items() if k not in row})
    for k, v in ex.expect.items():
        assert row.get(k) == v, f"{sid}#{i}: {k} = {row.get(k)!r}, expected {v!r}"


@pytest.mark.parametrize("sid,i,line", NEAR, ids=[f"{s}~{i}" for s, i, _ in NEAR])
def test_near_miss_does_not_match(sid, i, line, catalog, hsm):
    hits = hsm.scan(line.encode())
    assert catalog.by_id[sid].index not in hits.get(0, []), f"{sid}: near miss {i} matched"


def _corpus_buffers():
    for f in sorted(CORPUS.glob("*/input/*")):
        yield f.read_bytes()


def _generated(n: int, seed: int) -> bytes:
    """Every example and near miss, shuffled with ordinary lines and mangled copies."""
    rnd = random.Random(seed)
    base = [ex.line for _, _, ex in EXAMPLES] + [l for _, _, l in NEAR]
    noise = ["[  12.345678] usb 1-1: new high-speed USB device number 2 using xhci_hcd",
             "node07:1234:1300 [0] NCCL INFO Channel 00/32 :    0   1   2   3",
             "Epoch 3: 100%|██████████| 512/512 [01:02<00:00, 8.19it/s, loss=1.23]",
             "systemd[1]: Started Session 42 of user root."]
    out = []
    for _ in range(n):
        line = rnd.choice(base + noise)
        r = rnd.random()
        if r < 0.2:
            k = rnd.randrange(len(line) + 1)
            line = line[:k] + rnd.choice(["", " ", "x", "0", ":", "(", "]"]) + line[k + 1:]
        elif r < 0.3:
            line = line.upper()
        out.append(line)
    return "\n".join(out).encode()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_hyperscan_agrees_with_reference(seed, catalog, hsm):
    hs, ref = hsm, ReferenceMatcher(catalog)
    for buf in [*_corpus_buffers(), _generated(3000, seed)]:
        assert hs.scan(buf) == ref.scan(buf)


def test_hyperscan_keeps_every_match(catalog, hsm):
    """A case where one Hyperscan database once dropped a match that the patterns found alone."""
    buf = (b"|   1  NVIDIA H100 80GB HBM3          On  | 00000000:40:00.0 Off |                    0 |\n"
           b"0, 00000000:18:00.0\n         Link 0: Remote Device 00000000:07:00.0: Link 46")
    assert hsm.scan(buf) == ReferenceMatcher(catalog).scan(buf)
    assert catalog.by_id["nvml.query_gpu_bus"].index in hsm.scan(buf)[1]


def test_priority_picks_the_specific_signature(catalog, hsm):
    line = "[2026-06-23 15:45:07] node01:420:437 [5] transport/nvls.cc:379 (nvlsAllocateMem) NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'x'."
    hits = hsm.scan(line.encode())[0]
    assert len(hits) >= 2
    assert catalog.entries[best(catalog, hits)].sig.id == "nccl.nvls.bind_failed"


def test_hyperscan_form_cannot_cross_lines():
    assert to_hyperscan(r"a\sb[^,]c[\s:]") == r"a[^\S\n]b[^\n,]c[\s:]"


def _one_entry_catalog(folder, fields: str) -> None:
    """A catalog folder of one family file ``x.yaml`` whose one entry ``x.y`` has ``fields`` (YAML lines), beside
    the real Xid and SXid CSVs."""
    (folder / "x.yaml").write_text("family: x\ndescription: d\nsignatures:\n  - id: x.y\n    source: dmesg\n"
                                   + fields + "    examples: [{line: a, src: 'http://x'}]\n")
    for f in ("xid-catalog.csv", "sxid-catalog.csv"):
        (folder / f).write_bytes((CAT_DIR / f).read_bytes())


def test_bad_catalog_stops_loading_with_the_entry_named(tmp_path):
    _one_entry_catalog(tmp_path, "    kind: not_a_kind\n    severity: info\n    pattern: 'a'\n")
    with pytest.raises(CatalogError, match="(?s)x.yaml.*kind must be one of"):
        load_catalog(tmp_path)


def test_an_xid_kind_by_catalog_category_must_be_an_event_kind(tmp_path):
    """An Xid entry's ``kind_by_catalog_category`` (gsp -> gsp_error) names event kinds too: another would be
    stored and then refused by ``GET /events?kind=`` (a break-it pass)."""
    _one_entry_catalog(tmp_path, "    kind: xid\n    kind_by_catalog_category: {gsp: gsp_eror}\n    severity: info\n"
                                 "    pattern: 'a'\n")
    with pytest.raises(CatalogError, match="(?s)x.yaml.*gsp_eror"):
        load_catalog(tmp_path)


def test_an_action_map_needs_the_group_it_is_keyed_by_and_an_action_for_the_rest(tmp_path):
    """``action_map`` (what the line said -> its action) is keyed by ``severity_group``'s value; without the group, or
    without an ``action`` for the values it does not name, it is refused."""
    _one_entry_catalog(tmp_path, "    kind: ib_port\n    severity: info\n    pattern: 'a'\n    action: do it\n"
                                 "    action_map: {port error: check the port}\n")
    with pytest.raises(CatalogError, match="(?s)x.yaml.*action_map needs severity_group"):
        load_catalog(tmp_path)


def test_a_severity_map_key_that_is_not_lower_case_is_refused(tmp_path):
    """The group's value is looked up in lower case (``ingest.extract``): ``{DOWN: warning}`` never matched, and an
    InfiniBand port that went DOWN took the signature's default severity (a first version of ib.port_state)."""
    _one_entry_catalog(tmp_path, "    kind: ib_port\n    severity: info\n    pattern: '(?P<s>a)'\n"
                                 "    severity_group: s\n    severity_map: {DOWN: warning}\n")
    with pytest.raises(CatalogError, match="(?s)x.yaml.*'DOWN' is not lower case"):
        load_catalog(tmp_path)


def test_misspelled_key_is_refused(tmp_path):
    _one_entry_catalog(tmp_path, "    kind: xid\n    severity: info\n    patern: 'a'\n")
    with pytest.raises(CatalogError, match="patern"):
        load_catalog(tmp_path)


def test_every_xid_of_the_catalog_is_recognised(pipeline, catalog):
    """Each code of xid-catalog.csv, in the driver's line format, becomes an Xid event with that code."""
    lines = [f"NVRM: Xid (PCI:0000:3b:00): {x}, pid=1234, name=python3, some text" for x in sorted(catalog.xids)]
    t = 1_800_000_000_000_000  # a Kafka time the pipeline takes as one (2000 - 2100): the lines print none
    seg = Segment(data="\n".join(lines).encode(), origin="t", stream="s", host="h", ref_ts=t, ref_basis="kafka",
                  ingest_ts=t)
    got = pipeline.run(Decoded(segments=[seg])).events.column("xid").to_pylist()
    assert got == sorted(catalog.xids)


CAT_DIR = __import__("ingest.catalog", fromlist=["CATALOG_DIR"]).CATALOG_DIR


_EXTRAS = [(c.sig.id, rx, lit, needs) for c in default_catalog().entries
           for rx, lit, needs in zip(c.extras, c.extra_literals, c.extra_needs) if lit is not None or needs]


@pytest.mark.parametrize("sig_id,rx,literal,needs", _EXTRAS, ids=[f"{s}:{lit}:{n}" for s, _r, lit, n in _EXTRAS])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_match_of_an_extra_holds_its_required_literals(sig_id, rx, literal, needs, data):
    """``fields`` skips an extra on a line without its required literal (``catalog.required_literal``) or
    without one string of each of its other requirements (``catalog.literal_requirements``): that is exact
    only if every text the extra matches holds them — drawn here from the regex."""
    text = data.draw(st.from_regex(rx))
    assert rx.search(text)
    assert literal is None or literal in text
    assert all(any(s in text for s in need) for need in needs), (text, needs)


def test_required_literal_reads_the_top_level_sequence_only():
    assert required_literal(re.compile(r"\bXid (?P<x>\d+), Link (?:up|down)")) == ", Link "
    assert required_literal(re.compile(r"a(?:bcdef)?g")) == "a"  # an optional group is no requirement
    assert required_literal(re.compile(r"abc|defgh")) is None  # a top-level alternation has none
    assert required_literal(re.compile(r"NVLink", re.IGNORECASE)) is None
    assert required_literal(re.compile(r"[A-Z]+\d*")) is None


def test_literal_requirements_read_groups_and_alternations_of_the_top_level_sequence():
    """Each run of the top-level sequence and of its (not repeated) groups is a requirement; an alternation
    is one requirement of a string per branch, and none when a branch has no run; a case-insensitive group
    and anything repeated, optional or looked around gives none. Longest one-string requirements first."""
    assert literal_requirements(re.compile(r"Ch(?:annel)? (?P<c>[0-9a-f]{8})\b|channel (?P<h>0x[0-9a-f]+)")) \
        == [("Ch", "channel ")]
    assert literal_requirements(re.compile(r"a(?P<g>bcd)e")) == [("bcd",), ("a",), ("e",)]
    assert literal_requirements(re.compile(r"(?i:abc)de(?=fgh)(?:xyz)*")) == [("de",)]
    assert literal_requirements(re.compile(r"XC(?P<x>\d) Link (?:Fatal|Nonfatal)")) \
        == [(" Link ",), ("XC",), ("Fatal", "Nonfatal")]
    assert literal_requirements(re.compile(r"abc|[a-z]+")) == []
    assert literal_requirements(re.compile(r"abc", re.IGNORECASE)) == []


def test_an_xid_extra_is_not_searched_on_a_line_without_its_requirements():
    """The unit extra (``… Fatal XC0 i0 Link 2 …``) needs ``Link`` and ``XC``: an NVLink Xid 74 line holds
    the first only and is not searched (it cost ~7 µs a line); with both, the extra's fields are read."""
    xid = default_catalog().by_id["xid"]
    unit = next(i for i, lit in enumerate(xid.extra_literals) if lit == "Link")
    assert ("XC",) in xid.extra_needs[unit]
    line = ("NVRM: Xid (PCI:0000:b7:00): 74, pid=3110, name=python, NVLink: fatal error detected on link 2"
            "(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
    assert "unit" not in fields(xid, line)[0] and fields(xid, line)[0]["link"] == "2"
    line = "NVRM: Xid (PCI:0000:b7:00): 145, pid=1, name=python, RLW_REMAP Nonfatal XC0 i0 Link 11 (0x0004)"
    got = fields(xid, line)[0]
    assert (got["unit"], got["fatal_word"], got["xc"], got["link_signed"]) == ("RLW_REMAP", "Nonfatal", "0", "11")


def test_every_category_the_code_can_name_is_one_of_the_incident_categories(tmp_path):
    """``schemas.incidents.CATEGORIES`` is what ``GET /incidents?category=`` accepts (an unknown one is a 422,
    not an empty page), so every category an incident can carry must be listed: the Xid catalog's mapped
    categories, the per-kind fallbacks, each pattern's ``category=`` (read from the source, so a new pattern
    is checked too) and the signature catalog's entries, which refuse an unlisted category when loading."""
    import ast
    from pathlib import Path

    import correlate.attribute as attribute
    import correlate.patterns as patterns
    from schemas.incidents import CATEGORIES

    named = set(attribute.XID_CATEGORY.values()) | set(attribute.KIND_CATEGORY.values()) | {"other"}
    for mod in (attribute, patterns):
        for node in ast.walk(ast.parse(Path(mod.__file__).read_text())):
            values = []
            if isinstance(node, ast.keyword) and node.arg == "category":
                values = [node.value]
            elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "category" for t in node.targets):
                values = [node.value]
            while values:  # a constant, or either branch of ``a if cond else b`` (not the condition's strings)
                v = values.pop()
                if isinstance(v, ast.IfExp):
                    values += [v.body, v.orelse]
                elif isinstance(v, ast.Constant):
                    named.add(v.value)
    named |= {c.sig.category for c in load_catalog().by_id.values() if c.sig.category}
    assert len(named) >= 15 and named <= set(CATEGORIES), sorted(named - set(CATEGORIES))
    (tmp_path / "x.yaml").write_text("family: x\ndescription: d\nsignatures:\n  - id: x.y\n    source: dmesg\n"
                                     "    kind: xid\n    severity: info\n    pattern: 'a'\n    category: link_faults\n"
                                     "    examples: [{line: a, src: 'http://x'}]\n")
    with pytest.raises(CatalogError, match="(?s)x.yaml.*category"):
        load_catalog(tmp_path)


def test_a_leading_blank_run_is_matched_after_any_line(catalog, hsm):
    """``nvidia-smi``'s indented rows (``^[^\\S\\n]+Link …``): with ``nvml.fabric_unhealthy``'s pattern in the same
    database, Hyperscan missed ``\\tLink 0: 25 GB/s`` after a line of 21 or more other characters, 2,000 bytes into
    a buffer (a generated buffer of the comparison above found it). Those patterns are scanned by a superset and
    checked with their own regex (``match.prefilter``): the same hits as ``re``, and no hit where ``re`` has none
    (the row's text not at a line's indented start)."""
    from ingest.match import ReferenceMatcher, prefilter

    assert prefilter(catalog.by_id["nvml.nvlink_active"].sig.pattern) is not None
    assert prefilter(catalog.by_id["xid"].sig.pattern) is None
    active = catalog.by_id["nvml.nvlink_active"].index
    for buf in (b"[NV_WARN_NOTHING_TO_DO]\n\tLink 0: 25 GB/s", b"x\n" * 1000 + b"a" * 10 + b"\n\tLink 0: 25 GB/s",
                b"foo Link 0: 25 GB/s\n\t Link 1: 25 GB/s\nLink 2: 25 GB/s"):
        want = ReferenceMatcher(catalog).scan(buf)
        assert hsm.scan(buf) == want
        assert active in want[buf.count(b"\n") if buf.startswith((b"[", b"x")) else 1]


#: the examples of signatures anchored at the line's start that a tool prints unindented (``ibdev2netdev``,
#: ``ibstat``'s CA line, ``nvidia-smi -L``/``--query-gpu``/``topo -m``, dcgm-exporter's text)
ROWS = [(c.sig.id, i, ex) for c in CAT.entries if c.at_line_start for i, ex in enumerate(c.sig.examples)
        if "\n" not in ex.line and not ex.line[:1].isspace()]
#: the stamps collectors write in front of a line: syslog (``logger -t``), journald short-iso, ISO, c10/glog
ROW_STAMPS = ["Nov 30 03:12:01 node07 ibdev2netdev: ", "2026-11-30T03:12:01.123456+00:00 node07 kernel: ",
              "2026-11-30T03:12:01.123456Z ", "2026-11-30 03:12:01,123 "]


@pytest.mark.parametrize("stamp", ROW_STAMPS)
def test_a_tools_row_is_read_behind_a_collectors_stamp(stamp, catalog, hsm, pipeline):
    """A pattern anchored at the line's start (``^``) reads a tool's row behind the stamp a collector writes in front
    (``ibdev2netdev | logger``, Fluent Bit's tail with a time key): the same signature and fields as the row printed
    bare, the stamp's time, in both matchers and the pipeline. Before, the ``^`` bound to the raw line's first
    character and nothing was read (``benchmarks/fuzz.py``'s ``examples_behind_stamps`` found it); the row's text in
    the middle of another line still reads nothing."""
    assert len(ROWS) >= 10, [s for s, _i, _e in ROWS]
    for sid, i, ex in ROWS:
        c = catalog.by_id[sid]
        line = stamp + ex.line
        hs, ref = hsm.scan(line.encode()), ReferenceMatcher(catalog).scan(line.encode())
        assert hs == ref and c.index in hs.get(0, []), (sid, i, line, hs)
        assert fields(c, line) == fields(c, ex.line), (sid, i, line)
        mid = "GPU 0 said earlier: " + ex.line  # no prefix: the row's text after other words
        assert c.index not in hsm.scan(mid.encode()).get(0, []), (sid, i, mid)
        assert c.index not in ReferenceMatcher(catalog).scan(mid.encode()).get(0, []), (sid, i, mid)
    seg = Segment(data="\n".join(stamp + ex.line for _s, _i, ex in ROWS).encode(), origin="t:x", stream="t",
                  host="node07", ref_ts=1_796_000_000_000_000, ref_basis="kafka", ingest_ts=1_796_000_000_000_000)
    b = pipeline.run(Decoded(segments=[seg]))
    read = {(s, ts) for t in (b.events, b.link_samples, b.topology) if "signature" in t.column_names
            for s, ts in zip(t.column("signature").to_pylist(), t.column("ts").to_pylist())}
    want = from_us(parse_prefix(stamp + "x", ref_us=1_796_000_000_000_000).ts)
    assert {"ib.ibdev2netdev_down", "nvml.query_recovery_action"} <= {s for s, _t in read}, read
    assert all(ts == want for s, ts in read if s in {sid for sid, _i, _e in ROWS}), read


def test_a_leading_word_run_is_checked_by_its_own_regex(catalog, hsm):
    """The PCIe AER patterns begin with the driver's name, ``(?:^|[^\\w-])(?P<driver>[\\w-]+) <bus id>: …``: Hyperscan
    scans them from the bus id on (``match.prefilter``: a leading word run gave it no literal to start from, a third
    of the scan's time) and the pattern's own regex decides each hit line. A line the superset hits but the pattern
    does not (no driver name before the bus id) is no hit; the real lines still are.

    A break-it pass: with ``\\b`` before the run, the check of ``a-a-a-…: <bus id>: AER: …`` (60 KB) tried the run
    from every word boundary, 69 s; after ``(?:^|[^\\w-])`` it starts only where a run begins (linear), and the
    check reads at most ``MAX_LINE_BYTES`` of a line, up to its match's end."""
    from ingest.match import ReferenceMatcher, prefilter

    # pcie.aer.cant_recover names its driver (nvidia): a literal to start from, no leading word run
    run = "(?:^|[^\\w-])(?P<driver>[\\w-]+) "
    aer = [c for c in catalog.entries if c.sig.id.startswith("pcie.aer.") and c.sig.pattern.startswith(run)]
    assert len(aer) == 4 and all(prefilter(c.sig.pattern).startswith(" (?:[0-9a-fA-F]{4,8}:") for c in aer)
    status_bit = catalog.by_id["pcie.aer.status_bit"].index
    lines = [b"pcieport 0000:00:1c.5:    [ 0] Receiver Error", b"x: 0000:00:1c.5:    [ 0] Receiver Error",
             b"[  +0.000894] pcieport 0000:00:03.0:    [14] CmpltTO                (First)",
             b"(-) 0000:00:03.0:    [14] CmpltTO"]
    buf = b"\n".join(lines)
    want = ReferenceMatcher(catalog).scan(buf)
    assert hsm.scan(buf) == want
    assert [status_bit in want.get(i, []) for i in range(len(lines))] == [True, False, True, False]
    received = catalog.by_id["pcie.aer.received"].index
    tail = b": 0000:00:01.0: AER: Corrected error received: id=00e5"
    real = b"pcieport 0000:00:03.0: AER: Corrected error received: 0000:00:03.0"
    for buf in (b"a-" * 10_000 + tail, b"x" * 70_000 + b" " + real, real + b" x" * 40_000):
        want = ReferenceMatcher(catalog).scan(buf)
        assert hsm.scan(buf) == want and (received in want.get(0, [])) is (buf.endswith(real) or buf.startswith(real))
    # a long line: each of the superset's matches is checked, not only the last (a second break-it pass: a real match
    # 70 KB before a near miss was lost), and a short line is read whole (a window cut at "SDES|foo" made \b hold)
    for buf in (real + b" " + b"x" * 70_000 + tail,
                b":  0000:00:01.0: [ 5] SDES " + b"z" * 30 + b" pcieport 0000:00:01.0: [ 5] SDESfoo"):
        assert hsm.scan(buf) == ReferenceMatcher(catalog).scan(buf)
    assert received in hsm.scan(real + b" " + b"x" * 70_000 + tail)[0]


def test_a_transport_lines_short_bus_id_is_a_bus_id_not_an_index(catalog):
    """NCCL <= 2.18.1 prints each side's busId with ``%lx`` (``int64ToBusId``): a GPU on bus 0, as cloud VMs place
    them, prints short, ``0000:00:04.0`` as ``40`` and ``0000:00:0b.0`` as ``b0``. They were read as NVML indexes 40
    and 176 (a break-it pass); an index is decimal and below the GPUs a node has."""
    c = catalog.by_id["nccl.transport.p2p"]
    line = "node01:1902:2004 [3] NCCL INFO Channel 00 : 3[b0] -> 2[40] via P2P/IPC/read"
    row = columns(c, fields(c, line)[0], catalog)
    assert (row.get("device"), row.get("peer"), row.get("gpu_index")) == ("0000:00:0b.0", "0000:00:04.0", None)
    row = columns(c, fields(c, "node01:6742:6769 [3] NCCL INFO Channel 00/0 : 3[3] -> 2[15] via P2P/CUMEM")[0],
                  catalog)
    assert (row.get("device"), row.get("gpu_index"), row["details"].get("peer_gpu_index")) == (None, 3, 15)
    # both sides are printed in one form: '30' beside '40' is 0000:00:03.0, not index 30 (a second break-it pass)
    row = columns(c, fields(c, "node01:100:200 [0] NCCL INFO Channel 00 : 0[30] -> 1[40] via P2P/IPC")[0], catalog)
    assert (row.get("device"), row.get("peer"), row.get("gpu_index")) == ("0000:00:03.0", "0000:00:04.0", None)


def test_an_xid_with_nothing_to_do_says_so_in_words(catalog):
    """NVIDIA's IGNORE actions were written "none; contact support if it repeats", which became the sentence "None;
    contact support if it repeats." in an incident (Bumblebee-Project/Bumblebee#608, Xid 44)."""
    from correlate.attribute import sentences

    actions = {x: f.action for x, f in catalog.xids.items()}
    assert not [x for x, a in actions.items() if a.lower().startswith("none")]
    assert sentences(actions[44]) == "Nothing to do for the node now; contact support if it repeats."



def test_the_yaml_files_read_alike_through_libyaml_and_pure_python():
    """``read_yaml`` (libyaml's safe loader, a tenth of the start-up time) gives every shipped YAML file exactly what
    PyYAML's pure-Python ``safe_load`` gives."""
    import yaml

    from ingest.catalog import read_yaml

    root = CAT_DIR.parents[1]
    files = sorted(CAT_DIR.glob("*.yaml")) + sorted((root / "correlate").glob("*.yaml"))
    assert len(files) >= 11
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert read_yaml(text) == yaml.safe_load(text), path.name
    with pytest.raises(yaml.YAMLError, match="line 2"):
        read_yaml("a: [1,\nb: }")


def test_a_compiled_database_is_kept_and_a_damaged_one_compiled_again(tmp_path, monkeypatch):
    """``compile_database`` writes the catalog's compiled database once and loads it after; a file cut short, one
    whose bytes changed and a cache folder that cannot be written are compiled again, with the same hits."""
    from ingest import match

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    buf = b"\n".join(ex.line.encode() for _, _, ex in EXAMPLES[:300])
    want = HyperscanMatcher(CAT).scan(buf)  # compiles and writes
    [kept] = list(match.cache_dir().glob("*.hsdb"))
    assert match.cache_dir() == tmp_path / "cache" / "firstfault" / "hyperscan"
    ino = kept.stat().st_ino  # a database compiled again is written to a new file renamed over the old one
    assert HyperscanMatcher(CAT).scan(buf) == want and kept.stat().st_ino == ino  # loaded, not compiled
    blob = kept.read_bytes()
    # cut short, a byte changed, empty, and another database whole under this name (it matched nothing: a break-it
    # pass)
    other = match.cache_file([b"Xid"], [0])
    match.compile_database([b"Xid"], [0])
    foreign = other.read_bytes()
    for damaged in (blob[:1000], blob[:80] + bytes([blob[80] ^ 1]) + blob[81:], b"", foreign):
        kept.write_bytes(damaged)
        assert HyperscanMatcher(CAT).scan(buf) == want
        assert kept.read_bytes() == blob and kept.stat().st_ino != ino  # replaced by the same database
        ino = kept.stat().st_ino
    # a FIFO or a link to /dev/zero where the file was: compiled in memory, no hang, no memory filled (a break-it pass)
    kept.unlink()
    os.mkfifo(kept)
    assert HyperscanMatcher(CAT).scan(buf) == want
    kept.unlink()
    kept.symlink_to("/dev/zero")
    assert HyperscanMatcher(CAT).scan(buf) == want
    kept.unlink()
    HyperscanMatcher(CAT)
    # other expression lists are other files; the last CACHE_KEEP written or loaded are kept
    monkeypatch.setattr(match, "CACHE_KEEP", 3)
    os.utime(kept, (1, 1))  # the oldest
    for k, word in enumerate((b"Xid", b"SXid", b"NVLink")):
        match.compile_database([word], [0])
        os.utime(match.cache_file([word], [0]), (k + 2, k + 2))  # written in this order
    assert not kept.exists() and len(list(match.cache_dir().glob("*.hsdb"))) == 3
    xid = match.cache_file([b"Xid"], [0])
    os.utime(xid, (1, 1))
    match.compile_database([b"Xid"], [0])  # loaded: the newest again
    match.compile_database([b"NCCL"], [0])
    assert sorted(match.cache_dir().glob("*.hsdb")) == sorted(match.cache_file([w], [0]) for w in
                                                               (b"Xid", b"NVLink", b"NCCL"))
    # a cache folder under a file: nothing kept, the same hits; no temporary file left behind anywhere
    before = sorted(xid.parent.iterdir())
    monkeypatch.setenv("XDG_CACHE_HOME", str(xid))
    assert HyperscanMatcher(CAT).scan(buf) == want
    assert sorted(xid.parent.iterdir()) == before



def test_dcgm_nvlink_down_reads_every_link_of_a_shortened_message(catalog):
    """NVSentinel's NVLink health event as a paste shortens it, the later links without their "GPU N's NvLink"
    (NVIDIA/NVSentinel#1701): one occurrence per link, each of the GPU the line names (only link 16 was read, a
    real-logs pass)."""
    c = catalog.by_id["dcgm.nvlink_down"]
    line = "message: \"GPU 3's NvLink link 16 is currently down ... link 17 is currently down\""
    assert [(f.get("gpu_index"), f["link"]) for f in fields(c, line)] == [("3", "16"), ("3", "17")]


def test_every_dcgm_exporter_xid_sample_of_the_format_reference_with_a_count_is_an_xid(catalog, hsm):
    """formats.md §10.2's dcgm-exporter sample lines: each with an ``xid`` label and a count above zero is an Xid
    event of that code, whichever of the two names the windowed count goes by (DCGM_EXP_XID_ERRORS_COUNT, its HELP
    line, or DCGM_FI_DEV_XID_ERRORS_ACTIVE, the sample NVIDIA/dcgm-exporter#239 printed under it: the second gave
    nothing, a coverage pass); a count of 0 is none."""
    from pathlib import Path
    text = (Path(__file__).parent.parent / "docs" / "reference" / "formats.md").read_text()
    section = text.split("### 10.2", 1)[1].split("\n## ", 1)[0]
    samples = [ln for ln in section.splitlines() if re.match(r"DCGM_\w+\{[^}]*\bxid=\"(\d+)\"", ln)]
    assert samples, "formats.md §10.2 holds no windowed Xid sample"
    for line in samples:
        want = re.search(r'\bxid="(\d+)"', line).group(1)
        hit = [catalog.entries[j].sig.id for j in hsm.scan(line.encode()).get(0, [])]
        assert "dcgm.exporter.xid_count" in hit, line
        row = columns(catalog.by_id["dcgm.exporter.xid_count"],
                      fields(catalog.by_id["dcgm.exporter.xid_count"], line)[0], catalog)
        assert (row["kind"], row["xid"]) == ("xid", int(want))
        zero = re.sub(r"\}\s+\d+\s*$", "} 0", line)
        assert 0 not in hsm.scan(zero.encode()) or "dcgm.exporter.xid_count" not in [
            catalog.entries[j].sig.id for j in hsm.scan(zero.encode())[0]]


def test_dcgm4_diag_rows_give_every_failing_gpu_of_a_glued_line(catalog):
    """DCGM 4's dcgmi diag table: a test's row and its per-GPU rows ("|  | GPU0: Fail |", NVIDIA/DCGM#253's layout)
    glued by the framer without blanks: one occurrence per failing GPU, none for a passing one (only DCGM 3's
    "Fail - GPU: N" was read, a real-logs pass)."""
    c = catalog.by_id["dcgm.diag_gpu_fail"]
    line = "| pcie | FailGPU0: FailGPU1: PassGPU2: FailGPU3: Fail"
    assert [f["gpu_index"] for f in fields(c, line)] == ["0", "2", "3"]
    assert [f.get("dcgm_test") for f in fields(c, line)] == ["pcie"] * 3
    assert fields(c, "| software | PassGPU0: PassGPU1: Pass") == []


def test_hyperscan_reports_the_desync_report_after_other_lines(catalog, hsm):
    """Hyperscan 5.4.12 (vectorscan in hyperscan 0.9.1) reported nothing of a pattern starting ``\\[\\d+\\] finished
    collective`` compiled beside the c10d store entry's ``\\[\\d+\\] is setting up NCCL communicator …`` once 14 bytes
    or more preceded the line (alone, or at the buffer's start, it matched): the desync report's pattern starts at
    the rank's digit. Checked here in the buffer that lost it."""
    buf = (b"[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1155874, OpType=ALLREDUCE, "
           b"NumelIn=9445376, NumelOut=9445376, Timeout(ms)=1800000) ran for 1800002 milliseconds before timing "
           b"out.\n\n"
           b"[1] finished collective #1155873, but didn't join collective #1155874\n")
    hits = hsm.scan(buf)
    assert hits == ReferenceMatcher(catalog).scan(buf)
    assert catalog.by_id["torch.desync_report"].index in hits[2]


#: a pattern's start that is a run with no bound (a class, ``\w``/``\d``/``\S``, maybe in a group and an optional
#: one): ``re.search`` tries it from every character of a line (test_no_pattern_starts_with_an_unbounded_run)
UNBOUNDED_START = re.compile(r"^(?:\(\?:)*(?:\(\?P<\w+>)?(?:\[[^\]]*\]|\\[wdS])[+*]")


# an RM message its function names: "NVRM: GPU0 kgspInitRm_IMPL: …"; drivers up to the 525 branch print its prefix
# without the colon ("NVRM kgspInitRm_IMPL: missing NVDEC0 engine, cannot initialize GSP-RM":
# NVIDIA/open-gpu-kernel-modules#116, #120)
RM_FUNCTION_LINE = re.compile(r"NVRM: (?:GPU\d+ )?_?[a-z][A-Za-z0-9]*(?:_\w+)?: ")
RM_FUNCTION_EXAMPLES = [e for e in EXAMPLES if RM_FUNCTION_LINE.search(e[2].line)]


@pytest.mark.parametrize("sid,i,ex", RM_FUNCTION_EXAMPLES, ids=[f"{s}#{i}" for s, i, _ in RM_FUNCTION_EXAMPLES])
def test_an_rm_functions_line_matches_in_the_older_drivers_form_too(sid, i, ex, catalog, hsm):
    """The same RM line with the older drivers' colon-less prefix ("NVRM kgspWaitForGfwBootOk_TU102: …") is the same
    fault: an entry written ``NVRM: `` missed it (the GFW boot failure of a 5xx driver: a real-logs pass)."""
    line = RM_FUNCTION_LINE.sub(lambda m: m.group(0).replace("NVRM: ", "NVRM ", 1), ex.line, count=1)
    assert line != ex.line
    hs = hsm.scan(line.encode())
    assert hs == ReferenceMatcher(catalog).scan(line.encode())
    assert catalog.by_id[sid].index in hs.get(0, []), f"{sid}: {line!r} matched {hs.get(0)}"


# ProcessGroupNCCL's log prefix names its group three ways, by PyTorch version: "[PG 1 Rank 6]" (2.3),
# "[PG 0 (default_pg) Rank 0]" (2.4: NVIDIA/nccl#1609) and "[PG ID 0 PG GUID 0(default_pg) Rank 0]" (2.5 on); every
# message written behind that prefix (createLogPrefix) carries the same one
PG_PREFIX = re.compile(r"\[PG (?:ID )?(?P<pg>\d+)(?: PG GUID [^ \]]+| \([^()\]]+\))? Rank (?P<rank>\d+)\]")
PG_EXAMPLES = [e for e in EXAMPLES if PG_PREFIX.search(e[2].line)]


@pytest.mark.parametrize("form", ["[PG {pg} Rank {rank}]", "[PG {pg} (default_pg) Rank {rank}]",
                                  "[PG ID {pg} PG GUID {pg}(default_pg) Rank {rank}]"])
@pytest.mark.parametrize("sid,i,ex", PG_EXAMPLES, ids=[f"{s}#{i}" for s, i, _ in PG_EXAMPLES])
def test_a_process_groups_prefix_reads_alike_in_every_pytorch_form(sid, i, ex, form, catalog, hsm):
    """An entry whose example carries the group prefix matches it in each version's form, and reads the same
    ``pg`` from it when it reads one: ``Exception (either an error or timeout) detected by watchdog`` behind 2.4's
    ``[PG 0 (default_pg) Rank 1]`` was no event at all, and 2.4's other messages lost their group."""
    m = PG_PREFIX.search(ex.line)
    line = ex.line[:m.start()] + form.format(pg=m["pg"], rank=m["rank"]) + ex.line[m.end():]
    hs = hsm.scan(line.encode())
    assert hs == ReferenceMatcher(catalog).scan(line.encode())
    assert catalog.by_id[sid].index in hs.get(0, []), f"{sid}: {line!r} matched {hs.get(0)}"
    found = fields(catalog.by_id[sid], line)
    assert found, f"{sid}: the full regex does not match {line!r}"
    if "pg" in catalog.by_id[sid].rx.groupindex:
        assert found[0].get("pg") == m["pg"], f"{sid}: {line!r} read {found[0]}"


def test_no_pattern_starts_with_an_unbounded_run(catalog):
    """nccltests' ``(?:(?P<host>[\\w.-]+): )?Test NCCL failure …`` made Python's ``re`` (the reference matcher, and
    the field extraction of a hit line) run the host from every character of a line and back: 163 s and 114 s for
    the two nccl-tests entries on the 70 KB lines of test_a_leading_word_run_is_checked_by_its_own_regex, nearly all
    of that test. A pattern starts with a literal, an anchor such as ``(?:^|[^\\w-])`` before a run, or a bounded
    run (``{1,253}``)."""
    bad = [c.sig.id for c in catalog.entries if UNBOUNDED_START.search(c.sig.pattern)]
    assert bad == []


# Xid 74's register bits as NVIDIA's WORKFLOW_NVLINK_ERR table gives them (formats.md §2.2): register, bit, class
XID74_TABLE = [(1, b, "ignorable") for b in (0, 23, 30)] + [(1, b, "sympathetic") for b in (1, 20)] + [
    (1, b, "ecc_parity") for b in (4, 5)] + [(1, b, "possible_hardware") for b in (8, 9, 12, 16, 17, 24, 28)] + [
    (1, b, "signal_integrity") for b in (21, 22)] + [(1, b, "report_if_repeated") for b in (27, 29)] + [
    (3, b, "ecc_parity") for b in (0, 1, 2, 6)] + [(3, 13, "not_expected")] + [
    (3, b, "field_diag_if_repeated") for b in (16, 19)] + [(3, b, "report_if_repeated") for b in (17, 18)] + [
    (4, b, "sympathetic") for b in (16, 17)] + [(4, 18, "sympathetic_fabric_reset")] + [
    (5, b, "ecc_parity") for b in (18, 19, 21, 22, 24, 25, 27, 28)] + [
    (5, b, "ecc_threshold") for b in (20, 23, 26, 29)]


def _regs(*words: int) -> str:
    return ", ".join(hex(w) for w in (list(words) + [0] * 7)[:7])


@pytest.mark.parametrize("reg,bit,cls", XID74_TABLE, ids=[f"{r}:{b}" for r, b, _ in XID74_TABLE])
def test_an_xid_74s_register_bit_reads_as_nvidias_table_says(reg, bit, cls):
    """One set bit of an Xid 74's seven registers decodes to its class in NVIDIA's WORKFLOW_NVLINK_ERR table
    (formats.md §2.2), and the line's reading follows: only sympathetic bits, a report of a fault elsewhere; only
    ignorable ones, nothing to do; any other, the link's own error. The action asked the reader to decode them."""
    from ingest.extract import xid74_registers

    words = [0] * 7
    words[reg - 1] = 1 << bit
    got = xid74_registers(_regs(*words))
    ordinal = {1: "1st", 3: "3rd", 4: "4th", 5: "5th"}[reg]
    reading = {"ignorable": "ignorable", "sympathetic": "sympathetic",
               "sympathetic_fabric_reset": "sympathetic"}.get(cls, "own_error")
    assert got == {"register_bits": f"{ordinal}:{bit}", "register_classes": cls, "register_reading": reading}


def test_an_xid_74s_registers_read_as_a_whole():
    """Sympathetic bits beside another bit follow that bit's resolution (NVIDIA: "if seen with other bits set …
    follow the resolution for those"); ignorable ones beside a sympathetic one leave it sympathetic; a bit the table
    does not name (the 2nd register) is NVIDIA's "report a bug"; no bit set, or not seven registers, reads nothing."""
    from ingest.extract import xid74_registers

    assert xid74_registers("0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0") == {
        "register_bits": "3rd:16", "register_classes": "field_diag_if_repeated", "register_reading": "own_error"}
    assert xid74_registers("0x102, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0") == {
        "register_bits": "1st:1 1st:8", "register_classes": "sympathetic possible_hardware",
        "register_reading": "own_error"}
    assert xid74_registers("0x800003, 0x0, 0x0, 0x30000, 0x0, 0x0, 0x0")["register_reading"] == "sympathetic"
    assert xid74_registers("0x0, 0x4, 0x0, 0x0, 0x0, 0x0, 0x0") == {
        "register_bits": "2nd:2", "register_classes": "undocumented", "register_reading": "own_error"}
    assert xid74_registers("0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0") is None
    assert xid74_registers("0x2, 0x0") is None
    assert xid74_registers(None) is None
    # registers are 32 bits: a wider value is none the driver printed (a 9,300-digit one named every bit: break-it)
    assert xid74_registers("0x1" + "0" * 8 + ", 0x0, 0x0, 0x0, 0x0, 0x0, 0x0") is None
    assert xid74_registers("0xFFFFFFFF, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0")["register_bits"].count(":") == 32


def test_every_class_of_an_xid_74s_bits_has_its_sentence():
    """Each class ``ingest.extract.XID74_BITS`` gives a set bit (and a bit it does not name) has the sentence
    ``correlate.incident.registers_say`` tells it by: a class without one would be left out of the action unsaid."""
    from correlate.incident import _REGISTERS_SAY
    from ingest.extract import XID74_BITS, XID74_UNDOCUMENTED

    assert set(XID74_BITS.values()) | {XID74_UNDOCUMENTED} == set(_REGISTERS_SAY)


def test_an_xid_74s_bits_are_named_up_to_eight_then_counted():
    """Seven registers of all ones set 224 bits: the sentence names eight and counts the rest (it named all 224, 5.7 kB
    in each of the explanation and the action: a break-it pass)."""
    from types import SimpleNamespace

    from correlate.incident import _bits
    from ingest.extract import xid74_registers

    e = SimpleNamespace(details=xid74_registers(", ".join(["0xffffffff"] * 7)))
    assert _bits(e) == ", ".join(f"1st register bit {b}" for b in range(8)) + " and 216 more"
    e = SimpleNamespace(details=xid74_registers("0x2, 0x0, 0x0, 0x10000, 0x0, 0x0, 0x0"))
    assert _bits(e) == "1st register bit 1, 4th register bit 16"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), min_size=7, max_size=7))
def test_every_set_bit_of_an_xid_74s_registers_is_read(words):
    """Property: the decode names each set bit once, in register and bit order, with its table class or
    ``undocumented``; the reading is sympathetic only when every class is sympathetic or ignorable and one is
    sympathetic, ignorable only when every one is."""
    from ingest.extract import XID74_BITS, xid74_registers

    got = xid74_registers(_regs(*words))
    set_bits = [(r, b) for r, w in enumerate(words, start=1) for b in range(32) if w >> b & 1]
    if not set_bits:
        assert got is None
        return
    ordinal = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 5: "5th", 6: "6th", 7: "7th"}
    assert got["register_bits"].split() == [f"{ordinal[r]}:{b}" for r, b in set_bits]
    classes = list(dict.fromkeys(XID74_BITS.get(rb, "undocumented") for rb in set_bits))
    assert got["register_classes"].split() == classes
    kinds = set(classes)
    want = ("ignorable" if kinds == {"ignorable"} else "sympathetic"
            if kinds <= {"ignorable", "sympathetic", "sympathetic_fabric_reset"} else "own_error")
    assert got["register_reading"] == want
