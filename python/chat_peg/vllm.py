"""vLLM tool-call and reasoning parsers for any chat template, learned from the template itself.

Point vLLM at this file (``python -c "import chat_peg.vllm as m; print(m.__file__)"`` prints
its path)::

    vllm serve MODEL --enable-auto-tool-choice \\
        --tool-parser-plugin PATH/chat_peg/vllm.py --tool-call-parser chat_peg \\
        --reasoning-parser-plugin PATH/chat_peg/vllm.py --reasoning-parser chat_peg

The parsers read the template from the tokenizer (``tokenizer.chat_template``, with its BOS and
EOS tokens), or from the file ``CHAT_PEG_TEMPLATE`` names (a ``.jinja``, a
``tokenizer_config.json`` or a ``.gguf``), and analyze it once per process.

vLLM runs its reasoning parser first and gives the tool parser the text after the reasoning, so
the two divide the work: :class:`ChatPegReasoningParser` returns the reasoning and the raw text
after it; :class:`ChatPegToolParser` reads calls and content from that text. A reasoning template
used without ``--reasoning-parser chat_peg`` keeps its reasoning out of the tool parser's content
only where the model writes both reasoning markers itself.

When vLLM is importable the parsers subclass its ``ToolParser`` and ``ReasoningParser``, return
its protocol classes and register themselves under ``chat_peg``; without it they return the
dataclasses below, which have the same fields, so the adapter can be used and tested alone.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Optional, Union

from ._native import Model, PreparedRequest

__all__ = [
    "ChatPegReasoningParser",
    "ChatPegToolParser",
    "DeltaFunctionCall",
    "DeltaMessage",
    "DeltaToolCall",
    "ExtractedToolCallInformation",
    "FunctionCall",
    "ToolCall",
    "VLLM_AVAILABLE",
]


def _import_first(names: Sequence[str], modules: Sequence[str]) -> Optional[tuple[Any, ...]]:
    """The named attributes of the first module that has them all (vLLM moves them between
    versions), or None when none does."""
    for module in modules:
        try:
            loaded = importlib.import_module(module)
            return tuple(getattr(loaded, name) for name in names)
        except (ImportError, AttributeError):
            continue
    return None


_vllm_protocol = _import_first(
    ["DeltaFunctionCall", "DeltaMessage", "DeltaToolCall", "ExtractedToolCallInformation", "FunctionCall", "ToolCall"],
    ["vllm.entrypoints.openai.protocol", "vllm.entrypoints.openai.engine.protocol"],
)
_vllm_tool_parser = _import_first(
    ["ToolParser", "ToolParserManager"],
    ["vllm.tool_parsers.abstract_tool_parser", "vllm.entrypoints.openai.tool_parsers.abstract_tool_parser", "vllm.entrypoints.openai.tool_parsers"],
)
_vllm_reasoning_parser = _import_first(["ReasoningParser", "ReasoningParserManager"], ["vllm.reasoning.abs_reasoning_parsers", "vllm.reasoning"])

VLLM_AVAILABLE = _vllm_protocol is not None and _vllm_tool_parser is not None and _vllm_reasoning_parser is not None
"""Whether vLLM is importable: the parsers then use and register with its classes."""

if VLLM_AVAILABLE:
    DeltaFunctionCall, DeltaMessage, DeltaToolCall, ExtractedToolCallInformation, FunctionCall, ToolCall = _vllm_protocol  # type: ignore[misc]
    _ToolParserBase, _ToolParserManager = _vllm_tool_parser  # type: ignore[misc]
    _ReasoningParserBase, _ReasoningParserManager = _vllm_reasoning_parser  # type: ignore[misc]
else:

    @dataclass
    class FunctionCall:  # type: ignore[no-redef]
        """vLLM's ``FunctionCall``: a finished call's function."""

        name: str
        arguments: str

    @dataclass
    class ToolCall:  # type: ignore[no-redef]
        """vLLM's ``ToolCall``: one call of a non-streamed message."""

        function: FunctionCall
        id: str = ""
        type: str = "function"

    @dataclass
    class DeltaFunctionCall:  # type: ignore[no-redef]
        """vLLM's ``DeltaFunctionCall``: the name (first fragment) and a piece of arguments."""

        name: Optional[str] = None
        arguments: Optional[str] = None

    @dataclass
    class DeltaToolCall:  # type: ignore[no-redef]
        """vLLM's ``DeltaToolCall``: one call fragment of a streamed delta."""

        index: int
        id: Optional[str] = None
        type: Optional[str] = None
        function: Optional[DeltaFunctionCall] = None

    @dataclass
    class DeltaMessage:  # type: ignore[no-redef]
        """vLLM's ``DeltaMessage``: one streamed increment."""

        role: Optional[str] = None
        content: Optional[str] = None
        reasoning_content: Optional[str] = None
        tool_calls: list[DeltaToolCall] = field(default_factory=list)

    @dataclass
    class ExtractedToolCallInformation:  # type: ignore[no-redef]
        """vLLM's ``ExtractedToolCallInformation``: the calls of a finished output."""

        tools_called: bool
        tool_calls: list[ToolCall]
        content: Optional[str] = None

    class _ToolParserBase:  # type: ignore[no-redef]
        """vLLM's ``ToolParser`` state, for use without vLLM."""

        def __init__(self, tokenizer: Any):
            self.prev_tool_call_arr: list[dict] = []
            self.current_tool_id: int = -1
            self.current_tool_name_sent: bool = False
            self.streamed_args_for_tool: list[str] = []
            self.model_tokenizer = tokenizer

        @cached_property
        def vocab(self) -> dict[str, int]:
            return self.model_tokenizer.get_vocab()

        def adjust_request(self, request: Any) -> Any:
            return request

    class _ReasoningParserBase:  # type: ignore[no-redef]
        """vLLM's ``ReasoningParser`` state, for use without vLLM."""

        def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any):
            self.model_tokenizer = tokenizer

        @cached_property
        def vocab(self) -> dict[str, int]:
            return self.model_tokenizer.get_vocab()

    _ToolParserManager = None
    _ReasoningParserManager = None


# What a vLLM request carries that the template sees; the rest (sampling, streaming options)
# is no business of the parser.
_REQUEST_FIELDS = (
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "chat_template_kwargs",
    "documents",
    "add_generation_prompt",
    "continue_final_message",
    "reasoning_effort",
)

# Prepares what the streaming reasoning parser sees, which vLLM calls without its request.
_PLAIN_REQUEST = {"messages": [{"role": "user", "content": "Hi"}]}

_models: dict[tuple[str, str, str], Model] = {}
_models_lock = threading.Lock()


def model_for(tokenizer: Any) -> Model:
    """The analyzed template of a tokenizer (or of ``CHAT_PEG_TEMPLATE``), once per process."""
    path = os.environ.get("CHAT_PEG_TEMPLATE")
    if path:
        key = ("path", path, "")
    else:
        source = getattr(tokenizer, "chat_template", None)
        if isinstance(source, dict):  # named templates: the default one
            source = source.get("default") or next(iter(source.values()), None)
        if not isinstance(source, str) or not source:
            raise ValueError("the tokenizer has no chat template; set CHAT_PEG_TEMPLATE to a template file")
        key = (source, getattr(tokenizer, "bos_token", None) or "", getattr(tokenizer, "eos_token", None) or "")
    with _models_lock:
        model = _models.get(key)
        if model is None:
            model = Model.load(path) if path else Model.from_source(*key)
            _models[key] = model
        return model


def request_dict(request: Any) -> dict[str, Any]:
    """A vLLM ``ChatCompletionRequest`` (or a plain request dict) as the dict ``prepare`` reads."""
    if isinstance(request, dict):
        data = request
    elif hasattr(request, "model_dump"):
        data = request.model_dump(exclude_none=True, mode="json")
    else:
        data = {name: getattr(request, name) for name in _REQUEST_FIELDS if getattr(request, name, None) is not None}
    return {name: data[name] for name in _REQUEST_FIELDS if data.get(name) is not None}


def _reasoning_markers(model: Model) -> tuple[str, str]:
    reasoning = model.analysis.get("reasoning") or {}
    return reasoning.get("start") or "", reasoning.get("end") or ""


def _delta_message(content: Optional[str] = None, reasoning: Optional[str] = None, tool_calls: Optional[list] = None) -> Any:
    """A ``DeltaMessage``; vLLM versions name the reasoning field ``reasoning_content`` or
    ``reasoning``."""
    fields = getattr(DeltaMessage, "model_fields", None) or getattr(DeltaMessage, "__dataclass_fields__", {})
    kwargs: dict[str, Any] = {"content": content, "tool_calls": tool_calls or []}
    if reasoning is not None:
        kwargs["reasoning_content" if "reasoning_content" in fields else "reasoning"] = reasoning
    return DeltaMessage(**kwargs)


class _Prepared:
    """The prepared request of the request object vLLM passes, kept while it is the same object."""

    def __init__(self, model: Model):
        self._model = model
        self._request: Any = None
        self._prepared: Optional[PreparedRequest] = None

    def of(self, request: Any) -> PreparedRequest:
        if self._prepared is None or request is not self._request:
            self._prepared = self._model.prepare(request_dict(request) if request is not None else _PLAIN_REQUEST)
            self._request = request
        return self._prepared


class ChatPegToolParser(_ToolParserBase):
    """vLLM's ``ToolParser`` interface over the parser chat-peg learns from the template.

    It reads the text after any reasoning (vLLM's reasoning parser takes that part), so a
    prompt's prefill that opens reasoning is not applied; the rest of the prefill is.
    """

    def __init__(self, tokenizer: Any):
        super().__init__(tokenizer)
        self._model = model_for(tokenizer)
        self._prepared = _Prepared(self._model)
        self._stream: Any = None

    def adjust_request(self, request: Any) -> Any:
        # The call markers are often special tokens: keep them in the detokenized text.
        if getattr(request, "tools", None) and getattr(request, "tool_choice", None) != "none" and hasattr(request, "skip_special_tokens"):
            request.skip_special_tokens = False
        return request

    def _parser(self, request: Any) -> Any:
        prepared = self._prepared.of(request)
        start, _ = _reasoning_markers(self._model)
        prefill = "" if start and start in prepared.prefill else None
        return prepared.parser(prefill=prefill)

    def extract_tool_calls(self, model_output: str, request: Any) -> Any:
        message = self._parser(request).parse(model_output)["message"]
        calls = [ToolCall(id=c["id"], type="function", function=FunctionCall(name=c["function"]["name"], arguments=c["function"]["arguments"])) for c in message.get("tool_calls", [])]
        return ExtractedToolCallInformation(tools_called=bool(calls), tool_calls=calls, content=message["content"] or None)

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: Any,
    ) -> Union[Any, None]:
        if self._stream is None or not previous_text:
            self._stream = self._parser(request).stream()
            self.prev_tool_call_arr, self.streamed_args_for_tool = [], []
            self.current_tool_id, self.current_tool_name_sent = -1, False
        deltas = self._stream.push(delta_text)
        self._track(deltas)
        return _merge(deltas)

    def _track(self, deltas: list[dict]) -> None:
        """Keeps vLLM's bookkeeping: at the end of a stream vLLM sends whatever of
        ``json.dumps(prev_tool_call_arr[i]["arguments"])`` is not in ``streamed_args_for_tool[i]``,
        so a finished call records its arguments in that spelling on both sides."""
        for delta in deltas:
            for fragment in delta.get("tool_calls", []):
                index = fragment["index"]
                while len(self.streamed_args_for_tool) <= index:
                    self.streamed_args_for_tool.append("")
                    self.prev_tool_call_arr.append({"name": "", "arguments": {}})
                function = fragment.get("function") or {}
                if function.get("name"):
                    self.prev_tool_call_arr[index]["name"] = function["name"]
                self.streamed_args_for_tool[index] += function.get("arguments") or ""
                self.current_tool_id, self.current_tool_name_sent = index, True
        for index, streamed in enumerate(self.streamed_args_for_tool):
            try:
                arguments = json.loads(streamed)
            except ValueError:
                continue
            self.prev_tool_call_arr[index]["arguments"] = arguments
            self.streamed_args_for_tool[index] = json.dumps(arguments, ensure_ascii=False)


def _merge(deltas: list[dict]) -> Optional[Any]:
    """One ``DeltaMessage`` of the deltas one chunk completed (None when it completed none):
    text concatenated, the fragments of one call joined."""
    if not deltas:
        return None
    content = "".join(d.get("content") or "" for d in deltas)
    reasoning = "".join(d.get("reasoning_content") or "" for d in deltas)
    calls: dict[int, dict[str, Any]] = {}
    for delta in deltas:
        for fragment in delta.get("tool_calls", []):
            call = calls.setdefault(fragment["index"], {"id": None, "name": None, "arguments": None})
            function = fragment.get("function") or {}
            call["id"] = call["id"] or fragment.get("id")
            call["name"] = call["name"] or function.get("name")
            if function.get("arguments") is not None:
                call["arguments"] = (call["arguments"] or "") + function["arguments"]
    tool_calls = [
        DeltaToolCall(
            index=index,
            id=call["id"],
            type="function" if call["name"] else None,
            function=DeltaFunctionCall(name=call["name"], arguments=call["arguments"]),
        )
        for index, call in calls.items()
    ]
    return _delta_message(content or None, reasoning or None, tool_calls)


class ChatPegReasoningParser(_ReasoningParserBase):
    """vLLM's ``ReasoningParser`` interface over the parser chat-peg learns from the template.

    The reasoning is what the template's parser reads as reasoning; the content is the raw text
    after the reasoning's end marker (calls included: vLLM's tool parser reads them from it).
    """

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any):
        super().__init__(tokenizer, *args, **kwargs)
        self._model = model_for(tokenizer)
        self._prepared = _Prepared(self._model)
        self._start, self._end = _reasoning_markers(self._model)
        self._stream: Any = None
        self._content_sent = 0

    def _after_reasoning(self, text: str) -> Optional[str]:
        """The raw text after the reasoning's end marker, None while reasoning goes on."""
        if not self._end:
            return text
        at = text.find(self._end)
        return None if at < 0 else text[at + len(self._end) :]

    def is_reasoning_end(self, input_ids: list[int]) -> bool:
        return not self._end or self._end in self.model_tokenizer.decode(list(input_ids))

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        if not self._end:
            return list(input_ids)
        end_ids = list(self.model_tokenizer.encode(self._end, add_special_tokens=False))
        ids = list(input_ids)
        for at in range(len(ids) - len(end_ids), -1, -1):
            if end_ids and ids[at : at + len(end_ids)] == end_ids:
                return ids[at + len(end_ids) :]
        return []

    def extract_reasoning_content(self, model_output: str, request: Any) -> tuple[Optional[str], Optional[str]]:
        reasoning = self._prepared.of(request).parse(model_output)["message"].get("reasoning_content") or None
        if reasoning is None:
            return None, model_output or None
        return reasoning, self._after_reasoning(model_output) or None

    def extract_reasoning_content_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
    ) -> Union[Any, None]:
        if self._stream is None or not previous_text:
            self._stream = self._prepared.of(None).stream()
            self._content_sent = 0
        reasoning = "".join(d.get("reasoning_content") or "" for d in self._stream.push(delta_text))
        after = self._after_reasoning(current_text)
        message = self._stream.message
        if after is None and not message.get("reasoning_content") and (message["content"] or message.get("tool_calls")):
            after = current_text  # the model wrote no reasoning: all of it is content
        content = None
        if after is not None and len(after) > self._content_sent:
            content = after[self._content_sent :]
            self._content_sent = len(after)
        if not reasoning and content is None:
            return None
        return _delta_message(content, reasoning or None)

    # The names newer vLLM versions call.
    extract_reasoning = extract_reasoning_content
    extract_reasoning_streaming = extract_reasoning_content_streaming


if VLLM_AVAILABLE:
    _ToolParserManager.register_module("chat_peg")(ChatPegToolParser)
    _ReasoningParserManager.register_module("chat_peg")(ChatPegReasoningParser)
