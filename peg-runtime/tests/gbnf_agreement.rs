//! Property: the arena parser accepts a string (a complete, non-partial parse consuming all
//! input) iff the generated GBNF grammar accepts it; and a partial parse is still alive
//! (needs more input, or matched everything so far) iff the grammar accepts it as a prefix.
//!
//! PEG and CFG agree on the class generated here: every sub-expression's language is
//! prefix-free and the parser finds its match deterministically. Concretely, choices start
//! their alternatives with distinct characters, repetitions and `chars` runs are followed by
//! a character that cannot continue them, and `until(D)` is followed by `D` with `D`
//! unbordered (no proper prefix of `D` is also a suffix of it; for bordered delimiters such
//! as `aa`, the parser stops at the first occurrence while a CFG could stop at a later one).
//! Outside this class (`a | ab` followed by `c`, say) the two legitimately differ.

use peg_runtime::gbnf::{GbnfOptions, Grammar, generate};
use peg_runtime::{Arena, Builder, Outcome, Parser};
use proptest::prelude::*;

const ALPHABET: [char; 4] = ['a', 'b', 'c', 'd'];

#[derive(Debug, Clone)]
enum Spec {
    Lit(String),
    Seq(Vec<Spec>),
    /// Alternatives, each starting with its own distinct character.
    Choice(Vec<(char, Spec)>),
    /// `(c body){min,max}` then `term` (`term != c`).
    Repeat {
        c: char,
        body: Box<Spec>,
        min: u32,
        max: Option<u32>,
        term: char,
    },
    /// `until(d) d`.
    Until(String),
    /// A run of `class` characters, then `term` (not in `class`).
    Chars {
        class: Vec<char>,
        min: u32,
        max: Option<u32>,
        term: char,
    },
    /// `space` then `term`.
    Space {
        term: char,
    },
    Tag(Box<Spec>),
    Rule(Box<Spec>),
}

fn unbordered(d: &str) -> bool {
    (1..d.len()).all(|k| d[..k] != d[d.len() - k..])
}

fn word(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(ALPHABET.to_vec()), 1..=max).prop_map(|v| v.into_iter().collect())
}

fn spec() -> impl Strategy<Value = Spec> {
    let leaf = prop_oneof![
        word(3).prop_map(Spec::Lit),
        word(3).prop_filter("unbordered", |d| unbordered(d)).prop_map(Spec::Until),
        (proptest::sample::subsequence(ALPHABET.to_vec(), 1..=3), 0u32..3, proptest::option::of(0u32..4)).prop_flat_map(|(class, min, extra)| {
            let others: Vec<char> = ALPHABET.iter().copied().filter(|c| !class.contains(c)).collect();
            (Just(class), Just(min), Just(extra.map(|e| min + e)), proptest::sample::select(others)).prop_map(|(class, min, max, term)| Spec::Chars {
                class,
                min,
                max,
                term,
            })
        }),
        proptest::sample::select(ALPHABET.to_vec()).prop_map(|term| Spec::Space { term }),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 1..4).prop_map(Spec::Seq),
            (proptest::sample::subsequence(ALPHABET.to_vec(), 1..=3), proptest::collection::vec(inner.clone(), 3))
                .prop_map(|(cs, bodies)| Spec::Choice(cs.into_iter().zip(bodies).collect())),
            (proptest::sample::select(ALPHABET.to_vec()), inner.clone(), 0u32..3, proptest::option::of(0u32..3), proptest::sample::select(ALPHABET.to_vec()))
                .prop_filter("term differs", |(c, _, _, _, t)| c != t)
                .prop_map(|(c, body, min, extra, term)| Spec::Repeat { c, body: Box::new(body), min, max: extra.map(|e| min + e), term }),
            inner.clone().prop_map(|s| Spec::Tag(Box::new(s))),
            inner.prop_map(|s| Spec::Rule(Box::new(s))),
        ]
    })
}

fn build<'a>(b: &'a Builder, s: &Spec, rules: &mut u32) -> Parser<'a> {
    match s {
        Spec::Lit(w) => b.literal(w),
        Spec::Seq(items) => {
            let parts: Vec<Parser<'a>> = items.iter().map(|x| build(b, x, rules)).collect();
            b.seq(parts)
        }
        Spec::Choice(alts) => {
            let parts: Vec<Parser<'a>> = alts.iter().map(|(c, x)| b.literal(&c.to_string()) + build(b, x, rules)).collect();
            b.choice(parts)
        }
        Spec::Repeat { c, body, min, max, term } => {
            let inner = b.literal(&c.to_string()) + build(b, body, rules);
            b.repeat(inner, *min, *max) + b.literal(&term.to_string())
        }
        Spec::Until(d) => b.until(d) + b.literal(d),
        Spec::Chars { class, min, max, term } => {
            let spec: String = format!("[{}]", class.iter().collect::<String>());
            b.chars(&spec, *min, *max) + b.literal(&term.to_string())
        }
        Spec::Space { term } => b.space() + b.literal(&term.to_string()),
        Spec::Tag(x) => b.tag("t", build(b, x, rules)),
        Spec::Rule(x) => {
            *rules += 1;
            let name = format!("rule_{rules}");
            let inner = build(b, x, rules);
            b.rule(&name, inner)
        }
    }
}

/// A random string of the spec's language (so that positive cases are common).
fn sample(s: &Spec, rng: &mut impl FnMut(u32) -> u32, out: &mut String) {
    match s {
        Spec::Lit(w) => out.push_str(w),
        Spec::Seq(items) => items.iter().for_each(|x| sample(x, rng, out)),
        Spec::Choice(alts) => {
            let (c, x) = &alts[rng(alts.len() as u32) as usize];
            out.push(*c);
            sample(x, rng, out);
        }
        Spec::Repeat { c, body, min, max, term } => {
            let n = min + rng(max.map_or(3, |m| m - min + 1));
            for _ in 0..n {
                out.push(*c);
                sample(body, rng, out);
            }
            out.push(*term);
        }
        Spec::Until(d) => {
            let mut w = String::new();
            for _ in 0..rng(4) {
                w.push(ALPHABET[rng(4) as usize]);
            }
            if !format!("{w}{d}")[..w.len() + d.len() - 1].contains(d.as_str()) {
                out.push_str(&w);
            }
            out.push_str(d);
        }
        Spec::Chars { class, min, max, term } => {
            let n = min + rng(max.map_or(3, |m| m - min + 1));
            for _ in 0..n {
                out.push(class[rng(class.len() as u32) as usize]);
            }
            out.push(*term);
        }
        Spec::Space { term } => {
            for _ in 0..rng(3) {
                out.push([' ', '\n', '\t'][rng(3) as usize]);
            }
            out.push(*term);
        }
        Spec::Tag(x) | Spec::Rule(x) => sample(x, rng, out),
    }
}

/// Whether `s` holds an exponent of three digits or more after up to two leading zeros
/// (`0e100`, `1e-0123`).
fn long_exponent(s: &str) -> bool {
    let b = s.as_bytes();
    (0..b.len()).filter(|&i| matches!(b[i], b'e' | b'E')).any(|i| {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'-' | b'+')) {
            j += 1;
        }
        let digits = b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        let zeros = b[j..j + digits].iter().take_while(|&&c| c == b'0').count().min(2);
        digits - zeros >= 3
    })
}

#[test]
fn long_exponents_are_told() {
    assert!(long_exponent("0e100") && long_exponent("[1E-0123]") && long_exponent("1e00100"));
    assert!(!long_exponent("1e99") && !long_exponent("1e0099") && !long_exponent("1e"));
}

fn parser_accepts(arena: &Arena, input: &str) -> bool {
    let out = arena.parse(input.as_bytes(), false).expect("no resource limits hit");
    out.result.outcome == Outcome::Success && out.result.end == input.len()
}

/// Whole inputs: accepted by both or neither. Prefixes: the partial parser gives up exactly
/// where the grammar sees no completion.
fn check_agreement(arena: &Arena, grammar: &Grammar, inputs: &[String]) -> Result<(), TestCaseError> {
    for input in inputs {
        let p = parser_accepts(arena, input);
        let g = grammar.accepts(input);
        prop_assert_eq!(p, g, "input {:?}: parser {} grammar {}", input, p, g);
        if g {
            for (k, _) in input.char_indices() {
                prop_assert!(grammar.accepts_prefix(&input[..k]), "prefix {:?} of {:?}", &input[..k], input);
            }
        }
        let out = arena.parse(input.as_bytes(), true).expect("no resource limits hit");
        let alive = match out.result.outcome {
            Outcome::NeedMoreInput => true,
            Outcome::Success => out.result.end == input.len(),
            Outcome::Fail => false,
        };
        prop_assert_eq!(alive, grammar.accepts_prefix(input), "partial {:?}: {:?}", input, out.result);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn parser_and_grammar_agree(
        s in spec(),
        seed in any::<u64>(),
        randoms in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(vec!['a', 'b', 'c', 'd', ' ']), 0..8), 24),
    ) {
        let mut rules = 0;
        let b = Builder::new();
        let root = build(&b, &s, &mut rules);
        let arena = b.finish(root.id()).unwrap();
        let text = generate(&arena, &GbnfOptions::default()).unwrap();
        let grammar = Grammar::parse(&text).unwrap();
        let mut state = seed | 1;
        let mut rng = move |n: u32| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if n == 0 { 0 } else { (state % n as u64) as u32 }
        };
        let mut inputs: Vec<String> = randoms.into_iter().map(|v| v.into_iter().collect()).collect();
        for _ in 0..12 {
            let mut w = String::new();
            sample(&s, &mut rng, &mut w);
            // The sample and single-character mutations of it.
            let chars: Vec<char> = w.chars().collect();
            if !chars.is_empty() {
                let i = rng(chars.len() as u32) as usize;
                let c = ALPHABET[rng(4) as usize];
                let mut del = chars.clone();
                del.remove(i);
                let mut ins = chars.clone();
                ins.insert(i, c);
                let mut rep = chars.clone();
                rep[i] = c;
                for m in [del, ins, rep] {
                    inputs.push(m.into_iter().collect());
                }
            }
            inputs.push(w);
        }
        check_agreement(&arena, &grammar, &inputs)?;
    }

    #[test]
    fn json_parser_and_grammar_agree(
        inputs in proptest::collection::vec(
            proptest::collection::vec(proptest::sample::select(vec!['{', '}', '[', ']', '"', ':', ',', '0', '1', '-', '.', 'e', ' ', 'a', '\\', 'n', 'u', 't', 'r', 'l']), 0..9),
            64,
        ),
    ) {
        let arena = Arena::build(|p| p.json()).unwrap();
        let grammar = Grammar::parse(&generate(&arena, &GbnfOptions::default()).unwrap()).unwrap();
        // The grammar writes no exponent past two digits (DESIGN.md, what a generated grammar
        // guarantees) where the parser reads any: such inputs are the one known difference.
        let inputs: Vec<String> = inputs.into_iter().map(|v| v.into_iter().collect::<String>()).filter(|s| !long_exponent(s)).collect();
        check_agreement(&arena, &grammar, &inputs)?;
    }

    #[test]
    fn python_parser_and_grammar_agree(
        inputs in proptest::collection::vec(
            proptest::collection::vec(proptest::sample::select(vec!['{', '}', '[', ']', '\'', '"', ':', ',', '0', '1', '-', '+', '.', '_', 'e', ' ', 'N', 'o', 'n', '\\', 'x']), 0..9),
            64,
        ),
    ) {
        let arena = Arena::build(|p| p.python()).unwrap();
        let grammar = Grammar::parse(&generate(&arena, &GbnfOptions::default()).unwrap()).unwrap();
        let inputs: Vec<String> = inputs.into_iter().map(|v| v.into_iter().collect()).collect();
        check_agreement(&arena, &grammar, &inputs)?;
    }
}

#[test]
fn json_values_agree() {
    let arena = Arena::build(|p| p.json()).unwrap();
    let grammar = Grammar::parse(&generate(&arena, &GbnfOptions::default()).unwrap()).unwrap();
    let cases = [
        r#"{"a": [1, -2.5e+3, "x\"\u00e9\n", true, false, null], "b": {}}"#,
        "[ ]",
        " 1",
        "1 ",
        "01",
        "-0",
        "1.",
        ".5",
        "\"\\/\"",
        "\"\\x\"",
        "[1,]",
        "{\"a\" : 1 , \"b\":[ ]}",
        "\"\u{7f}\"",
        "nul",
        "true",
    ];
    for c in cases {
        assert_eq!(parser_accepts(&arena, c), grammar.accepts(c), "{c:?}");
    }
    // The one deliberate difference: the parser reads a raw control character (not a line
    // break) inside a string, a slip models make, which the chat layer escapes and reports;
    // the grammar keeps generation to valid JSON.
    for c in ["\"\t\"", "{\"a\": \"x\u{1}y\"}"] {
        assert!(parser_accepts(&arena, c) && !grammar.accepts(c), "{c:?}");
    }
    assert!(!parser_accepts(&arena, "\"a\nb\"") && !grammar.accepts("\"a\nb\""));
}

#[test]
fn marker_until_and_rest_agree() {
    let arena = Arena::build(|p| p.marker() + p.until_one_of(["<|end|>", "<|call|>"]) + p.choice(["<|end|>", "<|call|>"]) + p.rest()).unwrap();
    let grammar = Grammar::parse(&generate(&arena, &GbnfOptions::default()).unwrap()).unwrap();
    for c in ["<|start|>hi<|end|>", "[x]a<|call|>tail", "<>a<|end|>", "<a\nb>x<|end|>", "<x>a<|end|>b<|end|>", "<x>a<|e<|end|>", "[a]b"] {
        assert_eq!(parser_accepts(&arena, c), grammar.accepts(c), "{c:?}");
    }
}
