//! Differential template analysis: render variants of a conversation, compare them, and learn
//! the markers around reasoning, content and tool calls.

pub mod diff;
pub mod probe;
pub mod segment;
pub mod text;
pub mod tools;
pub mod types;

#[cfg(test)]
pub(crate) mod shim;

pub use types::*;

/// Renders a template context (`messages`, `tools`, `add_generation_prompt`, `enable_thinking`,
/// `bos_token`, ...) into text. The analysis depends only on this trait.
pub trait Render {
    /// Renders `ctx`; `Err` carries the template's error message.
    fn render(&self, ctx: &serde_json::Value) -> Result<String, String>;
}

#[cfg(test)]
pub(crate) mod test_util {
    use super::shim::ShimTemplate;

    pub fn templates_dir() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/templates")
    }

    pub fn all_templates() -> Vec<(String, String)> {
        let mut v: Vec<_> = std::fs::read_dir(templates_dir())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
            .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
            .collect();
        v.sort();
        v
    }

    pub fn shim(src: &str) -> ShimTemplate {
        ShimTemplate::new(src).unwrap()
    }
}

#[cfg(test)]
mod dump {
    use super::probe::*;
    use super::test_util::*;

    #[test]
    #[ignore]
    fn dump_renders() {
        let only = std::env::var("TPL").unwrap_or_default();
        for (name, src) in all_templates() {
            if !name.contains(&only) {
                continue;
            }
            println!("===== {name}");
            let t = match super::shim::ShimTemplate::new(&src) {
                Ok(t) => t,
                Err(e) => {
                    println!("COMPILE ERR {e}");
                    continue;
                }
            };
            let p = Probe::new(&t);
            let show = |label: &str, r: Result<String, String>| {
                match r {
                    Ok(s) => println!("--- {label}:\n{}", s.chars().rev().take(700).collect::<Vec<_>>().into_iter().rev().collect::<String>()),
                    Err(e) => println!("--- {label}: ERR {e}"),
                }
            };
            show("prompt think=true", p.render_prompt(Some(true)));
            show("prompt think=false", p.render_prompt(Some(false)));
            show("content+reasoning", p.render_asst(&Asst::content(needle::CONTENT).with_reasoning(needle::REASONING)));
            show("two calls", p.render_asst(&Asst::calls(vec![Call::first(), Call::second()])));
        }
    }
}
