//! Where the corpus tests find the shared test data (`corpus/`, `roundtrip/`, `templates/`):
//! `CHAT_PEG_SHARED` if set (relative to the workspace root), else `../shared` beside the workspace. The data is read in place,
//! never copied into the repository, so a clone without it still runs every other test: a corpus
//! test then returns early, and its test binary says once on stderr which tests it skipped and
//! how to point them at the data. `CHAT_PEG_REQUIRE_SHARED=1` (set by `.ci/run`) turns a missing
//! folder into a failure, so CI cannot pass by skipping.
//!
//! One file for every test crate of the workspace (included with `#[path]`), so there is one way
//! to find the data. Not every crate calls every function.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Once;

/// Names the shared folder.
pub const VAR: &str = "CHAT_PEG_SHARED";
/// `1`: a missing shared folder fails the corpus tests instead of skipping them.
pub const REQUIRE_VAR: &str = "CHAT_PEG_REQUIRE_SHARED";

/// The shared test data, found.
#[derive(Debug, Clone)]
pub struct Shared {
    dir: PathBuf,
}

impl Shared {
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn corpus(&self) -> PathBuf {
        self.dir.join("corpus")
    }
    pub fn roundtrip(&self) -> PathBuf {
        self.dir.join("roundtrip")
    }
    pub fn templates(&self) -> PathBuf {
        self.dir.join("templates")
    }
    /// `templates/NAME.jinja`.
    pub fn template(&self, name: &str) -> PathBuf {
        self.templates().join(format!("{name}.jinja"))
    }
}

/// The workspace root: the nearest folder above the including crate with a `[workspace]`
/// manifest (the root package is the workspace's, the others sit one level below).
fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .ancestors()
        .find(|d| std::fs::read_to_string(d.join("Cargo.toml")).is_ok_and(|t| t.lines().any(|l| l.trim() == "[workspace]")))
        .unwrap_or(manifest_dir)
        .to_path_buf()
}

/// Where the data is looked for, and how that place was chosen (for messages).
fn location() -> (PathBuf, String) {
    match std::env::var_os(VAR).filter(|v| !v.is_empty()) {
        Some(dir) => {
            let how = format!("{VAR}={}", dir.to_string_lossy());
            // Tests run in their own package's folder: a relative path means the same folder
            // for all of them only when read from one place, the workspace root.
            (workspace_root().join(dir), how)
        }
        None => {
            let root = workspace_root();
            // `<root>/../shared`, spelled without `..` when the root has a parent.
            let dir = root.parent().map_or_else(|| root.join("../shared"), |p| p.join("shared"));
            let how = format!("{} (../shared beside the workspace)", dir.display());
            (dir, how)
        }
    }
}

/// What is wrong with `dir` as the shared folder, if anything: every corpus test reads one of
/// these three, so a folder without them is not the data.
fn problem(dir: &Path) -> Option<String> {
    if !dir.is_dir() {
        return Some("not found".into());
    }
    let missing: Vec<&str> = ["corpus", "roundtrip", "templates"].into_iter().filter(|s| !dir.join(s).is_dir()).collect();
    (!missing.is_empty()).then(|| format!("has no {}", missing.join("/, no ") + "/"))
}

/// The shared data for the calling corpus test. Missing: a failure under
/// `CHAT_PEG_REQUIRE_SHARED=1`, else `None` (the caller returns, or skips its part that needs the
/// data) and, once per test binary, a notice on stderr naming `corpus_tests`.
///
/// `corpus_tests` names every test of the binary that calls this (optionally followed by
/// ` (what it skips)` when only part of the test needs the data); a test missing from it fails,
/// so the notice stays complete.
pub fn shared(corpus_tests: &[&str]) -> Option<Shared> {
    shared_for("corpus tests", corpus_tests)
}

/// [`shared`] for other readers of the data (`what`: "benchmark groups"), named in the notice.
pub fn shared_for(what: &str, corpus_tests: &[&str]) -> Option<Shared> {
    check_listed(corpus_tests);
    let (dir, how) = location();
    let Some(problem) = problem(&dir) else { return Some(Shared { dir }) };
    if std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1") {
        panic!("the shared test data is required ({REQUIRE_VAR}=1) but {how} {problem}; set {VAR}=/path/to/shared");
    }
    static NOTICE: Once = Once::new();
    NOTICE.call_once(|| {
        let tests = listing(corpus_tests);
        // Straight to stderr: the test harness captures `eprintln!` of passing tests.
        let _ = writeln!(std::io::stderr(), "note: skipped {what} ({tests}): {how} {problem}; set {VAR}=/path/to/shared to run them");
    });
    None
}

/// `corpus_tests` for the notice: whole tests first, then each skipped part with its tests
/// (`a, b; the shared templates of c, d`).
fn listing(corpus_tests: &[&str]) -> String {
    let mut whole = Vec::new();
    let mut parts: Vec<(&str, Vec<&str>)> = Vec::new();
    for t in corpus_tests {
        match t.split_once(" (") {
            Some((name, what)) => {
                let what = what.trim_end_matches(')');
                match parts.iter_mut().find(|(w, _)| *w == what) {
                    Some((_, names)) => names.push(name),
                    None => parts.push((what, vec![name])),
                }
            }
            None => whole.push(*t),
        }
    }
    let mut pieces = Vec::new();
    if !whole.is_empty() {
        pieces.push(whole.join(", "));
    }
    pieces.extend(parts.iter().map(|(what, names)| format!("{what} of {}", names.join(", "))));
    pieces.join("; ")
}

/// Fails when the calling test is not named in `corpus_tests`. The test harness names each
/// test's thread after the test; elsewhere (benches, the main thread) there is nothing to check.
fn check_listed(corpus_tests: &[&str]) {
    let thread = std::thread::current();
    let Some(name) = thread.name().filter(|n| *n != "main") else { return };
    let listed = corpus_tests.iter().any(|t| t.split(" (").next() == Some(name));
    assert!(listed, "{name} reads the shared test data but is not in its file's list of corpus tests (the skip notice names them)");
}
