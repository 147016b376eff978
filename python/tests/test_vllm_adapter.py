"""The vLLM adapter: the plugin interfaces' signatures, and their results against the library's."""

from __future__ import annotations

import inspect
import json
from typing import Any, Optional

import pytest

import chat_peg
from chat_peg import vllm as adapter
from conftest import EXAMPLE, chunks, parse_cases, template_path


class CharTokenizer:
    """A tokenizer with a token per character, and the chat template vLLM reads from it."""

    def __init__(self, chat_template: str, bos_token: str = "", eos_token: str = ""):
        self.chat_template = chat_template
        self.bos_token = bos_token
        self.eos_token = eos_token

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(chr(i) for i in ids)

    def get_vocab(self) -> dict[str, int]:
        return {}


# vLLM's method signatures (its ToolParser and ReasoningParser base classes), parameter names in
# order after `self`. vLLM passes some of them by keyword, so names matter as much as order.
TOOL_PARSER_METHODS = {
    "__init__": ["tokenizer"],
    "adjust_request": ["request"],
    "extract_tool_calls": ["model_output", "request"],
    "extract_tool_calls_streaming": ["previous_text", "current_text", "delta_text", "previous_token_ids", "current_token_ids", "delta_token_ids", "request"],
}
REASONING_PARSER_METHODS = {
    "is_reasoning_end": ["input_ids"],
    "extract_content_ids": ["input_ids"],
    "extract_reasoning_content": ["model_output", "request"],
    "extract_reasoning_content_streaming": ["previous_text", "current_text", "delta_text", "previous_token_ids", "current_token_ids", "delta_token_ids"],
    "extract_reasoning": ["model_output", "request"],
    "extract_reasoning_streaming": ["previous_text", "current_text", "delta_text", "previous_token_ids", "current_token_ids", "delta_token_ids"],
}


def _parameters(function: Any) -> list[str]:
    return [p.name for p in inspect.signature(function).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][1:]


@pytest.mark.parametrize("cls, methods", [(adapter.ChatPegToolParser, TOOL_PARSER_METHODS), (adapter.ChatPegReasoningParser, REASONING_PARSER_METHODS)])
def test_methods_have_the_vllm_signatures(cls, methods):
    for name, parameters in methods.items():
        assert _parameters(getattr(cls, name)) == parameters, name
    # The state vLLM's serving code reads from a tool parser after a stream.
    parser = adapter.ChatPegToolParser(CharTokenizer((EXAMPLE / "template.jinja").read_text()))
    assert parser.prev_tool_call_arr == [] and parser.streamed_args_for_tool == []
    assert parser.current_tool_id == -1 and parser.current_tool_name_sent is False


def test_the_protocol_classes_have_vllms_fields():
    fields = lambda cls: set(getattr(cls, "model_fields", None) or cls.__dataclass_fields__)  # noqa: E731
    assert {"tools_called", "tool_calls", "content"} <= fields(adapter.ExtractedToolCallInformation)
    assert {"id", "type", "function"} <= fields(adapter.ToolCall)
    assert {"name", "arguments"} <= fields(adapter.FunctionCall)
    assert {"role", "content", "tool_calls"} <= fields(adapter.DeltaMessage)
    assert {"index", "id", "type", "function"} <= fields(adapter.DeltaToolCall)
    assert {"name", "arguments"} <= fields(adapter.DeltaFunctionCall)


def test_the_template_comes_from_the_tokenizer_or_the_environment(monkeypatch, tmp_path):
    source = (EXAMPLE / "template.jinja").read_text()
    assert adapter.model_for(CharTokenizer(source)).analysis == chat_peg.Model.from_source(source).analysis
    assert adapter.model_for(CharTokenizer({"default": source, "tool_use": "x"})).source == source  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="CHAT_PEG_TEMPLATE"):
        adapter.model_for(CharTokenizer(None))  # type: ignore[arg-type]
    monkeypatch.setenv("CHAT_PEG_TEMPLATE", str(EXAMPLE / "template.jinja"))
    assert adapter.model_for(CharTokenizer(None)).source == source  # type: ignore[arg-type]
    monkeypatch.setenv("CHAT_PEG_TEMPLATE", str(tmp_path / "missing.jinja"))
    with pytest.raises(chat_peg.ChatPegError):
        adapter.model_for(CharTokenizer(None))  # type: ignore[arg-type]


class Request:
    """The attributes of vLLM's ChatCompletionRequest the adapter reads (a pydantic model there)."""

    def __init__(self, data: dict[str, Any]):
        self._data = data
        self.tools = data.get("tools")
        self.tool_choice = data.get("tool_choice", "auto")
        self.skip_special_tokens = True

    def model_dump(self, exclude_none: bool = False, mode: str = "python") -> dict[str, Any]:
        return dict(self._data)


def _stream_tool_parser(parser: Any, output: str, request: Any, size: int) -> list[Any]:
    """Drives a tool parser as vLLM's serving code does, one chunk of text at a time."""
    previous, messages = "", []
    for delta in chunks(output, size):
        current = previous + delta
        ids = [ord(c) for c in current]
        message = parser.extract_tool_calls_streaming(previous, current, delta, ids[: len(previous)], ids, ids[len(previous) :], request)
        if message is not None:
            messages.append(message)
        previous = current
    return messages


def _calls_of(messages: list[Any]) -> list[dict[str, Any]]:
    """Tool calls from DeltaMessages, accumulated as an OpenAI client does."""
    calls: list[dict[str, Any]] = []
    for message in messages:
        for fragment in message.tool_calls:
            if fragment.index == len(calls):
                calls.append({"id": None, "name": "", "arguments": ""})
            call = calls[fragment.index]
            if fragment.id:
                assert call["id"] in (None, fragment.id), "a call changed its id"
                call["id"] = fragment.id
            if fragment.function is not None:
                call["name"] += fragment.function.name or ""
                call["arguments"] += fragment.function.arguments or ""
    return calls


@pytest.mark.parametrize("template", ["NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "Qwen3-Coder"])
@pytest.mark.parametrize("size", [1, 5])
def test_tool_parser_one_shot_and_streamed_equal_the_library(template, size):
    cases = list(parse_cases([template]))
    tokenizer = CharTokenizer(template_path(cases[0]).read_text())
    for case in cases:
        request = Request(case["inputs"])
        parser = adapter.ChatPegToolParser(tokenizer)
        assert parser.adjust_request(request) is request
        assert request.skip_special_tokens is not bool(request.tools)
        library = chat_peg.Model.from_source(tokenizer.chat_template).prepare(case["inputs"]).parse(case["model_output"])["message"]
        want = [{"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in library.get("tool_calls", [])]

        info = parser.extract_tool_calls(case["model_output"], request)
        assert info.tools_called is bool(want)
        assert [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in info.tool_calls] == want, case["id"]
        assert info.content == (library["content"] or None)

        streaming = adapter.ChatPegToolParser(tokenizer)
        messages = _stream_tool_parser(streaming, case["model_output"], request, size)
        assert _calls_of(messages) == want, case["id"]
        assert "".join(m.content or "" for m in messages) == library["content"], case["id"]
        # What vLLM appends to each call when the stream ends: nothing, all was streamed.
        for index, call in enumerate(want):
            json.loads(call["arguments"])
            expected = json.dumps(streaming.prev_tool_call_arr[index]["arguments"], ensure_ascii=False)
            assert expected.replace(streaming.streamed_args_for_tool[index], "", 1) == "", case["id"]


def _reasoning_of(message: Any) -> Optional[str]:
    return getattr(message, "reasoning_content", None) if hasattr(message, "reasoning_content") else getattr(message, "reasoning", None)


@pytest.mark.parametrize("size", [1, 4])
def test_reasoning_then_tool_parser_as_vllm_chains_them(example_request, example_output, size):
    tokenizer = CharTokenizer((EXAMPLE / "template.jinja").read_text())
    request = Request(example_request)
    library = chat_peg.Model.load(EXAMPLE / "template.jinja").prepare(example_request).parse(example_output)["message"]

    # One shot: the reasoning parser takes the reasoning, the tool parser reads the rest.
    reasoning, rest = adapter.ChatPegReasoningParser(tokenizer).extract_reasoning_content(example_output, request)
    assert reasoning == library["reasoning_content"]
    assert rest is not None and example_output.endswith(rest)
    info = adapter.ChatPegToolParser(tokenizer).extract_tool_calls(rest, request)
    assert [(c.id, c.function.name, c.function.arguments) for c in info.tool_calls] == [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in library["tool_calls"]]
    assert info.content == library["content"]

    # Streamed: reasoning deltas, then the text after it handed to the tool parser.
    reasoning_parser, tool_parser = adapter.ChatPegReasoningParser(tokenizer), adapter.ChatPegToolParser(tokenizer)
    previous, streamed_reasoning, after = "", "", ""
    tool_messages: list[Any] = []
    for delta in chunks(example_output, size):
        current = previous + delta
        ids = [ord(c) for c in current]
        message = reasoning_parser.extract_reasoning_content_streaming(previous, current, delta, ids[: len(previous)], ids, ids[len(previous) :])
        if message is not None:
            streamed_reasoning += _reasoning_of(message) or ""
            if message.content:
                tool_message = tool_parser.extract_tool_calls_streaming(after, after + message.content, message.content, [], [], [], request)
                after += message.content
                if tool_message is not None:
                    tool_messages.append(tool_message)
        previous = current
    assert streamed_reasoning == library["reasoning_content"]
    assert after == rest
    assert "".join(m.content or "" for m in tool_messages) == library["content"]
    assert _calls_of(tool_messages) == [{"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in library["tool_calls"]]

    # Token-level questions vLLM asks of a reasoning parser.
    parser = adapter.ChatPegReasoningParser(tokenizer)
    ids = tokenizer.encode(example_output)
    assert parser.is_reasoning_end(ids) and not parser.is_reasoning_end(tokenizer.encode("<think>still thinking"))
    assert tokenizer.decode(parser.extract_content_ids(ids)) == rest


def test_reasoning_parser_on_a_reasoning_template_corpus():
    cases = [c for c in parse_cases(["deepseek-ai-DeepSeek-R1-Distill-Qwen-32B"])]
    tokenizer = CharTokenizer(template_path(cases[0]).read_text())
    for case in cases:
        library = chat_peg.Model.from_source(tokenizer.chat_template).prepare(case["inputs"]).parse(case["model_output"])["message"]
        reasoning, rest = adapter.ChatPegReasoningParser(tokenizer).extract_reasoning_content(case["model_output"], Request(case["inputs"]))
        assert reasoning == (library.get("reasoning_content") or None), case["id"]
        assert rest is None or case["model_output"].endswith(rest), case["id"]
