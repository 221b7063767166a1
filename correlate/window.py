"""Time semantics of correlation, stated once.

* Events of one host share one clock: they are related in time when
  ``|t1 − t2| ≤ W + r1 + r2`` (``r`` = the resolution of each stamp: a
  ``dmesg -T`` or syslog stamp is only good to the second).
* Across hosts h1, h2 each clock may be off by its skew bound:
  ``|t1 − t2| ≤ W + skew(h1) + skew(h2) + r1 + r2`` (DESIGN.md).
* A watchdog timeout is placed at its implied start (``Ev.start``).
* Streaming: the **watermark** is the largest event time seen minus the
  largest skew bound; a group of events is *closed* when the watermark has
  passed its last event by ``W``; an event older than the watermark minus the
  **allowed lateness** is *too late* to change an emitted incident (it is
  still stored, and counted).

All times are µs (int).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from correlate.model import Ev

S = 1_000_000


@dataclass(slots=True)
class Clocks:
    """Per-host skew bounds (µs) and the default for hosts not listed."""

    skew_us: dict[str, int] = field(default_factory=dict)
    default_skew_us: int = 2 * S

    def skew(self, host: str) -> int:
        return self.skew_us.get(host, self.default_skew_us)

    def max_skew(self) -> int:
        return max([self.default_skew_us, *self.skew_us.values()])


def tolerance(a: Ev, b: Ev, window_us: int, clocks: Clocks) -> int:
    """The largest |t_a − t_b| (µs) at which ``a`` and ``b`` may be related."""
    tol = window_us + a.precision_us + b.precision_us
    if a.host != b.host:
        tol += clocks.skew(a.host) + clocks.skew(b.host)
    return tol


def within(a: Ev, b: Ev, window_us: int, clocks: Clocks) -> bool:
    """``a`` and ``b`` are close enough in time to be related (module doc)."""
    return abs(a.start - b.start) <= tolerance(a, b, window_us, clocks)


def not_after(cause: Ev, effect: Ev, clocks: Clocks) -> bool:
    """``cause`` did not clearly happen after ``effect``: a cause may look later
    than its effect only by the clocks' uncertainty."""
    return cause.start <= effect.start + tolerance(cause, effect, 0, clocks)


@dataclass(slots=True)
class Watermark:
    """Event-time progress of a stream (µs)."""

    max_ts: int | None = None

    def observe(self, ts: int) -> None:
        if self.max_ts is None or ts > self.max_ts:
            self.max_ts = ts

    def value(self, clocks: Clocks) -> int | None:
        """Largest time t such that no event with time < t is still expected on time."""
        return None if self.max_ts is None else self.max_ts - clocks.max_skew()

    def closed(self, last_start: int, window_us: int, clocks: Clocks) -> bool:
        """A group whose last event started at ``last_start`` can take no more on-time events."""
        wm = self.value(clocks)
        return wm is not None and wm > last_start + window_us

    def too_late(self, ts: int, lateness_us: int, clocks: Clocks) -> bool:
        """An event this old can no longer change an emitted incident."""
        wm = self.value(clocks)
        return wm is not None and ts < wm - lateness_us
