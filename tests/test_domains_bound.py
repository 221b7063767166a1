"""ingest.publish.Domains keeps the latest communicator of at most MAX_COMM_HOSTS hosts (issue 6: no unbounded
state as pods come and go), and keys a live host's events as before."""

from __future__ import annotations

import pyarrow as pa

from ingest import publish
from ingest.publish import Domains

S = 1_000_000
T0 = 1_800_000_000_000_000


def inits(hosts: list[str], ts: list[int], comms: list[str]) -> pa.Table:
    return pa.table({"host": hosts, "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
                     "kind": ["nccl_init"] * len(hosts), "comm": comms})


def test_churning_pods_keep_domains_bounded_and_live_keys_unchanged(monkeypatch):
    monkeypatch.setattr(publish, "MAX_COMM_HOSTS", 1000)
    d = Domains()
    d.seed([("node01", T0, "0xlive")])
    for b in range(100):  # 100 batches of 200 new pods each (20,000 hosts), a second apart, node01 in each
        hosts = [f"pod-{b}-{i}" for i in range(200)]
        t = T0 + (b + 1) * S
        d.learn(inits([*hosts, "node01"], [t] * 201, [f"0x{b}"] * 200 + ["0xlive"]))
        assert len(d.comm_of_host) <= 1000 + 1000 // 4 + 201
    assert d.key("node01") == "comm:0xlive"  # heard lately: kept
    assert d.key("pod-99-7") == "comm:0x99"
    assert d.key("pod-0-7") == "host:pod-0-7"  # among the oldest: keyed by itself, as a host never heard of
    assert d.key("pod-0-7", "0xabc") == "comm:0xabc"
    big = Domains()
    big.seed([(f"pod-{i}", T0 + i, "0x1") for i in range(5000)])
    assert len(big.comm_of_host) == 1000 and min(t for t, _ in big.comm_of_host.values()) == T0 + 4000
