"""``firstfault lake …``: upkeep of the Parquet lake from the command line.

    firstfault lake compact                          # every closed hour
    firstfault lake compact --hour 2026-11-30T03     # one hour
    firstfault lake compact --before 2026-11-30 --dry-run

Exit codes as the main command: 0 ok, 1 the lake could not be read or written, 2 a usage or configuration error
(no lake at the configured path included).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from api.render import cli_console

lake_app = typer.Typer(no_args_is_help=True, help="Upkeep of the Parquet lake (compaction).")
err = cli_console("stderr")


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def _parse_before(text: str) -> datetime:
    """An ISO 8601 time (no zone = UTC; ``Z`` allowed) -> aware UTC datetime. Raises ValueError (a time whose UTC
    is no date, ``0001-01-01T00:00+01:00``, included: it raised OverflowError, a traceback and exit code 1)."""
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        return (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)
    except (ValueError, OverflowError):
        raise ValueError(f"a time like 2026-11-30T04 or 2026-11-30T04:00:00Z (UTC), not {text!r}") from None


@lake_app.command("compact", short_help="Merge each closed hour's parts into one part per partition folder.")
def compact_cmd(
    hour: Annotated[Optional[str], typer.Option(metavar="<hour>",
                                                help="only this UTC hour, e.g. 2026-11-30T03")] = None,
    before: Annotated[Optional[str], typer.Option(metavar="<time>", help="only hours that ended by this time (ISO "
                                                  "8601, UTC without a zone); default: every closed hour")] = None,
    min_age: Annotated[Optional[float], typer.Option("--min-age", min=0, metavar="<seconds>", help=(
        "an hour is closed this long after its end (default: the allowed_lateness_s setting + 600)"))] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="read and count; write and remove nothing")] = False,
    config: Annotated[Optional[Path], typer.Option("--config", help="TOML settings file", exists=True,
                                                   dir_okay=False)] = None,
) -> None:
    """Merge each closed hour's parts into one part per partition folder, dropping the rows the views drop
    anyway (the correlator's service does it hourly); print what was merged."""
    from api.degraded_links import parse_hour
    from api.report_cli import require_lake
    from ingest.compact import closed_before, compact, default_min_age_s, hour_folders
    from ingest.lake import Lake, LakeError

    if hour is not None and before is not None:
        raise typer.BadParameter("--hour names one hour, --before every hour up to a time: one of them",
                                 param_hint="--hour")
    try:
        h = parse_hour(hour) if hour is not None else None
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--hour") from None
    try:
        b = _parse_before(before) if before is not None else None
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--before") from None
    from api.cli import _settings  # at call time: api.cli imports this module

    settings = _settings(config)  # exit 2 on a bad setting, as every command
    require_lake(settings)
    age = default_min_age_s(settings.allowed_lateness_s) if min_age is None else min_age
    limit = closed_before(datetime.now(timezone.utc), age)
    if h is not None and h + timedelta(hours=1) > limit:
        last = limit - timedelta(hours=1)
        raise typer.BadParameter(f"the hour {h:%Y-%m-%dT%H} is not closed: an hour is compacted {age:.0f} s after "
                                 f"its end (--min-age); the latest closed hour is {last:%Y-%m-%dT%H}",
                                 param_hint="--hour")
    err.print(f"[dim]lake: {escape(str(settings.lake))}[/]")
    from api.cli import _progress

    failed: list[str] = []

    def folder_failed(folder, e: LakeError) -> None:  # said at once; the other folders are compacted
        failed.append(folder.rel)
        err.print(f"[red]{escape(str(e))}[/] (its parts are left as they are)")

    try:
        merged = compact(Lake(settings.lake), hour=h, before=b, min_age_s=age, dry_run=dry_run, progress=_progress(),
                         on_error=folder_failed)
    except LakeError as e:
        err.print(f"[red]{escape(str(e))}[/]")
        raise typer.Exit(1) from None
    verb = "would merge" if dry_run else "merged"
    for m in merged:
        kept = "" if dry_run or m.removed == m.parts else f" ({m.parts - m.removed} changed meanwhile: kept)"
        print(f"{m.rel}: {m.parts} parts → {m.into}, {m.rows_before:,} → {m.rows_after:,} rows, "
              f"{_size(m.bytes_before)} → {_size(m.bytes_after)}{kept}")
    if failed:
        err.print(f"[red]{len(failed)} folder{'s' * (len(failed) > 1)} not compacted[/]")
    if not merged:
        if not failed and h is not None and not hour_folders(Lake(settings.lake), h):
            # a mistyped hour was told "every closed hour asked has one part per folder": as if it were compacted
            # (a fresh user's trial of the README's `--hour 2026-11-30T03` on the demo's lake)
            err.print(f"nothing to compact: the lake holds no parts of the hour {h:%Y-%m-%dT%H}",
                      markup=False, highlight=False)
        elif not failed:
            err.print(f"nothing to compact: every closed hour{' asked' if h or b else ''} has one part per folder",
                      markup=False, highlight=False)
        raise typer.Exit(1 if failed else 0)
    parts = sum(m.parts for m in merged)
    err.print(f"{verb} {parts:,} parts of {len(merged):,} folders into {len(merged):,}: "
              f"{sum(m.rows_before for m in merged):,} → {sum(m.rows_after for m in merged):,} rows, "
              f"{_size(sum(m.bytes_before for m in merged))} → {_size(sum(m.bytes_after for m in merged))}",
              markup=False, highlight=False)
    if failed:
        raise typer.Exit(1)
