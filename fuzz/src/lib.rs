//! The fuzz harness of chat-peg: one `check_*` function per entry point, each panicking when an
//! invariant is violated. The cargo-fuzz targets (`fuzz_targets/`) call them on libFuzzer's
//! inputs; `tests/replay.rs` calls them on the checked-in seed corpora (`seeds/<target>/`) and
//! regression inputs (`regressions/<target>/`) on stable.
//!
//! | target | entry point | invariants |
//! | --- | --- | --- |
//! | `json` | `peg_runtime::json` scanner, `python::to_json`, `chat::close_partial_json` | complete, partial and resumed scans agree; every prefix of a value is viable; agrees with serde_json |
//! | `gbnf` | `gbnf::Grammar::parse`, the recognizer | printing a grammar parses back to it; the matcher agrees with `accepts` / `accepts_prefix` |
//! | `schema` | `schema::to_gbnf` | the grammar parses; it accepts a value of the schema where one is known |
//! | `template` | `ChatTemplate::with_limits`, `Model::analyze`, `Model::prepare` | errors, never panics (a caught panic is an `Internal` error) or unbounded work |
//! | `chat` | `ChatParser` / `ChatStream` of the facade's formats and of analyzed templates | see [`chat`] |
//!
//! Run a target: `cargo +nightly fuzz run chat` from the repository root (the fuzz crate's
//! README lists the options). Without `--cfg fuzzing` each target is a program that replays the
//! files and directories it is given: `cargo run --manifest-path fuzz/Cargo.toml --bin chat --
//! fuzz/regressions/chat`.

pub mod chat;
pub mod gbnf;
pub mod json;
pub mod schema;
pub mod template;

use std::path::{Path, PathBuf};

pub use chat::check_chat;
pub use gbnf::check_gbnf;
pub use json::check_json;
pub use schema::check_schema;
pub use template::check_template;

/// The names of the targets, as in `fuzz_targets/` and the corpus directories.
pub const TARGETS: [&str; 5] = ["json", "gbnf", "schema", "template", "chat"];

/// The check of a target by name.
pub fn check_of(target: &str) -> Option<fn(&[u8])> {
    Some(match target {
        "json" => check_json,
        "gbnf" => check_gbnf,
        "schema" => check_schema,
        "template" => check_template,
        "chat" => check_chat,
        _ => return None,
    })
}

/// Declares a fuzz target checking each input with `$check`: libFuzzer's entry point when
/// built by cargo fuzz, otherwise a `main` replaying the files and directories named on the
/// command line (see [`replay_args`]).
#[macro_export]
macro_rules! fuzz_target {
    ($check:path) => {
        #[cfg(fuzzing)]
        ::libfuzzer_sys::fuzz_target!(|data: &[u8]| $check(data));

        #[cfg(not(fuzzing))]
        fn main() {
            $crate::replay_args(stringify!($check), $check);
        }
    };
}

/// The `main` of a target built without libFuzzer: replays every file named on the command
/// line (directories: the files in them). For the chat target, `--describe FILE...` prints
/// what the inputs decode to, `--formats` lists the formats by number, `--encode N TEXT` writes
/// an input of format `N` holding `TEXT` (`%W`: a free word) to stdout, and `--write-seeds
/// DIR` writes its seed corpus.
pub fn replay_args(name: &str, check: fn(&[u8])) {
    let mut args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let is_chat = name.ends_with("check_chat");
    let flag = args.first().and_then(|a| a.to_str()).map(str::to_owned);
    match flag.as_deref() {
        Some("--write-seeds") if is_chat && args.len() == 2 => {
            std::fs::create_dir_all(&args[1]).expect("the seed directory can be created");
            for (file, data) in chat::seed_inputs() {
                std::fs::write(args[1].join(file), data).expect("the seed can be written");
            }
            return;
        }
        Some("--formats") if is_chat => {
            for (i, f) in chat::formats::formats().iter().enumerate() {
                println!("{i:3} {}", f.name);
            }
            return;
        }
        Some("--encode") if is_chat && args.len() == 3 => {
            let index: u8 = args[1].to_str().and_then(|s| s.parse().ok()).expect("a format number");
            let text = args[2].to_str().expect("UTF-8 text").replace("\\n", "\n").replace("\\t", "\t");
            std::io::Write::write_all(&mut std::io::stdout(), &chat::output::encode_text(index, [1, 3], &text)).expect("stdout");
            return;
        }
        Some("--describe") if is_chat => {
            for file in args.drain(1..).flat_map(|a| corpus_files(&a)) {
                println!("== {}\n{}", file.display(), chat::describe(&std::fs::read(&file).expect("the input can be read")));
            }
            return;
        }
        _ => {}
    }
    if args.is_empty() {
        eprintln!("usage: {name} FILE_OR_DIR...  (replays each input through the check)");
        std::process::exit(2);
    }
    for arg in args {
        for file in corpus_files(&arg) {
            eprintln!("{}", file.display());
            check(&std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())));
        }
    }
}

/// The input files under `path` (itself if it is a file), sorted; documentation (`*.md`) is
/// not an input.
pub fn corpus_files(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_path_buf()];
    }
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(path) else { return files };
    for entry in entries.flatten() {
        let p = entry.path();
        if p.is_dir() {
            files.extend(corpus_files(&p));
        } else if p.extension().is_none_or(|e| e != "md") {
            files.push(p);
        }
    }
    files.sort();
    files
}

/// Whether `CHAT_PEG_FUZZ_SKIP` (comma-separated names) names a known violation to look past:
/// for fuzzing beyond a known, unfixed bug (the invariants `b`..`e` of [`chat`]). The replay
/// test checks everything.
pub fn skip(name: &str) -> bool {
    static SKIP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SKIP.get_or_init(|| std::env::var("CHAT_PEG_FUZZ_SKIP").unwrap_or_default()).split(',').any(|s| s.trim() == name)
}

/// The byte offsets at which `s` can be cut (char boundaries), from 0 to its length.
pub(crate) fn cuts(s: &str) -> impl Iterator<Item = usize> + '_ {
    s.char_indices().map(|(i, _)| i).chain([s.len()])
}
