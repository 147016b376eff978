//! Chat-template capabilities next to the reference's, read in place from `../shared/corpus`.
//!
//! The corpus's `render/` scenarios and its `prompt`, `generation_prompt` and `capability`
//! cases are judged by `autoparser check` (`autoparser-cli/tests/corpus_check.rs`).

use std::fs;
use std::path::{Path, PathBuf};

use autoparser::template::ChatTemplate;
use serde_json::Value as Json;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared");

fn templates_dir() -> PathBuf {
    Path::new(SHARED).join("templates")
}

fn load_template(name: &str) -> ChatTemplate {
    let path = templates_dir().join(format!("{name}.jinja"));
    let src = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ChatTemplate::from_source(&src, "<s>", "</s>").unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Capabilities against the reference's detected `caps` in `analysis/NAME.json` (informational:
/// the reference's probes are heuristics too; the `capability` chat cases are the test).
#[test]
fn capabilities_vs_reference_analysis() {
    let dir = Path::new(SHARED).join("corpus/analysis");
    let (mut same, mut total) = (0, 0);
    let mut diffs = Vec::new();
    let mut files: Vec<PathBuf> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for p in files {
        let a: Json = serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if !templates_dir().join(format!("{name}.jinja")).exists() {
            continue;
        }
        let caps = load_template(&name).capabilities();
        for (k, v) in a["caps"].as_object().into_iter().flatten() {
            total += 1;
            if caps.get(k) == v.as_bool() {
                same += 1;
            } else {
                diffs.push(format!("{name}.{k}: ours {:?}, reference {v}", caps.get(k)));
            }
        }
    }
    println!("capabilities equal to the reference analysis: {same}/{total}");
    for d in &diffs {
        println!("  differs {d}");
    }
}
