"""100,000 lines of ordinary kernel, NCCL INFO and training output raise nothing of severity warning or above."""

from __future__ import annotations

import time

from correlate.correlator import correlate
from ingest.decode import Decoded, Segment
from tests.benign_corpus import lines


def test_benign_corpus_is_clean(pipeline):
    text = "\n".join(lines(100_000)).encode()
    segs = [Segment(data=text, origin="t:benign", stream="s", host="node01", ref_ts=1_796_000_000_000_000,
                    ref_basis="kafka", ingest_ts=1_796_000_000_000_000)]
    batch = pipeline.run(Decoded(segments=segs))
    assert batch.lines == 100_000
    loud = [(r["signature"], r["severity"], r["message"][:80]) for r in batch.events.to_pylist()
            if r["severity"] in ("critical", "error", "warning")]
    assert loud == []
    # what it did recognise is ordinary: NCCL init/transport facts, benign fallbacks, info lines
    assert batch.events.num_rows > 0
    incidents = correlate(batch.events, batch.link_samples, batch.topology, now_us=int(time.time() * 1e6))
    assert [i for i in incidents if i["severity"] != "info"] == []
