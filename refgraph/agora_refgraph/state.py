"""Graph state: the seed's AgentState, reduced to what the listen-mode plan uses."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langchain_core.messages import BaseMessage
from langgraph.graph.message import add_messages

# typing_extensions, not typing: on Python 3.11 pydantic (which the AG-UI
# adapter uses to read the input schema) refuses typing.TypedDict.
from typing_extensions import TypedDict


def accumulate_messages(left: list[dict[str, Any]] | None, right: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Append buffered notes; process_buffer clears with Overwrite([])."""
    return (left or []) + (right or [])


def merge_results(
    left: dict[str, dict[str, Any]] | None, right: dict[str, dict[str, Any]] | None
) -> dict[str, dict[str, Any]]:
    """Results by runId: a later write for a runId replaces the earlier one."""
    return {**(left or {}), **(right or {})}


class AgUiState(TypedDict, total=False):
    """What the AG-UI adapter writes under the state's "ag-ui" key each run."""

    tools: list[Any]
    context: list[Any]


# Functional form: "ag-ui" is not an identifier. The adapter fills it only
# when the schema declares it, and replaces it every run (no reducer).
AgentState = TypedDict(
    "AgentState",
    {
        "messages": Annotated[list[BaseMessage], add_messages],
        "interaction_mode": str,  # "feedback" | "listen"
        "message_buffer": Annotated[list[dict[str, Any]], accumulate_messages],
        # The processed notes as context for the next answer only: the agent
        # clears it once an answer has used it.
        "buffer_context": str,
        # Every note ever moved out of message_buffer, in order: what a report
        # needs after buffer_context was cleared.
        "report_notes": Annotated[list[dict[str, Any]], operator.add],
        "final_written": str,
        "final_spoken": str,
        # True when the run produced an answer meant for the inspector (not a
        # listen-mode acknowledgment): the bridge replies only then.
        "answered": bool,
        # One record per run that reached the graph (see graph.intake).
        "runs": Annotated[list[dict[str, Any]], operator.add],
        # The outcome of each finished run by AG-UI runId: the idempotency
        # record that lets a retried run be answered without running again.
        "results": Annotated[dict[str, dict[str, Any]], merge_results],
        # Set by intake for this run only: the runId already finished.
        "replaying": bool,
        "ag-ui": AgUiState,
    },
    total=False,
)
