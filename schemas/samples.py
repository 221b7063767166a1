"""Side tables the ingest path fills besides events: NVLink samples and topology facts.

``link_samples``: one row per link per sample (``nvidia-smi nvlink -s/-e``,
DCGM): state and speed, or one error counter and its value.
``topology``: what a host told us about its wiring: ``nvlink_remote`` rows from
``nvidia-smi nvlink -R`` (GPU link -> remote device and port), ``topo_path``
rows from ``nvidia-smi topo -m`` (GPU -> peer, path type
``NV<k>``/``PIX``/``PXB``/``PHB``/``NODE``/``SYS``) and ``gpu_bus`` rows (GPU
index -> PCI bus id, from the ``nvidia-smi`` table or ``--query-gpu``).
Times are UTC µs.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa

LINK_SAMPLES_SCHEMA: Final = pa.schema([
    pa.field("host", pa.string(), nullable=False),
    pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("gpu_index", pa.int16()),
    pa.field("device", pa.string()),
    pa.field("link", pa.int16()),
    # "up", "inactive" (nvidia-smi), "down" (DCGM), or null for a counter row
    pa.field("state", pa.string()),
    pa.field("gbps", pa.float64()),  # per-link rate as nvidia-smi prints it, GB/s
    pa.field("counter", pa.string()),  # e.g. "CRC Errors", "Replay Errors", "Recovery Errors"
    pa.field("value", pa.float64()),  # counter value (counts, or a ratio such as a bit error rate)
    pa.field("model", pa.string()),
    pa.field("origin", pa.string(), nullable=False),
])

TOPOLOGY_SCHEMA: Final = pa.schema([
    pa.field("host", pa.string(), nullable=False),
    pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("fact", pa.string(), nullable=False),  # "nvlink_remote" | "topo_path" | "gpu_bus"
    pa.field("gpu_index", pa.int16()),
    pa.field("device", pa.string()),
    pa.field("link", pa.int16()),
    pa.field("peer_name", pa.string()),  # topo -m column name, e.g. "GPU1", "NIC0"
    pa.field("peer_device", pa.string()),  # remote PCI bus id (nvlink -R)
    pa.field("peer_link", pa.int16()),  # remote port / link number
    pa.field("path", pa.string()),  # topo -m cell: NV18, PIX, PXB, PHB, NODE, SYS
    pa.field("origin", pa.string(), nullable=False),
])
