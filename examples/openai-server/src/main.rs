//! An OpenAI-compatible `POST /v1/chat/completions` endpoint, streamed and not, that replays a
//! model output file instead of running a model: the shape of a Rust inference server embedding
//! chat-peg. Per request it goes through the front door as such a server would: the request
//! body becomes a [`Request`], [`Model::prepare`] gives the prompt, grammar, triggers and parser
//! (a real server would send the prompt and grammar to its sampler; here the "model" writes the
//! replayed text), and the parser turns that text into the response's message or its chunks.
//!
//! ```sh
//! cargo run -p chat-peg-openai-server -- examples/chatml-tools
//! ```
//!
//! Each argument is a directory serving one model, named after the directory: a template
//! (`template.jinja`, `tokenizer_config.json` or `model.gguf`) and the output to replay
//! (`output.txt`). Options: `--port N` (default 0: any free port), `--chunk-bytes N` (the size of
//! the streamed pieces, default 4). It listens on 127.0.0.1 only and prints
//! `listening on http://127.0.0.1:PORT` once it accepts connections.
//!
//! Responses follow the chat-completions wire format: `finish_reason` is `tool_calls` when the
//! message has calls, else `stop`; reasoning is `reasoning_content` on the message and on the
//! deltas; `usage` is omitted (nothing was tokenized). Errors are OpenAI-shaped error bodies.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use chat_peg::peg_runtime::chat::{ChatMessage, stream_pieces};
use chat_peg::{ChatDelta, ChatStream, Model, ParseMode, Request, Strictness};
use serde_json::{Value, json};

/// One served model: its template, analyzed once, and the text its "generation" replays.
struct Replay {
    model: Model,
    output: String,
}

struct Server {
    models: HashMap<String, Replay>,
    chunk_bytes: usize,
    next_id: AtomicU64,
}

struct Options {
    port: u16,
    chunk_bytes: usize,
    dirs: Vec<PathBuf>,
}

const USAGE: &str = "usage: chat-peg-openai-server [--port N] [--chunk-bytes N] MODEL_DIR...";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let options = parse_args(std::env::args().skip(1))?;
    let mut models = HashMap::new();
    for dir in &options.dirs {
        let name = dir.file_name().and_then(|n| n.to_str()).ok_or_else(|| format!("{}: not a directory name", dir.display()))?;
        models.insert(name.to_owned(), load_replay(dir)?);
    }
    let server = Arc::new(Server { models, chunk_bytes: options.chunk_bytes, next_id: AtomicU64::new(0) });
    let app = Router::new().route("/v1/chat/completions", post(chat_completions)).with_state(server);

    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build().map_err(|e| format!("runtime: {e}"))?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, options.port))).await.map_err(|e| format!("bind: {e}"))?;
        let address = listener.local_addr().map_err(|e| format!("bind: {e}"))?;
        // The line a test or a script waits for: the port is open from here on.
        let mut stdout = std::io::stdout();
        writeln!(stdout, "listening on http://{address}").and_then(|()| stdout.flush()).map_err(|e| format!("stdout: {e}"))?;
        axum::serve(listener, app).await.map_err(|e| format!("serve: {e}"))
    })
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options { port: 0, chunk_bytes: 4, dirs: Vec::new() };
    while let Some(arg) = args.next() {
        let mut number = |flag: &str| -> Result<usize, String> {
            let value = args.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
            value.parse().map_err(|_| format!("{flag}: not a number: {value}\n{USAGE}"))
        };
        match arg.as_str() {
            "--port" => options.port = u16::try_from(number("--port")?).map_err(|_| format!("--port: out of range\n{USAGE}"))?,
            "--chunk-bytes" => options.chunk_bytes = number("--chunk-bytes")?.max(1),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}\n{USAGE}")),
            dir => options.dirs.push(PathBuf::from(dir)),
        }
    }
    if options.dirs.is_empty() {
        return Err(format!("no model directory\n{USAGE}"));
    }
    Ok(options)
}

fn load_replay(dir: &Path) -> Result<Replay, String> {
    let template = ["template.jinja", "tokenizer_config.json", "model.gguf"]
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
        .ok_or_else(|| format!("{}: no template.jinja, tokenizer_config.json or model.gguf", dir.display()))?;
    let model = Model::load(&template).map_err(|e| format!("{}: {e}", template.display()))?;
    let output_path = dir.join("output.txt");
    let output = std::fs::read_to_string(&output_path).map_err(|e| format!("{}: {e}", output_path.display()))?;
    Ok(Replay { model, output })
}

/// An OpenAI-shaped error response.
fn error(status: StatusCode, message: impl std::fmt::Display) -> Response {
    let kind = if status.is_client_error() { "invalid_request_error" } else { "server_error" };
    (status, [(header::CONTENT_TYPE, "application/json")], json!({"error": {"message": message.to_string(), "type": kind}}).to_string()).into_response()
}

async fn chat_completions(State(server): State<Arc<Server>>, body: Bytes) -> Response {
    let body: Value = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("the body is not JSON: {e}")),
    };
    let name = body.get("model").and_then(Value::as_str).unwrap_or_default();
    let Some(replay) = server.models.get(name) else {
        return error(StatusCode::NOT_FOUND, format!("no model named {name:?}"));
    };
    let request = match Request::from_json(&body) {
        Ok(request) => request,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    // A server sends `prepared.prompt` to the model and samples under `prepared.grammar`; the
    // replayed text stands in for what that would produce.
    let prepared = match replay.model.prepare(&request) {
        Ok(prepared) => prepared,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let parser = prepared.parser(Strictness::Lenient);
    let completion = Completion {
        id: format!("chatcmpl-{}", server.next_id.fetch_add(1, Ordering::Relaxed)),
        created: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        model: name.to_owned(),
    };
    if body.get("stream").and_then(Value::as_bool).unwrap_or(false) {
        let pieces = stream_pieces(&replay.output, &[server.chunk_bytes]).into_iter().map(str::to_owned).collect();
        let events = ChunkEvents { completion, stream: parser.stream(), pieces, ready: VecDeque::new(), state: EventsState::Start };
        let body = Body::from_stream(futures_util::stream::iter(events.map(|event| Ok::<_, Infallible>(Bytes::from(event)))));
        return ([(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")], body).into_response();
    }
    match parser.parse(&replay.output, ParseMode::Complete) {
        Ok(parsed) => {
            let choice = json!({
                "index": 0,
                "message": message_json(&parsed.message),
                "finish_reason": finish_reason(&parsed.message),
                "logprobs": null,
            });
            let response = json!({
                "id": completion.id, "object": "chat.completion", "created": completion.created,
                "model": completion.model, "choices": [choice],
            });
            ([(header::CONTENT_TYPE, "application/json")], response.to_string()).into_response()
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// What every chunk of one completion repeats.
struct Completion {
    id: String,
    created: u64,
    model: String,
}

impl Completion {
    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> String {
        let chunk = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": null}],
        });
        format!("data: {chunk}\n\n")
    }
}

/// The assistant message as the non-streamed response carries it: `content` is null when the
/// model wrote none (as OpenAI sends it next to calls), reasoning and calls only when present.
fn message_json(message: &ChatMessage) -> Value {
    let mut value = serde_json::to_value(message).unwrap_or_else(|_| json!({"role": "assistant"}));
    if message.content.is_empty() {
        value["content"] = Value::Null;
    }
    value
}

fn finish_reason(message: &ChatMessage) -> &'static str {
    if message.tool_calls.is_empty() { "stop" } else { "tool_calls" }
}

/// The server-sent events of a streamed completion, produced as the body is read: the role
/// first, one chunk per delta as each replayed piece is parsed, the finish reason, `[DONE]`.
struct ChunkEvents {
    completion: Completion,
    stream: ChatStream,
    pieces: VecDeque<String>,
    ready: VecDeque<String>,
    state: EventsState,
}

#[derive(PartialEq)]
enum EventsState {
    Start,
    Pieces,
    Done,
}

impl ChunkEvents {
    fn queue(&mut self, deltas: Vec<ChatDelta>) {
        for delta in deltas {
            let delta = serde_json::to_value(&delta).unwrap_or_default();
            self.ready.push_back(self.completion.chunk(delta, None));
        }
    }

    /// An error after the response started: an error event ends the stream.
    fn fail(&mut self, e: chat_peg::peg_runtime::Error) {
        self.ready.push_back(format!("data: {}\n\n", json!({"error": {"message": e.to_string(), "type": "server_error"}})));
        self.state = EventsState::Done;
    }
}

impl Iterator for ChunkEvents {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            match self.state {
                EventsState::Start => {
                    self.state = EventsState::Pieces;
                    return Some(self.completion.chunk(json!({"role": "assistant"}), None));
                }
                EventsState::Pieces => match self.pieces.pop_front() {
                    Some(piece) => match self.stream.push(&piece) {
                        Ok(deltas) => self.queue(deltas),
                        Err(e) => self.fail(e),
                    },
                    None => match self.stream.finish() {
                        Ok((deltas, parsed)) => {
                            self.queue(deltas);
                            let last = self.completion.chunk(json!({}), Some(finish_reason(&parsed.message)));
                            self.ready.push_back(last);
                            self.ready.push_back("data: [DONE]\n\n".to_owned());
                            self.state = EventsState::Done;
                        }
                        Err(e) => self.fail(e),
                    },
                },
                EventsState::Done => return None,
            }
        }
    }
}
