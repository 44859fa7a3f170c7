"""The graph over real HTTP/SSE through uvicorn, as agora-bridge sees it."""

from __future__ import annotations

import json
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from .conftest import Server, final_state, post_run, run_input, streamed_text

NOTES = [
    {"id": "n1", "seq": 1, "text": "crack in the weld at frame four", "lang": "en"},
    {"id": "n2", "seq": 2, "text": "roest op de onderste balk", "lang": "nl"},
    {"id": "n3", "seq": 3, "text": "missing fire stop in shaft B", "lang": "en"},
]


def batch(thread: str, msg_id: str, notes: list[dict[str, Any]] = NOTES) -> dict[str, Any]:
    return run_input(thread, msg_id, "\n".join(n["text"] for n in notes), notes=notes)


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_utterance_event_order_and_final_outputs(server: Server) -> None:
    events = post_run(server.url, run_input("dev-1", "m1", "what is the torque spec for these bolts"))
    ts = types(events)
    assert ts[0] == "RUN_STARTED" and ts[-1] == "RUN_FINISHED"
    assert events[0]["threadId"] == "dev-1" and events[0]["runId"] == "run-m1"
    assert "RAW" not in ts
    start, end = ts.index("TEXT_MESSAGE_START"), ts.index("TEXT_MESSAGE_END")
    assert ts.count("TEXT_MESSAGE_CONTENT") > 1 and all(t == "TEXT_MESSAGE_CONTENT" for t in ts[start + 1 : end])
    last_snapshot = max(i for i, t in enumerate(ts) if t == "STATE_SNAPSHOT")
    assert end < last_snapshot < ts.index("RUN_FINISHED")
    state = final_state(events)
    assert state["final_written"] == "You said: what is the torque spec for these bolts"
    assert streamed_text(events) == state["final_written"]
    assert state["final_spoken"] == "You said: what is the torque spec for these bolts"
    assert state["answered"] is True
    assert state["interaction_mode"] == "feedback"


def test_listen_round_batch_then_question(server: Server) -> None:
    events = post_run(server.url, batch("dev-2", "b1"))
    assert types(events)[-1] == "RUN_FINISHED"
    state = final_state(events)
    assert state["answered"] is False and state["final_spoken"] == ""
    assert (
        streamed_text(events) == state["final_written"] == "[Luistermodus actief - 3 berichten opgeslagen, 3 in totaal]"
    )
    assert [m["content"] for m in state["message_buffer"]] == [n["text"] for n in NOTES]

    events = post_run(server.url, run_input("dev-2", "u1", "what do you think?"))
    state = final_state(events)
    assert state["answered"] is True
    assert state["message_buffer"] == []
    for note in NOTES:
        assert note["text"] in state["final_written"]
    assert streamed_text(events) == state["final_written"]
    assert len(state["final_spoken"]) < len(state["final_written"])
    # The answer used the batch: the context is cleared, the notes kept for reports.
    assert state["buffer_context"] == ""
    assert [n["content"] for n in state["report_notes"]] == [n["text"] for n in NOTES]

    debug = httpx.get(f"{server.url}/debug/threads/dev-2").json()
    assert debug["runs_by_message"] == {"b1": 1, "u1": 1}
    assert [(r["run_id"], r["kind"]) for r in debug["runs"]] == [("run-b1", "batch"), ("run-u1", "utterance")]
    assert debug["report_notes"] == state["report_notes"]

    # The next answer does not repeat the old notes as new context.
    state = final_state(post_run(server.url, run_input("dev-2", "u2", "and the roof?")))
    assert state["final_written"] == "You said: and the roof?"
    assert len(state["report_notes"]) == len(NOTES)


def test_debug_endpoints_on_a_fresh_database(server_factory: Any) -> None:
    srv = server_factory()
    threads = httpx.get(f"{srv.url}/debug/threads")
    assert (threads.status_code, threads.json()) == (200, {"threads": {}})
    assert httpx.get(f"{srv.url}/debug/threads/nobody").status_code == 404


def test_wake_word_in_listen_mode(server: Server) -> None:
    for i, note in enumerate(NOTES):
        state = final_state(post_run(server.url, run_input("dev-3", f"l{i}", note["text"], mode="listen")))
        assert state["final_written"] == f"[Luistermodus actief - bericht {i + 1} opgeslagen]"
    state = final_state(post_run(server.url, run_input("dev-3", "w1", "AGORA, wat vind je hiervan?", mode="listen")))
    assert state["interaction_mode"] == "feedback"
    assert state["final_written"].startswith("You said: wat vind je hiervan?")
    assert all(n["text"] in state["final_written"] for n in NOTES)


def test_context_must_be_a_list(server: Server) -> None:
    body = run_input("dev-4", "m1", "x")
    body["context"] = {"isOfflineBatch": True, "messageCount": 1}
    resp = httpx.post(server.url, json=body, headers={"Accept": "text/event-stream"})
    assert resp.status_code == 422


def test_bad_batch_gives_run_error(server: Server) -> None:
    body = batch("dev-5", "b1")
    body["context"][1]["value"] = "7"
    events = post_run(server.url, body)
    assert types(events)[-1] == "RUN_ERROR"
    assert "messageCount 7 but 3 notes" in events[-1]["message"]


def test_rejected_message_is_recorded_and_later_messages_go_on(switched_server: Server) -> None:
    srv = switched_server
    events = post_run(srv.url, run_input("dev-6", "m1", "this is #poison"))
    assert types(events)[0] == "RUN_STARTED" and types(events)[-1] == "RUN_ERROR"
    assert "m1 rejected" in events[-1]["message"]
    events = post_run(srv.url, run_input("dev-6", "m2", "and this is fine"))
    assert types(events)[-1] == "RUN_FINISHED"
    assert final_state(events)["final_written"] == "You said: and this is fine"
    debug = httpx.get(f"{srv.url}/debug/threads/dev-6").json()
    assert debug["runs_by_message"] == {"m1": 1, "m2": 1}


def test_same_run_twice_is_one_run_and_two_attempts(server: Server) -> None:
    body = run_input("dev-7", "m1", "once please")
    first = post_run(server.url, body)
    again = post_run(server.url, body)
    assert types(again)[-1] == "RUN_FINISHED"
    assert streamed_text(again) == streamed_text(first) == final_state(again)["final_written"]
    assert final_state(again)["answered"] is True
    debug = httpx.get(f"{server.url}/debug/threads/dev-7").json()
    assert debug["runs_by_message"] == {"m1": 1}
    assert debug["attempts_by_message"] == {"m1": 2}
    assert [m["content"] for m in final_state(again)["messages"] if m["type"] == "ai"] == ["You said: once please"]
    assert httpx.get(f"{server.url}/debug/threads").json()["threads"]["dev-7"] == {"m1": 1}
    assert httpx.get(f"{server.url}/debug/threads/nobody").status_code == 404


def test_run_outlives_its_caller_and_the_retry_is_a_replay(switched_server: Server) -> None:
    """A bridge killed mid-run: the run still finishes; the retry waits for it and replays."""
    body = run_input("dev-10", "m1", "a note", mode="listen")
    with httpx.stream("POST", switched_server.url, json=body, headers={"Accept": "text/event-stream"}) as resp:
        for line in resp.iter_lines():
            if "RUN_STARTED" in line:
                break  # hang up while the graph is still in its 400 ms delay
    events = post_run(switched_server.url, body)
    assert types(events)[-1] == "RUN_FINISHED"
    state = final_state(events)
    assert [m["content"] for m in state["message_buffer"]] == ["a note"]
    debug = httpx.get(f"{switched_server.url}/debug/threads/dev-10").json()
    assert (debug["runs_by_message"], debug["attempts_by_message"]) == ({"m1": 1}, {"m1": 2})


def test_concurrent_runs_of_one_thread_are_serialised(switched_server: Server) -> None:
    notes = [f"note {i}" for i in range(4)]
    with ThreadPoolExecutor(len(notes)) as pool:
        results = list(
            pool.map(
                lambda i: post_run(switched_server.url, run_input("dev-11", f"m{i}", notes[i], mode="listen")),
                range(len(notes)),
            )
        )
    assert all(types(r)[-1] == "RUN_FINISHED" for r in results)
    debug = httpx.get(f"{switched_server.url}/debug/threads/dev-11").json()
    assert sorted(m["content"] for m in debug["message_buffer"]) == notes  # no update lost
    assert debug["runs_by_message"] == {f"m{i}": 1 for i in range(len(notes))}


def test_checkpointer_survives_restart(server_factory: Any, tmp_path: Any) -> None:
    db = tmp_path / "restart.sqlite"
    first = server_factory(db=db)
    post_run(first.url, batch("dev-8", "b1"))
    # SIGTERM: uvicorn shuts down gracefully, then re-raises the signal.
    assert first.stop() in (0, -signal.SIGTERM)
    second = server_factory(db=db)
    state = final_state(post_run(second.url, run_input("dev-8", "u1", "and now?")))
    assert all(n["text"] in state["final_written"] for n in NOTES)
    assert httpx.get(f"{second.url}/debug/threads/dev-8").json()["runs_by_message"] == {"b1": 1, "u1": 1}


def test_delay_switch(switched_server: Server) -> None:
    srv = switched_server
    start = time.monotonic()
    events = post_run(srv.url, run_input("dev-9", "m1", "slow"))
    assert time.monotonic() - start >= 0.4
    assert types(events)[-1] == "RUN_FINISHED"


def test_writing_model_streams_at_the_configured_rate(module_servers: Any) -> None:
    """REFGRAPH_STREAM_TPS: the answer arrives word by word, the first after
    about the first-token delay, then at the configured rate, and the
    streamed text is the final answer, spoken whole."""
    srv = module_servers(REFGRAPH_STREAM_TPS="20", REFGRAPH_FIRST_TOKEN_MS="300", REFGRAPH_ANSWER_WORDS="40-60")
    body = run_input("writer-1", "m-writer-1", "is this railing high enough")
    began = time.monotonic()
    arrivals: list[tuple[float, dict[str, Any]]] = []
    with httpx.stream("POST", srv.url, json=body, headers={"Accept": "text/event-stream"}, timeout=30) as resp:
        resp.raise_for_status()
        for line in resp.iter_lines():
            if line.startswith("data: "):
                arrivals.append((time.monotonic() - began, json.loads(line[len("data: ") :])))
    events = [e for _, e in arrivals]
    assert events[-1]["type"] == "RUN_FINISHED", [e["type"] for e in events]
    content = [(t, e) for t, e in arrivals if e["type"] == "TEXT_MESSAGE_CONTENT"]
    words = len(streamed_text(events).split())
    assert 40 <= words <= 60, streamed_text(events)
    assert len(content) == words, "one event per written word"
    first, last = content[0][0], content[-1][0]
    assert first >= 0.3, f"first word after {first:.3f} s, before the 300 ms first-token delay"
    # words-1 intervals at 20 words/s; generous above for a loaded machine,
    # strict below: the answer must not arrive at once.
    spread = last - first
    assert spread >= 0.9 * (words - 1) / 20, f"{words} words over {spread:.2f} s: faster than 20/s"
    assert spread <= 3 * (words - 1) / 20 + 2, f"{words} words over {spread:.2f} s: far slower than 20/s"
    state = final_state(events)
    assert streamed_text(events) == state["final_written"]
    assert state["final_written"].startswith("You said: is this railing high enough.")
    assert state["final_spoken"] == state["final_written"], "the whole written answer is speakable"
    assert state["answered"] is True


def test_writing_switches_are_validated() -> None:
    from agora_refgraph.server import settings_from_env

    assert settings_from_env({}).writing is None
    w = settings_from_env({"REFGRAPH_STREAM_TPS": "30"}).writing
    assert w is not None and (w.tokens_per_s, w.first_token_s, w.words_min, w.words_max) == (30, 0.3, 40, 80)
    for env in (
        {"REFGRAPH_STREAM_TPS": "fast"},
        {"REFGRAPH_STREAM_TPS": "-1"},
        {"REFGRAPH_STREAM_TPS": "30", "REFGRAPH_FIRST_TOKEN_MS": "nan"},
        {"REFGRAPH_STREAM_TPS": "30", "REFGRAPH_ANSWER_WORDS": "80-40"},
        {"REFGRAPH_STREAM_TPS": "30", "REFGRAPH_ANSWER_WORDS": "0-10"},
        {"REFGRAPH_STREAM_TPS": "30", "REFGRAPH_ANSWER_WORDS": "many"},
    ):
        with pytest.raises(SystemExit, match="REFGRAPH_"):
            settings_from_env(env)
