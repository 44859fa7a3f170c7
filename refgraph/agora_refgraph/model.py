"""A deterministic chat model that answers by echoing what it was given."""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult


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
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self._answer(messages)))])

    def _answer(self, messages: list[BaseMessage]) -> str:
        question = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        system = "\n".join(m.text for m in messages if isinstance(m, SystemMessage))
        lines = [f"You said: {question.strip()}"]
        if system.strip():
            lines.append(system.strip())
        return "\n".join(lines)


# What the writing model adds after the echo, sentence by sentence, until the
# answer has its length: plain speakable English, as an inspector would hear it.
_FILLER = (
    "The railing should be at least one metre ten high where the drop is more than two metres.",
    "Check the fixings at every post and look for rust where the steel meets the concrete.",
    "If a post moves when you push it, mark it and take a photograph for the report.",
    "Cracks wider than three tenths of a millimetre need a structural engineer to look at them.",
    "Write down the location, the width and the length of each crack you find.",
    "Make sure the area below is closed off until the repair has been signed off.",
)

_TOKEN = re.compile(r"\S+\s*")


def answer_words(question: str, words_min: int, words_max: int) -> int:
    """The answer's length in words for this question: fixed per question
    (a stable hash, not Python's salted one) so runs are reproducible."""
    span = words_max - words_min + 1
    return words_min + int.from_bytes(hashlib.sha256(question.encode()).digest()[:4], "big") % span


def pad_answer(first_line: str, words: int) -> str:
    """first_line followed by filler sentences, exactly `words` words (at
    least the first line's own), ending with a full stop."""
    out = first_line.rstrip()
    if out and out[-1] not in ".?!":
        out += "."
    have = len(out.split())
    i = 0
    while have < words:
        sentence = _FILLER[i % len(_FILLER)].split()[: words - have]
        text = " ".join(sentence)
        if text[-1] not in ".?!":
            text = text.rstrip(",;:") + "."
        out += " " + text
        have += len(sentence)
        i += 1
    return out


class WritingEchoChatModel(EchoChatModel):
    """The echo model writing like a language model: the answer (the echo
    padded to words_min..words_max words) comes as one chunk per word, the
    first after first_token_s and then tokens_per_s chunks a second, on an
    absolute schedule so a slow event loop does not stretch the answer.
    Streaming callers (ag-ui-langgraph's astream_events) get one
    TEXT_MESSAGE_CONTENT event per chunk as it is written."""

    tokens_per_s: float = 30.0
    first_token_s: float = 0.3
    words_min: int = 40
    words_max: int = 80

    def _answer(self, messages: list[BaseMessage]) -> str:
        base = super()._answer(messages)
        first, _, rest = base.partition("\n")
        question = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        padded = pad_answer(first, answer_words(question, self.words_min, self.words_max))
        return padded + ("\n" + rest if rest else "")

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        start = time.monotonic()
        for i, token in enumerate(_TOKEN.findall(self._answer(messages))):
            due = start + self.first_token_s + i / self.tokens_per_s
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=token))
            if run_manager:
                await run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # A non-streaming caller waits for the whole answer, as with a real model.
        text = "".join([c.text async for c in self._astream(messages, stop, run_manager, **kwargs)])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])
