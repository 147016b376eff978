//! Decoding a fuzz input into a model output: the input is a program of pieces, so that the
//! fuzzer combines markers, tool names and JSON fragments instead of guessing them byte by byte.
//!
//! Layout: byte 0 picks the format, bytes 1 and 2 the chunk sizes of the stream, then one
//! operation per byte:
//!
//! | byte | writes |
//! | --- | --- |
//! | `00..=3f` | a piece of the format (with the next byte: `(b & 3f) << 8 \| next`, modulo the count) |
//! | `40..=5f` | a JSON fragment ([`JSON`]), well-formed or not |
//! | `60..=67` | a tool name ([`TOOL_NAMES`]) |
//! | `68..=6f` | a whole sample output of the format |
//! | `70..=7f` | a free word, `zq<n>k` with a fresh `n`: it must reach the message |
//! | `80..=bf` | punctuation or whitespace ([`PUNCT`]) |
//! | `c0..=ff` | the next `(b & 0f) + 1` bytes as text (`z` made `y`, so no word is forged) |

use super::formats::{Format, TOOL_NAMES};

/// JSON fragments, including malformed ones (raw TAB and newline inside strings, unescaped
/// quotes, cut values).
pub const JSON: [&str; 32] = [
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "\"city\": \"Paris\"",
    "\"days\": 3",
    "{\"city\": \"Paris\", \"days\": 3}",
    "{\"query\": \"rain\", \"tags\": [\"a\", \"b\"], \"strict\": true, \"note\": null}",
    "\"name\": ",
    "\"arguments\": ",
    "\"parameters\": ",
    "{\"name\": \"get_weather\", \"arguments\": ",
    "\"a\tb\"",
    "\"a\nb\"",
    "\"say \"hi\" now\"",
    "\"\\",
    "\\\"",
    "\\u00e9",
    "\\ud800",
    "null",
    "true",
    "-1.5e3",
    "01",
    "'city': 'Paris'",
    "{'query': 'rain', 'strict': True, 'note': None}",
    "\"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"",
    "{\"function\": {\"name\": \"get_weather\", \"arguments\": {}}}",
    "[{\"name\": \"run_query\", \"arguments\": {\"query\": \"x\"}}]",
    "{\"city\": \"Par",
];

/// Punctuation and whitespace.
pub const PUNCT: [&str; 24] =
    [" ", "\n", "\t", "\r\n", "  ", "<", ">", "/", "|", "=", ":", "\"", "'", ",", "[", "]", "(", ")", "```", "```json\n", "\n\n", ";", "<|", "|>"];

/// A decoded input: the format, the chunk sizes, the output and the words it holds.
pub struct Output<'f> {
    /// The format to parse with.
    pub format: &'f Format,
    /// Piece sizes of the stream (`stream_pieces`).
    pub chunks: [usize; 2],
    /// The model output.
    pub text: String,
    /// The free words written, each unique in the output, with their offsets.
    pub words: Vec<(String, usize)>,
}

/// Outputs are parsed once per prefix: their length is bounded.
pub const MAX_OUTPUT: usize = 512;

/// Decodes `data` against `formats` (`None` when too short).
pub fn decode<'f>(data: &[u8], formats: &'f [Format]) -> Option<Output<'f>> {
    let [pick, c0, c1, ops @ ..] = data else { return None };
    let format = &formats[usize::from(*pick) % formats.len()];
    let chunks = [usize::from(*c0 % 32) + 1, usize::from(*c1 % 8) + 1];
    let mut text = String::new();
    let mut words = Vec::new();
    let mut i = 0;
    while i < ops.len() && text.len() < MAX_OUTPUT {
        let b = ops[i];
        i += 1;
        match b {
            0x00..=0x3f => {
                let next = ops.get(i).copied().unwrap_or(0);
                i += 1;
                let n = (usize::from(b) << 8 | usize::from(next)) % format.pieces.len().max(1);
                text.push_str(format.pieces.get(n).map_or("", String::as_str));
            }
            0x40..=0x5f => text.push_str(JSON[usize::from(b & 0x1f)]),
            0x60..=0x67 => text.push_str(TOOL_NAMES[usize::from(b & 7) % TOOL_NAMES.len()]),
            0x68..=0x6f => {
                if !format.samples.is_empty() {
                    text.push_str(&format.samples[usize::from(b & 7) % format.samples.len()]);
                }
            }
            0x70..=0x7f => {
                let word = format!("zq{}k", words.len());
                words.push((word.clone(), text.len()));
                text.push_str(&word);
            }
            0x80..=0xbf => text.push_str(PUNCT[usize::from(b & 0x3f) % PUNCT.len()]),
            0xc0..=0xff => {
                let n = usize::from(b & 0x0f) + 1;
                let raw = &ops[i.min(ops.len())..(i + n).min(ops.len())];
                i += n;
                text.extend(String::from_utf8_lossy(raw).chars().map(|c| match c {
                    'z' => 'y',
                    'Z' => 'Y',
                    c => c,
                }));
            }
        }
    }
    Some(Output { format, chunks, text, words })
}

/// Encodes an output made of `ops` for the format at `index` (the inverse of [`decode`], for
/// writing seed corpora): piece numbers, JSON fragments and words.
pub fn encode(index: u8, chunks: [u8; 2], ops: &[Op]) -> Vec<u8> {
    let mut out = vec![index, chunks[0], chunks[1]];
    for op in ops {
        match *op {
            Op::Piece(n) => out.extend([0x3f & (n >> 8) as u8, n as u8]),
            Op::Json(n) => out.push(0x40 | n),
            Op::Name(n) => out.push(0x60 | n),
            Op::Sample(n) => out.push(0x68 | n),
            Op::Word => out.push(0x70),
            Op::Punct(n) => out.push(0x80 | n),
        }
    }
    out
}

/// Encodes `text` for the format at `index` as raw-text operations, each `%W` as a free
/// word: for writing an input by hand. `z` in `text` would decode as `y`.
pub fn encode_text(index: u8, chunks: [u8; 2], text: &str) -> Vec<u8> {
    let mut out = vec![index, chunks[0], chunks[1]];
    for (i, part) in text.split("%W").enumerate() {
        if i > 0 {
            out.push(0x70);
        }
        let mut rest = part;
        while !rest.is_empty() {
            let mut n = rest.len().min(16);
            while !rest.is_char_boundary(n) {
                n -= 1;
            }
            out.push(0xc0 | (n - 1) as u8);
            out.extend_from_slice(&rest.as_bytes()[..n]);
            rest = &rest[n..];
        }
    }
    out
}

/// One operation of an input (see the table above).
#[derive(Debug, Clone, Copy)]
pub enum Op {
    /// A piece of the format, by number.
    Piece(u16),
    /// A JSON fragment, by number.
    Json(u8),
    /// A tool name, by number.
    Name(u8),
    /// A whole sample output, by number.
    Sample(u8),
    /// A fresh free word.
    Word,
    /// Punctuation, by number.
    Punct(u8),
}
