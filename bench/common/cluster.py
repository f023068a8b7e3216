"""A Tessera cluster on loopback: a scheduler and executors, each its own `tessera cluster`
process, started with the environment given (an executor reads the files with its own
credentials) and stopped on exit. Shared by bench/cluster and tests/cluster."""

import signal
import subprocess
import time
import urllib.error
import urllib.request

from common.minio import free_port

# Seconds a cluster may take to register its executors.
READY_S_MAX = 60


class ClusterDidNotStart(RuntimeError):
    """A process of the cluster exited, or the executors did not register in time."""


class Cluster:
    """`executors` executors of `slots` slots and their scheduler; use as a context
    manager. Idle executors poll every 50 ms (busy ones every 5 s) and are lost after 6
    silent seconds, so that a lost executor's tasks move within a test's time."""

    def __init__(self, tessera: str, env: dict, executors: int, slots: int = 1):
        self.tessera = tessera
        self.env = env
        self.executors = executors
        self.slots = slots
        self.port = free_port()
        self.procs = []
        self.executor_procs = []
        # The port each executor serves shuffled data on; with 127.0.0.1, its address.
        self.flight_ports = []

    @property
    def url(self) -> str:
        return f"df://127.0.0.1:{self.port}"

    def _start(self, *args: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            [self.tessera, "cluster", *args],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.procs.append(proc)
        return proc

    def __enter__(self):
        self._start("scheduler", "--bind", f"127.0.0.1:{self.port}", "--executor-timeout-s", "6",
                    "--ready-executors", str(self.executors))
        self.flight_ports = [free_port() for _ in range(self.executors)]
        self.executor_procs = [
            self._start("executor", "--scheduler", self.url, "--flight-port", str(port),
                        "--grpc-port", str(free_port()), "--slots", str(self.slots))
            for port in self.flight_ports
        ]
        deadline = time.monotonic() + READY_S_MAX
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    self.__exit__(None, None, None)
                    raise ClusterDidNotStart(f"a cluster process exited at start: {proc.stderr.read()}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=1)
                return self
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        self.__exit__(None, None, None)
        raise ClusterDidNotStart(f"{self.executors} executors did not register within {READY_S_MAX} s")

    def __exit__(self, *exc):
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
