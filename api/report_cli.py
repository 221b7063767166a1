"""``firstfault report …``: the hourly reports from the command line.

    firstfault report degraded-links --hour 2026-11-30T03 --format html --output links.html
    firstfault report degraded-links --hour 2026-11-30T03 --store     # all formats into the lake

Exit codes as the main command: 0 ok, 1 the lake could not be read or the
file not written, 2 a usage or configuration error (no lake at the configured path included).
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Literal, Optional

import typer
from rich.markup import escape

from api.render import cli_console, no_output_folder, output_in_store, reader_gone, write_output
from schemas.settings import Settings, SettingsError, load_settings

report_app = typer.Typer(no_args_is_help=True, help="Reports over the lake (degraded NVLinks, hourly).")
err = cli_console("stderr")


def require_lake(s: Settings) -> None:
    """Exit 2 with a hint when the local lake (a path or ``file://`` URL) has no ``events`` folder: it was never
    written, or the path is mistyped or names another folder (a read would show empty tables and write the
    lake's table folders into it)."""
    from api.cli import refuse_lake_file
    from ingest.lake import Lake, lake_path

    refuse_lake_file(s)  # a file, a broken link: no lake can be there (as `serve` says)
    if not Lake(s.lake).remote and not (lake_path(s.lake) / "events").is_dir():
        demo = escape(str(s.state_dir / "demo" / "lake"))  # under the state folder a demo of these settings uses
        err.print(f"[red]no lake at {escape(str(s.lake))}[/] (no events/ folder): run `make demo` (its lake is "
                  f"{demo}) or point FIRSTFAULT_LAKE / --config at one")
        raise typer.Exit(2)


@report_app.command("degraded-links", short_help="Links down that the topology expects up, error counters that "
                    "rose, flapping links, for one hour.", help=(
    "Links down that the topology expects up, error counters that rose, flapping links, for one hour.\n\n"
    "One row per physical link, worst first (down, flapped, errors), each with its next action; a GPU-to-GPU link "
    "degraded at both ends is one row naming its peer where nvidia-smi nvlink -R gave the far end; a flap across "
    "the hour's boundary is in both hours. Reads the lake (FIRSTFAULT_LAKE). In full: docs/report.md."))
def degraded_links(
    hour: Annotated[Optional[str], typer.Option(metavar="<hour>",
                                                help="UTC hour, e.g. 2026-11-30T03; default: the last "
                                                     "complete hour")] = None,
    format: Annotated[Optional[Literal["json", "html", "csv", "parquet"]], typer.Option(
        "--format", "-f", help="default: from --output's suffix (.json .html .csv .parquet); json without -o; "
                               "another suffix needs --format")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="file to write; default: stdout "
                                                   "(not for parquet)", dir_okay=False)] = None,
    store: Annotated[bool, typer.Option("--store", help="write every format into "
                                        "reports/degraded_links/ of the lake, a folder per date and hour (what "
                                        "the service does hourly); print the files")] = False,
    config: Annotated[Optional[Path], typer.Option("--config", help="TOML settings file", exists=True,
                                                   dir_okay=False)] = None,
) -> None:
    """Links down that the topology expects up, error counters that rose, flapping links, for one hour (``help``:
    what ``--help`` shows, with what a row is; one paragraph a line, as rich keeps a docstring's line breaks)."""
    from api.degraded_links import due_hour, parse_hour
    from api.report import degraded_link_report, not_over, write_hourly
    from api.report_render import FORMATS, render
    from api.store import StoreError

    if store and (format is not None or output is not None):  # they were ignored, silently (a break-it pass)
        raise typer.BadParameter("--store writes every format into the lake; --format and --output write one file "
                                 "instead", param_hint="--store")
    no_output_folder(output)
    if format is None:  # a file's format from its name, as `firstfault sql` (report.xlsx was written as JSON)
        format = output.suffix.lower().lstrip(".") if output is not None else "json"
        format = {"htm": "html"}.get(format, format)  # not .ndjson: the report is one indented JSON document
        if format not in FORMATS:
            raise typer.BadParameter(f"say --format for {output.name} ({', '.join(FORMATS)}; a name ending in "
                                     f"{', '.join('.' + f for f in FORMATS)} says it)", param_hint="--format")
    if format not in FORMATS:
        raise typer.BadParameter(f"one of {', '.join(FORMATS)}", param_hint="--format")
    if format == "parquet" and output is None and not store:
        raise typer.BadParameter("parquet needs --output FILE", param_hint="--output")
    try:
        # an empty --hour (a recipe's $HOUR that came out empty) is an error, not the last complete hour
        dt = parse_hour(hour) if hour is not None else due_hour(datetime.now(timezone.utc), 0)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--hour") from None
    try:
        settings = load_settings(config)
    except SettingsError as e:
        err.print(f"[red]configuration error:[/] {escape(str(e))}")
        raise typer.Exit(2) from None
    output_in_store(output, settings.lake, settings.state_dir)  # as `firstfault sql -o`
    require_lake(settings)
    try:
        notes = [n for n in (not_over(dt),) if n]
        if store and notes:  # the stored files would read as the hour's, until the correlator wrote it over
            raise typer.BadParameter(f"{notes[0]}: --store writes an hour's report once the hour is over (as the "
                                     "correlator does); without --store, see its counts so far", param_hint="--hour")
        report = degraded_link_report(settings, dt)
        for n in notes:
            err.print(n, style="yellow", markup=False, highlight=False)
        if store:
            for f in write_hourly(settings, dt, report=report):
                print(f)
            if not report["totals"]["hosts_sampled"]:  # said as for one format (a fresh user's trial: silent)
                _no_samples(settings, report["hour"])
            return
        if not report["totals"]["hosts_sampled"] and (note := _no_samples(settings, report["hour"])):
            notes.append(note)
        if notes and format in ("json", "html"):  # the HTML too: a partial hour's page read as the whole hour's
            report = {**report, "note": "; ".join(notes)}  # as GET /reports/degraded-links gives it
        data = render(report, format)
        if output is None:
            sys.stdout.buffer.write(data)
        else:
            write_output(output, lambda f: f.write(data))
            err.print(f"wrote the {format} report of {report['hour']} to {output}", markup=False, highlight=False)
    except ValueError as e:  # the fleet config file
        err.print(f"[red]configuration error:[/] {escape(str(e))}")
        raise typer.Exit(2) from None
    except BrokenPipeError:  # a reader gone (`| head`): quiet, exit 141; it said "[Errno 32] Broken pipe", exit 1
        reader_gone()
    except (StoreError, OSError) as e:
        err.print(f"[red]{escape(str(e))}[/]")
        raise typer.Exit(1) from None


def _no_samples(settings: Settings, hour: str) -> str | None:
    """Say on stderr why ``hour``'s report lists no host (``api.report.why_empty``), and return it as the JSON
    report's ``note`` (as the API's): an empty report is otherwise indistinguishable from a healthy fleet."""
    from api.report import why_empty

    why = why_empty(settings, hour)
    if not why:
        return None
    note = f"no host in the report of {hour}: {why}"
    err.print(note, style="yellow", markup=False, highlight=False)
    return note
