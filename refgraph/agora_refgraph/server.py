"""FastAPI app: the graph over AG-UI at /agui, plus read-only run records."""

from __future__ import annotations

import argparse
import logging
import os
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import uvicorn
from ag_ui.core.types import RunAgentInput
from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
from fastapi import FastAPI, HTTPException, Request
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph.state import CompiledStateGraph

from .graph import DEFAULT_REJECT_MARKER, RUN_ID_KEY, Settings, compile_graph

log = logging.getLogger("agora_refgraph")

PATH = "/agui"
DEFAULT_DB = "build/refgraph/checkpoints.sqlite"


class RunIdAgent(LangGraphAgent):
    """Passes the AG-UI runId to the graph (configurable agui_run_id) so the
    run record names it. The endpoint clones the agent per request, so
    setting self.config here touches only this request."""

    async def run(self, input: RunAgentInput):  # type: ignore[override]
        configurable = {**(self.config.get("configurable") or {}), RUN_ID_KEY: input.run_id}
        self.config = {**self.config, "configurable": configurable}
        async for event in super().run(input):
            yield event


def settings_from_env(env: dict[str, str] | None = None) -> Settings:
    e = os.environ if env is None else env
    try:
        delay_ms = float(e.get("REFGRAPH_DELAY_MS", "0") or 0)
    except ValueError as exc:
        raise SystemExit(f"REFGRAPH_DELAY_MS={e.get('REFGRAPH_DELAY_MS')!r}: not a number") from exc
    if delay_ms < 0:
        raise SystemExit(f"REFGRAPH_DELAY_MS={delay_ms}: must not be negative")
    return Settings(delay_s=delay_ms / 1000, reject_marker=e.get("REFGRAPH_REJECT_MARKER", DEFAULT_REJECT_MARKER))


async def thread_runs(graph: CompiledStateGraph, thread_id: str) -> list[dict[str, Any]] | None:
    """Every run record of the thread, over all its checkpoints (forks
    included), each once; None when the thread has no checkpoint."""
    assert graph.checkpointer is not None
    seen: dict[str, dict[str, Any]] = {}
    found = False
    async for cp in graph.checkpointer.alist({"configurable": {"thread_id": thread_id}}):
        found = True
        for rec in cp.checkpoint.get("channel_values", {}).get("runs") or []:
            seen.setdefault(rec.get("token", ""), rec)
    if not found:
        return None
    return sorted(seen.values(), key=lambda r: r.get("at", 0))


def create_app(db_path: str | Path, settings: Settings | None = None) -> FastAPI:
    db = Path(db_path)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db.parent.mkdir(parents=True, exist_ok=True)
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
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

    app = FastAPI(title="agora refgraph", lifespan=lifespan)

    @app.get(f"{PATH}/debug/threads/{{thread_id}}")
    async def debug_thread(thread_id: str, request: Request) -> dict[str, Any]:
        graph: CompiledStateGraph = request.app.state.graph
        runs = await thread_runs(graph, thread_id)
        if runs is None:
            raise HTTPException(status_code=404, detail=f"thread {thread_id!r}: no checkpoint")
        snap = await graph.aget_state({"configurable": {"thread_id": thread_id}})
        values = snap.values
        return {
            "thread_id": thread_id,
            "runs": runs,
            "runs_by_message": dict(Counter(r.get("message_id", "") for r in runs)),
            "interaction_mode": values.get("interaction_mode", ""),
            "message_buffer": values.get("message_buffer", []),
            "buffer_context": values.get("buffer_context", ""),
            "final_written": values.get("final_written", ""),
            "final_spoken": values.get("final_spoken", ""),
            "answered": values.get("answered", False),
        }

    @app.get(f"{PATH}/debug/threads")
    async def debug_threads(request: Request) -> dict[str, Any]:
        graph: CompiledStateGraph = request.app.state.graph
        saver: AsyncSqliteSaver = request.app.state.saver
        async with saver.conn.execute("SELECT DISTINCT thread_id FROM checkpoints") as cur:
            ids = [row[0] for row in await cur.fetchall()]
        out: dict[str, dict[str, int]] = {}
        for tid in ids:
            runs = await thread_runs(graph, tid) or []
            out[tid] = dict(Counter(r.get("message_id", "") for r in runs))
        return {"threads": out}

    return app


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="agora_refgraph", description="Serve the reference AGORA graph over AG-UI.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument(
        "--db", default=os.environ.get("REFGRAPH_DB", DEFAULT_DB), help="checkpoint sqlite file (env REFGRAPH_DB)"
    )
    p.add_argument("--log-level", default=os.environ.get("REFGRAPH_LOG_LEVEL", "warning"))
    args = p.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = create_app(args.db, settings_from_env())
    # uvicorn stops gracefully on SIGTERM/SIGINT.
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)
