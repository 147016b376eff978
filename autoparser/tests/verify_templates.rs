//! `verify` over every shared template and every fixture template of the repository
//! (`tests/templates/`, `tests/recovery/`, `tests/fixtures/`, `tests/probes/`): each template's
//! own renders must parse back through its own parser and grammar.
//!
//! Templates with a known gap are listed with the reason; the test checks their verdict too, so
//! a fix that makes one pass must remove it from the list (and a regression cannot hide there).

use std::path::{Path, PathBuf};

use autoparser::Model;
use autoparser::template::ChatTemplate;
use autoparser::verify::{Feature, Verdict, VerifyOptions, VerifyReport};

#[path = "../../tests/shared_data/mod.rs"]
mod shared_data;

/// The tests here that read the shared data (named in the skip notice).
const CORPUS_TESTS: &[&str] = &["every_template_round_trips_through_its_own_parser (the shared templates)", "the_lists_name_existing_templates"];

/// Templates whose verification fails today, and why.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

/// Templates that render none of the cases (verified as such: the report says why).
const UNVERIFIED: &[(&str, &str)] = &[];

fn jinja_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    v.sort();
    v
}

#[test]
fn every_template_round_trips_through_its_own_parser() {
    let mut templates = jinja_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/templates"));
    assert_eq!(templates.len(), 20, "two fixture templates per structure class");
    // The recovery table's own fixtures (tests/recovery.rs) must be right in their own form,
    // and so must the fixtures the other tests read argument shapes from.
    let recovery = jinja_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/recovery"));
    assert_eq!(recovery.len(), 5);
    templates.extend(recovery);
    let shapes = jinja_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"));
    assert_eq!(shapes.len(), 4);
    templates.extend(shapes);
    // Structures no shared template has, written to probe the analysis (each passed or was
    // made to pass when written).
    let probes = jinja_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probes"));
    assert_eq!(probes.len(), 54);
    templates.extend(probes);
    if let Some(shared) = shared_data::shared(CORPUS_TESTS) {
        templates.extend(jinja_files(&shared.templates()));
    }
    let opts = VerifyOptions { cases: 10, ..VerifyOptions::default() };
    let mut wrong = Vec::new();
    println!("{:<46} {:>7} {:>7} {:>8}  verdict", "template", "passed", "failed", "skipped");
    for (name, path) in &templates {
        let t = ChatTemplate::load(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let report = match Model::analyze(t) {
            Ok(model) => model.verify(&opts),
            Err(e) => {
                wrong.push(format!("{name}: analysis failed: {e}"));
                continue;
            }
        };
        let verdict = report.verdict();
        println!("{name:<46} {:>7} {:>7} {:>8}  {verdict:?}", report.passed_cases(), report.failed_cases(), report.unrendered_cases());
        let expected = if KNOWN_FAILURES.iter().any(|(n, _)| n == name) {
            Verdict::Fail
        } else if UNVERIFIED.iter().any(|(n, _)| n == name) {
            Verdict::Unverified
        } else {
            Verdict::Pass
        };
        if verdict != expected {
            wrong.push(format!("{name}: {verdict:?}, expected {expected:?}\n{}", report.text()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Each of `features` rendered in `report`, every case passed.
fn assert_verified(report: &VerifyReport, features: &[Feature]) {
    for f in report.features.iter().filter(|f| features.contains(&f.feature)) {
        assert!(f.unrendered == 0 && f.failed == 0 && f.passed > 0, "{f:?}\n{}", report.text());
    }
}

#[test]
fn the_lists_name_existing_templates() {
    let Some(dir) = shared_data::shared(CORPUS_TESTS).map(|s| s.templates()) else { return };
    let fixtures = ["tests/templates", "tests/probes"].map(|d| Path::new(env!("CARGO_MANIFEST_DIR")).join(d));
    for (name, why) in KNOWN_FAILURES.iter().chain(UNVERIFIED) {
        let found = dir.join(format!("{name}.jinja")).is_file() || fixtures.iter().any(|f| f.join(format!("{name}.jinja")).is_file());
        assert!(found, "{name} ({why}) names no template");
    }
}

/// Where history writes the conversation before the turn otherwise than the prompt (a line
/// break before a turn, whitespace the prompt ends in, tools listed only before a last user
/// message, a mode switch the prompt appends to it, reasoning the prompt opens and history never
/// writes), verify still finds the turn: every case of content and of calls is rendered and
/// round-trips.
#[test]
fn what_the_prompt_writes_around_the_turn_hides_no_case() {
    let probes = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probes");
    let names = [
        "turn-after-a-line-break",
        "prompt-trailing-space",
        "tools-before-a-last-user-message",
        "mode-switch-on-the-last-user-message",
        "prompt-opens-reasoning-history-never-writes",
    ];
    for name in names {
        let t = ChatTemplate::load(&probes.join(format!("{name}.jinja"))).unwrap();
        let report = Model::analyze(t).unwrap().verify(&VerifyOptions { cases: 2, ..VerifyOptions::default() });
        for f in &report.features {
            if matches!(f.feature, Feature::Content | Feature::OneCall | Feature::ContentWithCalls) {
                assert!(f.unrendered == 0 && f.failed == 0 && f.passed > 0, "{name}: {f:?}");
            }
        }
    }
}

/// A template that writes calls only for a message whose content is none, and closes their
/// section only from the second call on: its calls are learned and verified (one call, and
/// every argument type), not left out as if it had none.
#[test]
fn calls_written_only_for_null_content_are_verified() {
    let t = ChatTemplate::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probes/calls-only-with-null-content.jinja")).unwrap();
    let report = Model::analyze(t).unwrap().verify(&VerifyOptions { cases: 2, ..VerifyOptions::default() });
    assert_verified(&report, &[Feature::OneCall, Feature::StringArguments, Feature::ObjectArguments]);
}

/// A template that writes a last assistant message as the continuation of the prompt, its
/// calls left out: its call format is learned from a turn before another, and its calls are
/// verified so (not reported as a template without calls).
#[test]
fn a_last_turn_written_as_a_continuation_is_verified_as_history() {
    let t = ChatTemplate::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probes/last-assistant-as-continuation.jinja")).unwrap();
    let model = Model::analyze(t).unwrap();
    assert_eq!((model.analysis().tools.format.section_start.as_str(), model.analysis().end_of_turn.as_str()), ("<calls>", "<|eot|>"));
    let report = model.verify(&VerifyOptions { cases: 2, ..VerifyOptions::default() });
    assert_verified(&report, &[Feature::Content, Feature::OneCall, Feature::ParallelCalls, Feature::ObjectArguments]);
}

/// A template that writes a call's name only inside its id (Kimi's `functions.NAME:0`): the
/// cases' ids are spelled so, and its calls are verified (random ids would hide them).
#[test]
fn calls_named_only_in_their_ids_are_verified() {
    let src = "{%- for m in messages -%}\
               {%- if m.role == 'assistant' -%}<|im_assistant|>assistant<|im_middle|>{{ m.content or '' }}\
               {%- if m.tool_calls -%}<|tool_calls_section_begin|>{%- for c in m.tool_calls -%}<|tool_call_begin|>{{ c.id }}<|tool_call_argument_begin|>\
               {{- c.function.arguments if c.function.arguments is string else c.function.arguments | tojson }}<|tool_call_end|>{%- endfor -%}<|tool_calls_section_end|>{%- endif -%}\
               {%- else -%}<|im_{{ 'user' if m.role == 'user' else 'system' }}|>{{ m.role }}<|im_middle|>{{ m.content }}{%- endif -%}<|im_end|>\
               {%- endfor -%}{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|>{%- endif -%}";
    let report = Model::analyze(ChatTemplate::from_source(src, "", "").unwrap()).unwrap().verify(&VerifyOptions { cases: 2, ..VerifyOptions::default() });
    assert_verified(&report, &[Feature::OneCall, Feature::ParallelCalls, Feature::CallIds, Feature::ObjectArguments]);
}

/// A template that writes, after a turn of calls, a turn of the message's content even when
/// that is empty (DeepSeek R1 distills): calls are learned and verified with null content, as
/// OpenAI clients send them, not left out as messages of two turns.
#[test]
fn calls_followed_by_an_empty_content_turn_are_verified() {
    let src = "{{- bos_token -}}{%- for m in messages -%}\
               {%- if m.role == 'user' -%}<|User|>{{ m.content }}{%- endif -%}\
               {%- if m.role == 'assistant' and m.tool_calls -%}<|Assistant|><|calls|>{%- for c in m.tool_calls -%}<|call|>{{ c.function.name }}\n\
               {{- c.function.arguments if c.function.arguments is string else c.function.arguments | tojson }}<|/call|>{%- endfor -%}<|/calls|><|eos|>{%- endif -%}\
               {%- if m.role == 'assistant' and m.content is not none -%}<|Assistant|>{{ m.content }}<|eos|>{%- endif -%}\
               {%- if m.role == 'tool' -%}<|output|>{{ m.content }}<|/output|>{%- endif -%}\
               {%- endfor -%}{%- if add_generation_prompt -%}<|Assistant|>{%- endif -%}";
    let report = Model::analyze(ChatTemplate::from_source(src, "", "").unwrap()).unwrap().verify(&VerifyOptions { cases: 2, ..VerifyOptions::default() });
    assert_verified(&report, &[Feature::Content, Feature::OneCall, Feature::ParallelCalls, Feature::StringArguments]);
}

/// A template that refuses thinking off (raises) is verified with thinking on: its content and
/// calls cases are rendered and round-trip.
#[test]
fn a_refused_thinking_mode_hides_no_case() {
    let src = "{%- if enable_thinking is defined and enable_thinking is false -%}{{ raise_exception('Thinking cannot be disabled') }}{%- endif -%}\
               {%- for m in messages -%}<|{{ m.role }}|>\
               {%- if m.reasoning_content -%}<think>{{ m.reasoning_content }}</think>{%- endif -%}{{ m.content or '' }}\
               {%- for c in m.tool_calls or [] -%}<call>{{ {'name': c.function.name, 'arguments': c.function.arguments} | tojson }}</call>{%- endfor -%}<|end|>\
               {%- endfor -%}{%- if add_generation_prompt -%}<|assistant|><think>{%- endif -%}";
    let report = Model::analyze(ChatTemplate::from_source(src, "", "").unwrap()).unwrap().verify(&VerifyOptions { cases: 2, ..VerifyOptions::default() });
    assert_verified(&report, &[Feature::Content, Feature::Reasoning, Feature::OneCall, Feature::ParallelCalls]);
}

/// A template that reads content only as a list of parts renders none of a string's text and
/// fails on an empty string (it reads the first part's type): its content cases are not rendered, not failed.
#[test]
fn content_the_template_cannot_read_is_not_rendered() {
    let src = "{%- for m in messages -%}{{ m.role | capitalize }}{% if m.content[0]['type'] == 'image' %}:{% else %}: {% endif %}{% for part in m.content %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}<end_of_turn>\n\
               {%- endfor -%}{%- if add_generation_prompt %}Assistant: {% endif -%}";
    let report = Model::analyze(ChatTemplate::from_source(src, "", "").unwrap()).unwrap().verify(&VerifyOptions { cases: 2, ..VerifyOptions::default() });
    let content = report.features.iter().find(|f| f.feature == Feature::Content).unwrap();
    assert_eq!((content.passed, content.failed, content.unrendered), (0, 0, 2), "{}", report.text());
    assert!(!matches!(report.verdict(), Verdict::Fail), "{}", report.text());
}
