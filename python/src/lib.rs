//! `chat_peg._native`: the Python face of chat-peg's front door.
//!
//! Requests go in and messages come out as Python dicts shaped like the OpenAI chat-completions
//! wire format. They cross the boundary as JSON text through Python's own `json` module, so the
//! Rust side reads exactly what `serde_json` reads from a request body and Python gets exactly
//! what a server would send. Every error is a `ChatPegError` carrying the Rust message and the
//! error kind's name.

use std::path::PathBuf;

use chat_peg::peg_runtime::chat::{ChatParseOptions, Strictness};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde::Serialize;

create_exception!(_native, ChatPegError, PyException, "An error of chat-peg; its message is the Rust error's, `kind` names its kind.");

/// A `ChatPegError` with the error's message and its kind (`InvalidRequest`, `Parse`, ...).
fn chat_peg_error(kind: impl std::fmt::Debug, message: impl std::fmt::Display) -> PyErr {
    Python::attach(|py| {
        let err = ChatPegError::new_err(message.to_string());
        match err.value(py).setattr("kind", format!("{kind:?}")) {
            Ok(()) => err,
            Err(e) => e,
        }
    })
}

fn autoparser_error(e: chat_peg::Error) -> PyErr {
    chat_peg_error(e.kind(), e)
}

fn runtime_error(e: chat_peg::peg_runtime::Error) -> PyErr {
    chat_peg_error(e.kind(), e)
}

/// A Python value as JSON, through `json.dumps` (a value JSON cannot hold raises its `TypeError`).
fn to_json(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    let text: String = py.import("json")?.call_method1("dumps", (value,))?.extract()?;
    serde_json::from_str(&text).map_err(|e| chat_peg_error("InvalidRequest", format!("not JSON: {e}")))
}

/// A Rust value as the Python value of its JSON, through `json.loads`.
fn to_python<'py>(py: Python<'py>, value: &impl Serialize) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(value).map_err(|e| chat_peg_error("Internal", e))?;
    py.import("json")?.call_method1("loads", (text,))
}

fn strictness(strict: bool) -> Strictness {
    if strict { Strictness::Strict } else { Strictness::Lenient }
}

/// A chat template and what analysis learned of its output format. Load once per template.
#[pyclass(module = "chat_peg._native", frozen)]
struct Model {
    inner: chat_peg::Model,
}

#[pymethods]
impl Model {
    /// Loads and analyzes a template: a `.jinja` file, a `tokenizer_config.json` or a `.gguf`.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Model> {
        let inner = py.detach(|| chat_peg::Model::load(&path)).map_err(autoparser_error)?;
        Ok(Model { inner })
    }

    /// Analyzes a template given as source text, with the tokenizer's BOS and EOS tokens.
    #[staticmethod]
    #[pyo3(signature = (source, bos_token = "", eos_token = ""))]
    fn from_source(py: Python<'_>, source: &str, bos_token: &str, eos_token: &str) -> PyResult<Model> {
        let inner =
            py.detach(|| chat_peg::ChatTemplate::from_source(source, bos_token, eos_token).and_then(chat_peg::Model::analyze)).map_err(autoparser_error)?;
        Ok(Model { inner })
    }

    /// The template source.
    #[getter]
    fn source(&self) -> &str {
        self.inner.template().source()
    }

    /// The learned output format (markers around reasoning, content and calls), as a dict.
    #[getter]
    fn analysis<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, self.inner.analysis())
    }

    /// Prepares one chat-completions request (a dict: `messages`, `tools`, `tool_choice`, ...):
    /// its prompt, grammar, triggers, preserved tokens, stops and parser.
    fn prepare(&self, py: Python<'_>, request: &Bound<'_, PyAny>) -> PyResult<PreparedRequest> {
        let request = chat_peg::Request::from_json(&to_json(py, request)?).map_err(autoparser_error)?;
        let inner = py.detach(|| self.inner.prepare(&request)).map_err(autoparser_error)?;
        Ok(PreparedRequest { inner })
    }

    /// Checks the template's parser against the template's own renders (see `autoparser
    /// verify`); returns the report as a dict, with `passed` and `summary` added.
    #[pyo3(signature = (request = None, seed = 0, cases = 20))]
    fn verify<'py>(&self, py: Python<'py>, request: Option<&Bound<'py, PyAny>>, seed: u64, cases: usize) -> PyResult<Bound<'py, PyAny>> {
        let request = match request {
            Some(r) => Some(chat_peg::Request::from_json(&to_json(py, r)?).map_err(autoparser_error)?),
            None => None,
        };
        let options = chat_peg::autoparser::verify::VerifyOptions { seed, cases, request, ..Default::default() };
        let report = py.detach(|| self.inner.verify(&options));
        let dict = to_python(py, &report)?;
        dict.set_item("passed", report.passed())?;
        dict.set_item("summary", report.text())?;
        Ok(dict)
    }
}

/// Everything a server needs for one request: what to send the model and how to read it.
#[pyclass(module = "chat_peg._native", frozen)]
struct PreparedRequest {
    inner: chat_peg::PreparedRequest,
}

#[pymethods]
impl PreparedRequest {
    /// The whole rendered prompt.
    #[getter]
    fn prompt(&self) -> &str {
        &self.inner.prompt
    }

    /// What the template appends for the assistant turn.
    #[getter]
    fn generation_prompt(&self) -> &str {
        &self.inner.generation_prompt
    }

    /// Text the prompt ends with that belongs to the model's turn; the parser prepends it.
    #[getter]
    fn prefill(&self) -> &str {
        &self.inner.prefill
    }

    /// The GBNF grammar, when output must be constrained (tools or a JSON schema).
    #[getter]
    fn grammar(&self) -> Option<&str> {
        self.inner.grammar.as_deref()
    }

    /// Whether the grammar applies only from the first trigger on.
    #[getter]
    fn grammar_lazy(&self) -> bool {
        self.inner.grammar_lazy
    }

    /// The lazy grammar's triggers: `{"type": "word" | "pattern", "value": str}` dicts.
    #[getter]
    fn grammar_triggers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.inner.grammar_triggers)
    }

    /// Marker tokens the tokenizer must keep whole.
    #[getter]
    fn preserved_tokens(&self) -> Vec<String> {
        self.inner.preserved_tokens.clone()
    }

    /// Extra stop strings.
    #[getter]
    fn additional_stops(&self) -> Vec<String> {
        self.inner.additional_stops.clone()
    }

    /// What the request asked that generation could only approximate.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings.clone()
    }

    /// The parser of this request's output. `prefill` replaces the prepared prefill, for text
    /// that does not start where the model's turn starts (after reasoning split off elsewhere).
    #[pyo3(signature = (strict = false, prefill = None))]
    fn parser(&self, strict: bool, prefill: Option<String>) -> ChatParser {
        let inner = match prefill {
            None => self.inner.parser(strictness(strict)),
            Some(prefill) => {
                let options = ChatParseOptions { prefill, ..self.inner.parse_options(strictness(strict)) };
                chat_peg::ChatParser::new(self.inner.arena.clone(), options)
            }
        };
        ChatParser { inner }
    }

    /// Parses a whole output (or, `partial`, a prefix of one) with the lenient parser (strict:
    /// any deviation raises): `{"message": {...}, "recoveries": [...], "diagnostic": ...}`.
    #[pyo3(signature = (output, partial = false, strict = false))]
    fn parse<'py>(&self, py: Python<'py>, output: &str, partial: bool, strict: bool) -> PyResult<Bound<'py, PyAny>> {
        self.parser(strict, None).parse(py, output, partial)
    }

    /// A stream of this request's output with the lenient (or strict) parser.
    #[pyo3(signature = (strict = false))]
    fn stream(&self, strict: bool) -> ChatStream {
        self.parser(strict, None).stream()
    }
}

/// The parser of one request's output.
#[pyclass(module = "chat_peg._native", frozen)]
struct ChatParser {
    inner: chat_peg::ChatParser,
}

#[pymethods]
impl ChatParser {
    /// Parses a whole output, or with `partial` a prefix of one:
    /// `{"message": {...}, "recoveries": [...], "diagnostic": ...}`.
    #[pyo3(signature = (output, partial = false))]
    fn parse<'py>(&self, py: Python<'py>, output: &str, partial: bool) -> PyResult<Bound<'py, PyAny>> {
        let mode = if partial { chat_peg::ParseMode::Partial } else { chat_peg::ParseMode::Complete };
        let parsed = py.detach(|| self.inner.parse(output, mode)).map_err(runtime_error)?;
        to_python(py, &parsed)
    }

    /// A new stream: push chunks of the output as they arrive, then finish.
    fn stream(&self) -> ChatStream {
        ChatStream { inner: self.inner.stream() }
    }
}

/// One output, parsed chunk by chunk into OpenAI-shaped deltas without re-parsing what was read.
#[pyclass(module = "chat_peg._native")]
struct ChatStream {
    inner: chat_peg::ChatStream,
}

#[pymethods]
impl ChatStream {
    /// Reads the next chunk; returns the deltas it completes (`choices[0].delta` dicts).
    fn push<'py>(&mut self, py: Python<'py>, chunk: &str) -> PyResult<Bound<'py, PyAny>> {
        let deltas = self.inner.push(chunk).map_err(runtime_error)?;
        to_python(py, &deltas)
    }

    /// Ends the output: the last deltas and the whole parse (as `parse` returns it).
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let (deltas, parsed) = self.inner.finish().map_err(runtime_error)?;
        PyTuple::new(py, [to_python(py, &deltas)?, to_python(py, &parsed)?])
    }

    /// The message read so far (an OpenAI assistant message dict).
    #[getter]
    fn message<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, self.inner.message())
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ChatPegError", m.py().get_type::<ChatPegError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Model>()?;
    m.add_class::<PreparedRequest>()?;
    m.add_class::<ChatParser>()?;
    m.add_class::<ChatStream>()?;
    Ok(())
}
