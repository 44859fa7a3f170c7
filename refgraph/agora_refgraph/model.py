"""A deterministic chat model that answers by echoing what it was given."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class EchoChatModel(GenericFakeChatModel):
    """LangChain's generic fake chat model, answering from its prompt.

    The answer's first line repeats the last human message; the next lines
    repeat the system prompt (the listen-mode context), so a test can check
    that each buffered note reached the model. GenericFakeChatModel's _stream
    splits the answer on whitespace, so the AG-UI stream carries several
    TEXT_MESSAGE_CONTENT events as with a real model.
    """

    messages: Iterator[AIMessage | str] = iter(())

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        question = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        system = "\n".join(m.text for m in messages if isinstance(m, SystemMessage))
        lines = [f"You said: {question.strip()}"]
        if system.strip():
            lines.append(system.strip())
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="\n".join(lines)))])
