"""Ctrl-C and the GIL, in child processes (a query that holds the GIL or ignores signals
would hang the test run; the child is killed after a generous timeout instead)."""

import select
import signal
import subprocess
import sys
import textwrap

# Only to keep a broken build from hanging the suite; not a measure of speed.
HANG_TIMEOUT_S = 120

# Hours of work: a sum over a trillion generated rows (the filter keeps statistics from
# answering it without running).
PROLOGUE = textwrap.dedent(
    """
    import _thread, sys, threading, time
    import tessera
    con = tessera.connect(threads=2)
    rel = con.sql("SELECT sum(value % 7) FROM generate_series(1, 1000000000000) WHERE value % 5 <> 0")
    started = threading.Event()
    ticks = []

    def python_work():
        # 200 sleeps, each needing the GIL back: they finish only while the query runs
        # without it.
        started.wait()
        for i in range(200):
            time.sleep(0.001)
            ticks.append(i)
    """
)

EPILOGUE = textwrap.dedent(
    """
    threading.Thread(target=worker, daemon=True).start()
    try:
        started.set()
        # The query runs inside this one native call (fetchall() would first run
        # pyarrow's Python code, which lets the thread tick with or without the query).
        rel.__arrow_c_stream__()
        print("finished", flush=True)
    except KeyboardInterrupt:
        print(f"interrupted after {len(ticks)} ticks", flush=True)
    # The connection still works after a cancelled query.
    print("then", con.sql("SELECT 41 + 1").fetchall(), flush=True)
    """
)


def start(worker: str) -> subprocess.Popen:
    script = PROLOGUE + textwrap.dedent(worker) + EPILOGUE
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(child: subprocess.Popen) -> str:
    try:
        out, err = child.communicate(timeout=HANG_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        raise AssertionError(f"the child hung: {out} {err}")
    assert child.returncode == 0, err
    return out


def test_a_python_thread_runs_while_a_query_runs_and_can_interrupt_it():
    child = start(
        """
        def worker():
            python_work()
            _thread.interrupt_main()
        """
    )
    out = finish(child)
    assert "interrupted after 200 ticks" in out
    assert "then [(42,)]" in out


def test_sigint_interrupts_a_long_query():
    child = start(
        """
        def worker():
            python_work()
            print("running", flush=True)
        """
    )
    ready, _, _ = select.select([child.stdout], [], [], HANG_TIMEOUT_S)
    assert ready, "the child never said it was running"
    assert child.stdout.readline().strip() == "running"
    child.send_signal(signal.SIGINT)
    out = finish(child)
    assert "interrupted after 200 ticks" in out
    assert "then [(42,)]" in out
