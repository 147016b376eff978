//! The corpus judge behind `autoparser check`: load a corpus directory, run every case, judge
//! it, report.
//!
//! A corpus directory holds `chat-cases.jsonl` (one case per line, kinds `parse`, `prompt`,
//! `generation_prompt`, `capability`) and `render/` (`scenarios/NAME.json`,
//! `expected/TEMPLATE/NAME.txt` or `.err`); either may be missing. Cases name templates that
//! are looked up in a templates directory ([`find_template`](templates::find_template)).
//! Judging follows the corpus README:
//!
//! * `parse`: the template is analyzed once per run, a parser generated for the case's
//!   `inputs`, the output parsed (prefill prepended) and compared
//!   ([`compare_messages`](autoparser::verify::compare_messages));
//!   `expect_failure` cases must fail in strict mode. Streaming: the output is fed in chunks
//!   of each of [`CheckOptions::chunk_sizes`] bytes; no push may fail and the deltas must add
//!   up to the final message, which is judged too. Grammar: for complete outputs of requests
//!   with tools or a JSON schema, the generated grammar must accept the output under the lazy
//!   rule ([`check_grammar`](autoparser::verify::check_grammar)).
//! * `prompt` / `generation_prompt`: [`ChatTemplate::apply`](autoparser::template::ChatTemplate::apply)
//!   and the case's `checks`.
//! * `capability`: [`ChatTemplate::capabilities`](autoparser::template::ChatTemplate::capabilities).
//! * `render`: byte-identical to jinja2, minus the README's jinja2 quirks
//!   ([`judge_render`](render::judge_render)).
//!
//! A malformed case is a failure with a reason, never a panic. The per-case checks are the
//! library's ([`autoparser::verify`]), which `autoparser verify` and servers use too.
//!
//! ```text
//! autoparser check --corpus ../shared/corpus --templates ../shared/templates
//! ```

mod cases;
mod render;
mod templates;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use cases::judge_case;
use render::run_render;
use templates::TemplateStore;

/// What to run and how.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Where templates named by cases live.
    pub templates: PathBuf,
    /// Only cases whose id contains this.
    pub filter: Option<String>,
    /// Only these kinds (`parse`, `prompt`, `generation_prompt`, `capability`, `render`);
    /// empty: all.
    pub kinds: Vec<String>,
    /// Streaming chunk sizes in bytes; empty disables the streaming rule.
    pub chunk_sizes: Vec<usize>,
    /// Apply the grammar rule to parse cases.
    pub grammar: bool,
}

impl CheckOptions {
    /// Everything judged: streaming in 1-, 3- and 7-byte chunks, grammars checked.
    pub fn new(templates: impl Into<PathBuf>) -> CheckOptions {
        CheckOptions { templates: templates.into(), filter: None, kinds: Vec::new(), chunk_sizes: vec![1, 3, 7], grammar: true }
    }

    fn wants(&self, kind: &str, id: &str) -> bool {
        (self.kinds.is_empty() || self.kinds.iter().any(|k| k == kind)) && self.filter.as_deref().is_none_or(|f| id.contains(f))
    }
}

/// How a case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// As expected.
    Pass,
    /// Not as expected.
    Fail,
    /// Excluded as a known jinja2 quirk (counted apart).
    Skip,
}

/// One judged case.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    /// The case id (`render:TEMPLATE/SCENARIO` for render scenarios, `line N` when a line has
    /// no id).
    pub id: String,
    /// The case kind (`invalid` for an unreadable line).
    pub kind: String,
    /// The template's name (`inline` for a `template_source`, empty when unknown).
    pub template: String,
    /// Pass, fail or skip.
    pub status: Status,
    /// Why it failed (or was skipped).
    pub reasons: Vec<String>,
    /// Wall time spent on the case (the first case of a template includes its analysis).
    #[serde(serialize_with = "ser_ms")]
    pub elapsed: Duration,
}

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

/// Where time went.
#[derive(Debug, Clone, Default)]
pub struct Timings {
    /// Analysis time per analyzed template.
    pub analysis: Vec<(String, Duration)>,
    /// Per parse case: generating the parser, grammar and prompt with the cached analysis.
    pub generate: Vec<Duration>,
    /// Per parse case: the one-shot parse.
    pub parse: Vec<Duration>,
    /// The whole run.
    pub total: Duration,
    /// Outputs the grammar rule was applied to (run statistics, kept with the timings).
    pub grammar_checked: usize,
}

fn stats(v: &[Duration]) -> String {
    if v.is_empty() {
        return "none".into();
    }
    let mut s = v.to_vec();
    s.sort();
    let sum: Duration = s.iter().sum();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    format!(
        "n={} mean {:.3} ms, median {:.3} ms, max {:.3} ms, total {:.1} ms",
        s.len(),
        ms(sum) / s.len() as f64,
        ms(s[s.len() / 2]),
        ms(s[s.len() - 1]),
        ms(sum)
    )
}

impl Timings {
    /// Human-readable lines.
    pub fn lines(&self) -> Vec<String> {
        let slowest = self.analysis.iter().max_by_key(|(_, d)| *d).map(|(n, _)| n.as_str()).unwrap_or("-");
        let analysis: Vec<Duration> = self.analysis.iter().map(|(_, d)| *d).collect();
        vec![
            format!("timing analyze (per template): {} (slowest {slowest})", stats(&analysis)),
            format!("timing generate (per request, cached analysis): {}", stats(&self.generate)),
            format!("timing parse (one-shot, per case): {}", stats(&self.parse)),
            format!("timing total: {:.2} s", self.total.as_secs_f64()),
        ]
    }

    fn to_json(&self) -> Value {
        let ms = |d: &Duration| d.as_secs_f64() * 1e3;
        serde_json::json!({
            "analysis_ms": self.analysis.iter().map(|(n, d)| (n.clone(), ms(d).into())).collect::<serde_json::Map<String, Value>>(),
            "generate_ms": self.generate.iter().map(ms).collect::<Vec<_>>(),
            "parse_ms": self.parse.iter().map(ms).collect::<Vec<_>>(),
            "total_ms": ms(&self.total),
        })
    }
}

/// Passed/failed/skipped counts of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// Cases skipped as jinja2 quirks.
    pub skipped: usize,
}

/// The results of a run.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Every judged case, in corpus order (chat cases, then render scenarios).
    pub results: Vec<CaseResult>,
    /// Where time went.
    pub timings: Timings,
}

const KIND_ORDER: &[&str] = &["parse", "prompt", "generation_prompt", "capability", "render"];

impl Report {
    /// Cases that passed.
    pub fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.status == Status::Pass).count()
    }

    /// Cases that failed.
    pub fn failed(&self) -> usize {
        self.results.iter().filter(|r| r.status == Status::Fail).count()
    }

    /// The failed cases.
    pub fn failures(&self) -> impl Iterator<Item = &CaseResult> {
        self.results.iter().filter(|r| r.status == Status::Fail)
    }

    /// Counts per kind: the corpus kinds first, in README order, then any other.
    pub fn counts(&self) -> Vec<(String, Counts)> {
        let mut m: BTreeMap<&str, Counts> = BTreeMap::new();
        for r in &self.results {
            let c = m.entry(&r.kind).or_default();
            match r.status {
                Status::Pass => c.passed += 1,
                Status::Fail => c.failed += 1,
                Status::Skip => c.skipped += 1,
            }
        }
        let mut out: Vec<(String, Counts)> = KIND_ORDER.iter().filter_map(|k| m.remove(k).map(|c| (k.to_string(), c))).collect();
        out.extend(m.into_iter().map(|(k, c)| (k.to_owned(), c)));
        out
    }

    /// The last line: `N passed, M failed`.
    pub fn summary(&self) -> String {
        format!("{} passed, {} failed", self.passed(), self.failed())
    }

    /// The text report: one `FAIL id: reason` line per failure, the per-kind counts, the
    /// timings when asked, and last [`summary`](Report::summary).
    pub fn text(&self, timings: bool) -> String {
        let mut s = String::new();
        for r in self.failures() {
            let _ = writeln!(s, "FAIL {}: {}", r.id, one_line(&r.reasons.join("; ")));
        }
        for (kind, c) in self.counts() {
            let skipped = if c.skipped > 0 { format!(" ({} skipped: jinja2 quirks)", c.skipped) } else { String::new() };
            let _ = writeln!(s, "{kind}: {} passed, {} failed{skipped}", c.passed, c.failed);
        }
        if self.timings.grammar_checked > 0 {
            let rejected = self.failures().filter(|r| r.reasons.iter().any(|x| x.starts_with("grammar:"))).count();
            let _ = writeln!(s, "grammar rule: {} outputs checked, {rejected} rejected (counted in parse)", self.timings.grammar_checked);
        }
        if timings {
            for l in self.timings.lines() {
                let _ = writeln!(s, "{l}");
            }
        }
        let _ = writeln!(s, "{}", self.summary());
        s
    }

    /// The whole report as JSON: `cases`, `counts`, `passed`, `failed`, `timings`.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "cases": self.results,
            "counts": self.counts().into_iter().collect::<BTreeMap<_, _>>(),
            "passed": self.passed(),
            "failed": self.failed(),
            "timings": self.timings.to_json(),
        })
    }
}

/// Newlines and other control characters escaped, so a reason stays on its line.
/// The byte range `at ± radius` of `s`, widened to character boundaries (for quoting the
/// context of a position in a failure message).
fn one_line(s: &str) -> String {
    s.chars().flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] }).collect()
}

/// Why a corpus could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The directory has neither `chat-cases.jsonl` nor `render/`.
    #[error("{0}: not a corpus directory (no chat-cases.jsonl, no render/)")]
    NotACorpus(PathBuf),
    /// `chat-cases.jsonl` exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "unknown panic".into())
}

/// Runs every case of the corpus at `corpus` (see the [module docs](self)).
pub fn run(corpus: &Path, opts: &CheckOptions) -> Result<Report, CheckError> {
    let t_run = Instant::now();
    let cases_path = corpus.join("chat-cases.jsonl");
    let render_dir = corpus.join("render");
    if !cases_path.is_file() && !render_dir.is_dir() {
        return Err(CheckError::NotACorpus(corpus.to_path_buf()));
    }
    let mut store = TemplateStore::new(&opts.templates);
    let mut report = Report::default();
    if cases_path.is_file() {
        let text = std::fs::read(&cases_path).map_err(|source| CheckError::Io { path: cases_path.clone(), source })?;
        let text = String::from_utf8_lossy(&text);
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let case: Value = match serde_json::from_str(line) {
                Ok(v @ Value::Object(_)) => v,
                Ok(_) => Value::Null,
                Err(e) => {
                    let id = format!("line {}", n + 1);
                    if opts.filter.as_deref().is_none_or(|f| id.contains(f)) {
                        report.results.push(CaseResult {
                            id,
                            kind: "invalid".into(),
                            template: String::new(),
                            status: Status::Fail,
                            reasons: vec![format!("malformed JSON: {e}")],
                            elapsed: Duration::ZERO,
                        });
                    }
                    continue;
                }
            };
            let id = case.get("id").and_then(Value::as_str).map_or_else(|| format!("line {}", n + 1), str::to_owned);
            let kind = case.get("kind").and_then(Value::as_str).unwrap_or("invalid").to_owned();
            let template = match (case.get("template"), case.get("template_source")) {
                (Some(Value::String(n)), _) => n.clone(),
                (_, Some(Value::String(_))) => "inline".to_owned(),
                _ => String::new(),
            };
            if !opts.wants(&kind, &id) {
                continue;
            }
            let t0 = Instant::now();
            let judged = catch_unwind(AssertUnwindSafe(|| {
                if case.is_null() { vec!["the line is not a JSON object".to_owned()] } else { judge_case(&case, &mut store, opts, &mut report.timings) }
            }));
            let reasons = judged.unwrap_or_else(|p| vec![format!("panicked: {}", panic_message(&*p))]);
            let status = if reasons.is_empty() { Status::Pass } else { Status::Fail };
            report.results.push(CaseResult { id, kind, template, status, reasons, elapsed: t0.elapsed() });
        }
    }
    if opts.kinds.is_empty() || opts.kinds.iter().any(|k| k == "render") {
        let filter = opts.filter.as_deref();
        match catch_unwind(AssertUnwindSafe(|| run_render(&render_dir, &mut store, filter))) {
            Ok(results) => report.results.extend(results),
            Err(p) => report.results.push(CaseResult {
                id: "render".into(),
                kind: "render".into(),
                template: String::new(),
                status: Status::Fail,
                reasons: vec![format!("panicked: {}", panic_message(&*p))],
                elapsed: Duration::ZERO,
            }),
        }
    }
    report.timings.analysis = store.analysis_times();
    report.timings.total = t_run.elapsed();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_corpus(name: &str, lines: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("autoparser-check-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("chat-cases.jsonl"), lines).unwrap();
        std::fs::write(
            dir.join("t.jinja"),
            "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}",
        )
        .unwrap();
        dir
    }

    #[test]
    fn bad_cases_fail_with_reasons_and_never_panic() {
        let lines = concat!(
            "{not json\n",
            "[1, 2]\n",
            "{\"id\": \"a\", \"kind\": \"parse\", \"template\": \"missing\", \"model_output\": \"x\", \"expected\": {}, \"inputs\": {}}\n",
            "{\"id\": \"b\", \"kind\": \"weird\", \"template\": \"t\"}\n",
            "{\"id\": \"c\", \"kind\": \"prompt\", \"template\": \"t\", \"inputs\": {\"messages\": 3}, \"checks\": []}\n",
            "{\"id\": \"d\", \"kind\": \"prompt\", \"template\": \"t\", \"inputs\": {\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"add_generation_prompt\": true}, \"checks\": [{\"op\": \"ends_with\", \"target\": \"generation_prompt\", \"value\": \"<|assistant|>\"}]}\n",
            "{\"id\": \"e\", \"kind\": \"parse\", \"template\": \"t\", \"model_output\": \"Hello\", \"is_partial\": false, \"inputs\": {\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}, \"expected\": {\"role\": \"assistant\", \"content\": \"Hello\"}}\n",
            "{\"id\": \"f\", \"kind\": \"capability\", \"template\": \"../etc/passwd\", \"cap\": \"supports_tools\", \"expected\": true}\n",
        );
        let dir = temp_corpus("bad", lines);
        let report = run(&dir, &CheckOptions::new(&dir)).unwrap();
        let status: Vec<(&str, Status)> = report.results.iter().map(|r| (r.id.as_str(), r.status)).collect();
        assert_eq!(
            status,
            [
                ("line 1", Status::Fail),
                ("line 2", Status::Fail),
                ("a", Status::Fail),
                ("b", Status::Fail),
                ("c", Status::Fail),
                ("d", Status::Pass),
                ("e", Status::Pass),
                ("f", Status::Fail),
            ],
            "{}",
            report.text(false)
        );
        let text = report.text(true);
        assert!(text.ends_with("2 passed, 6 failed\n"), "{text}");
        assert!(text.lines().all(|l| !l.is_empty()));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn not_a_corpus_is_an_error() {
        assert!(matches!(run(Path::new("/nonexistent/x"), &CheckOptions::new("/tmp")), Err(CheckError::NotACorpus(_))));
    }
}
