"""Type stubs of the compiled extension (python/src/lib.rs)."""

from os import PathLike
from typing import Any, Literal, Optional, TypedDict, Union

__version__: str

class FunctionCall(TypedDict):
    name: str
    arguments: str

class ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCall

class _MessageRequired(TypedDict):
    role: Literal["assistant"]
    content: str

class Message(_MessageRequired, total=False):
    """An OpenAI assistant message (``choices[0].message``)."""

    reasoning_content: str
    tool_calls: list[ToolCall]

class DeltaFunction(TypedDict, total=False):
    name: str
    arguments: str

class _DeltaToolCallRequired(TypedDict):
    index: int

class DeltaToolCall(_DeltaToolCallRequired, total=False):
    id: str
    type: Literal["function"]
    function: DeltaFunction

class Delta(TypedDict, total=False):
    """One streaming increment (``choices[0].delta`` of a ``chat.completion.chunk``)."""

    content: str
    reasoning_content: str
    tool_calls: list[DeltaToolCall]

class _RecoveryRequired(TypedDict):
    kind: str
    offset: int
    len: int

class Recovery(_RecoveryRequired, total=False):
    """What lenient parsing read as what the model meant: kind and byte span in the output."""

    detail: str

class Diagnostic(TypedDict):
    offset: int
    message: str

class _ParsedRequired(TypedDict):
    message: Message
    diagnostic: Optional[Diagnostic]

class Parsed(_ParsedRequired, total=False):
    """A parse: the message, where output left the grammar, what lenient parsing recovered."""

    recoveries: list[Recovery]

class GrammarTrigger(TypedDict):
    type: Literal["word", "pattern"]
    value: str

class ChatPegError(Exception):
    """An error of chat-peg; ``str(e)`` is the Rust message."""

    kind: str
    """The Rust error kind: ``InvalidRequest``, ``TemplateSyntax``, ``Parse``, ``Io``, ..."""

class Model:
    """A chat template and what analysis learned of its output format."""

    @staticmethod
    def load(path: Union[str, PathLike[str]]) -> Model:
        """Loads and analyzes a ``.jinja`` file, a ``tokenizer_config.json`` or a ``.gguf``."""
    @staticmethod
    def from_source(source: str, bos_token: str = "", eos_token: str = "") -> Model:
        """Analyzes a template given as source text."""
    @property
    def source(self) -> str: ...
    @property
    def analysis(self) -> dict[str, Any]:
        """The learned format: ``reasoning``, ``content`` and ``tools`` markers, capabilities."""
    def prepare(self, request: dict[str, Any]) -> PreparedRequest:
        """Prepares one chat-completions request (``messages``, ``tools``, ``tool_choice``, ...)."""
    def verify(self, request: Optional[dict[str, Any]] = None, seed: int = 0, cases: int = 20) -> dict[str, Any]:
        """Parses the template's own renders back; ``passed`` and ``summary`` say how it went."""

class PreparedRequest:
    """What to send the model for one request, and how to read what it writes."""

    @property
    def prompt(self) -> str: ...
    @property
    def generation_prompt(self) -> str: ...
    @property
    def prefill(self) -> str: ...
    @property
    def grammar(self) -> Optional[str]:
        """GBNF, when output must be constrained (tools or a JSON schema)."""
    @property
    def grammar_lazy(self) -> bool: ...
    @property
    def grammar_triggers(self) -> list[GrammarTrigger]: ...
    @property
    def preserved_tokens(self) -> list[str]: ...
    @property
    def additional_stops(self) -> list[str]: ...
    @property
    def warnings(self) -> list[str]: ...
    def parser(self, strict: bool = False, prefill: Optional[str] = None) -> ChatParser: ...
    def parse(self, output: str, partial: bool = False, strict: bool = False) -> Parsed: ...
    def stream(self, strict: bool = False) -> ChatStream: ...

class ChatParser:
    def parse(self, output: str, partial: bool = False) -> Parsed: ...
    def stream(self) -> ChatStream: ...

class ChatStream:
    def push(self, chunk: str) -> list[Delta]: ...
    def finish(self) -> tuple[list[Delta], Parsed]: ...
    @property
    def message(self) -> Message: ...
