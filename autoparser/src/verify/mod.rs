//! `verify`: a template checks its own parser, by round trip.
//!
//! Seeded assistant messages (content, reasoning, one and several calls, arguments of every
//! JSON type, call ids) are rendered as Hugging Face renders a finished turn; the text after
//! the generation prompt, less the end-of-turn marker, is what the model would have
//! generated. It is parsed back one-shot (also with a line break after it, as models write one
//! before they stop) and streamed, and the request's grammar must accept
//! it (lazy grammars from their first trigger, as the corpus rule says). Each case is judged
//! like a corpus case ([`compare_messages`], [`stream_message`], [`check_grammar`]).
//!
//! A case the template cannot render is reported as such and not counted as a failure: the
//! template raises, drops the field (the render does not change when it is removed), or
//! renders the message exactly as it renders another one (reasoning that only a line break
//! ends), so no parser could tell which was meant. Both thinking modes are tried, and a prompt
//! that writes the turn's prefill itself (`<think>\n`) is accounted for. The corpus judge
//! (`autoparser check`, in the `autoparser-cli` package) shares these checks.
//!
//! ```
//! use autoparser::template::ChatTemplate;
//! use autoparser::verify::{Feature, VerifyOptions};
//! use autoparser::Model;
//! let src = r#"{%- for m in messages -%}<|{{ m.role }}|>{{ m.content }}
//! {%- for c in m.tool_calls or [] %}<tool_call>{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}</tool_call>{% endfor -%}
//! <|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"#;
//! let model = Model::analyze(ChatTemplate::from_source(src, "", "").unwrap()).unwrap();
//! let report = model.verify(&VerifyOptions { cases: 4, ..VerifyOptions::default() });
//! assert!(report.passed(), "{}", report.text());
//! let parallel = report.features.iter().find(|f| f.feature == Feature::ParallelCalls).unwrap();
//! assert_eq!(parallel.passed, 4);
//! // The template writes no reasoning: listed as not rendered, not failed.
//! let reasoning = report.features.iter().find(|f| f.feature == Feature::Reasoning).unwrap();
//! assert_eq!((reasoning.passed, reasoning.failed, reasoning.unrendered), (0, 0, 4));
//! ```

mod cases;
mod grammar;
mod judge;

use std::fmt::Write as _;

use peg_runtime::chat::{ChatMessage, ChatToolCall, Strictness};
use serde::Serialize;
use serde_json::{Value, json};

use crate::format::TemplateAnalysis;
use crate::generator::{PreparedRequest, generate, render_conversation};
use crate::request::{Request, ToolChoice};
use crate::template::Render;
use cases::probe_tools;
pub use grammar::{check_grammar, window};
pub use judge::{compare_messages, stream_message};
use peg_runtime::chat::ParseMode;

/// What one kind of generated message exercises.
///
/// ```
/// use autoparser::verify::Feature;
/// assert_eq!(Feature::ALL[3], Feature::ParallelCalls);
/// assert_eq!((Feature::ParallelCalls.name(), serde_json::to_string(&Feature::ParallelCalls).unwrap().as_str()), ("parallel calls", r#""parallel_calls""#));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    /// Content only.
    Content,
    /// Reasoning and content.
    Reasoning,
    /// One call with plain arguments.
    OneCall,
    /// Two or three calls in one message.
    ParallelCalls,
    /// Content and calls in one message (the template decides where the content goes).
    ContentWithCalls,
    /// Reasoning and a call.
    ReasoningWithCalls,
    /// Strings with quotes, backslashes, newlines, markup and unicode.
    StringArguments,
    /// Integers: zero, negative, large.
    IntegerArguments,
    /// Floats.
    NumberArguments,
    /// Booleans.
    BooleanArguments,
    /// Null (nullable parameters).
    NullArguments,
    /// Nested objects.
    ObjectArguments,
    /// Arrays of objects.
    ArrayArguments,
    /// An empty object and an empty array.
    EmptyContainers,
    /// Call ids, where the template writes them.
    CallIds,
}

impl Feature {
    /// Every feature, in report order.
    pub const ALL: [Feature; 15] = [
        Feature::Content,
        Feature::Reasoning,
        Feature::OneCall,
        Feature::ParallelCalls,
        Feature::ContentWithCalls,
        Feature::ReasoningWithCalls,
        Feature::StringArguments,
        Feature::IntegerArguments,
        Feature::NumberArguments,
        Feature::BooleanArguments,
        Feature::NullArguments,
        Feature::ObjectArguments,
        Feature::ArrayArguments,
        Feature::EmptyContainers,
        Feature::CallIds,
    ];

    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Content => "content",
            Feature::Reasoning => "reasoning",
            Feature::OneCall => "one call",
            Feature::ParallelCalls => "parallel calls",
            Feature::ContentWithCalls => "content with calls",
            Feature::ReasoningWithCalls => "reasoning with calls",
            Feature::StringArguments => "string arguments",
            Feature::IntegerArguments => "integer arguments",
            Feature::NumberArguments => "number arguments",
            Feature::BooleanArguments => "boolean arguments",
            Feature::NullArguments => "null arguments",
            Feature::ObjectArguments => "object arguments",
            Feature::ArrayArguments => "arrays of objects",
            Feature::EmptyContainers => "empty object and array",
            Feature::CallIds => "call ids",
        }
    }

    /// Whether the feature is about one kind of argument value.
    fn is_value_kind(self) -> bool {
        matches!(
            self,
            Feature::StringArguments
                | Feature::IntegerArguments
                | Feature::NumberArguments
                | Feature::BooleanArguments
                | Feature::NullArguments
                | Feature::ObjectArguments
                | Feature::ArrayArguments
                | Feature::EmptyContainers
        )
    }
}

/// How to verify.
///
/// ```
/// use autoparser::{analysis::analyze, template::ChatTemplate, Request};
/// use autoparser::verify::{verify, Feature, VerifyOptions};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<call>{{ c.function | tojson }}</call>\
///            {% endfor %}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let t = ChatTemplate::from_source(src, "", "").unwrap();
/// // The request's own tools: the arguments follow their schemas.
/// let request = Request::from_json(&serde_json::json!({
///     "messages": [{"role": "user", "content": "Plan a trip"}],
///     "tools": [{"type": "function", "function": {"name": "book", "parameters": {"type": "object",
///         "properties": {"city": {"type": "string"}, "nights": {"type": "integer"}}}}}],
/// })).unwrap();
/// let options = VerifyOptions { seed: 7, cases: 2, request: Some(request), chunk_sizes: vec![1, 5] };
/// let report = verify(&t, &analyze(&t).unwrap(), &options);
/// assert!(report.passed(), "{}", report.text());
/// assert_eq!(report.features.iter().find(|f| f.feature == Feature::OneCall).unwrap().passed, 2);
/// ```
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// Seeds the generated messages; the same seed gives the same cases.
    pub seed: u64,
    /// Cases per feature.
    pub cases: usize,
    /// The request the messages answer: its messages (the conversation so far), tools (whose
    /// schemas the arguments follow) and settings. `None`: one user message and
    /// a built-in probe tool set. A request without tools gets the probe tools too.
    pub request: Option<Request>,
    /// Streaming chunk sizes in bytes.
    pub chunk_sizes: Vec<usize>,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions { seed: 0, cases: 20, request: None, chunk_sizes: vec![1, 3, 7] }
    }
}

/// The results of one feature.
///
/// ```
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// use autoparser::verify::{verify, Feature, VerifyOptions};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<call>{{ c.function | tojson }}</call>\
///            {% endfor %}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let t = ChatTemplate::from_source(src, "", "").unwrap();
/// let report = verify(&t, &analyze(&t).unwrap(), &VerifyOptions { cases: 2, ..VerifyOptions::default() });
/// let content = report.features.iter().find(|f| f.feature == Feature::Content).unwrap();
/// assert_eq!((content.passed, content.failed, content.unrendered), (2, 0, 0));
/// // The template writes no reasoning: not a failure, and the report says why.
/// let reasoning = report.features.iter().find(|f| f.feature == Feature::Reasoning).unwrap();
/// assert_eq!((reasoning.passed, reasoning.unrendered), (0, 2));
/// assert!(reasoning.unrendered_reason.is_some());
/// ```
#[derive(Debug, Clone, Serialize)]
pub struct FeatureReport {
    /// The feature.
    pub feature: Feature,
    /// Cases that round-tripped.
    pub passed: usize,
    /// Cases that did not.
    pub failed: usize,
    /// Cases the template cannot render (it raises, or drops what the feature needs).
    pub unrendered: usize,
    /// Why the first unrendered case was not rendered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unrendered_reason: Option<String>,
}

/// A case that failed: what was rendered, what came back, and why it differs.
///
/// ```
/// # use autoparser::{analysis::analyze, template::ChatTemplate, verify::{verify, VerifyOptions}};
/// # let calls = |open: &str, close: &str| ChatTemplate::from_source(&format!("{{% for m in messages %}}<|{{{{ m.role }}}}|>{{{{ m.content }}}}\
/// #     {{% for c in m.tool_calls or [] %}}{open}{{{{ c.function | tojson }}}}{close}{{% endfor %}}<|end|>{{% endfor %}}\
/// #     {{% if add_generation_prompt %}}<|assistant|>{{% endif %}}"), "", "").unwrap();
/// // The analysis of a template writing `<call>...</call>`, verified against one writing `<tool>...</tool>`.
/// let wrong = analyze(&calls("<call>", "</call>")).unwrap();
/// let report = verify(&calls("<tool>", "</tool>"), &wrong, &VerifyOptions { cases: 1, ..VerifyOptions::default() });
/// let failure = report.first_failure.unwrap();
/// assert!(failure.output.starts_with("<tool>{"), "{}", failure.output);
/// // Lenient parsing still reads the call, but only as a recovery: the template's own output
/// // must parse without one.
/// assert_eq!(failure.parsed.unwrap().tool_calls[0].name, failure.expected.tool_calls[0].name);
/// assert!(failure.reasons[0].contains("needed recovery"), "{:?}", failure.reasons);
/// ```
#[derive(Debug, Clone, Serialize)]
pub struct CaseFailure {
    /// The feature it tested.
    pub feature: Feature,
    /// The assistant message, in OpenAI form.
    pub message: Value,
    /// The model output cut from the render.
    pub output: String,
    /// What the parse should give.
    pub expected: ChatMessage,
    /// What the one-shot parse gave, if it gave a message.
    pub parsed: Option<ChatMessage>,
    /// Each check that failed.
    pub reasons: Vec<String>,
}

/// The outcome of a verification.
///
/// ```
/// # use autoparser::verify::Verdict;
/// # use autoparser::{analysis::analyze, template::ChatTemplate, verify::{verify, VerifyOptions}};
/// # let calls = |open: &str, close: &str| ChatTemplate::from_source(&format!("{{% for m in messages %}}<|{{{{ m.role }}}}|>{{{{ m.content }}}}\
/// #     {{% for c in m.tool_calls or [] %}}{open}{{{{ c.function | tojson }}}}{close}{{% endfor %}}<|end|>{{% endfor %}}\
/// #     {{% if add_generation_prompt %}}<|assistant|>{{% endif %}}"), "", "").unwrap();
/// // The analysis of a template writing `<call>...</call>`, verified against one writing `<tool>...</tool>`.
/// let wrong = analyze(&calls("<call>", "</call>")).unwrap();
/// let report = verify(&calls("<tool>", "</tool>"), &wrong, &VerifyOptions { cases: 1, ..VerifyOptions::default() });
/// assert_eq!(report.verdict(), Verdict::Fail);
/// let right = calls("<tool>", "</tool>");
/// let report = verify(&right, &analyze(&right).unwrap(), &VerifyOptions { cases: 1, ..VerifyOptions::default() });
/// assert_eq!(report.verdict(), Verdict::Pass);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every rendered case round-tripped.
    Pass,
    /// Some rendered case did not.
    Fail,
    /// The template rendered no case (every one raised or dropped what it tests).
    Unverified,
}

/// What [`verify`] found.
///
/// ```
/// # use autoparser::{analysis::analyze, template::ChatTemplate, verify::{verify, VerifyOptions}};
/// # let calls = |open: &str, close: &str| ChatTemplate::from_source(&format!("{{% for m in messages %}}<|{{{{ m.role }}}}|>{{{{ m.content }}}}\
/// #     {{% for c in m.tool_calls or [] %}}{open}{{{{ c.function | tojson }}}}{close}{{% endfor %}}<|end|>{{% endfor %}}\
/// #     {{% if add_generation_prompt %}}<|assistant|>{{% endif %}}"), "", "").unwrap();
/// // The analysis of a template writing `<call>...</call>`, verified against one writing `<tool>...</tool>`.
/// let wrong = analyze(&calls("<call>", "</call>")).unwrap();
/// let report = verify(&calls("<tool>", "</tool>"), &wrong, &VerifyOptions { cases: 1, ..VerifyOptions::default() });
/// assert!(!report.passed() && report.failed_cases() > 0);
/// assert!(report.passed_cases() > 0); // content alone still round-trips
/// let summary = format!("{} passed, {} failed, {} skipped", report.passed_cases(), report.failed_cases(), report.unrendered_cases());
/// assert!(report.text().trim_end().ends_with(&summary), "{}", report.text());
/// ```
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// One entry per feature, in [`Feature::ALL`] order.
    pub features: Vec<FeatureReport>,
    /// The first failing case, with its diff.
    pub first_failure: Option<CaseFailure>,
}

impl VerifyReport {
    /// Cases that passed, over all features.
    pub fn passed_cases(&self) -> usize {
        self.features.iter().map(|f| f.passed).sum()
    }

    /// Cases that failed, over all features.
    pub fn failed_cases(&self) -> usize {
        self.features.iter().map(|f| f.failed).sum()
    }

    /// Cases the template could not render.
    pub fn unrendered_cases(&self) -> usize {
        self.features.iter().map(|f| f.unrendered).sum()
    }

    /// The verdict: nothing the template renders fails, and it renders something.
    pub fn passed(&self) -> bool {
        self.verdict() == Verdict::Pass
    }

    /// Pass, fail, or nothing verified (the template renders none of the cases).
    pub fn verdict(&self) -> Verdict {
        if self.failed_cases() > 0 {
            Verdict::Fail
        } else if self.passed_cases() == 0 {
            Verdict::Unverified
        } else {
            Verdict::Pass
        }
    }

    /// The report as text: a line per feature, the verdict, the first failure, and last a
    /// `N passed, M failed, K skipped` line (skipped: cases the template cannot render).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for f in &self.features {
            let rendered = f.passed + f.failed;
            let _ = write!(out, "{:<24} ", format!("{}:", f.feature.name()));
            if rendered == 0 {
                let why = f.unrendered_reason.as_deref().unwrap_or("not rendered");
                let _ = writeln!(out, "not rendered ({why})");
            } else {
                let mark = if f.failed == 0 { "" } else { "  FAIL" };
                let _ = write!(out, "{}/{}{mark}", f.passed, rendered);
                if f.unrendered > 0 {
                    let _ = write!(out, " ({} not rendered)", f.unrendered);
                }
                out.push('\n');
            }
        }
        let verdict = match self.verdict() {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Unverified => "unverified: the template renders none of the cases",
        };
        let _ = writeln!(out, "verdict: {verdict}");
        if let Some(c) = &self.first_failure {
            let _ = writeln!(out, "first failure ({}):", c.feature.name());
            for r in &c.reasons {
                let _ = writeln!(out, "  - {r}");
            }
            let _ = writeln!(out, "  message:  {}", c.message);
            let _ = writeln!(out, "  output:   {:?}", c.output);
            let _ = writeln!(out, "  expected: {}", serde_json::to_string(&c.expected).unwrap_or_default());
            if let Some(p) = &c.parsed {
                let _ = writeln!(out, "  parsed:   {}", serde_json::to_string(p).unwrap_or_default());
            }
        }
        let _ = writeln!(out, "{} passed, {} failed, {} skipped", self.passed_cases(), self.failed_cases(), self.unrendered_cases());
        out
    }
}

/// Verifies the parser, grammar and prompt built from `analysis` against the template's own
/// renders of seeded messages.
///
/// ```
/// use autoparser::{analysis::analyze, template::ChatTemplate};
/// use autoparser::verify::{verify, Verdict, VerifyOptions};
/// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<call>{{ c.function | tojson }}</call>\
///            {% endfor %}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let t = ChatTemplate::from_source(src, "", "").unwrap();
/// let analysis = analyze(&t).unwrap();
/// let report = verify(&t, &analysis, &VerifyOptions { cases: 1, ..VerifyOptions::default() });
/// assert_eq!(report.verdict(), Verdict::Pass, "{}", report.text());
/// ```
pub fn verify(r: &dyn Render, analysis: &TemplateAnalysis, opts: &VerifyOptions) -> VerifyReport {
    let mut req = opts.request.clone().unwrap_or_default();
    if req.messages.is_empty() {
        req.messages = vec![json!({"role": "user", "content": "Please help me plan the week."})];
    }
    if req.tools.is_empty() {
        // The probe tools the template can list: some templates raise on a schema feature
        // (a nullable type, a missing description) that their model never saw.
        req.tools = probe_tools()
            .into_iter()
            .filter(|tool| {
                let mut one = req.clone();
                one.tools = vec![tool.clone()];
                render_conversation(r, analysis, &one, true).is_ok()
            })
            .collect();
    }
    req.parallel_tool_calls = true;
    req.add_generation_prompt = true;
    if analysis.tools_error.is_some() {
        // Requests with tools are refused: the template is checked as it serves plain chat
        // (its tools listed, calls off), where the call cases fail.
        req.tool_choice = ToolChoice::None;
    }
    let session = Session::new(r, analysis, req);
    let mut report = VerifyReport { features: Vec::new(), first_failure: None };
    for (fi, &feature) in Feature::ALL.iter().enumerate() {
        let mut f = FeatureReport { feature, passed: 0, failed: 0, unrendered: 0, unrendered_reason: None };
        for i in 0..opts.cases {
            let mut rng = cases::Rng::new(opts.seed ^ ((fi as u64) << 32) ^ i as u64);
            let outcome = match cases::message(feature, &session.modes[0].req.tools, &mut rng) {
                Ok(mut msg) => {
                    ids_naming_calls(analysis, &mut msg);
                    session.run(feature, msg, &opts.chunk_sizes)
                }
                Err(why) => Outcome::Unrendered(why),
            };
            match outcome {
                Outcome::Pass => f.passed += 1,
                Outcome::Unrendered(why) => {
                    f.unrendered += 1;
                    f.unrendered_reason.get_or_insert(why);
                }
                Outcome::Fail(c) => {
                    f.failed += 1;
                    if report.first_failure.is_none() {
                        report.first_failure = Some(*c);
                    }
                }
            }
        }
        report.features.push(f);
    }
    report
}

enum Outcome {
    Pass,
    Unrendered(String),
    Fail(Box<CaseFailure>),
}

/// What every case of one verification shares: the request, its generated parser, and the
/// end-of-turn text a finished turn carries.
struct Session<'r> {
    r: &'r dyn Render,
    analysis: &'r TemplateAnalysis,
    /// The request with thinking on, and with thinking off.
    modes: [Mode; 2],
    /// What the template writes after a turn's last element: after plain content, and after
    /// content it places behind calls. The model stops there (its end-of-turn token).
    tails: Vec<String>,
}

/// A render of a case's message: the conversation ending with it, or (`as_history`) with it
/// as a turn of history, cut before the user turn after it.
struct Turn {
    text: String,
    as_history: bool,
}

/// The request in one thinking mode, and what generation made of it.
struct Mode {
    req: Request,
    generated: Result<PreparedRequest, String>,
}

impl<'r> Session<'r> {
    fn new(r: &'r dyn Render, analysis: &'r TemplateAnalysis, req: Request) -> Session<'r> {
        let mode = |thinking: bool| {
            let mut req = req.clone();
            req.enable_thinking = Some(thinking);
            req.chat_template_kwargs.entry("thinking").or_insert(thinking.into());
            let generated = generate(r, analysis, &req).map_err(|e| format!("generate: {e}"));
            Mode { req, generated }
        };
        let mut s = Session { r, analysis, modes: [mode(true), mode(false)], tails: Vec::new() };
        const NEEDLE: &str = "END_OF_TURN_PROBE";
        let mut with_call = json!({"role": "assistant", "content": NEEDLE});
        if let Ok(mut m) = cases::message(Feature::OneCall, &s.modes[1].req.tools, &mut cases::Rng::new(0)) {
            ids_naming_calls(analysis, &mut m);
            with_call["tool_calls"] = m["tool_calls"].clone();
        }
        let probes = [json!({"role": "assistant", "content": NEEDLE}), with_call];
        for (mode, msg) in [0, 1].into_iter().flat_map(|m| probes.iter().map(move |p| (m, p))) {
            let Ok(text) = s.render_with(&s.modes[mode].req, msg) else { continue };
            let Some(i) = text.rfind(NEEDLE) else { continue };
            let tail = &text[i + NEEDLE.len()..];
            // Content written before the calls: what follows it is the calls, not a tail. The
            // turn's end after calls is what follows them from the last marker that ends a turn
            // of content (`<|end|><|eom|>` where content ends in `<|end|><|eot|>`).
            let calls = msg["tool_calls"].as_array().into_iter().flatten();
            let names_a_call = |t: &str| calls.clone().any(|c| c["function"]["name"].as_str().is_some_and(|n| t.contains(n)));
            if names_a_call(tail) {
                let ends: Vec<&str> = s.tails.iter().filter_map(|t| crate::analysis::segment::first_marker(t).map(|(_, m)| m)).collect();
                let after_calls = ends.iter().filter_map(|m| tail.rfind(m)).max().map(|k| &tail[k..]).filter(|t| !names_a_call(t));
                if let Some(t) = after_calls.filter(|t| !s.tails.iter().any(|x| x == t)) {
                    s.tails.push(t.to_owned());
                }
                continue;
            }
            s.tails.push(tail.to_owned());
        }
        s
    }

    /// The conversation of `req` with `msg` as its finished last turn.
    fn render_with(&self, req: &Request, msg: &Value) -> Result<String, String> {
        let mut req = req.clone();
        req.messages.push(msg.clone());
        render_conversation(self.r, self.analysis, &req, false).map_err(|e| e.to_string())
    }

    /// The conversation of `req` with `msg` as a turn of history: a user turn follows it, cut
    /// off with that turn's header (see [`crate::analysis::user_header`]). `None` if the
    /// template renders no such conversation.
    fn render_as_history(&self, req: &Request, msg: &Value) -> Option<String> {
        const NEXT: &str = "NEXT_USER_TURN_PROBE";
        let mut next = req.clone();
        next.messages.push(msg.clone());
        next.messages.push(json!({"role": "user", "content": NEXT}));
        let text = render_conversation(self.r, self.analysis, &next, false).ok()?;
        let before_next = &text[..text.rfind(NEXT)?];
        let first_words = req.messages.iter().find(|m| m["role"] == "user").and_then(|m| m["content"].as_str()).filter(|w| !w.trim().is_empty())?;
        let base = render_conversation(self.r, self.analysis, req, false).ok()?;
        let header = crate::analysis::user_header(before_next, &base[..base.find(first_words)?])?;
        Some(crate::analysis::history_turn(before_next, header).to_owned())
    }

    /// The model output the render of `msg` implies: the text after the generation prompt,
    /// without the end-of-turn marker.
    ///
    /// Where the render does not continue the prompt:
    /// - the prompt wrote the turn's prefill (`<think>\n`, `<think>\n</think>`, or prose that
    ///   opens reasoning) and history shows the turn without it: after a closed block the model
    ///   writes the rendered turn; after an opened one, its reasoning (the message's, or none)
    ///   and the end marker first;
    /// - the prompt added text before the turn header that history does not keep (an
    ///   instruction turn), or history writes whitespace before the header: the turn starts
    ///   after the header the render does share;
    /// - the prompt ends in whitespace history does not write: the turn starts after it;
    /// - the generation prompt ends in a prefill history never writes, maybe after text history
    ///   does not keep (` /think_off ASSISTANT:` + a closed block): the turn starts after the
    ///   header before the prefill, as where the prompt is the prefill alone;
    /// - the prompt wrote something before the last user turn that history does not (tools
    ///   listed just before a last user message): the turn starts after the prompt's end from
    ///   the last user's words on.
    fn output_of(&self, req: &Request, g: &PreparedRequest, rendered: &str, reasoning: &str) -> Result<String, String> {
        if let Some(turn) = rendered.strip_prefix(g.prompt.as_str()) {
            return Ok(self.strip_tail(turn).to_owned());
        }
        let at = crate::analysis::text::lcp(&g.prompt, rendered);
        let end = self.analysis.reasoning.end.trim();
        let prefill = g.prefill.trim();
        let forced = g.prompt[at..].trim();
        let rest = &rendered[at..];
        // The turn the model writes after a prompt ending in the prefill, where history shows
        // `turn` without it.
        let after_prefill = |turn: &str| -> Result<String, String> {
            // History that shows the reasoning itself needs none spliced in.
            let shown = !reasoning.is_empty() && turn.contains(reasoning);
            if prefill.ends_with(end) && shown {
                // After a prompt that closed the block, no model writes reasoning.
                return Err("the generation prompt closes the reasoning block, and the turn writes reasoning".into());
            }
            Ok(if prefill.ends_with(end) || shown { turn.to_owned() } else { format!("{reasoning}\n{end}\n\n{turn}") })
        };
        // (The prefill as the parse reads it may differ in whitespace: `<think></think>` for
        // the prompt's `<think>\n</think>`.)
        let unspaced = |t: &str| t.split_whitespace().collect::<String>();
        if !end.is_empty() && !prefill.is_empty() && unspaced(forced) == unspaced(prefill) {
            return after_prefill(self.strip_tail(rest.trim_start()));
        }
        // Where the render writes an end of `header` as the two part (it may begin inside the
        // shared text, or after whitespace that history writes before a turn): the longest
        // such end that `fits`, and the render after it.
        let space = rest.len() - rest.trim_start().len();
        let after_end_of = |header: &str, fits: &dyn Fn(&str) -> bool| {
            let ends = (1..=header.len()).rev().filter(|&k| header.is_char_boundary(header.len() - k)).map(|k| &header[header.len() - k..]);
            ends.filter(|h| fits(h)).find_map(|h| {
                let from = at.saturating_sub(h.len());
                (from..=at + space).find(|&p| rendered.is_char_boundary(p) && rendered[p..].starts_with(h)).map(|p| &rendered[p + h.len()..])
            })
        };
        // An end of the generation prompt holding a marker.
        let gp = g.generation_prompt.as_str();
        if let Some(turn) = after_end_of(gp, &crate::analysis::text::has_marker) {
            return Ok(self.strip_tail(turn).to_owned());
        }
        // The prompt is the prefill from inside its first marker on, where the two part
        // (`<think>` against `<TOOLCALL>`).
        if !end.is_empty() && !prefill.is_empty() {
            let inside = (1..prefill.len().min(at)).find(|&k| g.prompt.is_char_boundary(at - k) && unspaced(&g.prompt[at - k..]) == unspaced(prefill));
            if let Some(k) = inside {
                return self.one_turn(self.strip_tail(rendered[at - k..].trim_start())).and_then(after_prefill);
            }
        }
        // The generation prompt ends in the prefill (`<SPECIAL_11>Assistant\n<think>\n`), which
        // history never writes, maybe after text history does not keep either (` /think_off
        // ASSISTANT:`): the turn starts after an end of the header before the prefill (a marker,
        // or a word of four characters or more), and the model writes the prefill's rest first.
        let start = self.analysis.reasoning.start.trim();
        let header = (!start.is_empty() && !end.is_empty() && !prefill.is_empty())
            .then(|| gp.rfind(start))
            .flatten()
            .filter(|&i| unspaced(&gp[i..]) == unspaced(prefill))
            .map(|i| &gp[..i]);
        let fits = |h: &str| crate::analysis::text::has_marker(h) || h.trim().chars().count() >= 4;
        if let Some(turn) = header.and_then(|h| after_end_of(h, &fits)) {
            let turn = self.strip_tail(turn.trim_start());
            // The turn history shows opens the block the prompt already opened.
            let turn = if prefill.ends_with(end) { turn } else { turn.strip_prefix(start).map_or(turn, str::trim_start) };
            return self.one_turn(turn).and_then(after_prefill);
        }
        // The prompt ends in whitespace history does not write after the header (`ASSISTANT: \n`
        // to generate, `ASSISTANT: text` in history): the turn starts after it.
        if g.prompt[at..].trim().is_empty() {
            return Ok(self.strip_tail(rest.trim_start()).to_owned());
        }
        // The prompt wrote something before the last user turn that history does not (tools
        // listed just before the last user message): the turn starts after the prompt's end from
        // the last user's words on, which the render writes after where the two part.
        let words = req.messages.iter().rev().find(|m| m["role"] == "user").and_then(|m| m["content"].as_str()).filter(|w| !w.trim().is_empty());
        if let Some(tail) = words.and_then(|w| g.prompt.rfind(w)).map(|k| &g.prompt[k..]) {
            let from = (0..=at.saturating_sub(tail.len())).rev().find(|&p| rendered.is_char_boundary(p)).unwrap_or(0);
            if let Some(p) = rendered[from..].find(tail) {
                return Ok(self.strip_tail(&rendered[from + p + tail.len()..]).to_owned());
            }
        }
        let (lo, hi_prompt) = window(&g.prompt, at, 30);
        let (_, hi) = window(rendered, at, 30);
        let cut = if hi_prompt < g.prompt.len() { "…" } else { "" };
        Err(format!(
            "the rendered turn does not continue the generation prompt: the prompt reads {:?}{cut}, the turn reads {:?}",
            &g.prompt[lo..hi_prompt],
            &rendered[lo..hi]
        ))
    }

    /// `turn` (without its end) if it holds no other end of turn: a render that writes the
    /// message as two turns (the calls, then the content after a header of its own) is no one
    /// output of the model's.
    fn one_turn<'t>(&self, turn: &'t str) -> Result<&'t str, String> {
        match self.tails.iter().map(|t| t.trim()).find(|t| !t.is_empty() && turn.contains(t)) {
            Some(t) => Err(format!("the render writes the message as more than one turn (each ending in {t:?})")),
            None => Ok(turn),
        }
    }

    /// `turn` without the end of turn ([`crate::analysis::text::strip_turn_end`]).
    fn strip_tail<'t>(&self, turn: &'t str) -> &'t str {
        crate::analysis::text::strip_turn_end(turn, &self.tails)
    }

    /// The first thinking mode (on for a message with reasoning, else off first) whose prompt
    /// the rendered turn continues: its request, parser, render and output.
    fn continuation(&self, msg: &Value) -> Result<(&Request, &PreparedRequest, Turn, String), Outcome> {
        let reasons = msg.get("reasoning_content").is_some_and(|r| r.as_str().is_some_and(|r| !r.is_empty()));
        let order = if reasons { [0, 1] } else { [1, 0] };
        let mut first_miss = None;
        let names: Vec<&str> = msg["tool_calls"].as_array().into_iter().flatten().filter_map(|c| c["function"]["name"].as_str()).collect();
        for i in order {
            let mode = &self.modes[i];
            // A template may refuse one thinking mode (`Thinking cannot be disabled`).
            let rendered = match self.render_with(&mode.req, msg) {
                Ok(s) => s,
                Err(e) => {
                    first_miss.get_or_insert(Ok(format!("the template raises: {e}")));
                    continue;
                }
            };
            let g = match &mode.generated {
                Ok(g) => g,
                Err(e) => {
                    first_miss.get_or_insert(Err(e.clone()));
                    continue;
                }
            };
            let reasoning = msg.get("reasoning_content").and_then(Value::as_str).unwrap_or("");
            // A template may write a last assistant message otherwise than history (as the
            // continuation of a prompt, its calls left out): then it is judged as history.
            let drops_calls = |text: &str| {
                let at = crate::analysis::text::lcp(&g.prompt, text);
                !names.is_empty() && !names.iter().any(|n| text[at..].contains(n))
            };
            let as_last = self.output_of(&mode.req, g, &rendered, reasoning);
            if as_last.is_err() || drops_calls(&rendered) {
                let history = self.render_as_history(&mode.req, msg).filter(|h| !drops_calls(h));
                if let Some((h, output)) = history.and_then(|h| self.output_of(&mode.req, g, &h, reasoning).ok().map(|o| (h, o))) {
                    return Ok((&mode.req, g, Turn { text: h, as_history: true }, output));
                }
            }
            match as_last {
                Ok(output) => return Ok((&mode.req, g, Turn { text: rendered, as_history: false }, output)),
                Err(why) => {
                    first_miss.get_or_insert(Ok(why));
                }
            }
        }
        Err(match first_miss {
            Some(Ok(why)) => Outcome::Unrendered(why),
            Some(Err(e)) => self.fail(Feature::Content, msg.clone(), String::new(), ChatMessage::default(), None, vec![e]),
            None => Outcome::Unrendered("no thinking mode renders it".into()),
        })
    }

    fn run(&self, feature: Feature, msg: Value, chunk_sizes: &[usize]) -> Outcome {
        let (req, g, rendered, output) = match self.continuation(&msg) {
            Ok(c) => c,
            Err(Outcome::Fail(mut c)) => {
                c.feature = feature;
                return Outcome::Fail(c);
            }
            Err(o) => return o,
        };
        // A render that closes the calls' section more often than it opens it is no output of a
        // model's (DeepSeek V3 writes the section's end after each call from the second on).
        let f = &self.analysis.tools.format;
        let (open, close) = (f.section_start.trim(), f.section_end.trim());
        let markers = crate::analysis::text::has_marker(open) && crate::analysis::text::has_marker(close);
        if markers && output.matches(close).count() > output.matches(open).count() {
            return Outcome::Unrendered("the template closes the calls' section more often than it opens it".into());
        }
        let expected = match self.expected(req, feature, &msg, &rendered, &output, &g.prefill) {
            Ok(m) => m,
            Err(why) => return Outcome::Unrendered(why),
        };
        let parser = g.parser(Strictness::Lenient);
        let mut reasons = Vec::new();
        if let Some(e) = self.analysis.tools_error.as_ref().filter(|_| !expected.tool_calls.is_empty()) {
            reasons.push(format!("the template's tool calls could not be learned: {e}"));
        }
        let parsed = match parser.parse(&output, ParseMode::Complete) {
            Ok(p) => {
                if let Err(d) = compare_messages(&p.message, &expected) {
                    reasons.push(format!("parse: {}", d.detail()));
                }
                // The template's own form needs no recovery (else the analysis missed a part
                // of it, and strict parsing would reject it).
                if let Some(r) = p.recoveries.first() {
                    reasons.push(format!("the template's own output needed recovery: {} at byte {}", r.kind, r.offset));
                }
                Some(p.message)
            }
            Err(e) => {
                reasons.push(format!("parse error: {e}"));
                None
            }
        };
        // Models write a line break before they stop whatever the template renders there: the
        // same message.
        match parser.parse(&format!("{output}\n"), ParseMode::Complete) {
            Ok(p) => {
                if let Err(d) = compare_messages(&p.message, &expected) {
                    reasons.push(format!("parse with a line break after the output: {}", d.detail()));
                }
            }
            Err(e) => reasons.push(format!("parse with a line break after the output: {e}")),
        }
        for &n in chunk_sizes {
            let streamed = stream_message(&parser, &output, false, n).map_err(|e| e.detail().to_owned()).and_then(|m| {
                compare_messages(&m, &expected).map_err(|d| format!("streamed message: {}", d.detail()))?;
                match &parsed {
                    Some(p) if *p != m => Err(format!("stream ends in {m:?}, the one-shot parse is {p:?}")),
                    _ => Ok(()),
                }
            });
            if let Err(e) = streamed {
                reasons.push(format!("stream ({n}-byte chunks): {e}"));
                break;
            }
        }
        if let Err(e) = check_grammar(g, self.analysis, &output) {
            reasons.push(format!("grammar: {}", e.detail()));
        }
        if reasons.is_empty() { Outcome::Pass } else { self.fail(feature, msg, output, expected, parsed, reasons) }
    }

    fn fail(&self, feature: Feature, message: Value, output: String, expected: ChatMessage, parsed: Option<ChatMessage>, reasons: Vec<String>) -> Outcome {
        Outcome::Fail(Box::new(CaseFailure { feature, message, output, expected, parsed, reasons }))
    }

    /// The message the parse must give: each field the render carries. A field whose removal
    /// leaves the render unchanged is dropped by the template, and so is one that the render
    /// does not hold where the template cannot render the message without it (a template that
    /// reads content only as a list of parts fails on an empty string); when the feature needs
    /// it, the case is not renderable.
    fn expected(&self, req: &Request, feature: Feature, msg: &Value, turn: &Turn, output: &str, prefill: &str) -> Result<ChatMessage, String> {
        let rendered = turn.text.as_str();
        // Another message rendered the way this one was.
        let render = |m: &Value| if turn.as_history { self.render_as_history(req, m).ok_or_else(String::new) } else { self.render_with(req, m) };
        let text = |k: &str| msg.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let dropped = |field: &str, value: &str| -> bool {
            let mut m = msg.clone();
            if field == "content" {
                m["content"] = json!("");
            } else {
                cases::set_reasoning(&mut m, Value::Null);
            }
            match render(&m) {
                Ok(s) => s == rendered,
                Err(_) => !rendered.contains(value.trim()),
            }
        };
        let mut want = ChatMessage { content: text("content"), reasoning_content: text("reasoning_content"), ..ChatMessage::default() };
        if !want.content.is_empty() && dropped("content", &want.content) {
            if matches!(feature, Feature::Content | Feature::ContentWithCalls) {
                return Err("the template drops the content".into());
            }
            want.content.clear();
        }
        // Content written exactly as reasoning would be (harmony's analysis channel next to
        // calls) reads back as reasoning.
        if !want.content.is_empty() && want.reasoning_content.is_empty() {
            let mut moved = msg.clone();
            cases::set_reasoning(&mut moved, json!(want.content));
            moved["content"] = json!("");
            if render(&moved).is_ok_and(|s| s == rendered) {
                want.reasoning_content = std::mem::take(&mut want.content);
            }
        }
        // The prompt opened reasoning and the turn never closes it: the text reads back as
        // reasoning whatever the message said.
        let (start, end) = (self.analysis.reasoning.start.trim(), self.analysis.reasoning.end.trim());
        let opened = !start.is_empty() && prefill.trim_end().ends_with(start);
        if opened && !end.is_empty() && !output.contains(end) && !want.content.is_empty() {
            return Err("the generation prompt opens reasoning that the rendered turn never closes".into());
        }
        // (Reasoning spliced in after a prompt that opened the block is in the output.)
        if !want.reasoning_content.is_empty() && !output.contains(&want.reasoning_content) && dropped("reasoning", &want.reasoning_content) {
            if matches!(feature, Feature::Reasoning | Feature::ReasoningWithCalls) {
                return Err("the template drops the reasoning".into());
            }
            want.reasoning_content.clear();
        }
        // Prose the prompt opened reasoning with (`Here are my reasoning steps:`) is the
        // reasoning's first line: the parse reads the prefill as the model's.
        let prose = prefill.trim();
        if start.is_empty() && !end.is_empty() && !prose.is_empty() && !prose.ends_with(end) {
            want.reasoning_content = format!("{prose}\n{}", want.reasoning_content);
        }
        // A template may render two messages alike (reasoning that only a line break ends):
        // which one the output came from cannot be told, so the case is not judged.
        if let Some((head, last)) = want.reasoning_content.rsplit_once('\n') {
            let mut moved = msg.clone();
            cases::set_reasoning(&mut moved, json!(head));
            moved["content"] = json!(format!("{last}\n{}", want.content));
            if render(&moved).is_ok_and(|s| s == rendered) {
                return Err("ambiguous: the template renders it as it would with the reasoning's last line in the content".into());
            }
        }
        let calls = msg.get("tool_calls").and_then(Value::as_array).cloned().unwrap_or_default();
        if calls.is_empty() {
            return Ok(want);
        }
        let mut without = msg.clone();
        without.as_object_mut().map(|m| m.remove("tool_calls"));
        if render(&without).is_ok_and(|s| s == rendered) {
            return Err("the template drops tool calls".into());
        }
        for (i, c) in calls.iter().enumerate() {
            let f = &c["function"];
            let name = f["name"].as_str().unwrap_or("").to_owned();
            let times = calls.iter().filter(|d| d["function"]["name"] == f["name"]).count();
            if output.matches(name.as_str()).count() < times {
                return Err("the template drops a call of several".into());
            }
            let id = c["id"].as_str().unwrap_or("");
            let id = if output.contains(id) { id.to_owned() } else { String::new() };
            if feature == Feature::CallIds && id.is_empty() {
                return Err("the template writes no call ids".into());
            }
            let mut arguments = f["arguments"].as_str().unwrap_or("{}").to_owned();
            // A template that skips null members (renders the call alike without them) cannot
            // give them back.
            if let Ok(args) = serde_json::from_str::<Value>(&arguments)
                && let Some(kept) = without_null_members(&args)
            {
                let kept = kept.to_string();
                let mut m = msg.clone();
                m["tool_calls"][i]["function"]["arguments"] = json!(kept);
                if render(&m).is_ok_and(|s| s == rendered) {
                    arguments = kept;
                }
            }
            want.tool_calls.push(ChatToolCall { id, name, arguments });
        }
        Ok(want)
    }
}

/// Where the format writes a call's name inside its id (Kimi's `functions.NAME:0`, templates
/// that render only the id), each call of a case gets an id spelled so, its index the call's
/// place, as the model writes them and a client sends them back: a random id would hide the
/// call from the render.
fn ids_naming_calls(analysis: &TemplateAnalysis, msg: &mut Value) {
    let t = &analysis.tools;
    let (prefix, suffix) = (t.function.name_prefix.trim(), t.function.name_suffix.trim());
    if !t.function.names_in_ids() || prefix.is_empty() || t.call_id.pos != crate::format::CallIdPosition::None {
        return;
    }
    let Some(calls) = msg.get_mut("tool_calls").and_then(Value::as_array_mut) else { return };
    // The suffix's digits are the index.
    let (head, rest) = suffix.split_at(suffix.find(|c: char| c.is_ascii_digit()).unwrap_or(suffix.len()));
    let tail = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    for (i, call) in calls.iter_mut().enumerate() {
        let name = call["function"]["name"].as_str().unwrap_or("").to_owned();
        let index = if rest.is_empty() { String::new() } else { i.to_string() };
        call["id"] = json!(format!("{prefix}{name}{head}{index}{tail}"));
    }
}

/// `v` without the object members whose value is null, at any depth; `None` if it has none.
fn without_null_members(v: &Value) -> Option<Value> {
    fn strip(v: &Value, found: &mut bool) -> Value {
        match v {
            Value::Object(m) => {
                *found |= m.values().any(Value::is_null);
                Value::Object(m.iter().filter(|(_, x)| !x.is_null()).map(|(k, x)| (k.clone(), strip(x, found))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(|x| strip(x, found)).collect()),
            _ => v.clone(),
        }
    }
    let mut found = false;
    let stripped = strip(v, &mut found);
    found.then_some(stripped)
}
