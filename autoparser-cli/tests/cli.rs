//! The `autoparser` binary on a few inputs: JSON on stdout, exit codes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_autoparser");
/// The bundled example's folder: a ChatML template with Hermes-style JSON calls, in the repository.
const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/chatml-tools");
/// The example template's name in its folder (what `check --templates` looks cases up by).
const TEMPLATE: &str = "template";

fn template() -> PathBuf {
    Path::new(EXAMPLE).join(format!("{TEMPLATE}.jinja"))
}

/// A fresh file: tests run in parallel, so every call gets its own directory.
fn tmp(name: &str, contents: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("autoparser-cli-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, contents).unwrap();
    p
}

fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn autoparser");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn json_out(o: &Output) -> Value {
    assert!(o.status.success(), "status {:?}, stderr {}", o.status, String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

fn weather_request() -> PathBuf {
    let req = json!({
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
        "tool_choice": "auto",
        "add_generation_prompt": true,
    });
    tmp("weather.json", &req.to_string())
}

const CALL: &str = "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

#[test]
fn analyze_prints_the_analysis() {
    let t = template();
    let v = json_out(&run(&["analyze", t.to_str().unwrap()], ""));
    assert_eq!(v["tools"]["format"]["mode"], "JSON_NATIVE", "{v:#}");
    assert_eq!(v["template_capabilities"]["supports_tools"], true);
    // --bare output is what --analysis reads back.
    let bare = run(&["analyze", "--bare", t.to_str().unwrap()], "");
    let path = tmp("analysis.json", &String::from_utf8(bare.stdout).unwrap());
    let req = weather_request();
    let g = json_out(&run(&["generate", t.to_str().unwrap(), "--request", req.to_str().unwrap(), "--analysis", path.to_str().unwrap()], ""));
    assert!(g["grammar"].as_str().is_some_and(|s| s.contains("get_weather")), "{g:#}");
    // The analysis read back generates what analyzing afresh does.
    let fresh = json_out(&run(&["generate", t.to_str().unwrap(), "--request", req.to_str().unwrap()], ""));
    assert_eq!(g, fresh);
}

#[test]
fn render_and_generate() {
    let (t, req) = (template(), weather_request());
    let r = json_out(&run(&["render", t.to_str().unwrap(), "--request", req.to_str().unwrap()], ""));
    assert!(r["prompt"].as_str().unwrap().contains("Weather in Paris?"));
    assert_eq!(r["generation_prompt"], "<|im_start|>assistant\n");
    let g = json_out(&run(&["generate", t.to_str().unwrap(), "--request", req.to_str().unwrap()], ""));
    for key in ["prompt", "generation_prompt", "grammar", "grammar_lazy", "grammar_triggers", "preserved_tokens"] {
        assert!(g.get(key).is_some(), "missing {key}: {g:#}");
    }
    assert_eq!(g["grammar_lazy"], true);
    assert_eq!(g["prompt"], r["prompt"]);
    assert_eq!(g["generation_prompt"], r["generation_prompt"]);
    // Lazy: the grammar starts where a call does, and the call markers stay single tokens.
    assert_eq!(g["grammar_triggers"], json!([{"type": "word", "value": "<tool_call>"}]), "{g:#}");
    let preserved: Vec<&str> = g["preserved_tokens"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(preserved.contains(&"<tool_call>") && preserved.contains(&"</tool_call>"), "{preserved:?}");
    assert!(g["grammar"].as_str().is_some_and(|s| s.contains("get_weather") && s.contains("city")), "{g:#}");
}

#[test]
fn parse_one_shot_partial_and_stream() {
    let (t, req) = (template(), weather_request());
    let args = ["parse", t.to_str().unwrap(), "--request", req.to_str().unwrap()];
    let m = json_out(&run(&args, CALL));
    assert_eq!(m["content"], "Let me look.");
    assert_eq!(m["tool_calls"][0]["function"]["name"], "get_weather");
    let args_json: Value = serde_json::from_str(m["tool_calls"][0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args_json, json!({"city": "Paris"}));

    let cut = &CALL[..CALL.find("Paris").unwrap()];
    let p = json_out(&run(&[&args[..], &["--partial"]].concat(), cut));
    assert_eq!(p["tool_calls"][0]["function"]["name"], "get_weather");

    let o = run(&[&args[..], &["--stream", "--chunk", "3", "--final"]].concat(), CALL);
    assert!(o.status.success());
    let lines: Vec<Value> = String::from_utf8(o.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.len() > 2);
    let (last, deltas) = lines.split_last().unwrap();
    let deltas: Vec<peg_runtime::chat::ChatDelta> = deltas.iter().map(|d| serde_json::from_value(d.clone()).unwrap()).collect();
    let summed = peg_runtime::chat::ChatMessage::from_deltas(&deltas);
    assert_eq!(serde_json::to_value(&summed).unwrap(), *last);
    assert_eq!(*last, m);
}

#[test]
fn check_reports_and_exits_by_result() {
    let dir = std::env::temp_dir().join(format!("autoparser-cli-corpus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ok = json!({"id": "ok", "kind": "capability", "template": TEMPLATE, "cap": "supports_tools", "expected": true});
    let bad = json!({"id": "bad", "kind": "capability", "template": TEMPLATE, "cap": "supports_tools", "expected": false});
    std::fs::write(dir.join("chat-cases.jsonl"), format!("{ok}\n{bad}\nnot json\n")).unwrap();
    let args = ["check", "--corpus", dir.to_str().unwrap(), "--templates", EXAMPLE];
    let o = run(&args, "");
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.iter().any(|l| l.starts_with("FAIL bad: ")), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("FAIL line 3: ")), "{text}");
    assert!(lines.contains(&"capability: 1 passed, 1 failed"), "{text}");
    assert_eq!(lines.last(), Some(&"1 passed, 2 failed"));

    let o = run(&[&args[..], &["--filter", "ok"]].concat(), "");
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8(o.stdout).unwrap().ends_with("\n1 passed, 0 failed\n"));

    let o = run(&[&args[..], &["--json"]].concat(), "");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(1), Some(2)));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn errors_are_reported_not_panics() {
    let o = run(&["analyze", "/nonexistent/t.jinja"], "");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("autoparser:"));
    let o = run(&["render", template().to_str().unwrap(), "--request", tmp("bad.json", "[1").to_str().unwrap()], "");
    assert_eq!(o.status.code(), Some(1));
    let o = run(&["frobnicate"], "");
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["check", "--corpus", "/nonexistent", "--templates", "/tmp"], "");
    assert_eq!(o.status.code(), Some(1));
}
