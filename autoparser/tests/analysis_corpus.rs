//! The golden and round-trip corpora through analysis, generation and the chat parser
//! (judged as `corpus/README.md` says). Prints every failure; guards against regressions.

use std::path::Path;

fn run(corpus: &str, min_passed: usize) {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared"));
    let report = autoparser::check::run_corpus(&root.join(corpus), &root.join("templates")).unwrap();
    for f in &report.failures {
        println!("FAIL {}: {}", f.id, f.detail.chars().take(300).collect::<String>());
    }
    println!("{corpus}: {}/{} parse cases pass", report.passed, report.total);
    assert!(report.passed >= min_passed, "{corpus}: {}/{} (expected at least {min_passed})", report.passed, report.total);
}

#[test]
fn golden_corpus() {
    run("corpus", 361);
}

#[test]
fn round_trip_corpus() {
    run("roundtrip", 242);
}
