"""The Python package: loading, preparing, parsing, streaming, verifying, and its errors."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

import chat_peg
from conftest import EXAMPLE, SHAPES, accumulate, chunks, parse_cases, template_path


def test_prepare_returns_what_a_server_sends_the_model(example_request):
    model = chat_peg.Model.load(EXAMPLE / "template.jinja")
    prepared = model.prepare(example_request)
    assert prepared.prompt.endswith(prepared.generation_prompt)
    assert "What is the weather in Paris" in prepared.prompt
    assert prepared.grammar and "get_weather" in prepared.grammar
    assert prepared.grammar_lazy
    assert prepared.grammar_triggers and all(t["type"] in ("word", "pattern") and t["value"] for t in prepared.grammar_triggers)
    # A word trigger is a marker the tokenizer must keep whole.
    words = [t["value"] for t in prepared.grammar_triggers if t["type"] == "word"]
    assert set(words) <= set(prepared.preserved_tokens)
    assert isinstance(prepared.additional_stops, list) and isinstance(prepared.warnings, list)


def test_a_request_without_tools_has_no_grammar():
    model = chat_peg.Model.load(EXAMPLE / "template.jinja")
    prepared = model.prepare({"messages": [{"role": "user", "content": "Hi"}]})
    assert prepared.grammar is None and prepared.grammar_triggers == []


@pytest.mark.parametrize("size", [1, 3, 7, 64])
def test_stream_adds_up_to_the_one_shot_parse(example_request, example_output, size):
    prepared = chat_peg.Model.load(EXAMPLE / "template.jinja").prepare(example_request)
    whole = prepared.parse(example_output)
    stream = prepared.stream()
    deltas = [d for chunk in chunks(example_output, size) for d in stream.push(chunk)]
    last, streamed = stream.finish()
    assert streamed == whole
    assert accumulate(deltas + last) == whole["message"]
    for call in whole["message"]["tool_calls"]:
        json.loads(call["function"]["arguments"])


def test_partial_parse_of_a_prefix_only_grows(example_request, example_output):
    parser = chat_peg.Model.load(EXAMPLE / "template.jinja").prepare(example_request).parser()
    half = parser.parse(example_output[: len(example_output) // 2], partial=True)["message"]
    whole = parser.parse(example_output)["message"]
    assert whole["content"].startswith(half["content"])
    assert whole.get("reasoning_content", "").startswith(half.get("reasoning_content", ""))
    assert len(half.get("tool_calls", [])) <= len(whole["tool_calls"])


@pytest.mark.parametrize("template", SHAPES)
def test_corpus_cases_parse_to_their_expected_message(template):
    cases = list(parse_cases([template]))
    assert cases, f"no parse cases of {template}"
    model = chat_peg.Model.load(template_path(cases[0]))
    for case in cases:
        parsed = model.prepare(case["inputs"]).parse(case["model_output"])["message"]
        expected = case["expected"]
        assert parsed["content"].strip() == (expected.get("content") or "").strip(), case["id"]
        assert parsed.get("reasoning_content", "").strip() == (expected.get("reasoning_content") or "").strip(), case["id"]
        calls = parsed.get("tool_calls", [])
        assert [c["function"]["name"] for c in calls] == [c["name"] for c in expected.get("tool_calls") or []], case["id"]
        for call, want in zip(calls, expected.get("tool_calls") or []):
            assert json.loads(call["function"]["arguments"]) == json.loads(want["arguments"]), case["id"]
            assert not want.get("id") or call["id"] == want["id"], case["id"]


def test_tokenizer_config_and_gguf_load_the_same_template(tmp_path: Path):
    source = (EXAMPLE / "template.jinja").read_text(encoding="utf-8")
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"chat_template": source, "bos_token": "<s>", "eos_token": "<|im_end|>"}), encoding="utf-8")
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(_gguf({"tokenizer.chat_template": source}))
    reference = chat_peg.Model.from_source(source, "<s>", "<|im_end|>")
    for path in (config, gguf):
        model = chat_peg.Model.load(path)
        assert model.source == source
        assert model.analysis == reference.analysis


def _gguf(strings: dict[str, str]) -> bytes:
    """A GGUF file (version 3) with no tensors and these string metadata values."""

    def text(s: str) -> bytes:
        data = s.encode("utf-8")
        return struct.pack("<Q", len(data)) + data

    body = b"".join(text(key) + struct.pack("<I", 8) + text(value) for key, value in strings.items())
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(strings)) + body


def test_verify_reports_the_template_round_trips():
    report = chat_peg.Model.load(EXAMPLE / "template.jinja").verify(cases=3, seed=7)
    assert report["passed"] is True
    assert ", 0 failed," in report["summary"].splitlines()[-1]
    assert all(f["failed"] == 0 for f in report["features"])
    assert report["first_failure"] is None


def test_errors_are_exceptions_with_the_rust_message(tmp_path: Path, example_request):
    with pytest.raises(chat_peg.ChatPegError) as missing:
        chat_peg.Model.load(tmp_path / "nope.jinja")
    assert missing.value.kind == "Io" and "nope.jinja" in str(missing.value)

    with pytest.raises(chat_peg.ChatPegError) as syntax:
        chat_peg.Model.from_source("{% for m in messages %}{{ m.content }")
    assert syntax.value.kind == "TemplateSyntax" and str(syntax.value)

    model = chat_peg.Model.load(EXAMPLE / "template.jinja")
    with pytest.raises(chat_peg.ChatPegError) as request:
        model.prepare({"messages": "Hi"})
    assert request.value.kind == "InvalidRequest" and "messages" in str(request.value)

    with pytest.raises(TypeError):
        model.prepare({"messages": [{"role": "user", "content": object()}]})

    prepared = model.prepare(example_request)
    with pytest.raises(chat_peg.ChatPegError) as strict:
        prepared.parse('<tool_call>\n{"arguments": {"city": "Paris"}, "name": "get_weather"}\n</tool_call>', strict=True)
    assert strict.value.kind == "ParseFailed" and str(strict.value)
    # The lenient parser reads the same output, and says what it recovered.
    lenient = prepared.parse('<tool_call>\n{"arguments": {"city": "Paris"}, "name": "get_weather"}\n</tool_call>')
    assert lenient["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert [r["kind"] for r in lenient["recoveries"]] == ["call_shape"]
