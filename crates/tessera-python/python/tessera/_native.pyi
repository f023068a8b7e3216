"""Type stubs of the native module ``tessera._native`` (built from Rust with PyO3)."""

from typing import Any, Callable, Optional

class Error(Exception):
    """Base class of Tessera's errors; its message is one sentence saying what went wrong."""

class SQLError(Error):
    """A statement that cannot be parsed or planned: bad SQL, an unknown table, column or function."""

class ExecutionError(Error):
    """A statement that failed while running: unreadable or missing data, malformed JSON,
    the memory limit, the object store."""

class RejectedLinesWarning(UserWarning):
    """Lines a query or ingest skipped as malformed (on_error='skip'): the count and the
    first places."""

class Relation:
    """A query: it runs when its rows are fetched, each time anew."""

    @property
    def columns(self) -> list[str]:
        """The names of the result's columns."""
    @property
    def types(self) -> list[str]:
        """The Arrow types of the result's columns, as text (``Int64``, ``Utf8``, ...)."""
    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """Runs the query and exports its rows as an Arrow C stream (a PyCapsule)."""
    def arrow(self) -> Any:
        """Runs the query; its rows as a ``pyarrow.Table``."""
    def df(self) -> Any:
        """Runs the query; its rows as a ``pandas.DataFrame``."""
    def pl(self) -> Any:
        """Runs the query; its rows as a ``polars.DataFrame``."""
    def fetchall(self) -> list[tuple[Any, ...]]:
        """Runs the query; its rows as a list of tuples."""
    def show(self, max_rows: int = 40) -> None:
        """Runs the query and prints its first ``max_rows`` rows as a table."""
    def explain(self) -> str:
        """The query's optimized logical plan and its physical plan, as text."""

class IngestSummary:
    """What an ingest committed: documents, files, rejected lines and where they went."""

    table: str
    """The table's location."""
    documents: int
    """Documents committed."""
    version: int
    """The table version the commit created."""
    files: int
    """Data files written."""
    bytes_written: int
    """Bytes of the data files and their side files."""
    rejects: int
    """Lines skipped as malformed (with ``on_error='skip'``)."""
    reject_file: Optional[str]
    """The file holding every rejected line with its reason, when there were any."""
    elapsed_s: float
    """Wall time of the ingest, in seconds."""

class Connection:
    """A Tessera session with its settings, tables and thread pool."""

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
        """Opens a session; S3 settings not given come from the environment."""
    def sql(
        self, query: str, variables: Optional[Callable[[str], object]] = None
    ) -> Optional[Relation]:
        """Runs the statements of ``query``; the last one, if a query, as a lazy relation."""
    def execute(
        self, query: str, variables: Optional[Callable[[str], object]] = None
    ) -> Relation:
        """Runs every statement of ``query``; a relation over the last one's rows."""
    def register(self, name: str, data: object) -> None:
        """Makes ``data`` (an object with ``__arrow_c_stream__``) a table called ``name``."""
    def unregister(self, name: str) -> None:
        """Removes the table called ``name``."""
    def ingest(
        self, sources: list[str], table: str, on_error: Optional[str] = None
    ) -> IngestSummary:
        """Appends the NDJSON documents of ``sources`` to the Tessera table at ``table``."""
    def close(self) -> None:
        """Closes the connection; relations made from it still run."""
