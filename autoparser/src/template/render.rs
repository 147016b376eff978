//! What analysis and generation need of a template: rendering a context.

use std::cell::Cell;

use crate::error::{Error, Limit};

/// Something that renders a chat-template context (the Hugging Face kwargs: `messages`,
/// `tools`, `add_generation_prompt`, ...). [`ChatTemplate`](super::ChatTemplate) is one; a test
/// or another engine can be another.
///
/// ```
/// use std::cell::Cell;
/// use autoparser::template::{ChatTemplate, Render};
/// // A renderer wrapping a template, counting the renders analysis makes.
/// struct Counted(ChatTemplate, Cell<usize>);
/// impl Render for Counted {
///     fn render(&self, ctx: &serde_json::Value) -> Result<String, autoparser::Error> {
///         self.1.set(self.1.get() + 1);
///         self.0.render(ctx)
///     }
/// }
/// let src = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
/// let counted = Counted(ChatTemplate::from_source(src, "", "").unwrap(), Cell::new(0));
/// let analysis = autoparser::analysis::analyze(&counted).unwrap();
/// assert_eq!(analysis.end_of_turn, "<|end|>");
/// assert!(counted.1.get() > 10);
/// ```
pub trait Render {
    /// Renders `ctx`.
    fn render(&self, ctx: &serde_json::Value) -> Result<String, Error>;

    /// Variables the template reads (a hint for retrying renders that fail on an undefined
    /// variable when the error does not name it). Default: none known.
    fn free_variables(&self) -> Vec<String> {
        Vec::new()
    }

    /// The BOS and EOS tokens prompts are rendered with (`bos_token`, `eos_token`).
    /// Default: none (empty).
    fn special_tokens(&self) -> (String, String) {
        (String::new(), String::new())
    }

    /// A fresh budget for the renders of one analysis or one prepared request, or `None` when
    /// renders are not metered (the default).
    fn budget(&self) -> Option<Budget> {
        None
    }

    /// Renders `ctx`, charging the work to `budget`. Default: [`render`](Render::render),
    /// charging nothing.
    fn render_metered(&self, ctx: &serde_json::Value, budget: &Budget) -> Result<String, Error> {
        let _ = budget;
        self.render(ctx)
    }
}

/// Fuel shared by many renders (one analysis, one prepared request): each render is bounded by
/// its own fuel, and this bounds how many of them a template can make expensive.
///
/// ```
/// use autoparser::template::{Budget, ChatTemplate};
/// use autoparser::Limit;
/// let t = ChatTemplate::from_source("{% for i in range(100) %}{{ i }}{% endfor %}", "", "").unwrap();
/// let budget = Budget::new(1_000_000);
/// t.render_metered(&serde_json::json!({}), &budget).unwrap();
/// assert!(budget.spent() > 0 && budget.left() < 1_000_000);
/// let small = Budget::new(10);
/// t.render_metered(&serde_json::json!({}), &small).unwrap(); // spends it all
/// assert!(small.exhausted());
/// assert_eq!(t.render_metered(&serde_json::json!({}), &small).unwrap_err().limit(), Some(Limit::TotalFuel));
/// ```
#[derive(Debug)]
pub struct Budget {
    total: u64,
    spent: Cell<u64>,
    refused: Cell<bool>,
}

impl Budget {
    /// A budget of `total` fuel.
    pub fn new(total: u64) -> Budget {
        Budget { total, spent: Cell::new(0), refused: Cell::new(false) }
    }

    /// Records `fuel` spent.
    pub fn charge(&self, fuel: u64) {
        self.spent.set(self.spent.get().saturating_add(fuel));
    }

    /// The fuel spent so far.
    pub fn spent(&self) -> u64 {
        self.spent.get()
    }

    /// The fuel not spent yet.
    pub fn left(&self) -> u64 {
        self.total.saturating_sub(self.spent.get())
    }

    /// More than the total was spent, or a render was refused the fuel it needed: no further
    /// render may start.
    pub fn exhausted(&self) -> bool {
        self.refused.get() || self.spent.get() > self.total
    }

    /// Refuses a render: the budget is exhausted from now on, and this is the error.
    pub fn refuse(&self) -> Error {
        self.refused.set(true);
        Error::limit_exceeded(Limit::TotalFuel, None)
    }
}

/// A renderer charging every render to one budget (from [`Render::budget`]); once it is spent,
/// renders fail without running. Whatever the phases made of those failures, [`finish`](Self::finish)
/// reports the budget.
pub(crate) struct Metered<'r> {
    inner: &'r dyn Render,
    budget: Option<Budget>,
}

impl<'r> Metered<'r> {
    pub(crate) fn new(inner: &'r dyn Render) -> Metered<'r> {
        Metered { inner, budget: inner.budget() }
    }

    /// `result`, or the budget's error when it ran out on the way (with the error the caller
    /// made of that, if any, as its source).
    pub(crate) fn finish<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        match (&self.budget, result) {
            (Some(b), Err(e)) if b.exhausted() => Err(b.refuse().with_source(e)),
            (Some(b), Ok(_)) if b.exhausted() => Err(b.refuse()),
            (_, result) => result,
        }
    }
}

impl Render for Metered<'_> {
    fn render(&self, ctx: &serde_json::Value) -> Result<String, Error> {
        match &self.budget {
            None => self.inner.render(ctx),
            Some(b) if b.exhausted() => Err(b.refuse()),
            Some(b) => self.inner.render_metered(ctx, b),
        }
    }

    fn free_variables(&self) -> Vec<String> {
        self.inner.free_variables()
    }

    fn special_tokens(&self) -> (String, String) {
        self.inner.special_tokens()
    }
}

/// A renderer that renders each context once: the analysis's phases render many of the same
/// probes (the basic conversation, a call, content), and a render is its costliest step.
pub(crate) struct Memo<'r> {
    inner: &'r dyn Render,
    seen: std::cell::RefCell<std::collections::HashMap<String, Result<String, Error>>>,
}

impl<'r> Memo<'r> {
    pub(crate) fn new(inner: &'r dyn Render) -> Memo<'r> {
        Memo { inner, seen: Default::default() }
    }
}

impl Render for Memo<'_> {
    fn render(&self, ctx: &serde_json::Value) -> Result<String, Error> {
        let key = ctx.to_string();
        if let Some(done) = self.seen.borrow().get(&key) {
            return done.clone();
        }
        let done = self.inner.render(ctx);
        self.seen.borrow_mut().insert(key, done.clone());
        done
    }

    fn free_variables(&self) -> Vec<String> {
        self.inner.free_variables()
    }

    fn special_tokens(&self) -> (String, String) {
        self.inner.special_tokens()
    }
}

/// A renderer that retries a render failing on an undefined variable (`functions`,
/// `datetime`) with that variable set to an empty string: some templates expect extra
/// variables that serving stacks pass.
pub(crate) struct Lenient<'r>(pub &'r dyn Render);

/// Context keys the analysis and generation always decide themselves.
const KNOWN_KEYS: &[&str] = &[
    "messages",
    "tools",
    "add_generation_prompt",
    "bos_token",
    "eos_token",
    "enable_thinking",
    "thinking",
    "documents",
    "now",
    "tool_choice",
    "parallel_tool_calls",
    "continue_final_message",
    // engine globals and functions
    "namespace",
    "range",
    "dict",
    "lipsum",
    "cycler",
    "joiner",
    "raise_exception",
    "strftime_now",
    "loop",
    "true",
    "false",
    "none",
    "True",
    "False",
    "None",
];

impl Render for Lenient<'_> {
    fn render(&self, ctx: &serde_json::Value) -> Result<String, Error> {
        let mut ctx = ctx.clone();
        let mut last = self.0.render(&ctx);
        for attempt in 0..4 {
            let Err(e) = &last else { break };
            let e = e.to_string();
            if !e.contains("undefined") || !ctx.is_object() {
                break;
            }
            match e.split('`').nth(1).filter(|_| e.contains("is undefined")) {
                Some(name) if ctx.get(name).is_none() => ctx[name] = serde_json::Value::String(String::new()),
                // Unnamed (release builds of the engine): fill every unknown free variable once.
                _ if attempt == 0 => {
                    let mut filled = false;
                    for v in self.0.free_variables() {
                        if !KNOWN_KEYS.contains(&v.as_str()) && ctx.get(&v).is_none() {
                            ctx[v.as_str()] = serde_json::Value::String(String::new());
                            filled = true;
                        }
                    }
                    if !filled {
                        break;
                    }
                }
                _ => break,
            }
            last = self.0.render(&ctx);
        }
        last
    }

    fn free_variables(&self) -> Vec<String> {
        self.0.free_variables()
    }

    fn special_tokens(&self) -> (String, String) {
        self.0.special_tokens()
    }
}
