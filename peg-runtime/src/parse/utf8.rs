//! UTF-8 helpers: code-point decoding for `any`/`chars`, span validation for `until`/`rest`.

/// One decoding step at a position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dec {
    /// A valid code point and its length in bytes.
    Char(char, usize),
    /// An invalid byte: consumed as one unit.
    Invalid,
    /// A valid prefix of a multi-byte sequence that runs into the end of input.
    Truncated,
    /// No byte left.
    Eof,
}

/// The length and allowed range of the second byte of a sequence led by `b`, or `None` if `b`
/// cannot start one.
#[inline]
fn lead(b: u8) -> Option<(usize, u8, u8)> {
    Some(match b {
        0xC2..=0xDF => (2, 0x80, 0xBF),
        0xE0 => (3, 0xA0, 0xBF),
        0xE1..=0xEC | 0xEE..=0xEF => (3, 0x80, 0xBF),
        0xED => (3, 0x80, 0x9F),
        0xF0 => (4, 0x90, 0xBF),
        0xF1..=0xF3 => (4, 0x80, 0xBF),
        0xF4 => (4, 0x80, 0x8F),
        _ => return None,
    })
}

/// Decodes the code point at `pos`.
#[inline]
pub fn decode(input: &[u8], pos: usize) -> Dec {
    let Some(&b) = input.get(pos) else { return Dec::Eof };
    if b < 0x80 {
        return Dec::Char(b as char, 1);
    }
    let Some((len, lo, hi)) = lead(b) else { return Dec::Invalid };
    for i in 1..len {
        let Some(&c) = input.get(pos + i) else { return Dec::Truncated };
        let (l, h) = if i == 1 { (lo, hi) } else { (0x80, 0xBF) };
        if c < l || c > h {
            return Dec::Invalid;
        }
    }
    match std::str::from_utf8(&input[pos..pos + len]).ok().and_then(|s| s.chars().next()) {
        Some(c) => Dec::Char(c, len),
        None => Dec::Invalid,
    }
}

/// Validates `input[from..to]`. Returns whether invalid bytes were found and how far the bytes
/// are complete: a truncated sequence at the very end of `input` is not counted as invalid and
/// `valid_end` stops before it (the caller decides what it means for its mode).
pub fn check(input: &[u8], from: usize, to: usize) -> (bool, usize) {
    let mut i = from;
    let mut invalid = false;
    loop {
        match std::str::from_utf8(&input[i..to]) {
            Ok(_) => return (invalid, to),
            Err(e) => {
                let v = i + e.valid_up_to();
                match e.error_len() {
                    Some(l) => {
                        invalid = true;
                        i = v + l;
                    }
                    None if to == input.len() => return (invalid, v),
                    // Cut by `to`, not by the end of input: the bytes are invalid.
                    None => return (true, to),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_classifies() {
        assert_eq!(decode(b"a", 0), Dec::Char('a', 1));
        assert_eq!(decode("é".as_bytes(), 0), Dec::Char('é', 2));
        assert_eq!(decode(b"\xFF", 0), Dec::Invalid);
        assert_eq!(decode(b"\xE2\x82", 0), Dec::Truncated);
        assert_eq!(decode(b"\xE2\x82x", 0), Dec::Invalid);
        assert_eq!(decode(b"\xED\xA0\x80", 0), Dec::Invalid);
        assert_eq!(decode(b"", 0), Dec::Eof);
    }

    #[test]
    fn checks_spans() {
        assert_eq!(check(b"abc", 0, 3), (false, 3));
        assert_eq!(check(b"a\xFFc", 0, 3), (true, 3));
        assert_eq!(check(b"ab\xE2\x82", 0, 4), (false, 2));
        assert_eq!(check(b"ab\xE2\x82x", 0, 4), (true, 4));
    }
}
