"""The listen-mode plan of ../shared/seeds/000-listen-mode-plan.md as a graph.

START -> intake -> route_from_start -> buffer_message -> END
                                    -> process_buffer -> agent -> END
                                    -> wake_word_handler -> agent | END
                                    -> agent -> END
                                    -> replay -> END

intake and replay are what the seed does not have. intake records the run
before any node can fail (so runs are countable per message, rejected ones
included) and applies the test switches (delay). replay makes a run
idempotent by AG-UI runId: a runId that already finished on this thread is
answered with its recorded outcome and changes nothing else (ag-ui-langgraph
itself would run the graph again), which with an at-least-once bridge gives
each device message exactly one effect.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks.manager import adispatch_custom_event
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer, Overwrite

from .model import EchoChatModel, WritingEchoChatModel
from .state import AgentState

log = logging.getLogger(__name__)

WAKE_WORD = "agora"
LISTEN = "listen"
FEEDBACK = "feedback"
DEFAULT_REJECT_MARKER = "[refgraph:reject]"
# configurable key the server sets to the AG-UI runId (the adapter passes no run id to nodes).
RUN_ID_KEY = "agui_run_id"
SPOKEN_MAX = 160
# Test switch: a question holding "[refgraph:long:N]" is answered with N
# bytes of numbered sentences, all of it speakable (final_spoken is the
# whole text), so a device can be shown to speak a long answer whole.
LONG_MARKER = re.compile(r"\[refgraph:long:(\d{1,7})\]")


class RejectedError(ValueError):
    """The message carries the reject marker: the run fails on purpose."""


@dataclass(frozen=True)
class Writing:
    """The echo model writing like a language model (README: REFGRAPH_STREAM_TPS)."""

    tokens_per_s: float = 30.0
    first_token_s: float = 0.3
    words_min: int = 40
    words_max: int = 80


@dataclass(frozen=True)
class Settings:
    delay_s: float = 0.0
    reject_marker: str = DEFAULT_REJECT_MARKER
    idempotent: bool = True
    writing: Writing | None = None  # None: the echo model answers at once


@dataclass
class Incoming:
    """This run's input: the newest user message and, for a batch, its notes."""

    message_id: str = ""
    text: str = ""
    is_batch: bool = False
    notes: list[dict[str, Any]] = field(default_factory=list)


# The name as a whole word, as the device hears it: "Agora," and "AGORA's"
# wake; "Pythagoras", "agoraphobia" and "agorafobie" do not.
_WAKE_RE = re.compile(rf"(?<!\w){re.escape(WAKE_WORD)}(?!\w)", re.IGNORECASE)


def detect_wake_word(content: str) -> bool:
    return _WAKE_RE.search(content) is not None


def latest_human(messages: list[BaseMessage]) -> HumanMessage | None:
    for msg in reversed(messages):
        if isinstance(msg, HumanMessage):
            return msg
    return None


def _context_entries(state: AgentState) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in (state.get("ag-ui") or {}).get("context") or []:
        if isinstance(entry, dict):
            desc, value = entry.get("description"), entry.get("value")
        else:  # the adapter may hand over its pydantic Context objects
            desc, value = getattr(entry, "description", None), getattr(entry, "value", None)
        if isinstance(desc, str) and isinstance(value, str):
            out[desc] = value
    return out


def incoming(state: AgentState) -> Incoming:
    """Read this run's message and batch context; raise ValueError on a bad batch."""
    msg = latest_human(state.get("messages", []))
    inc = Incoming(message_id=(msg.id or "") if msg else "", text=msg.text if msg else "")
    ctx = _context_entries(state)
    if ctx.get("isOfflineBatch", "").strip().lower() not in ("true", "1", "yes"):
        return inc
    inc.is_batch = True
    if "notes" in ctx:
        try:
            raw = json.loads(ctx["notes"])
        except json.JSONDecodeError as exc:
            raise ValueError(f"batch context: notes is not JSON: {exc}") from exc
        if not isinstance(raw, list) or not all(isinstance(n, dict) and isinstance(n.get("text"), str) for n in raw):
            raise ValueError("batch context: notes must be a JSON array of objects with a string text")
        inc.notes = raw
    else:  # the web client's form: the notes are the lines of the message
        inc.notes = [{"text": line} for line in inc.text.splitlines() if line.strip()]
    if "messageCount" in ctx:
        try:
            count = int(ctx["messageCount"])
        except ValueError as exc:
            raise ValueError(f"batch context: messageCount {ctx['messageCount']!r} is not an integer") from exc
        if count != len(inc.notes):
            raise ValueError(f"batch context: messageCount {count} but {len(inc.notes)} notes")
    return inc


def to_spoken(text: str, limit: int = SPOKEN_MAX) -> str:
    """A shorter, speakable form: the first line, no brackets, cut at a word."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    first = re.sub(r"[\[\]{}<>*_#`|]", "", first).strip()
    if len(first) <= limit:
        return first
    cut = first[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"


def long_answer(size: int) -> str:
    """Numbered Dutch sentences, exactly size bytes (ASCII), ending a sentence."""
    out: list[str] = []
    n, total = 0, 0
    while True:
        n += 1
        sentence = f"Zin {n} van het lange antwoord: de balk is gecontroleerd."
        if total + len(sentence) + 1 > size:
            break
        out.append(sentence)
        total += len(sentence) + 1
    text = " ".join(out)
    return text + "." * (size - len(text)) if out else "." * size


def buffer_context_of(buffer: list[dict[str, Any]]) -> str:
    lines = [f"{i}. {m.get('content', '')}" for i, m in enumerate(buffer, 1)]
    return f"Context uit luistermodus ({len(buffer)} berichten):\n" + "\n".join(lines)


async def _emit_text(text: str, config: RunnableConfig) -> None:
    # The adapter turns this custom event into TEXT_MESSAGE_START/CONTENT/END,
    # the seed's "direct text events" for an acknowledgment without a model.
    await adispatch_custom_event(
        "manually_emit_message",
        {"message_id": str(uuid.uuid4()), "message": text, "role": "assistant"},
        config=config,
    )


def build_graph(settings: Settings | None = None) -> StateGraph:
    s = settings or Settings()
    w = s.writing
    model: EchoChatModel = (
        WritingEchoChatModel(
            tokens_per_s=w.tokens_per_s, first_token_s=w.first_token_s, words_min=w.words_min, words_max=w.words_max
        )
        if w
        else EchoChatModel()
    )

    def check_reject(inc: Incoming) -> None:
        texts = [inc.text, *(n["text"] for n in inc.notes)]
        if s.reject_marker and any(s.reject_marker in t for t in texts):
            raise RejectedError(
                f"message {inc.message_id or '?'} rejected: it contains the reject marker {s.reject_marker!r}"
            )

    async def intake(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        if s.delay_s > 0:
            await asyncio.sleep(s.delay_s)
        run_id = run_id_of(config)
        previous = (state.get("results") or {}).get(run_id) if s.idempotent and run_id else None
        msg = latest_human(state.get("messages", []))
        ctx = _context_entries(state)
        kind = "batch" if ctx.get("isOfflineBatch", "").strip().lower() in ("true", "1", "yes") else "utterance"
        record = {
            "token": uuid.uuid4().hex,  # unique per execution: same runId twice counts twice
            "run_id": run_id,
            "message_id": previous["message_id"] if previous else (msg.id or "") if msg else "",
            "kind": previous["kind"] if previous else kind,
            "replay": previous is not None,
            "at": time.time(),
        }
        # Fresh outputs for this run; the mode stays as forwarded or checkpointed.
        return {
            "runs": [record],
            "replaying": previous is not None,
            "interaction_mode": state.get("interaction_mode") or FEEDBACK,
            "final_written": "",
            "final_spoken": "",
            "answered": False,
        }

    def finish(state: AgentState, config: RunnableConfig, written: str, spoken: str, answered: bool) -> dict[str, Any]:
        """The run's outputs, and its result recorded under its runId."""
        out: dict[str, Any] = {"final_written": written, "final_spoken": spoken, "answered": answered}
        run_id = run_id_of(config)
        if run_id:
            rec = (state.get("runs") or [{}])[-1]  # intake's record of this run
            out["results"] = {run_id: {"message_id": rec.get("message_id", ""), "kind": rec.get("kind", ""), **out}}
        return out

    async def replay(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        """A runId that already finished: answer as it did, change nothing else."""
        prev = (state.get("results") or {})[run_id_of(config)]
        await _emit_text(prev["final_written"], config)
        return {k: prev[k] for k in ("final_written", "final_spoken", "answered")}

    async def buffer_message(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        """Store the message (or a batch's notes) without a model call."""
        inc = incoming(state)
        check_reject(inc)
        now = time.time()
        if inc.is_batch:
            new = [{**n, "content": n["text"], "timestamp": now} for n in inc.notes]
        elif inc.text:
            new = [{"id": inc.message_id, "content": inc.text, "timestamp": now}]
        else:
            new = []
        count = len(state.get("message_buffer", [])) + len(new)
        if len(new) == 1:
            written = f"[Luistermodus actief - bericht {count} opgeslagen]"
        else:
            written = f"[Luistermodus actief - {len(new)} berichten opgeslagen, {count} in totaal]"
        await _emit_text(written, config)
        return {"message_buffer": new, **finish(state, config, written, "", False)}

    def process_buffer(state: AgentState) -> dict[str, Any]:
        """Move the buffered notes into buffer_context and clear the buffer."""
        check_reject(incoming(state))
        buffer = state.get("message_buffer", [])
        if not buffer:
            return {}
        log.info("process_buffer: %d buffered messages", len(buffer))
        return {"buffer_context": buffer_context_of(buffer), "message_buffer": Overwrite([]), "report_notes": buffer}

    async def wake_word_handler(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        """Listen -> feedback on "AGORA": process the buffer, keep the rest of the sentence."""
        inc = incoming(state)
        check_reject(inc)
        buffer = state.get("message_buffer", [])
        remaining = re.sub(r"\bagora\b[,.!?:;]*", "", inc.text, flags=re.IGNORECASE).strip()
        result: dict[str, Any] = {"interaction_mode": FEEDBACK}
        if buffer:
            result["buffer_context"] = buffer_context_of(buffer)
            result["message_buffer"] = Overwrite([])
            result["report_notes"] = buffer
        if remaining:
            result["messages"] = [HumanMessage(content=remaining)]
        else:
            written = f"[Feedback modus geactiveerd - {len(buffer)} berichten verwerkt]"
            await _emit_text(written, config)
            result.update(finish(state, config, written, "Feedback modus geactiveerd", True))
        return result

    async def agent(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        """The general agent: the model sees buffer_context as its system prompt,
        once: the answer used the batch, so the context is cleared (the notes
        stay in report_notes) and a later answer does not repeat them."""
        inc = incoming(state)
        check_reject(inc)
        if not inc.text.strip():
            raise ValueError(f"run has no question to answer: user message {inc.message_id or '(none)'} is empty")
        prompt: list[BaseMessage] = []
        used: dict[str, Any] = {}
        if state.get("buffer_context"):
            prompt.append(SystemMessage(content=state["buffer_context"]))
            used["buffer_context"] = ""
        prompt.append(HumanMessage(content=inc.text))
        answer = await model.ainvoke(prompt)
        written, spoken = answer.text, to_spoken(answer.text)
        if w:  # the whole written answer is speakable (its first line), so a device speaks all of it
            spoken = to_spoken(answer.text, limit=len(answer.text))
        if m := LONG_MARKER.search(inc.text):
            written = spoken = long_answer(int(m.group(1)))
            answer = AIMessage(content=written, id=answer.id)
        return {"messages": [answer], **used, **finish(state, config, written, spoken, True)}

    def route_from_start(state: AgentState) -> str:
        if state.get("replaying"):
            return "replay"
        mode = state.get("interaction_mode") or FEEDBACK
        inc = incoming_safe(state)
        if inc.is_batch:
            return "buffer_message"  # a batch's notes were recorded without feedback
        if mode == LISTEN:
            return "wake_word_handler" if detect_wake_word(inc.text) else "buffer_message"
        if state.get("message_buffer"):
            return "process_buffer"
        return "agent"

    def route_after_wake(state: AgentState) -> str:
        return END if state.get("answered") else "agent"

    graph = StateGraph(AgentState)
    graph.add_node("intake", intake)
    graph.add_node("buffer_message", buffer_message)
    graph.add_node("process_buffer", process_buffer)
    graph.add_node("wake_word_handler", wake_word_handler)
    graph.add_node("agent", agent)
    graph.add_node("replay", replay)
    graph.add_edge(START, "intake")
    graph.add_conditional_edges(
        "intake",
        route_from_start,
        ["buffer_message", "process_buffer", "wake_word_handler", "agent", "replay"],
    )
    graph.add_edge("replay", END)
    graph.add_edge("buffer_message", END)
    graph.add_edge("process_buffer", "agent")
    graph.add_conditional_edges("wake_word_handler", route_after_wake, ["agent", END])
    graph.add_edge("agent", END)
    return graph


def run_id_of(config: RunnableConfig) -> str:
    return str((config.get("configurable") or {}).get(RUN_ID_KEY, ""))


def incoming_safe(state: AgentState) -> Incoming:
    """incoming() for routing: a malformed batch is still routed as a batch,
    so that buffer_message raises the error (routers must not fail the intake
    step, whose write records the run)."""
    try:
        return incoming(state)
    except ValueError:
        return Incoming(is_batch=True)


def compile_graph(checkpointer: Checkpointer = None, settings: Settings | None = None) -> CompiledStateGraph:
    return build_graph(settings).compile(checkpointer=checkpointer)
