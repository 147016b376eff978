"""Test data: the repository's own fixtures, and the shared corpus read in place.

The shared folder is ``CHAT_PEG_SHARED`` (relative to the repository root) if set, else
``../shared`` beside the repository, as for the Rust tests. Without it the corpus tests skip,
unless ``CHAT_PEG_REQUIRE_SHARED=1`` (as ``.ci/run`` sets) makes them fail.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "chatml-tools"

# A template per output shape: JSON calls in tags, tagged arguments, harmony channels,
# reasoning with calls.
SHAPES = [
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
    "Qwen3-Coder",
    "openai-gpt-oss-120b",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
]


def shared_dir() -> Path:
    configured = os.environ.get("CHAT_PEG_SHARED")
    directory = (REPO / configured) if configured else REPO.parent / "shared"
    if not (directory / "corpus").is_dir():
        message = f"shared test data not found at {directory} (set CHAT_PEG_SHARED)"
        if os.environ.get("CHAT_PEG_REQUIRE_SHARED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return directory


def parse_cases(templates: list[str]) -> Iterator[dict[str, Any]]:
    """The corpus' whole-output parse cases of these templates that expect a message."""
    with open(shared_dir() / "corpus" / "chat-cases.jsonl", encoding="utf-8") as lines:
        for line in lines:
            case = json.loads(line)
            if case["kind"] == "parse" and case.get("template") in templates and not case.get("is_partial") and not case.get("expect_failure"):
                yield case


def template_path(case: dict[str, Any]) -> Path:
    return shared_dir() / "templates" / f"{case['template']}.jinja"


@pytest.fixture(scope="session")
def example_request() -> dict[str, Any]:
    return json.loads((EXAMPLE / "request.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def example_output() -> str:
    return (EXAMPLE / "output.txt").read_text(encoding="utf-8")


def accumulate(deltas: list[dict[str, Any]]) -> dict[str, Any]:
    """The message OpenAI-shaped deltas add up to, accumulated field by field as OpenAI's
    clients do; a call's id, once sent, never changes."""
    message: dict[str, Any] = {"role": "assistant", "content": "", "reasoning_content": "", "tool_calls": []}
    for delta in deltas:
        message["content"] += delta.get("content") or ""
        message["reasoning_content"] += delta.get("reasoning_content") or ""
        for fragment in delta.get("tool_calls", []):
            calls = message["tool_calls"]
            if fragment["index"] == len(calls):
                calls.append({"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
            call = calls[fragment["index"]]
            if fragment.get("id"):
                assert call["id"] in ("", fragment["id"]), f"call {fragment['index']} changed its id"
                call["id"] = fragment["id"]
            function = fragment.get("function") or {}
            call["function"]["name"] += function.get("name") or ""
            call["function"]["arguments"] += function.get("arguments") or ""
    if not message["reasoning_content"]:
        del message["reasoning_content"]
    if not message["tool_calls"]:
        del message["tool_calls"]
    return message


def chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]
