//! The `template` target: loading a template under small resource limits, analyzing it and
//! preparing a request. Any error is fine; a panic is not, nor is a caught one (an
//! [`ErrorKind::Internal`] error), nor unbounded work (libFuzzer's timeout and memory limits).
//! What succeeds must hold together: the analysis reads back from its JSON, a prepared grammar
//! parses, and a lenient parse of an output never fails.
//!
//! Input: GGUF bytes (by their magic), a `tokenizer_config.json` (an object with a
//! `chat_template`), or a Jinja source.

use autoparser::template::{ChatTemplate, Limits, TemplateSource};
use autoparser::{Error, ErrorKind, Model, Request};
use peg_runtime::chat::{ParseMode, Strictness};
use peg_runtime::gbnf::Grammar;
use serde_json::json;

/// Small bounds: the analysis renders a few dozen probes, each within these.
pub const LIMITS: Limits = Limits { fuel: 200_000, total_fuel: 1_000_000, recursion: 64, output_bytes: 64 << 10, expression_depth: 256 };

fn no_bug<T>(r: Result<T, Error>, what: &str) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            assert_ne!(e.kind(), ErrorKind::Internal, "{what}: a caught panic: {e}");
            None
        }
    }
}

/// Checks one input; panics on a violated invariant.
pub fn check_template(data: &[u8]) {
    let source = if data.starts_with(b"GGUF") {
        let Some(s) = no_bug(TemplateSource::from_gguf_bytes(data), "reading GGUF") else { return };
        s
    } else {
        let text = String::from_utf8_lossy(data);
        match text.trim_start().starts_with('{').then(|| TemplateSource::from_tokenizer_config(&text)) {
            Some(Ok(s)) => s,
            _ => TemplateSource::from_jinja(&text),
        }
    };
    let Some(named) = no_bug(source.default_template(), "the default template") else { return };
    let Some(template) = no_bug(ChatTemplate::with_limits(&named.source, &source.bos_token, &source.eos_token, LIMITS), "compiling") else {
        return;
    };
    let _ = template.variables(true);
    let _ = template.capabilities();
    let Some(model) = no_bug(Model::analyze(template), "analysis") else { return };
    let analysis = model.analysis();
    let back = autoparser::format::TemplateAnalysis::from_json(&analysis.to_json()).expect("the analysis reads back from its JSON");
    assert!(&back == analysis, "the analysis changes through its JSON: {}", analysis.to_json());

    let request = Request::from_json(&json!({
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": crate::chat::formats::tools(),
        "parallel_tool_calls": true,
    }))
    .expect("the request is valid");
    let Some(prepared) = no_bug(model.prepare(&request), "preparing a request") else { return };
    if let Some(g) = &prepared.grammar {
        if let Err(e) = Grammar::parse(g) {
            panic!("the prepared grammar does not parse: {e}\n{g}");
        }
    }
    let parser = prepared.parser(Strictness::Lenient);
    let output = "Hi.<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}</tool_call>";
    for mode in [ParseMode::Complete, ParseMode::Partial] {
        if let Err(e) = parser.parse(output, mode) {
            panic!("a lenient parse failed ({mode:?}): {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed templates get past the limits, so the fuzzer starts from analyzed templates.
    #[test]
    fn seed_templates_analyze_within_the_limits() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/template");
        let mut analyzed = 0;
        for file in crate::corpus_files(&dir).into_iter().filter(|f| f.extension().is_some_and(|e| e == "jinja")) {
            let source = std::fs::read_to_string(&file).unwrap();
            let Ok(template) = ChatTemplate::with_limits(&source, "", "", LIMITS) else { continue };
            analyzed += usize::from(Model::analyze(template).is_ok());
        }
        assert!(analyzed >= 30, "only {analyzed} seed templates analyze");
    }
}
