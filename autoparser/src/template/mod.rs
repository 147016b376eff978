//! Chat templates rendered exactly as Hugging Face `transformers.apply_chat_template` does.
//!
//! A [`ChatTemplate`] is compiled once and rendered many times. Sources are a `.jinja` file, a
//! `tokenizer_config.json` or a GGUF file's metadata ([`load`]); the render context is either a
//! raw JSON object ([`ChatTemplate::render`], the HF kwargs) or an OpenAI-style
//! [`Request`](crate::Request) ([`ChatTemplate::apply`]). [`Capabilities`] are detected by probing renders.
//!
//! ```
//! use autoparser::template::ChatTemplate;
//! use autoparser::Request;
//!
//! let tmpl = ChatTemplate::from_source(
//!     "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}\
//!      {% if add_generation_prompt %}<|assistant|>{% endif %}",
//!     "<s>", "</s>",
//! ).unwrap();
//! let req: Request = serde_json::from_value(serde_json::json!({
//!     "messages": [{"role": "user", "content": "Hi"}],
//!     "add_generation_prompt": true,
//! })).unwrap();
//! let out = tmpl.apply(&req).unwrap();
//! assert_eq!(out.prompt, "<|user|>Hi\n<|assistant|>");
//! assert_eq!(out.generation_prompt, "<|assistant|>");
//! ```

mod caps;
mod context;
mod env;
mod error;
mod gguf;
mod pyfmt;
mod render;
mod scan;
mod source;

use std::io;
use std::sync::Arc;

pub use caps::Capabilities;
pub use context::{ReasoningTags, RenderedPrompt};
pub(crate) use context::{empty_content_as_null, object_arguments};
pub use env::Limits;
pub use gguf::{GgufMetadata, GgufValue, read_gguf_metadata};
pub use render::Budget;
pub use render::Render;
pub(crate) use render::{Lenient, Memo, Metered};
pub use source::{NamedTemplate, TemplateSource, load, load_named};

use minijinja::{Environment, Value};

use crate::error::{Error, ErrorKind, Limit};

const TEMPLATE_NAME: &str = "chat_template";

/// The fuel a metered render starts with; each time it runs out, the render starts over with
/// four times as much, up to [`Limits::fuel`]. A failed render reports no fuel used, so it is
/// charged what it was given: this keeps that charge within four times its real cost (plus
/// this much), where charging the full fuel would spend a budget on a few refusals. Most renders
/// of real templates need less than this and run once.
const FIRST_FUEL: u64 = 1 << 12;

/// A compiled chat template with its special tokens. Cheap to clone and to render many times.
///
/// ```
/// use autoparser::template::ChatTemplate;
/// let t = ChatTemplate::from_source("{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}", "<s>", "</s>").unwrap();
/// // The Hugging Face kwargs as they are.
/// let prompt = t.render(&serde_json::json!({"messages": [{"role": "user", "content": "Hi"}]})).unwrap();
/// assert_eq!(prompt, "<s>user: Hi\n");
/// assert!(t.variables(false).contains("messages"));
/// ```
#[derive(Clone)]
pub struct ChatTemplate {
    /// The compiled template in environments of increasing fuel, the last with [`Limits::fuel`].
    envs: Arc<[(u64, Environment<'static>)]>,
    source: Arc<str>,
    bos_token: Arc<str>,
    eos_token: Arc<str>,
    limits: Limits,
    caps: Arc<std::sync::OnceLock<Capabilities>>,
    final_reasoning: Arc<std::sync::OnceLock<bool>>,
    reasoning_tags: Option<Arc<ReasoningTags>>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate").field("source_len", &self.source.len()).field("bos_token", &self.bos_token).field("eos_token", &self.eos_token).finish()
    }
}

impl ChatTemplate {
    /// Compile a template source with default [`Limits`].
    ///
    /// ```
    /// use autoparser::{template::ChatTemplate, ErrorKind};
    /// let t = ChatTemplate::from_source("{{ bos_token }}{{ messages[0].content }}", "<s>", "</s>").unwrap();
    /// assert_eq!((t.bos_token(), t.eos_token()), ("<s>", "</s>"));
    /// let err = ChatTemplate::from_source("{% for m in messages %}", "", "").unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::TemplateSyntax);
    /// ```
    pub fn from_source(source: &str, bos_token: &str, eos_token: &str) -> Result<ChatTemplate, Error> {
        Self::with_limits(source, bos_token, eos_token, Limits::default())
    }

    /// Compile a template source with explicit resource limits for rendering.
    ///
    /// A source nesting deeper than [`Limits::expression_depth`] is refused before compiling.
    ///
    /// ```
    /// use autoparser::template::{ChatTemplate, Limits};
    /// use autoparser::Limit;
    /// let deep = format!("{{{{ {} }}}}", ["1"; 30].join(" + ")); // {{ 1 + 1 + ... }}
    /// let limits = Limits { expression_depth: 10, ..Limits::default() };
    /// let err = ChatTemplate::with_limits(&deep, "", "", limits).unwrap_err();
    /// assert_eq!((err.limit(), err.line()), (Some(Limit::ExpressionDepth), Some(1)));
    /// assert!(ChatTemplate::with_limits(&deep, "", "", Limits::default()).is_ok());
    /// ```
    pub fn with_limits(source: &str, bos_token: &str, eos_token: &str, limits: Limits) -> Result<ChatTemplate, Error> {
        let mut env = env::build_env(&limits);
        let prepared = env::strip_generation_tags(source).into_owned();
        let deepest = scan::deepest_tag(&prepared);
        if deepest.depth > limits.expression_depth {
            let detail = format!("{} ({} levels in one tag, at most {})", Limit::ExpressionDepth, deepest.depth, limits.expression_depth);
            return Err(Error::limit_exceeded(Limit::ExpressionDepth, Some(deepest.line)).with_detail(detail));
        }
        env.add_template_owned(TEMPLATE_NAME, prepared).map_err(|e| error::from_minijinja(e, false))?;
        let mut envs = Vec::new();
        let mut fuel = FIRST_FUEL;
        while fuel < limits.fuel {
            let mut lower = env.clone();
            lower.set_fuel(Some(fuel));
            envs.push((fuel, lower));
            fuel = fuel.saturating_mul(4);
        }
        envs.push((limits.fuel, env));
        Ok(ChatTemplate {
            envs: envs.into(),
            source: source.into(),
            bos_token: bos_token.into(),
            eos_token: eos_token.into(),
            limits,
            caps: Arc::new(std::sync::OnceLock::new()),
            final_reasoning: Arc::new(std::sync::OnceLock::new()),
            reasoning_tags: crate::registry::reasoning_tags(source).map(|(start, end)| Arc::new(ReasoningTags { start: start.into(), end: end.into() })),
        })
    }

    /// Load the default template of a `.jinja`, `tokenizer_config.json` or `.gguf` file.
    ///
    /// Use [`load`] to see every named variant.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let path = std::env::temp_dir().join(format!("autoparser-template-{}.jinja", std::process::id()));
    /// std::fs::write(&path, "{% for m in messages %}{{ m.content }}{% endfor %}")?;
    /// let t = autoparser::template::ChatTemplate::load(&path)?;
    /// # std::fs::remove_file(&path)?;
    /// assert_eq!(t.render(&serde_json::json!({"messages": [{"role": "user", "content": "Hi"}]}))?, "Hi");
    /// # Ok(())
    /// # }
    /// ```
    pub fn load(path: &std::path::Path) -> Result<ChatTemplate, Error> {
        let src = load(path)?;
        src.default_template()?.compile(&src.bos_token, &src.eos_token)
    }

    /// The original template text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The BOS token passed to the template as `bos_token`.
    pub fn bos_token(&self) -> &str {
        &self.bos_token
    }

    /// The EOS token passed to the template as `eos_token`.
    pub fn eos_token(&self) -> &str {
        &self.eos_token
    }

    /// The rendering limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Names of the variables the template reads from its context (e.g. `tools`,
    /// `enable_thinking`, `reasoning_effort`), including nested attribute paths when
    /// `nested` is true.
    pub fn variables(&self, nested: bool) -> std::collections::BTreeSet<String> {
        match self.full_env().get_template(TEMPLATE_NAME) {
            Ok(t) => t.undeclared_variables(nested).into_iter().collect(),
            Err(_) => Default::default(),
        }
    }

    /// Render with a raw context object: exactly the kwargs HF passes to the template
    /// (`messages`, `tools`, `documents`, `add_generation_prompt`, extra variables).
    ///
    /// `bos_token`/`eos_token` default to this template's tokens when the context omits them.
    /// A numeric `now` key (Unix seconds, UTC) is the clock `strftime_now` reads; without it the
    /// clock is the Unix epoch (rendering never reads the system clock).
    ///
    /// ```
    /// use autoparser::template::ChatTemplate;
    /// let t = ChatTemplate::from_source("{{ bos_token }}Today: {{ strftime_now('%Y-%m-%d') }}{{ extra }}", "<s>", "").unwrap();
    /// let ctx = serde_json::json!({"now": 1_700_000_000, "extra": "!"});
    /// assert_eq!(t.render(&ctx).unwrap(), "<s>Today: 2023-11-14!");
    /// ```
    pub fn render(&self, ctx: &serde_json::Value) -> Result<String, Error> {
        self.render_value(self.context(ctx)?)
    }

    /// Like [`render`](Self::render), charging the fuel used to `budget`, and refused once it is
    /// exhausted ([`Limit::TotalFuel`]).
    pub fn render_metered(&self, ctx: &serde_json::Value, budget: &Budget) -> Result<String, Error> {
        let ctx = self.context(ctx)?;
        for (i, (fuel, env)) in self.envs.iter().enumerate() {
            // Past the first attempt, never more fuel than the budget has left.
            if budget.exhausted() || (i > 0 && *fuel > budget.left()) {
                return Err(budget.refuse());
            }
            let (result, used) = render_in(env, ctx.clone(), self.limits.output_bytes);
            budget.charge(used.unwrap_or(*fuel));
            // Up to the point a render runs out of fuel it does what it does with more fuel:
            // only running out is worth a retry.
            let out_of_fuel = matches!(&result, Err(e) if e.limit() == Some(Limit::Fuel));
            if !out_of_fuel || i + 1 == self.envs.len() {
                return result;
            }
        }
        unreachable!("a template has at least one environment")
    }

    /// The context of [`render`](Self::render): `ctx` with the special tokens and the clock.
    fn context(&self, ctx: &serde_json::Value) -> Result<Value, Error> {
        let mut map = match ctx {
            serde_json::Value::Object(m) => m.clone(),
            serde_json::Value::Null => serde_json::Map::new(),
            _ => return Err(Error::new(ErrorKind::InvalidRequest, "render context must be a JSON object")),
        };
        map.entry("bos_token").or_insert_with(|| self.bos_token.to_string().into());
        map.entry("eos_token").or_insert_with(|| self.eos_token.to_string().into());
        let now = map.get("now").and_then(|v| v.as_i64()).unwrap_or(0);
        map.insert(env::NOW_KEY.into(), now.into());
        Ok(Value::from(minijinja::value::Serde(&map)))
    }

    /// Render with a prepared minijinja context value (no defaults added).
    pub fn render_value(&self, ctx: Value) -> Result<String, Error> {
        render_in(self.full_env(), ctx, self.limits.output_bytes).0
    }

    fn full_env(&self) -> &Environment<'static> {
        &self.envs[self.envs.len() - 1].1
    }

    /// Render an OpenAI-style request: the prompt, and the generation prompt (what the
    /// template appends for the assistant turn the model continues).
    ///
    /// ```
    /// use autoparser::{template::ChatTemplate, Request};
    /// let t = ChatTemplate::from_source("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}\
    ///                                    {% if add_generation_prompt %}<|assistant|>{% endif %}", "", "").unwrap();
    /// let request = Request::from_json(&serde_json::json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]})).unwrap();
    /// // Typed content parts are rendered as their text.
    /// assert_eq!(t.apply(&request).unwrap().prompt, "<|user|>Hi<|assistant|>");
    /// ```
    pub fn apply(&self, req: &crate::Request) -> Result<RenderedPrompt, Error> {
        context::apply(self, req)
    }

    /// Capabilities detected by probing renders (computed once, then cached).
    pub fn capabilities(&self) -> Capabilities {
        *self.caps.get_or_init(|| caps::detect(self))
    }

    /// The tags the model wraps reasoning in, used when continuing a final message whose
    /// reasoning the template itself does not render. Known for the families the registry
    /// knows; set it with [`with_reasoning_tags`](Self::with_reasoning_tags).
    pub fn reasoning_tags(&self) -> Option<&ReasoningTags> {
        self.reasoning_tags.as_deref()
    }

    /// Replace the reasoning tags (e.g. with the ones template analysis found).
    pub fn with_reasoning_tags(mut self, tags: Option<ReasoningTags>) -> ChatTemplate {
        self.reasoning_tags = tags.map(Arc::new);
        self
    }

    /// Whether the template renders the `reasoning_content` of a final assistant message
    /// (with thinking enabled).
    pub fn renders_final_reasoning(&self) -> bool {
        *self.final_reasoning.get_or_init(|| caps::renders_final_reasoning(self))
    }
}

/// Analysis and generation render through this trait.
impl Render for ChatTemplate {
    fn render(&self, ctx: &serde_json::Value) -> Result<String, Error> {
        ChatTemplate::render(self, ctx)
    }
    fn free_variables(&self) -> Vec<String> {
        self.variables(false).into_iter().collect()
    }
    fn special_tokens(&self) -> (String, String) {
        (self.bos_token.to_string(), self.eos_token.to_string())
    }
    fn budget(&self) -> Option<Budget> {
        Some(Budget::new(self.limits.total_fuel))
    }
    fn render_metered(&self, ctx: &serde_json::Value, budget: &Budget) -> Result<String, Error> {
        ChatTemplate::render_metered(self, ctx, budget)
    }
}

/// Renders the template of `env`: the output, and the fuel used when it succeeded.
fn render_in(env: &Environment<'static>, ctx: Value, output_bytes: usize) -> (Result<String, Error>, Option<u64>) {
    let tmpl = match env.get_template(TEMPLATE_NAME) {
        Ok(t) => t,
        Err(e) => return (Err(error::from_minijinja(e, false)), None),
    };
    let mut w = LimitedWriter { buf: Vec::new(), limit: output_bytes, overflow: false };
    match tmpl.render_captured_to(ctx, &mut w) {
        Ok(captured) => {
            let used = captured.state().fuel_levels().map(|(consumed, _)| consumed);
            (String::from_utf8(w.buf).map_err(|_| Error::new(ErrorKind::TemplateRender, "output is not UTF-8")), used)
        }
        Err(e) => (Err(error::from_minijinja(e, w.overflow)), None),
    }
}

struct LimitedWriter {
    buf: Vec<u8>,
    limit: usize,
    overflow: bool,
}

impl io::Write for LimitedWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len() + data.len() > self.limit {
            self.overflow = true;
            return Err(io::Error::other("output size limit exceeded"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
