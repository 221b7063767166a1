"""Read-only analyst SQL: one checked query on a locked-down DuckDB connection.

Only single ``SELECT`` statements (which includes ``WITH``, ``VALUES``,
``DESCRIBE``-free reads) are accepted; anything else — ``COPY``, ``ATTACH``,
``INSTALL``, ``SET``, ``CREATE``, ``INSERT`` … — is refused before it runs.
The connection itself can read only the lake folder, has external access
and extension loading off, and its configuration locked (``api.store.connect``).
"""

from __future__ import annotations

import math
import re
import sys
import threading
from datetime import datetime
from pathlib import Path

import duckdb
import pyarrow as pa
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from api.render import no_output_folder, output_in_store, reader_gone, write_output
from api.store import (QUERY_FAILED, QUERY_INVALID, QUERY_REFUSED, StoreError, again_if_vanished, own_duckdb,
                       bounded_query, connect, decimal_floats, json_bytes, json_default, nanosecond_times,
                       query_error, query_verdict, refuse_day_end_times, refuse_lossy_columns)
from ingest.lake import Lake
from schemas.settings import Settings

ALLOWED = {duckdb.StatementType.SELECT}


class SqlRefused(ValueError):
    """The query is not a single read-only SELECT; the message says why. ``verdict``: :data:`QUERY_INVALID` when
    it does not parse (or is no UTF-8), else :data:`QUERY_REFUSED`."""

    def __init__(self, message: str, verdict: str = QUERY_REFUSED) -> None:
        super().__init__(message)
        self.verdict = verdict


#: ``firstfault sql``'s exit code for each verdict: the query is the user's to change (2, a usage error), or it
#: failed while it ran (1)
EXIT_CODES = {QUERY_INVALID: 2, QUERY_REFUSED: 2, QUERY_FAILED: 1}


def query_problem(e: Exception, timeout_s: float = 0, setting: str = "") -> tuple[str, str]:
    """What went wrong with an analyst's query, as ``firstfault sql`` and ``POST /sql`` both say it (``verdict:
    message``): its verdict (:data:`QUERY_INVALID`, :data:`QUERY_REFUSED` or :data:`QUERY_FAILED`) and its message
    in one line, of a :class:`SqlRefused`, a :class:`StoreError` or a DuckDB error (``timeout_s`` and ``setting``:
    its time limit, as :func:`api.store.query_error` says it)."""
    if isinstance(e, (SqlRefused, StoreError)):
        return e.verdict, str(e)
    return query_verdict(e), query_error(e, timeout_s, setting)


def check_read_only(query: str) -> str:
    """Return the single SELECT statement in ``query`` or raise :class:`SqlRefused`."""
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:  # a command-line argument that was no UTF-8 (surrogate escapes)
        raise SqlRefused("the query is not valid UTF-8", QUERY_INVALID) from None
    try:
        stmts = own_duckdb().extract_statements(query)  # not duckdb's shared one: requests run at once
    except duckdb.Error as e:
        raise SqlRefused(query_error(e, 0), QUERY_INVALID) from e  # "Parser Error: syntax error at or near …"
    if len(stmts) != 1:
        raise SqlRefused(f"send exactly one statement (got {len(stmts)})" + (": run them one at a time"
                                                                             if len(stmts) > 1 else ""))
    try:
        kind = stmts[0].type
    except ValueError:  # a statement type this duckdb's Python enum does not know (UPDATE EXTENSIONS)
        kind = None
    name = _statement_name(stmts[0].query, kind)
    if kind == duckdb.StatementType.MULTI and name.split()[0] in ("PIVOT", "UNPIVOT", "SELECT", "FROM", "WITH"):
        # a read with PIVOT without an IN list: DuckDB runs it as several statements
        raise SqlRefused("PIVOT without an IN list runs as several statements: name its values "
                         "(PIVOT events ON kind IN ('xid', 'sxid') USING count(*))")
    if kind not in ALLOWED:
        raise SqlRefused(f"only SELECT queries are allowed, not {name}")
    return query


_WORDS = re.compile(r"([A-Za-z]+)(?:\s+(DATABASE|EXTENSIONS|INSTALL|INTO|ON|OR\s+REPLACE|TRANSACTION|CHECKPOINT)\b)?",
                    re.I)


def _statement_start(text: str) -> int:
    """Where a statement's first keyword starts: after blanks, ``--`` line comments and ``/* */`` comments,
    which DuckDB nests."""
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        else:
            break
    return i


def _statement_name(text: str, kind: object) -> str:
    """What a statement is, as it was written: its first keyword or two (``IMPORT DATABASE``, ``TRUNCATE``,
    ``INSTALL``); DuckDB's type name for one that starts with ``WITH`` (``INSERT``). DuckDB's own type names
    another statement after the one it runs it as (INSTALL as LOAD, TRUNCATE as DELETE: a fresh-user trial and a
    break-it pass read "not LOAD" for INSTALL)."""
    m = _WORDS.match(text, _statement_start(text))
    name = getattr(kind, "name", "an unknown kind of statement")
    if m is None or m[1].upper() == "WITH":
        return name
    return " ".join(" ".join(w.upper().split()) for w in m.groups() if w)


#: DuckDB's errors for a query that cannot be bound to the views (an unknown table, column, function or type) or
#: that reads outside the lake (the connection's sandbox, ``api.store.connect``): exit 2, as for a query that does
#: not parse; the others (I/O, the timeout, a bad value) exit 1
#: rows the terminal table shows (``--format table``); the other formats write every row up to ``sql_max_rows``
TABLE_MAX_ROWS = 1000
#: what a terminal would act on in a value (ESC, BEL, backspace, carriage return …) or that turns the text around it
#: (the bidirectional overrides and isolates, line and paragraph separators): shown as its escape instead
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: characters of one cell the terminal table shows; the rest is said to be cut (csv and json write it all)
TABLE_MAX_CELL = 1000

#: the last line of ``firstfault sql`` without a query (stderr): how to see a view's columns
COLUMNS_HINT = 'columns: firstfault sql "DESCRIBE events" (or another view; events_between(lo, hi) is a macro)'
#: --output file name endings and the format they say (``firstfault sql`` without --format)
_BY_SUFFIX = {".csv": "csv", ".json": "json", ".ndjson": "json", ".jsonl": "json", ".parquet": "parquet"}


def output_format(fmt: str | None, output: Path | None, force: bool) -> str:
    """The format ``--format`` and ``--output`` say together (``fmt`` None: from ``output``'s name, else a table).
    Raises ``typer.BadParameter`` for a pair that cannot be written, said as click says the other commands' usage
    errors (``report degraded-links``'s; these were plain lines: a new user's trial): exit 2, before the query
    runs. An existing ``output`` is replaced only with ``force`` (a query's result over an input log, silently, was
    a break-it pass's find)."""
    from typer import BadParameter  # typer 0.29 carries its own click: its BadParameter is the one it catches

    if output is not None and output.is_file() and not force:  # a device or FIFO is written as it is
        raise BadParameter(f"{output} exists (--force replaces it)", param_hint="--output")
    if fmt is None:  # a file's format from its name; else a table on the terminal
        fmt = _BY_SUFFIX.get(output.suffix.lower()) if output is not None else "table"
        if fmt is None:
            raise BadParameter(f"say --format for {output.name} (csv, json or parquet; a name ending in .csv, .json, "
                               ".ndjson or .parquet says it)", param_hint="--format")
    if fmt == "table" and output is not None:
        raise BadParameter("table is for the terminal: write csv, json or parquet to --output", param_hint="--format")
    if fmt == "parquet" and output is None:
        raise BadParameter("parquet needs --output FILE", param_hint="--format")
    return fmt


def check_output(settings: Settings, fmt: str | None, output: Path | None, force: bool) -> str:
    """The format to write (:func:`output_format`), once ``output`` is known to be a file that may be written (not a
    folder, not in the lake or the state folder): its usage errors (``typer.BadParameter``) come before anything is
    read or said."""
    no_output_folder(output)
    output_in_store(output, settings.lake, settings.state_dir)
    return output_format(fmt, output, force)


def run_sql(settings: Settings, query: str | None, fmt: str | None, output: Path | None, out: Console,
            err: Console, force: bool = False) -> int:
    """CLI body of ``firstfault sql``; returns the exit code. ``fmt`` None: from ``output``'s name, else a
    table. ``output`` inside the lake or the state folder is refused (2); an existing file is replaced only with
    ``force`` (2 without: a query's result over an input log, silently, was a break-it pass's find): these usage
    errors raise ``typer.BadParameter``."""
    fmt = check_output(settings, fmt, output, force)
    listing = query is None
    if listing:
        # the views, then the table macros (events_between(lo, hi)) with their parameters
        query = ("SELECT table_name AS name, table_type AS type FROM information_schema.tables UNION ALL "
                 "SELECT function_name || '(' || array_to_string(parameters, ', ') || ')', 'TABLE MACRO' "
                 "FROM duckdb_functions() WHERE function_type = 'table_macro' AND NOT internal ORDER BY name")
    try:
        check_read_only(query)
    except SqlRefused as e:
        return _said(err, e)
    try:
        con = connect(Lake(settings.lake))
    except StoreError as e:  # the lake cannot be opened at all (its views' SQL, an S3 error): one line, not a traceback
        err.print(f"[red]{escape(str(e))}[/]")
        return 1
    timer = threading.Timer(settings.sql_timeout_s, con.interrupt)
    timer.start()
    abandoned = False
    try:
        def fetch() -> pa.Table | None:  # None: a column name twice, which a JSON row cannot hold
            rel = con.sql(query)
            refuse_lossy_columns(rel)
            dup = sorted({n for n in rel.columns if rel.columns.count(n) > 1})
            if dup and fmt == "json":  # a JSON object keeps one of them (POST /sql refuses them alike)
                err.print(f"[red]columns {escape(', '.join(map(repr, dup)))} appear more than once:[/] a JSON row "
                          "keeps one; give them distinct aliases, or choose another --format")
                return None
            tbl = rel.limit(settings.sql_max_rows + 1).arrow()  # one more row says it was cut
            return tbl.read_all() if hasattr(tbl, "read_all") else tbl

        # a part the hourly compaction removed after the query listed it: run it again, as the API's queries do;
        # nothing was written yet. Waited for sql_timeout_s and a grace at most, as POST /sql (bounded_query):
        # one function call building a huge value (repeat('a', 1000000000)) does not stop when interrupted
        tbl = bounded_query(lambda: again_if_vanished(fetch), settings.sql_timeout_s, None)
        if tbl is None:
            return 2
        if tbl.num_rows > settings.sql_max_rows:
            tbl = tbl.slice(0, settings.sql_max_rows)
            err.print(f"[yellow]truncated:[/] the first {settings.sql_max_rows} rows only (sql_max_rows); "
                      "narrow the query or raise the setting")
        if fmt != "parquet":  # Parquet keeps a TIME of 24:00:00; the others go through Python's datetime.time
            refuse_day_end_times(tbl)
            tbl = decimal_floats(tbl)
        if fmt in ("json", "table"):  # written through Python values, which hold microseconds
            tbl = nanosecond_times(tbl)
        if output is not None:
            _write(tbl, fmt, output)
            err.print(f"wrote {tbl.num_rows} row{'' if tbl.num_rows == 1 else 's'} to {output}", markup=False)
            if listing:
                err.print(COLUMNS_HINT, markup=False, highlight=False)
            return 0
        if fmt == "table":
            # a table for reading: its first rows (rich lays out every cell: 99k rows of events took minutes and GB,
            # a break-it pass); csv/json write them all
            _print_table(tbl.column_names, [list(r.values()) for r in tbl.slice(0, TABLE_MAX_ROWS).to_pylist()],
                         out, err)
            if tbl.num_rows > TABLE_MAX_ROWS:
                err.print(f"the table shows the first {TABLE_MAX_ROWS:,} of {tbl.num_rows:,} rows: -f csv or -f json "
                          "(to a file with -o) gives them all", highlight=False)
            else:
                err.print(f"{tbl.num_rows} row{'' if tbl.num_rows == 1 else 's'}", highlight=False)
        elif fmt == "csv":
            import sys

            import pyarrow.csv as pacsv

            pacsv.write_csv(_flat(tbl), sys.stdout.buffer)
        else:
            import sys

            for row in tbl.to_pylist():
                sys.stdout.buffer.write(json_bytes(row) + b"\n")
        if listing:  # the views' columns are one query away (a new user's trial listed the names alone)
            err.print(COLUMNS_HINT, markup=False, highlight=False)
        return 0
    except (duckdb.Error, StoreError) as e:  # StoreError: a result no output format can hold as it is
        # a query that reads files or the network is refused, not failed (a fresh user's trial: "query failed"); one
        # naming a table, column or function that is not there is invalid, a usage error like a parse error, exit 2
        # (it said "query failed", the words of a query that fails while it runs, exit 1: a new user's trial)
        if isinstance(e, StoreError) and e.abandoned:
            abandoned = True  # closing its connection would wait for it: the process's exit ends it
        return _said(err, e, settings.sql_timeout_s)
    except pa.ArrowNotImplementedError as e:  # e.g. an interval column: Parquet has no such type
        err.print(f"[red]cannot write the result as {fmt}:[/] {escape(str(e))}; CAST that column to VARCHAR, "
                  "or choose another --format")
        return 2
    except (OverflowError, ValueError, pa.ArrowException) as e:  # a value Python cannot hold ('infinity'::DATE)
        err.print(f"[red]a value cannot be written as {fmt}[/] ({type(e).__name__}: {escape(str(e))}); CAST it to "
                  "VARCHAR, or write --format parquet")
        return 2
    except OSError as e:  # a full disk: said; a reader gone (`| head -1`): quiet, exit 141 as `diagnose` (a fresh
        # user's trial: exit 1, a runtime failure's)
        if isinstance(e, BrokenPipeError):
            reader_gone()
        err.print(f"[red]cannot write the output:[/] {escape(str(e))}")
        return 1
    finally:
        timer.cancel()
        if not abandoned:
            con.close()


def _said(err: Console, e: Exception, timeout_s: float = 0) -> int:
    """Say a query's error on ``err`` as ``POST /sql`` says it (:func:`query_problem`); its exit code."""
    verdict, msg = query_problem(e, timeout_s, "sql_timeout_s")
    err.print(f"[red]{verdict}:[/] {escape(msg)}")
    return EXIT_CODES[verdict]


#: the fewest characters a column of the terminal table gets (or its whole width, when narrower): a table whose
#: columns need more than the terminal has prints one block per row instead
TABLE_MIN_COLUMN = 10


def table_fits(names: list[str], rows: list[list[str]], width: int) -> bool:
    """Whether a table of ``names`` and ``rows`` (cells as shown) fits ``width`` with each column at least
    :data:`TABLE_MIN_COLUMN` wide, or as wide as its widest cell when narrower (rich folds the rest). Rich squeezed
    ``SELECT * FROM events``' 33 columns to 1 - 3 characters each, and one row of ``incidents`` took 143 lines (a new
    user's trial)."""
    from rich.cells import cell_len

    need = 3 * len(names) + 1  # the borders: "│ " before each cell, " │" after the last
    for i, name in enumerate(names):
        widest = 0
        for cell in (name, *(r[i] for r in rows)):
            widest = max(widest, max((cell_len(x) for x in cell.splitlines()), default=0))
            if widest >= TABLE_MIN_COLUMN:
                break
        need += min(widest, TABLE_MIN_COLUMN)
    return need <= width


def _print_table(columns: list[str], values: list[list[object]], out: Console, err: Console) -> None:
    """The terminal table of ``columns`` and the rows' ``values``; when its columns do not fit the terminal
    (:func:`table_fits`), one block per row instead, a ``column  value`` line per column (as DuckDB's ``.mode
    line``), said on ``err``. Names and values are text, not rich markup ("[rank0]", "[/]"). A column of numbers
    (every value an int or float, or null) is right-aligned, as DuckDB's and psql's tables do: ``xid`` 13 above 119
    read as text (a new user's trial)."""
    names = [_cell(c) for c in columns]
    rows = [[_table_cell(v) for v in row] for row in values]
    if table_fits(names, rows, out.width) or not rows:
        t = Table()
        for i, name in enumerate(names):
            t.add_column(Text(name), overflow="fold", justify="right" if _numbers(row[i] for row in values) else "left")
        for row in rows:
            t.add_row(*map(Text, row))
        out.print(t)
        return
    err.print("too wide for the terminal: one block per row (-f csv / -f json for a file)", markup=False,
              highlight=False)
    out.file.write("".join(f"{line}\n" for line in row_blocks(names, rows, out)))


def row_blocks(names: list[str], rows: list[list[str]], console: Console):
    """The lines of one block per row, ``console``'s width wide: a ``-[ row N ]-`` line, then a line per column, its
    name padded to the longest (at most half the width) and its value folded to the rest; a blank line between
    blocks. Written out, not laid out by rich: a grid of 1,000 rows of 33 columns took 5 s."""
    from itertools import zip_longest

    from rich.cells import cell_len

    def fold(text: str, w: int) -> list[str]:
        if "\n" not in text and cell_len(text) <= w:
            return [text]
        return [x.plain for x in Text(text).wrap(console, w, overflow="fold")] or [""]

    nw = min(max(map(cell_len, names)), max(console.width // 2, TABLE_MIN_COLUMN))
    vw = max(console.width - nw - 2, 1)
    for n, row in enumerate(rows, 1):
        if n > 1:
            yield ""
        yield f"-[ row {n} ]-"
        for name, cell in zip(names, row):
            for a, b in zip_longest(fold(name, nw), fold(cell, vw), fillvalue=""):
                yield f"{a}{' ' * (nw - cell_len(a))}  {b}".rstrip()


def _numbers(column) -> bool:
    """Whether the values of ``column`` (an iterable of Python values) are numbers: ints, floats or decimals (not
    bools), at least one, the rest null."""
    from decimal import Decimal

    seen = False
    for v in column:
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float, Decimal)):
            return False
        seen = True
    return seen


def _cell(v: object) -> str:
    """A value as a terminal table shows it: nothing for null (and for NaN and infinities, which are null in
    JSON), a list, struct, interval or blob as JSON (:func:`api.store.json_default`), anything else as its
    text, control characters as their escapes (``\\x1b``)."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, bytes):
        return json_default(v)
    if isinstance(v, (list, dict, pa.MonthDayNano)):
        return json_bytes(v).decode()
    # a value's control characters are shown, not obeyed (an analyst's chr(27)||'[2J' cleared the terminal)
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(v))


def _table_cell(v: object) -> str:
    """:func:`_cell` as the terminal table shows it: its first :data:`TABLE_MAX_CELL` characters and how many there
    are (1,000 cells of 64 KB took 8 s and 1 GB to lay out: a break-it pass)."""
    c = _cell(v)
    return c if len(c) <= TABLE_MAX_CELL else f"{c[:TABLE_MAX_CELL]}… ({len(c):,} characters)"


def _flat(tbl):
    """CSV has no lists, structs, intervals or bytes: such columns become JSON text, a BLOB its base64 text (as
    in json and the table; its bytes need not be UTF-8); NaN and infinities are null (an empty field), as in
    JSON, where a list or struct holds them too. A time with a time zone is written in UTC in ISO 8601 as the report's
    CSV and the API write it (``2026-11-30T03:12:00.000000Z``; Arrow's CSV writer put a space for the ``T``)."""
    import pyarrow.compute as pc

    cols = {}
    for name, col in zip(tbl.column_names, tbl.columns):
        _check_dates(name, col)
        if pa.types.is_timestamp(col.type) and col.type.tz is not None:
            col = pc.strftime(col.cast(pa.timestamp(col.type.unit, "UTC")), format="%Y-%m-%dT%H:%M:%SZ")
        elif pa.types.is_floating(col.type):
            col = pc.if_else(pc.is_finite(col), col, pa.scalar(None, col.type))
        elif pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type) or pa.types.is_fixed_size_binary(
                col.type):
            col = pa.array([None if v is None else json_default(v) for v in col.to_pylist()], type=pa.string())
        elif pa.types.is_nested(col.type) or pa.types.is_interval(col.type):
            col = pa.array([None if v is None else json_bytes(v).decode() for v in col.to_pylist()], type=pa.string())
        cols[name] = col
    return pa.table(cols)


def _check_dates(name: str, col) -> None:
    """ValueError for a date or time outside the years 1 – 9999 (``'infinity'::DATE``, ``'-infinity'::TIMESTAMPTZ``,
    year 294247), which json and the table refuse: Arrow's CSV writer printed ``<value out of range: …>`` or a year
    -28164 as data, exit 0 (a break-it pass)."""
    import pyarrow.compute as pc

    t = col.type
    if not (pa.types.is_timestamp(t) or pa.types.is_date(t)) or getattr(t, "unit", "") == "ns":  # ns: 1677 - 2262
        return
    lo, hi = (pa.scalar(v, pa.timestamp("us")).cast(pa.timestamp(t.unit), safe=False) if pa.types.is_timestamp(t)
              else pa.scalar(v.date(), pa.date32()).cast(t) for v in (datetime.min, datetime.max))  # s, ms: truncated
    plain = col.cast(pa.timestamp(t.unit)) if pa.types.is_timestamp(t) else col  # a zone does not move the bounds
    out = pc.or_(pc.less(plain, lo), pc.greater(plain, hi))
    if pc.any(out).as_py():
        raise ValueError(f"column {name!r} holds a date or time outside the years 1 - 9999 (infinity?)")


def _write(tbl, fmt: str, output: Path) -> None:
    """``tbl`` into ``output`` as ``fmt`` (``render.write_output``: whole or not at all)."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    def write(f) -> None:
        if fmt == "parquet":
            pq.write_table(tbl, f)
        elif fmt == "csv":
            pacsv.write_csv(_flat(tbl), f)
        else:
            for row in tbl.to_pylist():
                f.write(json_bytes(row) + b"\n")

    write_output(output, write)
