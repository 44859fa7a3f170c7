"""FastAPI app: the graph over AG-UI at /agui, plus read-only run records."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import uvicorn
from ag_ui.core.types import RunAgentInput
from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from ag_ui_langgraph.types import SchemaKeys
from fastapi import FastAPI, HTTPException, Request
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph.state import CompiledStateGraph

from .graph import DEFAULT_REJECT_MARKER, RUN_ID_KEY, Settings, Writing, compile_graph

log = logging.getLogger("agora_refgraph")

PATH = "/agui"
DEFAULT_DB = "build/refgraph/checkpoints.sqlite"


# Runs of one thread, one at a time: concurrent runs on a thread lose state
# updates in LangGraph. Module-level because the endpoint clones the agent
# per request.
_thread_locks: dict[str, asyncio.Lock] = {}
# Runs whose caller went away still finish (below); kept here so they are not
# garbage-collected and so shutdown can wait for them.
_running: set[asyncio.Task[None]] = set()
_schema_keys: dict[int, SchemaKeys] = {}


class RunIdAgent(LangGraphAgent):
    """The adapter's agent with three changes for an at-least-once caller:

    - the AG-UI runId reaches the graph (configurable agui_run_id), which
      records it and uses it as the idempotency key;
    - runs of one thread are serialised;
    - a run outlives its HTTP request: when the caller disconnects (a bridge
      killed mid-run) the run still finishes and records its result, so the
      caller's retry is a replay instead of a second, half-overlapping run.
    """

    def get_schema_keys(self, config: RunnableConfig) -> SchemaKeys:
        # The adapter derives these from pydantic JSON schemas on every run
        # (about half of a run's CPU here); this graph's schemas never change.
        key = id(self.graph)
        if key not in _schema_keys:
            _schema_keys[key] = super().get_schema_keys(config)
        return {k: list(v) for k, v in _schema_keys[key].items()}  # type: ignore[return-value]

    async def run(self, input: RunAgentInput):  # type: ignore[override]
        # The endpoint clones the agent per request: this touches this request only.
        configurable = {**(self.config.get("configurable") or {}), RUN_ID_KEY: input.run_id}
        self.config = {**self.config, "configurable": configurable}
        queue: asyncio.Queue[Any] = asyncio.Queue()
        done = object()
        lock = _thread_locks.setdefault(input.thread_id, asyncio.Lock())

        async def pump() -> None:
            try:
                async with lock:
                    async for event in LangGraphAgent.run(self, input):
                        queue.put_nowait(event)
            finally:
                queue.put_nowait(done)

        task = asyncio.create_task(pump())
        _running.add(task)
        task.add_done_callback(_running.discard)
        while (event := await queue.get()) is not done:
            yield event
        await task


def settings_from_env(env: Mapping[str, str] | None = None) -> Settings:
    e = os.environ if env is None else env
    try:
        delay_ms = float(e.get("REFGRAPH_DELAY_MS", "0") or 0)
    except ValueError as exc:
        raise SystemExit(f"REFGRAPH_DELAY_MS={e.get('REFGRAPH_DELAY_MS')!r}: not a number") from exc
    if delay_ms < 0:
        raise SystemExit(f"REFGRAPH_DELAY_MS={delay_ms}: must not be negative")
    idem = e.get("REFGRAPH_IDEMPOTENT", "1").strip().lower()
    if idem not in ("0", "1", "true", "false"):
        raise SystemExit(f"REFGRAPH_IDEMPOTENT={idem!r}: want 1 or 0")
    return Settings(
        delay_s=delay_ms / 1000,
        reject_marker=e.get("REFGRAPH_REJECT_MARKER", DEFAULT_REJECT_MARKER),
        idempotent=idem in ("1", "true"),
        writing=writing_from_env(e),
    )


def _number(e: Mapping[str, str], name: str, default: str) -> float:
    raw = e.get(name, default) or default
    try:
        value = float(raw)
    except ValueError as exc:
        raise SystemExit(f"{name}={raw!r}: not a number") from exc
    if value < 0 or value != value or value == float("inf"):
        raise SystemExit(f"{name}={raw!r}: must be a finite number >= 0")
    return value


def writing_from_env(e: Mapping[str, str]) -> Writing | None:
    """REFGRAPH_STREAM_TPS > 0 makes the echo model write like a language
    model: REFGRAPH_FIRST_TOKEN_MS before the first word, then that many
    words a second, answers of REFGRAPH_ANSWER_WORDS ("MIN-MAX") words."""
    tps = _number(e, "REFGRAPH_STREAM_TPS", "0")
    if tps == 0:
        return None
    if tps > 10000:
        raise SystemExit(f"REFGRAPH_STREAM_TPS={tps}: at most 10000")
    first_ms = _number(e, "REFGRAPH_FIRST_TOKEN_MS", "300")
    if first_ms > 600_000:
        raise SystemExit(f"REFGRAPH_FIRST_TOKEN_MS={first_ms}: at most 600000")
    raw = e.get("REFGRAPH_ANSWER_WORDS", "40-80") or "40-80"
    lo, sep, hi = raw.partition("-")
    try:
        words_min, words_max = int(lo), int(hi if sep else lo)
    except ValueError as exc:
        raise SystemExit(f"REFGRAPH_ANSWER_WORDS={raw!r}: want MIN-MAX words, e.g. 40-80") from exc
    if not 1 <= words_min <= words_max <= 100_000:
        raise SystemExit(f"REFGRAPH_ANSWER_WORDS={raw!r}: want 1 <= MIN <= MAX <= 100000")
    return Writing(tokens_per_s=tps, first_token_s=first_ms / 1000, words_min=words_min, words_max=words_max)


# Leaf checkpoints: no other checkpoint of the thread has them as parent. The
# run records only grow along a branch, so the leaves hold every record, also
# when the adapter forked the thread (its regenerate path); reading only them
# keeps a count cheap on long threads (every checkpoint holds the whole state).
_LEAVES = """
SELECT c.thread_id, c.checkpoint_id FROM checkpoints c
WHERE c.checkpoint_ns = '' {where} AND NOT EXISTS (
  SELECT 1 FROM checkpoints p WHERE p.thread_id = c.thread_id AND p.checkpoint_ns = ''
    AND p.parent_checkpoint_id = c.checkpoint_id)
"""


async def leaf_runs(saver: AsyncSqliteSaver, thread_id: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every run record per thread (of one thread, or of all), each once."""
    sql, args = _LEAVES.format(where="AND c.thread_id = ?" if thread_id is not None else ""), ()
    if thread_id is not None:
        args = (thread_id,)
    async with saver.conn.execute(sql, args) as cur:
        leaves = await cur.fetchall()
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for tid, cid in leaves:
        tup = await saver.aget_tuple({"configurable": {"thread_id": tid, "checkpoint_ns": "", "checkpoint_id": cid}})
        seen = out.setdefault(tid, {})
        for rec in (tup.checkpoint.get("channel_values", {}).get("runs") if tup else None) or []:
            seen.setdefault(rec.get("token", ""), rec)
    return {tid: sorted(recs.values(), key=lambda r: r.get("at", 0)) for tid, recs in out.items()}


def runs_by_message(runs: list[dict[str, Any]]) -> dict[str, int]:
    """Runs that executed the graph (replays of a finished runId excluded)."""
    return dict(Counter(r.get("message_id", "") for r in runs if not r.get("replay")))


def create_app(db_path: str | Path, settings: Settings | None = None) -> FastAPI:
    db = Path(db_path)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db.parent.mkdir(parents=True, exist_ok=True)
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
            # The saver creates its tables on its first write; the debug
            # endpoints read them before any run on a fresh database.
            await saver.setup()
            graph = compile_graph(saver, settings or Settings())
            app.state.graph = graph
            app.state.saver = saver
            # Registered here because the graph needs the open checkpointer;
            # the server takes no request before the lifespan has started.
            add_langgraph_fastapi_endpoint(
                app,
                RunIdAgent(name="agora_refgraph", graph=graph, emit_raw_events=False),
                path=PATH,
            )
            log.info("refgraph: serving %s, checkpoints in %s", PATH, db)
            yield
            if _running:  # runs whose caller left: let them record their result
                await asyncio.wait(set(_running), timeout=30)

    app = FastAPI(title="agora refgraph", lifespan=lifespan)

    @app.get(f"{PATH}/debug/threads/{{thread_id}}")
    async def debug_thread(thread_id: str, request: Request) -> dict[str, Any]:
        graph: CompiledStateGraph = request.app.state.graph
        runs = (await leaf_runs(request.app.state.saver, thread_id)).get(thread_id)
        if runs is None:
            raise HTTPException(status_code=404, detail=f"thread {thread_id!r}: no checkpoint")
        snap = await graph.aget_state({"configurable": {"thread_id": thread_id}})
        values = snap.values
        return {
            "thread_id": thread_id,
            "runs": runs,
            "runs_by_message": runs_by_message(runs),
            "attempts_by_message": dict(Counter(r.get("message_id", "") for r in runs)),
            "interaction_mode": values.get("interaction_mode", ""),
            "message_buffer": values.get("message_buffer", []),
            "buffer_context": values.get("buffer_context", ""),
            "report_notes": values.get("report_notes", []),
            "final_written": values.get("final_written", ""),
            "final_spoken": values.get("final_spoken", ""),
            "answered": values.get("answered", False),
        }

    @app.get(f"{PATH}/debug/threads")
    async def debug_threads(request: Request) -> dict[str, Any]:
        threads = await leaf_runs(request.app.state.saver)
        return {"threads": {tid: runs_by_message(runs) for tid, runs in threads.items()}}

    return app


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="agora_refgraph", description="Serve the reference AGORA graph over AG-UI.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument(
        "--db", default=os.environ.get("REFGRAPH_DB", DEFAULT_DB), help="checkpoint sqlite file (env REFGRAPH_DB)"
    )
    p.add_argument("--log-level", default=os.environ.get("REFGRAPH_LOG_LEVEL", "warning"))
    p.add_argument(
        "--stream-tps", help="write answers at this many words a second (env REFGRAPH_STREAM_TPS; 0: at once)"
    )
    p.add_argument("--first-token-ms", help="delay before the first written word (env REFGRAPH_FIRST_TOKEN_MS, 300)")
    p.add_argument("--answer-words", help="written answers' length MIN-MAX words (env REFGRAPH_ANSWER_WORDS, 40-80)")
    args = p.parse_args(argv)
    env = dict(os.environ)
    for flag, name in (
        (args.stream_tps, "REFGRAPH_STREAM_TPS"),
        (args.first_token_ms, "REFGRAPH_FIRST_TOKEN_MS"),
        (args.answer_words, "REFGRAPH_ANSWER_WORDS"),
    ):
        if flag is not None:
            env[name] = flag
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = create_app(args.db, settings_from_env(env))
    # uvicorn stops gracefully on SIGTERM/SIGINT.
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)
