"""Fixtures: a real refgraph server (uvicorn in a subprocess) and an SSE client."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    port: int
    db: Path
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/agui"

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), **self.env}
        self.log = self.db.with_suffix(f".{self.port}.log")
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "agora_refgraph", "--port", str(self.port), "--db", str(self.db)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"refgraph exited {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"refgraph not up on {self.url}: {self.log.read_text()[-2000:]}")

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=15)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def _factory(tmp: Path) -> Iterator[Any]:
    started: list[Server] = []

    def make(db: Path | None = None, **env: str) -> Server:
        srv = Server(port=free_port(), db=db or tmp / f"checkpoints-{len(started)}.sqlite", env=env)
        srv.start()
        started.append(srv)
        return srv

    yield make
    for srv in started:
        if srv.proc is not None and srv.proc.poll() is None:
            srv.stop()


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Any]:
    yield from _factory(tmp_path)


# Starting a server costs seconds of imports on a loaded machine: tests share
# one per module and keep apart by thread id.
@pytest.fixture(scope="module")
def module_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from _factory(tmp_path_factory.mktemp("refgraph"))


@pytest.fixture(scope="module")
def server(module_servers: Any) -> Server:
    return module_servers()


@pytest.fixture(scope="module")
def switched_server(module_servers: Any) -> Server:
    """A server with the test switches on: reject marker "#poison", 400 ms delay."""
    return module_servers(REFGRAPH_REJECT_MARKER="#poison", REFGRAPH_DELAY_MS="400")


def run_input(
    thread_id: str,
    message_id: str,
    text: str,
    *,
    mode: str = "feedback",
    notes: list[dict[str, Any]] | None = None,
    run_id: str | None = None,
) -> dict[str, Any]:
    """A RunAgentInput as refgraph/README.md says the bridge sends it."""
    context: list[dict[str, str]] = []
    if notes is not None:
        context = [
            {"description": "isOfflineBatch", "value": "true"},
            {"description": "messageCount", "value": str(len(notes))},
            {"description": "notes", "value": json.dumps(notes)},
        ]
    return {
        "threadId": thread_id,
        "runId": run_id or f"run-{message_id}",
        "messages": [{"id": message_id, "role": "user", "content": text}],
        "state": {},
        "tools": [],
        "context": context,
        "forwardedProps": {"interactionMode": mode, "deviceId": thread_id},
    }


def post_run(url: str, body: dict[str, Any], timeout: float = 30) -> list[dict[str, Any]]:
    """POST a run and return its SSE events, in order."""
    events: list[dict[str, Any]] = []
    with httpx.stream("POST", url, json=body, headers={"Accept": "text/event-stream"}, timeout=timeout) as resp:
        resp.raise_for_status()
        assert resp.headers["content-type"].startswith("text/event-stream")
        for line in resp.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[len("data: ") :]))
    return events


def final_state(events: list[dict[str, Any]]) -> dict[str, Any]:
    snaps = [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"]
    assert snaps, f"no STATE_SNAPSHOT in {[e['type'] for e in events]}"
    return snaps[-1]


def streamed_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
