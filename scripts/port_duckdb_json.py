#!/usr/bin/env python3
"""Ports DuckDB's JSON sqllogictest files (test/sql/json) to Tessera's sqllogictest suite.

Why: DuckDB's own JSON tests are the specification of issue 17. The expected answers are
not copied from the checkout (it is newer than the DuckDB we compare with): every kept case
is run again in DuckDB 2.0.0 (one connection per file, records in order) and its answer
written in the canonical text form that `crates/tessera-engine/tests/common/canonical.rs`
produces from Arrow arrays, so both sides print a value the same way.

Run with the venv's python (DuckDB 2.0.0 is there), from the repository root:

    source scripts/env.sh
    $TESSERA_VENV/bin/python scripts/port_duckdb_json.py

Canonical text of a value (kept in step with canonical.rs):
- NULL is `NULL`; booleans `true`/`false`; integers in decimal; decimals fixed-point with
  their scale (`1.50`).
- Floats are widened to double and printed in the shortest form that reads back to the
  same double, as Rust's `{:?}` prints it: `1.0`, `0.1`, `1e20`, `1.5e-7`, `inf`, `-inf`,
  `NaN` (Python's repr, with the exponent's `+` and leading zeros removed).
- Strings as they are at the top level (the empty string is `(empty)`); inside a list,
  struct or map they are single-quoted with `\\` and `'` escaped, so that `['a, b']` and
  `['a', 'b']` differ.
- Blobs: printable ASCII as is, other bytes (and `\\`) as `\\xNN`.
- Dates `2020-01-02`, times `10:00:00.5`, timestamps `2020-01-02 10:00:00.5` (fraction
  without trailing zeros), with `+00` appended for timestamps with a time zone (in UTC).
- Intervals as Python prints a `timedelta` (`1 day, 0:00:00`; a month is 30 days).
- Lists and arrays `[a, b]`, structs `{'k': v}`, maps `{k=v}` (keys and values nested).
A cell holding line breaks continues on rows of its own (one per further line); an empty
line is written `(empty)`. Cells of a row are separated by a tab.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import decimal
import fnmatch
import math
import os
import re
import shutil
import subprocess
import sys
import uuid

DEFAULT_REPO = "/work/.mirror/duckdb+duckdb/repo"
TESTS_PREFIX = "test/sql/json"
DUCKDB_VERSION = "2.0.0"
# DuckDB's file reads name data below this directory; Tessera's tests run from test/data.
DATA_DIR_OUT = "duckdb_json"
ROWS_MAX = 10_000
LOOP_EXPANSIONS_MAX = 200

# `foreach` type classes of DuckDB's runner that the JSON tests use.
TYPE_CLASSES = {
    "<signed>": "tinyint smallint integer bigint hugeint".split(),
    "<unsigned>": "utinyint usmallint uinteger ubigint uhugeint".split(),
}
TYPE_CLASSES["<integral>"] = TYPE_CLASSES["<signed>"] + TYPE_CLASSES["<unsigned>"]
TYPE_CLASSES["<numeric>"] = TYPE_CLASSES["<integral>"] + ["float", "double"]

# Requirements a Tessera session meets (it reads Parquet); a file needing another is left
# out whole.
REQUIRES_IGNORED = {"json", "notwindows", "parquet"}
# Requirements of only some cases of a file: those cases are left out, the rest kept.
REQUIRES_PER_CASE = {"httpfs"}

# Cases whose SQL matches are left out, with the reason (first match wins).
DROP_PATTERNS = [
    (re.compile(r"(\(|\bfrom)\s*'https?://", re.I), "reads over HTTP"),
    (re.compile(r"\{TEMP_DIR\}|\{TEST_DIR\}|__TEST_DIR__", re.I),
     "writes or reads a temporary file (COPY TO, EXPORT)"),
    (re.compile(r"\bjson_(serialize|deserialize)_(sql|plan)\b|\bjson_execute_serialized_sql\b", re.I),
     "serializes DuckDB's own syntax trees or plans"),
    (re.compile(r"\btest_vector_types\b|\btest_all_types\b", re.I),
     "DuckDB's internal test table functions"),
    (re.compile(r"^\s*(pragma|explain)\b", re.I), "DuckDB's pragmas and plan text"),
    (re.compile(r"^\s*(set|reset)\s+(threads|memory_limit|calendar|timezone|enable_|disable_|preserve_insertion_order|default_null_order|errors_as_json)", re.I),
     "DuckDB engine setting"),
    (re.compile(r"^\s*(attach|detach|checkpoint|install|load|export|import)\b", re.I),
     "DuckDB database files and extensions"),
]


@dataclasses.dataclass
class Case:
    """One statement or query of a DuckDB test file, after loops are expanded."""

    kind: str  # "statement" or "query"
    expect_error: bool
    sort_mode: str | None
    sql: str
    dropped: str | None = None


@dataclasses.dataclass
class Ported:
    """What became of one file: its kept cases' text, and counts of what was dropped."""

    path: str
    records: list[str] = dataclasses.field(default_factory=list)
    kept: int = 0
    dropped: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    file_dropped: str | None = None
    error_kept_ok: int = 0


class Repo:
    """A DuckDB checkout read through git, without a work tree."""

    def __init__(self, git_dir: str, rev: str):
        self.git_dir = git_dir
        self.rev = rev
        self._data = None

    def git(self, *args: str) -> bytes:
        return subprocess.run(["git", "-C", self.git_dir, *args], check=True,
                              capture_output=True).stdout

    def test_files(self, prefix: str) -> list[str]:
        names = self.git("ls-tree", "-r", "--name-only", self.rev, prefix).decode()
        return sorted(n for n in names.splitlines() if re.search(r"\.test(_slow)?$", n))

    def text(self, path: str) -> str:
        return self.git("show", f"{self.rev}:{path}").decode()

    def data_files(self) -> dict[str, tuple[str, int | None]]:
        """Files under data/: path -> (object id, size in bytes or None if not a blob)."""
        if self._data is None:
            self._data = {}
            listing = self.git("ls-tree", "-r", "-l", self.rev, "data").decode()
            for line in listing.splitlines():
                meta, path = line.split("\t", 1)
                _mode, kind, oid, size = meta.split()
                # A blob missing from a partial clone has size "BAD".
                stored = kind == "blob" and size.isdigit()
                self._data[path] = (oid, int(size) if stored else None)
        return self._data


def parse_file(text: str) -> tuple[list[Case], str | None]:
    """DuckDB's test file into cases, loops expanded; or the reason the file is left out."""
    lines = text.split("\n")
    cases: list[Case] = []
    # Each frame: (variable names, list of value tuples, cases collected in the body).
    frames: list[tuple[list[str], list[list[str]], list[Case]]] = []
    skipping = False
    after_restart = False
    skip_next: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        tokens = line.split()
        i += 1
        if not tokens or line.startswith("#"):
            continue
        head = tokens[0]
        target = frames[-1][2] if frames else cases
        if head in ("statement", "query"):
            case, i = parse_record(lines, i, tokens)
            if skip_next:
                case.dropped, skip_next = skip_next, None
            elif skipping:
                case.dropped = "mode skip"
            elif after_restart:
                case.dropped = "needs a database file or a restart (load, restart)"
            target.append(case)
        elif head == "require":
            if tokens[1] not in REQUIRES_IGNORED | REQUIRES_PER_CASE:
                return [], f"require {tokens[1]}"
        elif head in ("loop", "foreach"):
            names, values = loop_values(head, tokens)
            if names is None:
                return [], f"unsupported {line}"
            frames.append((names, values, []))
        elif head == "endloop":
            names, values, body = frames.pop()
            target = frames[-1][2] if frames else cases
            target.extend(expand(names, values, body))
        elif head == "mode":
            skipping = {"skip": True, "unskip": False}.get(tokens[1], skipping)
        elif head in ("load", "restart"):
            after_restart = True
        elif head == "skipif" and tokens[1] == "duckdb" or head == "onlyif" and tokens[1] != "duckdb":
            skip_next = f"{head} {tokens[1]}"
        elif head in ("concurrentloop", "concurrentforeach"):
            return [], f"unsupported {head}"
    return cases, None


def parse_record(lines: list[str], i: int, tokens: list[str]) -> tuple[Case, int]:
    """One statement or query starting after its header line at `i`; returns the next line."""
    kind = tokens[0]
    expect_error = kind == "statement" and tokens[1] == "error"
    sort_mode = None
    if kind == "query" and len(tokens) > 2 and tokens[2] in ("nosort", "rowsort", "valuesort", "sort"):
        sort_mode = "rowsort" if tokens[2] == "sort" else tokens[2]
    sql_lines = []
    while i < len(lines) and lines[i].strip() and lines[i].strip() != "----":
        sql_lines.append(lines[i].rstrip())
        i += 1
    if i < len(lines) and lines[i].strip() == "----":
        while i < len(lines) and lines[i].strip():
            i += 1
    return Case(kind, expect_error, sort_mode, "\n".join(sql_lines)), i


def loop_values(head: str, tokens: list[str]) -> tuple[list[str] | None, list[list[str]]]:
    """The variable names and the value tuples a `loop` or `foreach` header runs through."""
    if head == "loop":
        return [tokens[1]], [[str(v)] for v in range(int(tokens[2]), int(tokens[3]))]
    names = tokens[1].split(",")
    values: list[list[str]] = []
    for token in tokens[2:]:
        if token.startswith("<"):
            if token not in TYPE_CLASSES:
                return None, []
            values.extend([t] for t in TYPE_CLASSES[token])
        else:
            values.append(token.split(",") if len(names) > 1 else [token])
    return names, values


def expand(names: list[str], values: list[list[str]], body: list[Case]) -> list[Case]:
    """The loop body once per value tuple, `${name}` and `{name}` replaced."""
    out = []
    for n, tuple_ in enumerate(values):
        for case in body:
            sql = case.sql
            for name, value in zip(names, tuple_):
                sql = sql.replace("${" + name + "}", value).replace("{" + name + "}", value)
            dropped = case.dropped or drop_reason(sql)
            if not dropped and n >= LOOP_EXPANSIONS_MAX:
                dropped = f"loop iterations beyond {LOOP_EXPANSIONS_MAX}"
            out.append(dataclasses.replace(case, sql=sql, dropped=dropped))
    return out


DATA_REF = re.compile(r"\{DATA_DIR\}/([^'\"\s)\]]+)|'data/([^']+)'")


def data_paths(sql: str) -> list[str]:
    """The paths below DuckDB's data/ directory that `sql` reads."""
    return ["data/" + (m.group(1) or m.group(2)) for m in DATA_REF.finditer(sql)]


def rewrite_data(sql: str, repo: Repo, out_dir: str, size_max: int) -> tuple[str, str | None]:
    """`sql` reading copies below test/data/duckdb_json; or the reason it cannot."""
    files = repo.data_files()
    for path in data_paths(sql):
        matches = [p for p in files
                   if p == path or fnmatch.fnmatchcase(p, path) or p.startswith(path.rstrip("/") + "/")]
        if not matches:
            return sql, f"reads a data file missing from the checkout ({path})"
        for match in matches:
            oid, size = files[match]
            if size is None or size > size_max:
                return sql, f"reads a data file over {size_max // 1000} KB or not stored ({match})"
        for match in matches:
            copy_blob(repo, files[match][0], os.path.join(out_dir, match[len("data/"):]))
    sql = sql.replace("{DATA_DIR}/", DATA_DIR_OUT + "/").replace("'data/", f"'{DATA_DIR_OUT}/")
    return sql, None


def copy_blob(repo: Repo, oid: str, dest: str) -> None:
    """Writes the checkout's object `oid` to `dest` (once; several cases read one file)."""
    if os.path.exists(dest):
        return
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "wb") as f:
        f.write(repo.git("cat-file", "blob", oid))


def drop_reason(sql: str) -> str | None:
    """Why a case cannot be ported (DROP_PATTERNS, a placeholder left); None if it can."""
    for pattern, reason in DROP_PATTERNS:
        if pattern.search(sql):
            return reason
    if re.search(r"\{(?!DATA_DIR\})[A-Z_]+\}", sql):
        return "a placeholder of DuckDB's runner"
    return None


# ---- canonical values ------------------------------------------------------------------


def fmt_float(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = repr(x)
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text


def fmt_fraction(micros: int) -> str:
    return ("." + f"{micros:06d}".rstrip("0")) if micros else ""


def fmt_blob(data: bytes) -> str:
    return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02X}" for b in data)


def quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def children(duck_type) -> list:
    try:
        return list(duck_type.children)
    except Exception:  # a type without children (DuckDB raises for scalars)
        return []


def fmt_value(value, duck_type, nested: bool) -> str:
    """`value` (as DuckDB's Python API returns it) in the canonical text form."""
    type_id = getattr(duck_type, "id", None)
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return fmt_float(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, str):
        return quote(value) if nested else value
    if isinstance(value, (bytes, bytearray, memoryview)):
        text = fmt_blob(bytes(value))
        return quote(text) if nested else text
    if isinstance(value, datetime.datetime):
        suffix = ""
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc)
            suffix = "+00"
        return value.strftime("%Y-%m-%d %H:%M:%S") + fmt_fraction(value.microsecond) + suffix
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, datetime.time):
        return value.strftime("%H:%M:%S") + fmt_fraction(value.microsecond)
    if isinstance(value, uuid.UUID):
        return quote(str(value)) if nested else str(value)
    kids = children(duck_type)
    if isinstance(value, (list, tuple)):
        child = kids[0][1] if kids else None
        return "[" + ", ".join(fmt_value(v, child, True) for v in value) + "]"
    if isinstance(value, dict):
        if type_id == "map":
            key_type, value_type = (kids[0][1], kids[1][1]) if len(kids) == 2 else (None, None)
            return "{" + ", ".join(f"{fmt_value(k, key_type, True)}={fmt_value(v, value_type, True)}"
                                   for k, v in value.items()) + "}"
        types = dict(kids)
        return "{" + ", ".join(f"{quote(k)}: {fmt_value(v, types.get(k), True)}"
                               for k, v in value.items()) + "}"
    return str(value)


def cell_lines(text: str) -> list[str]:
    return [line if line else "(empty)" for line in text.split("\n")]


def format_rows(rows: list[tuple], types: list) -> list[list[str]]:
    """Result rows as the harness lays them out: multi-line cells continue on rows of their own."""
    out = []
    for row in rows:
        cells = [cell_lines(fmt_value(v, t, False)) for v, t in zip(row, types)]
        out.append([c[0] for c in cells])
        out.extend([line] for c in cells for line in c[1:])
    return out


def type_letter(duck_type) -> str:
    name = str(duck_type).upper()
    if re.fullmatch(r"U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)", name):
        return "I"
    if name in ("FLOAT", "DOUBLE") or name.startswith("DECIMAL"):
        return "R"
    return "T"


# ---- running in DuckDB -----------------------------------------------------------------


def run_cases(duckdb, cases: list[Case], ported: Ported) -> None:
    """Runs the kept cases in one DuckDB connection, in order, and writes their records."""
    con = duckdb.connect(config={"threads": 1})
    try:
        for case in cases:
            if case.dropped:
                ported.dropped[case.dropped] += 1
                continue
            record = run_case(con, case, ported)
            if record is None:
                continue
            ported.records.append(record)
            ported.kept += 1
    finally:
        con.close()


def run_case(con, case: Case, ported: Ported) -> str | None:
    try:
        result = con.execute(case.sql)
        rows = result.fetchall() if case.kind == "query" and result.description else None
        types = [d[1] for d in result.description] if result.description else []
    except Exception:  # DuckDB's errors have many classes; any of them is "an error"
        if case.kind == "statement" and case.expect_error:
            return f"statement error\n{case.sql}\n"
        ported.dropped["DuckDB 2.0.0 fails where the checkout expects an answer "
                       "(a newer feature, or it needs a dropped case)"] += 1
        return None
    if case.kind == "statement":
        if case.expect_error:
            ported.error_kept_ok += 1
        return f"statement ok\n{case.sql}\n"
    if rows is None:
        ported.dropped["query without a result"] += 1
        return None
    if len(rows) > ROWS_MAX:
        ported.dropped[f"more than {ROWS_MAX} rows"] += 1
        return None
    lines = format_rows(rows, types)
    sort_mode = case.sort_mode
    if sort_mode in (None, "nosort") and len(lines) > 1 and not re.search(r"\border\s+by\b", case.sql, re.I):
        # SQL gives no order without ORDER BY; DuckDB's insertion order is not specified.
        sort_mode = "rowsort"
    if sort_mode == "rowsort":
        lines.sort()
    elif sort_mode == "valuesort":
        lines = sorted([v] for row in lines for v in row)
    header = "query " + "".join(type_letter(t) for t in types)
    if sort_mode in ("rowsort", "valuesort"):
        header += " " + sort_mode
    body = "\n".join("\t".join(row) for row in lines)
    return f"{header}\n{case.sql}\n----\n{body}\n" if body else f"{header}\n{case.sql}\n----\n"


# ---- files and the summary -------------------------------------------------------------


def port_file(duckdb, repo: Repo, path: str, args) -> Ported:
    ported = Ported(path)
    cases, reason = parse_file(repo.text(path))
    if reason:
        ported.file_dropped = reason
        return ported
    for case in cases:
        if case.dropped:
            continue
        case.dropped = drop_reason(case.sql)
        if not case.dropped:
            case.sql, case.dropped = rewrite_data(case.sql, repo, args.data_out, args.data_size_max)
    run_cases(duckdb, cases, ported)
    return ported


def header(path: str) -> str:
    return (f"# Ported from DuckDB's {path} (MIT licence, Copyright DuckDB Foundation).\n"
            f"# Answers from DuckDB {DUCKDB_VERSION}, not the checkout: regenerated by\n"
            "# scripts/port_duckdb_json.py (do not edit by hand; see test/duckdb_json/PORTED.md).\n")


def write_slt(ported: Ported, out_dir: str) -> str | None:
    if not ported.records:
        return None
    rel = ported.path.split("/", 3)[3]
    rel = re.sub(r"\.test(_slow)?$", ".slt", rel)
    dest = os.path.join(out_dir, rel)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "w") as f:
        f.write(header(ported.path) + "\n" + "\n".join(ported.records))
    return rel


def summary(all_ported: list[Ported], rev_id: str) -> str:
    kept = sum(p.kept for p in all_ported)
    reasons = collections.Counter()
    for p in all_ported:
        reasons.update(p.dropped)
    file_reasons = collections.Counter(p.file_dropped for p in all_ported if p.file_dropped)
    out = [
        "# DuckDB's JSON tests, ported",
        "",
        f"Generated by `scripts/port_duckdb_json.py` from DuckDB's `{TESTS_PREFIX}` at commit",
        f"`{rev_id}`, answers from DuckDB {DUCKDB_VERSION}. Do not edit; regenerate.",
        "",
        f"- files: {len(all_ported)}, ported {sum(1 for p in all_ported if p.records)}, "
        f"left out whole {sum(file_reasons.values())}",
        f"- cases kept: {kept}; dropped: {sum(reasons.values())}",
        f"- kept cases the checkout expects to fail but DuckDB {DUCKDB_VERSION} runs: "
        f"{sum(p.error_kept_ok for p in all_ported)}",
        "",
        "## Cases dropped, by reason",
        "",
        "| cases | reason |",
        "|---:|---|",
    ]
    out += [f"| {n} | {r} |" for r, n in reasons.most_common()]
    out += ["", "## Files left out whole", "", "| files | reason |", "|---:|---|"]
    out += [f"| {n} | {r} |" for r, n in file_reasons.most_common()]
    out += ["", "## Files", "", "| file | kept | dropped | note |", "|---|---:|---:|---|"]
    for p in all_ported:
        out.append(f"| {p.path.split('/', 3)[3]} | {p.kept} | {sum(p.dropped.values())} "
                   f"| {p.file_dropped or ''} |")
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", default=DEFAULT_REPO, help="DuckDB's git directory")
    parser.add_argument("--rev", default="HEAD", help="the checkout's revision")
    parser.add_argument("--tests", default=TESTS_PREFIX, help="the test directory to port")
    parser.add_argument("--out", default="test/duckdb_json", help="where the .slt files go")
    parser.add_argument("--data-out", default="test/data/duckdb_json", help="where data files go")
    parser.add_argument("--data-size-max", type=int, default=200_000, help="bytes per data file")
    args = parser.parse_args()
    import duckdb

    if duckdb.__version__ != DUCKDB_VERSION:
        sys.exit(f"DuckDB {DUCKDB_VERSION} expected, found {duckdb.__version__}")
    repo = Repo(args.repo, args.rev)
    rev_id = repo.git("rev-parse", args.rev).decode().strip()
    for root, _dirs, files in os.walk(args.out):
        for name in files:
            if name.endswith(".slt"):
                os.remove(os.path.join(root, name))
    # Data no kept case reads any more goes with the regeneration.
    shutil.rmtree(args.data_out, ignore_errors=True)
    # DuckDB and Tessera both read the copied data by paths relative to test/data.
    args.out, args.data_out = os.path.abspath(args.out), os.path.abspath(args.data_out)
    os.chdir(os.path.dirname(args.data_out))
    all_ported = []
    for path in repo.test_files(args.tests):
        ported = port_file(duckdb, repo, path, args)
        write_slt(ported, args.out)
        all_ported.append(ported)
    text = summary(all_ported, rev_id)
    with open(os.path.join(args.out, "PORTED.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
