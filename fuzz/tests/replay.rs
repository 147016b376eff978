//! Replays the checked-in seed corpora (`seeds/<target>/`) and regression inputs
//! (`regressions/<target>/`) through the fuzz targets' checks, on stable.
//!
//! Regressions of known, not yet fixed bugs are listed in [`KNOWN_FAILING`]: the main test
//! skips them, `known_failing_regressions` (ignored) replays them. When a fix lands, run
//! `cargo test --manifest-path fuzz/Cargo.toml -- --ignored --nocapture`, and take each input
//! that now passes off the list.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use chat_peg_fuzz::{check_of, corpus_files, TARGETS};

/// Regressions that fail today: target, file name under `regressions/<target>/`, and why.
const KNOWN_FAILING: &[(&str, &str, &str)] = &[
    (
        "chat",
        "stream-functools-args-cut-then-text",
        "(b) JSON arguments inside a JSON call object that stop being JSON (`{\"city\": \"Paris\", NONE[`): at `N` the JSON reading fails and the Python dict read after it (atomic, `None` may be a key) is still open, so the longest fitting prefix shows no arguments where a shorter one showed `{\"city\": \"Paris\"`. The stream has sent those; the one-shot parse folds that prefix fresh and reads the call as its name alone",
    ),
    (
        "chat",
        "stream-json-call-args-cut-then-text",
        "(b) the same in a JSON call after reasoning (`\"Paris\", TAG_BASED<|im_start|>`): streamed arguments `{\"city\": \"Pari\"}` against `{}` one-shot",
    ),
    (
        "chat",
        "stream-json-list-args-string-continuation",
        "(b) the same cause inside a string (`\"ParisNONE, \\` then a line break, which a Python string continues and JSON refuses): streamed arguments `{\"city\": \"ParisNON\"}` against `{}` one-shot",
    ),
    (
        "chat",
        "stream-json-call-args-none-then-text",
        "(b) the same cause after `CALLS:` (`\"days\": NONE\": ...`, the `json-list-prefix-words` template): streamed arguments `{\"{\": \"Paris\", \"days\":null}` against `{}` one-shot; found by a local run, failing before this session's changes too",
    ),
    (
        "chat",
        "stream-addressed-json-args-none-then-text",
        "(b) the same cause in an addressed part (`@get_weather: {\"city\": NONENONE …`, the `addressed-words` template): the partial parse shows `{\"city\":` until the `N`, then nothing while the Python dict read after the failed JSON is open; streamed `{\"city\":null}` against `{}` one-shot; found by a local run, failing at the last landed commit too",
    ),
    (
        "chat",
        "stream-addressed-json-args-cut-then-text",
        "(b) the same cause in an addressed part, the arguments a string key left open (`{\"3@ALWAYS_WRAPPED} …`): streamed arguments against `{}` one-shot; found by a local run, failing at the last landed commit too",
    ),
    (
        "chat",
        "partial-not-monotone-fenced-glued-json-calls",
        "(c) JSON calls glued one after another inside a code fence (the `json-calls-glued-after-content` probe): the partial parse shows the first call where the output ends after it, and no call once a `{` may open the next (the fenced run, read whole, is pending again); found by a local run, failing at the last landed commit too",
    ),
];

fn dir(kind: &str, target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(kind).join(target)
}

fn is_known_failing(target: &str, file: &Path) -> bool {
    KNOWN_FAILING.iter().any(|(t, name, _)| *t == target && file.file_name().is_some_and(|f| f == *name))
}

/// Runs every input, collecting the failures so one run reports all of them.
fn replay(files: impl IntoIterator<Item = (&'static str, PathBuf)>) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut count = 0;
    for (target, file) in files {
        let check = check_of(target).expect("a known target");
        let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        count += 1;
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(&data))) {
            let msg = panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            failures.push(format!("{}: {msg}", file.display()));
        }
    }
    (count, failures)
}

fn inputs(kind: &str) -> Vec<(&'static str, PathBuf)> {
    TARGETS.iter().flat_map(|&t| corpus_files(&dir(kind, t)).into_iter().map(move |f| (t, f))).collect()
}

#[test]
fn seed_corpora_pass() {
    let (count, failures) = replay(inputs("seeds"));
    assert!(failures.is_empty(), "{} of {count} seed inputs fail:\n{}", failures.len(), failures.join("\n\n"));
    for t in TARGETS {
        assert!(!corpus_files(&dir("seeds", t)).is_empty(), "no seed corpus for {t}");
    }
}

#[test]
fn regressions_pass() {
    let files = inputs("regressions").into_iter().filter(|(t, f)| !is_known_failing(t, f));
    let (count, failures) = replay(files);
    assert!(failures.is_empty(), "{} of {count} regression inputs fail:\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn known_failing_regressions_exist() {
    for (target, name, _) in KNOWN_FAILING {
        assert!(dir("regressions", target).join(name).is_file(), "KNOWN_FAILING names a missing file: {target}/{name}");
    }
}

#[test]
#[ignore = "known bugs (KNOWN_FAILING): run with --ignored to see which are fixed"]
fn known_failing_regressions() {
    let files = KNOWN_FAILING.iter().map(|&(target, name, _)| (target, dir("regressions", target).join(name)));
    let (count, failures) = replay(files);
    assert!(failures.is_empty(), "{} of {count} known-failing inputs still fail:\n{}", failures.len(), failures.join("\n\n"));
}
