//! Templates of a run, loaded once and analyzed once (lazily: only parse cases need analysis).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use autoparser::analysis::analyze;
use autoparser::format::TemplateAnalysis;
use autoparser::template::ChatTemplate;

/// Finds the file of template `name` in `dir`: `NAME.jinja`, `NAME.json` (a
/// `tokenizer_config.json`), `NAME.gguf`, or a directory `NAME/` holding
/// `tokenizer_config.json` or `chat_template.jinja`.
pub fn find_template(dir: &Path, name: &str) -> Option<PathBuf> {
    // A name is a file stem, never a path: refuse anything that could leave `dir`.
    if name.is_empty() || name.contains(['/', '\\']) || name == "." || name == ".." {
        return None;
    }
    let candidates = [
        dir.join(format!("{name}.jinja")),
        dir.join(format!("{name}.json")),
        dir.join(format!("{name}.gguf")),
        dir.join(name).join("tokenizer_config.json"),
        dir.join(name).join("chat_template.jinja"),
    ];
    candidates.into_iter().find(|p| p.is_file())
}

/// A loaded template and its analysis, computed on first use.
#[derive(Debug)]
pub struct LoadedTemplate {
    /// The compiled template, or why it did not load.
    pub template: Result<ChatTemplate, String>,
    analysis: OnceLock<(Result<Arc<TemplateAnalysis>, String>, Duration)>,
}

impl LoadedTemplate {
    fn new(template: Result<ChatTemplate, String>) -> LoadedTemplate {
        LoadedTemplate { template, analysis: OnceLock::new() }
    }

    /// The analysis (computed once) and how long it took.
    pub fn analysis(&self) -> (Result<Arc<TemplateAnalysis>, String>, Duration) {
        self.analysis
            .get_or_init(|| match &self.template {
                Ok(t) => {
                    let t0 = Instant::now();
                    let a = analyze(t).map(Arc::new).map_err(|e| format!("analysis failed: {e}"));
                    (a, t0.elapsed())
                }
                Err(e) => (Err(e.clone()), Duration::ZERO),
            })
            .clone()
    }

    /// Whether the analysis has been computed already.
    pub fn is_analyzed(&self) -> bool {
        self.analysis.get().is_some()
    }
}

/// Templates by name (from a directory) or by inline source, each loaded at most once.
#[derive(Debug)]
pub struct TemplateStore {
    dir: PathBuf,
    by_name: HashMap<String, Arc<LoadedTemplate>>,
    by_source: HashMap<String, Arc<LoadedTemplate>>,
}

impl TemplateStore {
    /// A store reading templates from `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> TemplateStore {
        TemplateStore { dir: dir.into(), by_name: HashMap::new(), by_source: HashMap::new() }
    }

    /// The template named `name` (see [`find_template`]).
    pub fn named(&mut self, name: &str) -> Arc<LoadedTemplate> {
        if let Some(t) = self.by_name.get(name) {
            return t.clone();
        }
        let template = match find_template(&self.dir, name) {
            Some(path) => ChatTemplate::load(&path).map_err(|e| format!("template {}: {e}", path.display())),
            None => Err(format!("template {name:?} not found in {}", self.dir.display())),
        };
        let t = Arc::new(LoadedTemplate::new(template));
        self.by_name.insert(name.to_owned(), t.clone());
        t
    }

    /// An inline template (a case's `template_source`), with empty BOS/EOS tokens.
    pub fn inline(&mut self, source: &str) -> Arc<LoadedTemplate> {
        if let Some(t) = self.by_source.get(source) {
            return t.clone();
        }
        let template = ChatTemplate::from_source(source, "", "").map_err(|e| format!("inline template: {e}"));
        let t = Arc::new(LoadedTemplate::new(template));
        self.by_source.insert(source.to_owned(), t.clone());
        t
    }

    /// Analysis times of every analyzed template, by name (inline templates as `<inline N>`).
    pub fn analysis_times(&self) -> Vec<(String, Duration)> {
        let mut v: Vec<(String, Duration)> = self.by_name.iter().filter(|(_, t)| t.is_analyzed()).map(|(n, t)| (n.clone(), t.analysis().1)).collect();
        v.extend(self.by_source.values().filter(|t| t.is_analyzed()).enumerate().map(|(i, t)| (format!("<inline {i}>"), t.analysis().1)));
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_found_in_every_layout_and_loaded_once() {
        let dir = std::env::temp_dir().join(format!("autoparser-store-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("b")).unwrap();
        std::fs::write(dir.join("a.jinja"), "{{ messages[0].content }}").unwrap();
        let cfg = serde_json::json!({"chat_template": "{{ bos_token }}{{ messages[0].content }}", "bos_token": "<s>"});
        std::fs::write(dir.join("b").join("tokenizer_config.json"), cfg.to_string()).unwrap();
        assert_eq!(find_template(&dir, "a"), Some(dir.join("a.jinja")));
        assert_eq!(find_template(&dir, "b"), Some(dir.join("b").join("tokenizer_config.json")));
        assert_eq!(find_template(&dir, "../a"), None);
        assert_eq!(find_template(&dir, "c"), None);
        let mut store = TemplateStore::new(&dir);
        let b = store.named("b");
        let ctx = serde_json::json!({"messages": [{"role": "user", "content": "Hi"}]});
        assert_eq!(b.template.as_ref().unwrap().render(&ctx).unwrap(), "<s>Hi");
        assert!(Arc::ptr_eq(&b, &store.named("b")));
        assert!(store.named("c").template.is_err());
        let _ = std::fs::remove_dir_all(dir);
    }
}
