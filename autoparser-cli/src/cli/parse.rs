//! `autoparser parse TEMPLATE --request REQ.json [--partial] [--stream]`: model output on stdin.

use std::io::{Read, Write};
use std::process::ExitCode;

use autoparser::Request;
use clap::Args;
use peg_runtime::chat::{ChatParser, ChatStream, ParsedMessage, Strictness};

use super::{RequestTarget, print_json};
use peg_runtime::chat::ParseMode;

/// Arguments of `parse`.
#[derive(Debug, Args)]
pub struct ParseArgs {
    #[command(flatten)]
    target: RequestTarget,
    /// The output is cut mid-stream: parse it as partial input.
    #[arg(long)]
    partial: bool,
    /// Stream: print one JSON delta per line as stdin is read.
    #[arg(long)]
    stream: bool,
    /// With --stream: feed at most this many bytes per push (simulates token-sized chunks).
    #[arg(long, value_name = "BYTES")]
    chunk: Option<usize>,
    /// With --stream: print the final message as the last line.
    #[arg(long = "final")]
    final_message: bool,
    /// Fail (exit 1) when the output does not fit the grammar, instead of keeping the rest as
    /// content.
    #[arg(long)]
    strict: bool,
}

pub fn run(args: &ParseArgs) -> Result<ExitCode, String> {
    let t = args.target.template.load()?;
    let inputs = args.target.request.load()?;
    let model = args.target.analysis.model(t)?;
    let req = Request::from_json(&inputs).map_err(|e| e.to_string())?;
    let g = model.prepare(&req).map_err(|e| e.to_string())?;
    let parser = g.parser(if args.strict { Strictness::Strict } else { Strictness::Lenient });
    if args.stream {
        return stream(&parser, args);
    }
    let mut raw = Vec::new();
    std::io::stdin().read_to_end(&mut raw).map_err(|e| format!("reading stdin: {e}"))?;
    let output = String::from_utf8_lossy(&raw);
    let parsed = parser.parse(&output, if args.partial { ParseMode::Partial } else { ParseMode::Complete }).map_err(|e| format!("parse failed: {e}"))?;
    report(&parsed);
    print_json(&parsed.message)?;
    Ok(ExitCode::SUCCESS)
}

/// Reads stdin as it arrives, pushes whole characters, prints deltas as JSON lines.
fn stream(parser: &ChatParser, args: &ParseArgs) -> Result<ExitCode, String> {
    let mut s = parser.stream();
    let mut stdin = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0u8; 4096];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let n = stdin.read(&mut buf).map_err(|e| format!("reading stdin: {e}"))?;
        pending.extend_from_slice(&buf[..n]);
        let text = take_text(&mut pending, n == 0);
        push(&mut s, &text, args.chunk, &mut out)?;
        if n == 0 {
            break;
        }
    }
    if args.partial {
        if args.final_message {
            writeln!(out, "{}", serde_json::to_string(s.message()).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (last, fin) = s.finish().map_err(|e| format!("parse failed: {e}"))?;
    for d in &last {
        writeln!(out, "{}", serde_json::to_string(d).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    }
    if args.final_message {
        writeln!(out, "{}", serde_json::to_string(&fin.message).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    }
    report(&fin);
    Ok(ExitCode::SUCCESS)
}

/// What lenient parsing recovered, and where it stopped following the grammar, on stderr.
fn report(parsed: &ParsedMessage) {
    for r in &parsed.recoveries {
        let detail = if r.detail.is_empty() { String::new() } else { format!(": {}", r.detail) };
        eprintln!("autoparser: recovered {} at byte {} (+{}){detail}", r.kind, r.offset, r.len);
    }
    if let Some(d) = &parsed.diagnostic {
        eprintln!("autoparser: the output left the grammar at byte {}: {} (the rest is content)", d.offset, d.message);
    }
}

/// Takes the complete UTF-8 text at the front of `pending`, leaving a cut character's bytes
/// (unless `eof`); invalid bytes become U+FFFD so no text is lost silently.
fn take_text(pending: &mut Vec<u8>, eof: bool) -> String {
    let mut text = String::new();
    loop {
        match std::str::from_utf8(pending) {
            Ok(s) => {
                text.push_str(s);
                pending.clear();
                return text;
            }
            Err(e) => {
                let ok = e.valid_up_to();
                text.push_str(std::str::from_utf8(&pending[..ok]).expect("valid prefix"));
                match e.error_len() {
                    Some(bad) => {
                        text.push('\u{FFFD}');
                        pending.drain(..ok + bad);
                    }
                    None if eof => {
                        text.push('\u{FFFD}');
                        pending.clear();
                        return text;
                    }
                    None => {
                        pending.drain(..ok);
                        return text;
                    }
                }
            }
        }
    }
}

fn push(s: &mut ChatStream, text: &str, chunk: Option<usize>, out: &mut impl Write) -> Result<(), String> {
    // No chunk size: the whole text as one piece.
    for p in peg_runtime::chat::stream_pieces(text, chunk.as_slice()) {
        for d in s.push(p).map_err(|e| format!("parse failed: {e}"))? {
            writeln!(out, "{}", serde_json::to_string(&d).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        }
        out.flush().map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::take_text;

    #[test]
    fn cut_characters_wait_for_their_bytes() {
        let mut p = "aé".as_bytes()[..2].to_vec();
        assert_eq!(take_text(&mut p, false), "a");
        assert_eq!(p.len(), 1);
        p.push("é".as_bytes()[1]);
        assert_eq!(take_text(&mut p, false), "é");
        let mut bad = vec![b'x', 0xff, b'y'];
        assert_eq!(take_text(&mut bad, false), "x\u{FFFD}y");
        let mut cut = vec![0xc3];
        assert_eq!(take_text(&mut cut, true), "\u{FFFD}");
    }
}
