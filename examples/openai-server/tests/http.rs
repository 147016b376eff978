//! The server over plain HTTP: started on 127.0.0.1, asked for the example's completion whole and
//! streamed, both compared with the library's parse of the replayed output. (`python/tests/
//! test_openai_server.py` drives the same binary with the official OpenAI client.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use chat_peg::peg_runtime::chat::ChatMessage;
use chat_peg::{ChatDelta, Model, ParseMode, Request, Strictness};
use serde_json::Value;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../chatml-tools");

/// The server process, stopped when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(dirs: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_chat-peg-openai-server"))
            .args(["--port", "0", "--chunk-bytes", "3"])
            .args(dirs)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("read the first line");
        let port = line.trim().strip_prefix("listening on http://127.0.0.1:").and_then(|p| p.parse().ok());
        let Some(port) = port else {
            let _ = child.kill();
            panic!("unexpected first line {line:?}");
        };
        Server { child, port }
    }

    /// POSTs `body` and returns the status and the (de-chunked) response body.
    fn post(&self, body: &Value) -> (u16, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
        let body = body.to_string();
        write!(
            stream,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("send");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read the response");
        let (head, payload) = response.split_once("\r\n\r\n").expect("a header");
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status");
        let chunked = head.lines().any(|l| l.eq_ignore_ascii_case("transfer-encoding: chunked"));
        (status, if chunked { dechunk(payload) } else { payload.to_owned() })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn dechunk(mut payload: &str) -> String {
    let mut body = String::new();
    while let Some((size, rest)) = payload.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        if size == 0 {
            break;
        }
        body.push_str(&rest[..size]);
        payload = &rest[size + 2..];
    }
    body
}

fn example_request(stream: bool) -> Value {
    let mut request: Value = serde_json::from_str(&std::fs::read_to_string(Path::new(EXAMPLE).join("request.json")).unwrap()).unwrap();
    request["model"] = "chatml-tools".into();
    request["stream"] = stream.into();
    request
}

fn library_message() -> ChatMessage {
    let model = Model::load(Path::new(EXAMPLE).join("template.jinja")).unwrap();
    let prepared = model.prepare(&Request::from_json(&example_request(false)).unwrap()).unwrap();
    let output = std::fs::read_to_string(Path::new(EXAMPLE).join("output.txt")).unwrap();
    prepared.parser(Strictness::Lenient).parse(&output, ParseMode::Complete).unwrap().message
}

#[test]
fn response_and_stream_carry_the_librarys_message() {
    let server = Server::start(&[EXAMPLE]);
    let expected = library_message();
    assert!(!expected.tool_calls.is_empty() && !expected.reasoning_content.is_empty());

    let (status, body) = server.post(&example_request(false));
    assert_eq!(status, 200, "{body}");
    let response: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(response["object"], "chat.completion");
    assert!(response.get("usage").is_none());
    assert_eq!(response["choices"][0]["finish_reason"], "tool_calls");
    let message: ChatMessage = serde_json::from_value(response["choices"][0]["message"].clone()).unwrap();
    assert_eq!(message, expected);

    let (status, body) = server.post(&example_request(true));
    assert_eq!(status, 200, "{body}");
    let events: Vec<&str> = body.split("\n\n").filter(|e| !e.is_empty()).map(|e| e.strip_prefix("data: ").expect("a data event")).collect();
    assert_eq!(events.last(), Some(&"[DONE]"));
    let chunks: Vec<Value> = events[..events.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
    assert!(chunks.iter().all(|c| c["id"] == chunks[0]["id"] && c["object"] == "chat.completion.chunk"));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let finish: Vec<&Value> = chunks.iter().map(|c| &c["choices"][0]["finish_reason"]).filter(|f| !f.is_null()).collect();
    assert_eq!(finish, [&Value::from("tool_calls")]);
    let deltas: Vec<ChatDelta> = chunks.iter().map(|c| serde_json::from_value(c["choices"][0]["delta"].clone()).unwrap()).collect();
    assert_eq!(ChatMessage::from_deltas(&deltas), expected);
}

#[test]
fn bad_requests_get_openai_error_bodies() {
    let server = Server::start(&[EXAMPLE]);
    let (status, body) = server.post(&serde_json::json!({"model": "nope", "messages": []}));
    assert_eq!(status, 404);
    assert!(serde_json::from_str::<Value>(&body).unwrap()["error"]["message"].as_str().unwrap().contains("nope"));
    let (status, body) = server.post(&serde_json::json!({"model": "chatml-tools", "messages": "Hi"}));
    assert_eq!(status, 400);
    assert!(serde_json::from_str::<Value>(&body).unwrap()["error"]["message"].as_str().unwrap().contains("messages"));
}

#[test]
fn a_directory_without_a_template_is_an_error_at_startup() {
    let output = Command::new(env!("CARGO_BIN_EXE_chat-peg-openai-server")).arg(env!("CARGO_MANIFEST_DIR")).output().expect("run the server");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("no template.jinja"));
}
