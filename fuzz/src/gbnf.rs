//! The `gbnf` target: peg-runtime's GBNF parser and its Earley recognizer.
//!
//! Input: GBNF text, optionally followed by a NUL byte and a sample text to recognize.

use peg_runtime::gbnf::Grammar;
use peg_runtime::ErrorKind;

/// Samples are recognized once per prefix: a bounded number of characters.
const SAMPLE_CHARS: usize = 48;

/// Checks the parser and recognizer on one input; panics on a violated invariant.
pub fn check_gbnf(data: &[u8]) {
    let (text, sample) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let text = String::from_utf8_lossy(text);
    let grammar = match Grammar::parse(&text) {
        Ok(g) => g,
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Grammar, "a GBNF error of another kind: {e} for {text:?}");
            return;
        }
    };
    // What the grammar prints is GBNF that parses back to the same rules.
    let printed = grammar.to_string();
    match Grammar::parse(&printed) {
        Ok(again) => assert!(again == grammar, "printing changes the grammar {text:?}: {printed:?}"),
        Err(e) => panic!("the printed grammar does not parse ({e}): {printed:?}, from {text:?}"),
    }

    let sample: String = String::from_utf8_lossy(sample).chars().take(SAMPLE_CHARS).collect();
    let accepts = grammar.accepts(&sample);
    assert!(!accepts || grammar.accepts_prefix(&sample), "accepts {sample:?} but not as a prefix: {text:?}");
    // The incremental matcher agrees with whole recognitions at every character.
    let mut matcher = grammar.recognizer().matcher();
    let mut alive = matcher.is_alive();
    assert_eq!(alive, grammar.accepts_prefix(""), "matcher vs accepts_prefix at 0: {text:?}");
    for (i, c) in sample.char_indices() {
        let pushed = matcher.push(c);
        let prefix = &sample[..i + c.len_utf8()];
        assert!(alive || !pushed, "the matcher came back to life at {prefix:?}: {text:?}");
        alive = pushed;
        assert_eq!(alive, grammar.accepts_prefix(prefix), "matcher vs accepts_prefix at {prefix:?}: {text:?}");
        assert_eq!(matcher.is_complete(), grammar.accepts(prefix), "matcher vs accepts at {prefix:?}: {text:?}");
    }
    assert_eq!(matcher.is_complete(), accepts, "matcher vs accepts of {sample:?}: {text:?}");
}
