"""The example server (examples/openai-server) read by the official OpenAI client.

For corpus cases of several output shapes, the server replays the case's model output; the
client's accumulated stream must equal the non-streamed response, which must equal the library's
parse: content, reasoning, calls with their ids, arguments that are JSON, the finish reason.

The server binary is ``CHAT_PEG_OPENAI_SERVER`` (``.ci/run`` builds it and sets it), else
``target/debug/chat-peg-openai-server`` when built; without either the tests skip.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

import chat_peg
from conftest import REPO, SHAPES, parse_cases, template_path

openai = pytest.importorskip("openai")

# Corpus cases per template: enough to cover content, reasoning, one and several calls.
CASES_PER_TEMPLATE = 6
STARTUP_SECONDS = 60


def server_binary() -> Path:
    configured = os.environ.get("CHAT_PEG_OPENAI_SERVER")
    if configured:
        assert Path(configured).is_file(), f"CHAT_PEG_OPENAI_SERVER={configured} does not exist"
        return Path(configured)
    built = REPO / "target" / "debug" / "chat-peg-openai-server"
    if not built.is_file():
        pytest.skip("the example server is not built (cargo build -p chat-peg-openai-server, or set CHAT_PEG_OPENAI_SERVER)")
    return built


def selected_cases() -> list[dict[str, Any]]:
    """Cases with calls or reasoning, a few per template."""
    chosen = []
    for template in SHAPES:
        cases = [c for c in parse_cases([template]) if c["expected"].get("tool_calls") or c["expected"].get("reasoning_content")]
        assert cases, f"no corpus case of {template} has calls or reasoning"
        chosen += cases[:CASES_PER_TEMPLATE]
    return chosen


class Served:
    """A running server: its address and, per served model name, the corpus case it replays."""

    def __init__(self, base_url: str, cases: dict[str, dict[str, Any]]):
        self.base_url = base_url
        self.cases = cases


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    binary = server_binary()
    root = tmp_path_factory.mktemp("models")
    cases = {}
    for number, case in enumerate(selected_cases()):
        name = f"case-{number}"
        directory = root / name
        directory.mkdir()
        shutil.copyfile(template_path(case), directory / "template.jinja")
        (directory / "output.txt").write_text(case["model_output"], encoding="utf-8")
        cases[name] = case
    process = subprocess.Popen(
        [str(binary), "--port", "0", "--chunk-bytes", "3", *(str(root / name) for name in cases)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: lines.put(process.stdout.readline()), daemon=True).start()  # type: ignore[union-attr]
        try:
            line = lines.get(timeout=STARTUP_SECONDS)
        except queue.Empty:
            pytest.fail(f"the server did not start within {STARTUP_SECONDS}s")
        assert line.startswith("listening on http://127.0.0.1:"), f"unexpected first line {line!r}; stderr: {process.stderr.read() if process.poll() is not None else ''}"  # type: ignore[union-attr]
        yield Served(line.split()[-1] + "/v1", cases)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _client(served: Served) -> Any:
    return openai.OpenAI(base_url=served.base_url, api_key="unused", max_retries=0, timeout=30)


def _request(name: str, case: dict[str, Any]) -> dict[str, Any]:
    """The client call's arguments: the case's request, what the SDK has no parameter for in
    the body as-is."""
    inputs = dict(case["inputs"])
    return {"model": name, "messages": inputs.pop("messages"), "extra_body": inputs}


def _message(message: Any) -> dict[str, Any]:
    """An SDK message as comparable data: `reasoning_content` is an extra field there."""
    extra = message.model_extra or {}
    return {
        "content": message.content or "",
        "reasoning_content": extra.get("reasoning_content") or "",
        "tool_calls": [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in message.tool_calls or []],
    }


def _library(case: dict[str, Any]) -> dict[str, Any]:
    message = chat_peg.Model.load(template_path(case)).prepare(case["inputs"]).parse(case["model_output"])["message"]
    return {
        "content": message["content"],
        "reasoning_content": message.get("reasoning_content", ""),
        "tool_calls": [{"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in message.get("tool_calls", [])],
    }


def test_the_shapes_are_all_served(served: Served):
    templates = {case["template"] for case in served.cases.values()}
    assert templates == set(SHAPES)
    assert any(_library(c)["tool_calls"] for c in served.cases.values())
    assert any(_library(c)["reasoning_content"] for c in served.cases.values())


def test_stream_equals_response_equals_library(served: Served):
    client = _client(served)
    for name, case in served.cases.items():
        expected = _library(case)
        response = client.chat.completions.create(**_request(name, case))
        assert response.object == "chat.completion" and response.usage is None
        choice = response.choices[0]
        assert _message(choice.message) == expected, case["id"]
        assert choice.finish_reason == ("tool_calls" if expected["tool_calls"] else "stop"), case["id"]
        for call in expected["tool_calls"]:
            json.loads(call["arguments"])

        chunk_ids: set[str] = set()
        call_ids: dict[int, list[str]] = {}
        with client.chat.completions.stream(**_request(name, case)) as stream:
            for event in stream:
                if event.type == "chunk":
                    chunk_ids.add(event.chunk.id)
                    for delta in event.chunk.choices[0].delta.tool_calls or []:
                        if delta.id:
                            call_ids.setdefault(delta.index, []).append(delta.id)
            final = stream.get_final_completion()
        assert len(chunk_ids) == 1, f"{case['id']}: chunk ids {chunk_ids}"
        assert _message(final.choices[0].message) == expected, case["id"]
        assert final.choices[0].finish_reason == choice.finish_reason, case["id"]
        # Each call's id is sent once, and is the one the non-streamed response has.
        assert {i: ids for i, ids in call_ids.items()} == {i: [c["id"]] for i, c in enumerate(expected["tool_calls"])}, case["id"]


def test_chunk_accumulation_by_hand_equals_the_response(served: Served):
    """Raw chunks (``stream=True``), accumulated as a client without the helper does."""
    client = _client(served)
    name, case = next((n, c) for n, c in served.cases.items() if _library(c)["tool_calls"])
    content, reasoning, calls = "", "", []
    finish: Optional[str] = None
    for chunk in client.chat.completions.create(stream=True, **_request(name, case)):
        delta = chunk.choices[0].delta
        content += delta.content or ""
        reasoning += (delta.model_extra or {}).get("reasoning_content") or ""
        for fragment in delta.tool_calls or []:
            if fragment.index == len(calls):
                calls.append({"id": "", "name": "", "arguments": ""})
            calls[fragment.index]["id"] += fragment.id or ""
            calls[fragment.index]["name"] += (fragment.function and fragment.function.name) or ""
            calls[fragment.index]["arguments"] += (fragment.function and fragment.function.arguments) or ""
        finish = chunk.choices[0].finish_reason or finish
    assert {"content": content, "reasoning_content": reasoning, "tool_calls": calls} == _library(case)
    assert finish == "tool_calls"


def test_errors_are_openai_errors(served: Served):
    client = _client(served)
    with pytest.raises(openai.NotFoundError, match="no model named"):
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "Hi"}])
    name = next(iter(served.cases))
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model=name, messages="Hi")  # type: ignore[arg-type]
