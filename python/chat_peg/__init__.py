"""chat-peg: parse what an LLM writes into OpenAI chat messages, and build the grammar that
constrains it, for any model, learned from its chat template.

>>> import chat_peg
>>> model = chat_peg.Model.load("template.jinja")                # doctest: +SKIP
>>> prepared = model.prepare({"messages": [...], "tools": [...]})  # doctest: +SKIP
>>> prepared.prompt, prepared.grammar, prepared.grammar_triggers   # doctest: +SKIP
>>> prepared.parse(model_output)["message"]                        # doctest: +SKIP

Requests are dicts shaped like a chat-completions request body; messages and streaming deltas
come back as dicts shaped like the OpenAI wire format (``choices[0].message`` and
``choices[0].delta``). Every error is a :class:`ChatPegError` with the Rust message.
"""

from ._native import ChatParser, ChatPegError, ChatStream, Model, PreparedRequest, __version__

__all__ = ["ChatParser", "ChatPegError", "ChatStream", "Model", "PreparedRequest", "__version__"]
