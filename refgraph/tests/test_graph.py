"""The graph in-process: routing, buffer, batch context, run records, rejection."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from agora_refgraph.graph import (
    RUN_ID_KEY,
    RejectedError,
    Settings,
    compile_graph,
    detect_wake_word,
    to_spoken,
)
from agora_refgraph.server import settings_from_env
from agora_refgraph.state import accumulate_messages


def graph_input(
    msg_id: str,
    text: str,
    mode: str | None = None,
    notes: list[str] | None = None,
    context: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """What the AG-UI adapter hands the graph for one run."""
    ctx = context
    if ctx is None:
        ctx = []
        if notes is not None:
            ctx = [
                {"description": "isOfflineBatch", "value": "true"},
                {"description": "messageCount", "value": str(len(notes))},
                {
                    "description": "notes",
                    "value": json.dumps([{"id": f"n{i}", "seq": i, "text": t} for i, t in enumerate(notes)]),
                },
            ]
    inp: dict[str, Any] = {"messages": [HumanMessage(content=text, id=msg_id)], "ag-ui": {"tools": [], "context": ctx}}
    if mode is not None:
        inp["interaction_mode"] = mode
    return inp


class Thread:
    def __init__(self, **settings: Any) -> None:
        self.graph = compile_graph(InMemorySaver(), Settings(**settings))
        self.config = {"configurable": {"thread_id": "t1"}}

    def run(self, inp: dict[str, Any], run_id: str = "") -> tuple[list[str], dict[str, Any]]:
        """Run once (run_id: the AG-UI runId the server would pass); return
        the nodes that ran and the final state."""
        config = {"configurable": {**self.config["configurable"], RUN_ID_KEY: run_id}}

        async def go() -> list[str]:
            nodes: list[str] = []
            async for update in self.graph.astream(inp, config, stream_mode="updates"):
                nodes.extend(update.keys())
            return nodes

        nodes = asyncio.run(go())
        return nodes, self.graph.get_state(self.config).values


NOTES = ["crack in the weld at frame four", "roest op de onderste balk", "missing fire stop in shaft B"]


@pytest.mark.parametrize(
    ("name", "setup", "inp", "want_nodes", "want_mode", "want_answered"),
    [
        (
            "feedback, empty buffer -> agent",
            [],
            graph_input("m1", "torque spec?", "feedback"),
            ["intake", "agent"],
            "feedback",
            True,
        ),
        ("no mode given -> feedback", [], graph_input("m1", "torque spec?"), ["intake", "agent"], "feedback", True),
        (
            "listen -> buffer_message",
            [],
            graph_input("m1", "a crack", "listen"),
            ["intake", "buffer_message"],
            "listen",
            False,
        ),
        (
            "listen + AGORA -> wake_word_handler -> agent",
            [graph_input("m0", "a crack", "listen")],
            graph_input("m1", "AGORA, what now?", "listen"),
            ["intake", "wake_word_handler", "agent"],
            "feedback",
            True,
        ),
        (
            "listen + bare AGORA -> wake_word_handler only",
            [graph_input("m0", "a crack", "listen")],
            graph_input("m1", "Agora!", "listen"),
            ["intake", "wake_word_handler"],
            "feedback",
            True,
        ),
        (
            "feedback with buffer -> process_buffer -> agent",
            [graph_input("m0", "a crack", "listen")],
            graph_input("m1", "what now?", "feedback"),
            ["intake", "process_buffer", "agent"],
            "feedback",
            True,
        ),
        (
            "batch in feedback mode -> buffer_message",
            [],
            graph_input("b1", "\n".join(NOTES), "feedback", notes=NOTES),
            ["intake", "buffer_message"],
            "feedback",
            False,
        ),
    ],
)
def test_route_from_start(
    name: str,
    setup: list[dict[str, Any]],
    inp: dict[str, Any],
    want_nodes: list[str],
    want_mode: str,
    want_answered: bool,
) -> None:
    t = Thread()
    for s in setup:
        t.run(s)
    nodes, state = t.run(inp)
    assert nodes == want_nodes, name
    assert state["interaction_mode"] == want_mode, name
    assert state["answered"] is want_answered, name
    assert state["final_written"], name
    if want_answered:
        assert state["final_spoken"] and len(state["final_spoken"]) <= len(state["final_written"]), name
    else:
        assert state["final_spoken"] == "", name


def test_listen_round_buffers_then_answers_naming_every_note() -> None:
    t = Thread()
    for i, note in enumerate(NOTES):
        _, state = t.run(graph_input(f"m{i}", note, "listen"))
        assert state["final_written"] == f"[Luistermodus actief - bericht {i + 1} opgeslagen]"
    assert [m["content"] for m in state["message_buffer"]] == NOTES
    nodes, state = t.run(graph_input("m9", "AGORA wat vind je hiervan?", "listen"))
    assert nodes == ["intake", "wake_word_handler", "agent"]
    assert state["message_buffer"] == []
    for note in NOTES:
        assert note in state["final_written"]
    assert state["buffer_context"] == ""  # used by this answer
    assert [n["content"] for n in state["report_notes"]] == NOTES
    # The wake word is stripped: the agent answers the rest of the sentence.
    assert state["final_written"].startswith("You said: wat vind je hiervan?")
    assert "AGORA" not in state["final_spoken"]


def test_batch_notes_reach_buffer_context_through_process_buffer() -> None:
    t = Thread()
    _, state = t.run(graph_input("b1", "\n".join(NOTES), "feedback", notes=NOTES))
    assert [m["content"] for m in state["message_buffer"]] == NOTES
    assert [m["id"] for m in state["message_buffer"]] == ["n0", "n1", "n2"]
    assert state["final_written"] == "[Luistermodus actief - 3 berichten opgeslagen, 3 in totaal]"
    nodes, state = t.run(graph_input("u1", "what do you think?", "feedback"))
    assert nodes == ["intake", "process_buffer", "agent"]
    assert "Context uit luistermodus (3 berichten):" in state["final_written"]
    assert all(f"{i}. {n}" in state["final_written"] for i, n in enumerate(NOTES, 1))


@pytest.mark.parametrize(
    ("name", "first", "first_mode"),
    [
        ("question after a batch", "what do you think?", "feedback"),
        ("AGORA with a question", "AGORA wat vind je hiervan?", "listen"),
        ("AGORA alone, then a question", "AGORA", "listen"),
    ],
)
def test_batch_is_context_for_one_answer_only(name: str, first: str, first_mode: str) -> None:
    t = Thread()
    t.run(graph_input("b1", "\n".join(NOTES), first_mode, notes=NOTES))
    _, state = t.run(graph_input("u1", first, first_mode))
    if first == "AGORA":  # no question yet: the context waits for the next one
        assert state["buffer_context"], name
        _, state = t.run(graph_input("u1b", "what do you think?", "feedback"))
    assert all(n in state["final_written"] for n in NOTES), name
    assert state["buffer_context"] == "", name
    _, state = t.run(graph_input("u2", "and the roof?", "feedback"))
    assert state["final_written"] == "You said: and the roof?", name
    # Reports still have every note, once.
    assert [n["content"] for n in state["report_notes"]] == NOTES, name


def test_batch_without_notes_entry_uses_message_lines() -> None:
    t = Thread()
    ctx = [{"description": "isOfflineBatch", "value": "true"}, {"description": "messageCount", "value": "3"}]
    _, state = t.run(graph_input("b1", "\n".join(NOTES), context=ctx))
    assert [m["content"] for m in state["message_buffer"]] == NOTES


@pytest.mark.parametrize(
    ("ctx", "want"),
    [
        (
            [
                {"description": "isOfflineBatch", "value": "true"},
                {"description": "messageCount", "value": "2"},
                {"description": "notes", "value": json.dumps([{"text": "a"}])},
            ],
            "messageCount 2 but 1 notes",
        ),
        (
            [{"description": "isOfflineBatch", "value": "true"}, {"description": "notes", "value": "{not json"}],
            "notes is not JSON",
        ),
        (
            [{"description": "isOfflineBatch", "value": "true"}, {"description": "notes", "value": '[{"txt":1}]'}],
            "string text",
        ),
        (
            [{"description": "isOfflineBatch", "value": "true"}, {"description": "messageCount", "value": "x"}],
            "not an integer",
        ),
    ],
)
def test_bad_batch_context_fails_the_run_but_is_recorded(ctx: list[dict[str, str]], want: str) -> None:
    t = Thread()
    with pytest.raises(ValueError, match=want):
        t.run(graph_input("b1", "a", context=ctx))
    state = t.graph.get_state(t.config).values
    assert [r["message_id"] for r in state["runs"]] == ["b1"]
    assert state.get("message_buffer", []) == []


def test_reject_marker_fails_after_recording_and_the_thread_goes_on() -> None:
    t = Thread(reject_marker="#nope")
    with pytest.raises(RejectedError, match="m1 rejected"):
        t.run(graph_input("m1", "please #nope this", "feedback"))
    with pytest.raises(RejectedError):  # a marked note in a batch rejects the batch
        t.run(graph_input("b1", "x", notes=["fine", "also #nope"]))
    nodes, state = t.run(graph_input("m2", "next one", "feedback"))
    assert nodes == ["intake", "agent"]
    assert state["final_written"] == "You said: next one"
    assert [r["message_id"] for r in state["runs"]] == ["m1", "b1", "m2"]
    assert state.get("message_buffer", []) == []


def test_every_run_is_recorded_once_with_a_fresh_token() -> None:
    t = Thread()
    t.run(graph_input("m1", "one", "feedback"))
    t.run(graph_input("m2", "two", "listen"))
    _, state = t.run(graph_input("m2", "two", "listen"))  # no runId: no idempotency, the graph runs again
    assert [r["message_id"] for r in state["runs"]] == ["m1", "m2", "m2"]
    assert [r["kind"] for r in state["runs"]] == ["utterance"] * 3
    assert [r["replay"] for r in state["runs"]] == [False] * 3
    assert len({r["token"] for r in state["runs"]}) == 3
    assert len(state["message_buffer"]) == 2


def test_finished_run_id_is_replayed_without_effect() -> None:
    t = Thread()
    _, first = t.run(graph_input("b1", "x", "feedback", notes=NOTES), run_id="run-b1")
    nodes, state = t.run(graph_input("b1", "x", "feedback", notes=NOTES), run_id="run-b1")
    assert nodes == ["intake", "replay"]
    assert [m["content"] for m in state["message_buffer"]] == NOTES  # not buffered twice
    assert (state["final_written"], state["answered"]) == (first["final_written"], False)
    _, answer = t.run(graph_input("u1", "so?", "feedback"), run_id="run-u1")
    nodes, state = t.run(graph_input("u1", "so?", "feedback"), run_id="run-u1")
    assert nodes == ["intake", "replay"]
    assert (state["final_written"], state["final_spoken"], state["answered"]) == (
        answer["final_written"],
        answer["final_spoken"],
        True,
    )
    assert [(r["message_id"], r["kind"], r["replay"]) for r in state["runs"]] == [
        ("b1", "batch", False),
        ("b1", "batch", True),
        ("u1", "utterance", False),
        ("u1", "utterance", True),
    ]


def test_failed_run_id_runs_again_and_idempotency_can_be_off() -> None:
    t = Thread(reject_marker="#nope")
    with pytest.raises(RejectedError):
        t.run(graph_input("m1", "#nope", "feedback"), run_id="run-m1")
    with pytest.raises(RejectedError):  # no result recorded: a retry is a real run
        t.run(graph_input("m1", "#nope", "feedback"), run_id="run-m1")
    off = Thread(idempotent=False)
    off.run(graph_input("m1", "a note", "listen"), run_id="run-m1")
    nodes, state = off.run(graph_input("m1", "a note", "listen"), run_id="run-m1")
    assert nodes == ["intake", "buffer_message"]
    assert len(state["message_buffer"]) == 2


def test_delay_switch_delays_the_run() -> None:
    import time

    t = Thread(delay_s=0.3)
    start = time.monotonic()
    t.run(graph_input("m1", "one", "feedback"))
    assert time.monotonic() - start >= 0.3


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("You said: hi\nContext uit luistermodus (1 berichten):\n1. a", "You said: hi"),
        ("[Feedback modus geactiveerd]", "Feedback modus geactiveerd"),
        ("word " * 60, ("word " * 32).strip() + "…"),
        ("", ""),
    ],
)
def test_to_spoken(text: str, want: str) -> None:
    assert to_spoken(text) == want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("zeg Agora even", True),
        ("Agora, wat denk jij?", True),
        ("Hey AGORA. Is this railing high enough?", True),
        ("vraag het agora's assistent", True),
        ("agora", True),
        ("agenda", False),
        ("Pythagoras says the diagonal is too long", False),
        ("my agoraphobia is worse in basements", False),
        ("last van agorafobie", False),
        ("the agorae of Athens", False),
    ],
)
def test_wake_word(text: str, want: bool) -> None:
    assert detect_wake_word(text) is want


def test_reducer() -> None:
    assert accumulate_messages(None, [{"a": 1}]) == [{"a": 1}]
    assert accumulate_messages([{"a": 1}], None) == [{"a": 1}]
    assert accumulate_messages([{"a": 1}], [{"b": 2}]) == [{"a": 1}, {"b": 2}]


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({}, Settings(0.0, "[refgraph:reject]", True)),
        (
            {"REFGRAPH_DELAY_MS": "500", "REFGRAPH_REJECT_MARKER": "#x", "REFGRAPH_IDEMPOTENT": "0"},
            Settings(0.5, "#x", False),
        ),
    ],
)
def test_settings_from_env(env: dict[str, str], want: Settings) -> None:
    assert settings_from_env(env) == want


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({"REFGRAPH_DELAY_MS": "soon"}, "REFGRAPH_DELAY_MS='soon': not a number"),
        ({"REFGRAPH_DELAY_MS": "-1"}, "must not be negative"),
        ({"REFGRAPH_IDEMPOTENT": "maybe"}, "REFGRAPH_IDEMPOTENT='maybe'"),
    ],
)
def test_settings_from_env_names_the_bad_variable(env: dict[str, str], want: str) -> None:
    with pytest.raises(SystemExit, match=re.escape(want)):
        settings_from_env(env)


def test_run_records_survive_a_fork(tmp_path: Any) -> None:
    """The adapter's regenerate path forks a thread: the records of both branches count."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from agora_refgraph.server import leaf_runs

    async def go() -> list[str]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
            g = compile_graph(saver)
            cfg = {"configurable": {"thread_id": "t1"}}
            await g.ainvoke(graph_input("m1", "one"), cfg)
            fork_point = (await g.aget_state(cfg)).config
            await g.ainvoke(graph_input("m2", "two"), cfg)
            # Run m3 on a branch from after m1, as a time-travel fork does.
            await g.ainvoke(graph_input("m3", "three"), fork_point)
            latest = [r["message_id"] for r in (await g.aget_state(cfg)).values["runs"]]
            assert latest == ["m1", "m3"]  # the newest branch alone has lost m2
            return [r["message_id"] for r in (await leaf_runs(saver, "t1"))["t1"]]

    assert asyncio.run(go()) == ["m1", "m2", "m3"]


def test_empty_question_fails_the_run() -> None:
    t = Thread()
    with pytest.raises(ValueError, match="user message m1 is empty"):
        t.run(graph_input("m1", "  ", "feedback"))
    with pytest.raises(ValueError, match=r"user message \(none\) is empty"):
        Thread().run({"messages": [], "ag-ui": {"tools": [], "context": []}})


@pytest.mark.parametrize("size", [60, 1000, 200 * 1024])
def test_long_marker_answers_with_size_bytes_all_spoken(size: int) -> None:
    t = Thread()
    _, state = t.run(graph_input("m1", f"Vertel alles [refgraph:long:{size}]", "feedback"))
    written = state["final_written"]
    assert len(written.encode()) == size
    assert state["final_spoken"] == written
    assert written.startswith("Zin 1 van het lange antwoord")
    assert state["messages"][-1].content == written


def test_without_long_marker_spoken_is_short() -> None:
    _, state = Thread().run(graph_input("m1", "Vertel alles [refgraph:long:x]", "feedback"))
    assert len(state["final_spoken"]) <= 160


def test_pad_answer_length_and_ending() -> None:
    from agora_refgraph.model import answer_words, pad_answer

    for words in (3, 40, 57, 80):
        text = pad_answer("You said: hello there", words)
        assert len(text.split()) == max(words, 4), text
        assert text.endswith("."), text
    n = answer_words("is this railing high enough", 40, 80)
    assert 40 <= n <= 80 and n == answer_words("is this railing high enough", 40, 80)
