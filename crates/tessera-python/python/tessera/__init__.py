"""Tessera from Python: SQL over JSON and tables in object storage, results as Arrow.

Shaped like DuckDB's Python API::

    import tessera

    con = tessera.connect()
    rel = con.sql("SELECT j->>'kind' AS kind, count(*) AS n FROM 'events.json' GROUP BY kind")
    rel.arrow()      # pyarrow.Table (the relation exports __arrow_c_stream__)
    rel.df()         # pandas.DataFrame
    rel.pl()         # polars.DataFrame
    rel.fetchall()   # [(kind, n), ...]

Objects that export Arrow streams (pyarrow tables, pandas and polars data frames) are
queried by name: registered with ``con.register(name, obj)``, or found as the caller's
variables when a statement names a table the session does not know.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from types import FrameType
from typing import Callable, Iterable, Optional, Union

from tessera._native import (
    Connection as _NativeConnection,
    Error,
    ExecutionError,
    IngestSummary,
    RejectedLinesWarning,
    Relation,
    SQLError,
)

__all__ = [
    "Connection",
    "Error",
    "ExecutionError",
    "IngestSummary",
    "RejectedLinesWarning",
    "Relation",
    "SQLError",
    "connect",
    "default_connection",
    "execute",
    "sql",
]

# Every statement's skipped lines are reported, even when a statement repeats the same
# warning from the same place (Python's default would show it only once).
warnings.filterwarnings("always", category=RejectedLinesWarning)

_PathLike = Union[str, "os.PathLike[str]"]


def _variables_of(frame: Optional[FrameType]) -> Callable[[str], object]:
    """A lookup of the variables visible in ``frame``: its locals, then its globals."""

    def lookup(name: str) -> object:
        if frame is None:
            return None
        if name in frame.f_locals:
            return frame.f_locals[name]
        return frame.f_globals.get(name)

    return lookup


class Connection:
    """A Tessera session: its settings, tables and thread pool.

    Use ``tessera.connect()`` to open one; ``with`` closes it at the end of the block.
    """

    def __init__(
        self,
        threads: Optional[int] = None,
        memory_limit: Optional[str] = None,
        on_error: Optional[str] = None,
        dialect: Optional[str] = None,
        endpoint_url: Optional[str] = None,
        region: Optional[str] = None,
        profile: Optional[str] = None,
    ) -> None:
        """Opens a session; see ``tessera.connect`` for the arguments."""
        self._native = _NativeConnection(
            threads=threads,
            memory_limit=memory_limit,
            on_error=on_error,
            dialect=dialect,
            endpoint_url=endpoint_url,
            region=region,
            profile=profile,
        )

    def sql(self, query: str) -> Optional[Relation]:
        """Runs the statements of ``query`` (separated by ';').

        The last statement, if it is a query, comes back as a lazy ``Relation`` that runs
        when fetched; any other statement runs at once and gives ``None``. A table name
        the session does not know is looked up among the caller's variables.
        """
        return self._native.sql(query, _variables_of(sys._getframe(1)))

    def execute(self, query: str) -> Relation:
        """Runs every statement of ``query`` (SET, CREATE ..., INSERT, queries) to its end.

        Returns a relation over the last statement's rows (already computed).
        """
        return self._native.execute(query, _variables_of(sys._getframe(1)))

    def register(self, name: str, data: object) -> None:
        """Makes ``data`` a table called ``name`` (replacing one of that name).

        ``data`` is any object with ``__arrow_c_stream__``: a pyarrow table, a pandas
        (>= 2.2) or polars data frame. Its rows are shared, not copied.
        """
        self._native.register(name, data)

    def unregister(self, name: str) -> None:
        """Removes the table called ``name``; nothing happens if there is none."""
        self._native.unregister(name)

    def ingest(
        self,
        source: Union[_PathLike, Iterable[_PathLike]],
        table: _PathLike,
        on_error: Optional[str] = None,
    ) -> IngestSummary:
        """Appends the NDJSON documents of ``source`` to the Tessera table ``table``.

        ``source`` is a file, glob or ``s3://`` URL (``.gz``/``.zst`` decompressed) or a
        list of them; ``table`` a directory or URL, created when missing. All documents
        go in one commit. ``on_error='skip'`` skips malformed lines (reported as a
        ``RejectedLinesWarning`` and in the summary) for this ingest only.
        """
        if isinstance(source, (str, os.PathLike)):
            sources = [os.fspath(source)]
        else:
            sources = [os.fspath(s) for s in source]
        return self._native.ingest(sources, os.fspath(table), on_error)

    def close(self) -> None:
        """Closes the connection; relations made from it still run."""
        self._native.close()

    def __enter__(self) -> "Connection":
        """The connection itself, closed when the ``with`` block ends."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Closes the connection."""
        self.close()


def connect(
    threads: Optional[int] = None,
    memory_limit: Optional[str] = None,
    on_error: Optional[str] = None,
    dialect: Optional[str] = None,
    endpoint_url: Optional[str] = None,
    region: Optional[str] = None,
    profile: Optional[str] = None,
) -> Connection:
    """Opens a connection.

    ``threads``: partitions and worker threads per query (default: all cores).
    ``memory_limit``: what a query's operators may hold before spilling or failing
    (``'2GB'``, ``'512MiB'``, ``'25%'``; default ``'50%'``). ``on_error``: ``'fail'``
    (default) or ``'skip'`` malformed JSON lines. ``dialect``: ``'postgres'`` (default)
    or ``'duckdb'``. ``endpoint_url``, ``region``, ``profile``: S3 settings, otherwise
    from ``AWS_*`` variables and the shared AWS files.
    """
    return Connection(
        threads=threads,
        memory_limit=memory_limit,
        on_error=on_error,
        dialect=dialect,
        endpoint_url=endpoint_url,
        region=region,
        profile=profile,
    )


_default: Optional[Connection] = None
_default_lock = threading.Lock()


def default_connection() -> Connection:
    """The connection ``tessera.sql`` and ``tessera.execute`` use, opened on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = connect()
        return _default


def sql(query: str) -> Optional[Relation]:
    """``Connection.sql`` on the default connection."""
    return default_connection()._native.sql(query, _variables_of(sys._getframe(1)))


def execute(query: str) -> Relation:
    """``Connection.execute`` on the default connection."""
    return default_connection()._native.execute(query, _variables_of(sys._getframe(1)))
