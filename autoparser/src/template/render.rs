//! What analysis and generation need of a template: rendering a context.

use crate::error::Error;

/// Something that renders a chat-template context (the Hugging Face kwargs: `messages`,
/// `tools`, `add_generation_prompt`, ...). [`ChatTemplate`](super::ChatTemplate) is one; a test
/// or another engine can be another.
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
