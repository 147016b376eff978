//! Word-at-a-time (SWAR) byte searches: eight bytes per step without SIMD intrinsics, for the
//! short runs between the special bytes of JSON and Python text, where a vectorized search's
//! setup costs more than it saves.

/// The high bit of each byte of `w` equal to `x` (the lowest exact, those above it may be
/// false: a borrow).
#[inline(always)]
pub(crate) fn has_byte(w: u64, x: u8) -> u64 {
    let v = w ^ (u64::from(x) * LO);
    v.wrapping_sub(LO) & !v & (LO * 0x80)
}

const LO: u64 = 0x0101_0101_0101_0101;

/// The high bit of each byte of `w` below 0x20, a control byte (the lowest exact, as
/// [`has_byte`]).
#[inline(always)]
pub(crate) fn has_control(w: u64) -> u64 {
    w.wrapping_sub(LO * 0x20) & !w & (LO * 0x80)
}

/// The length of the prefix of `b` without a byte for which `stop` holds; `word` flags the
/// high bit of each such byte of a word (as [`has_byte`] and [`has_control`] do: the lowest
/// flag exact, those above it may be false), so a run is skipped eight bytes at a time and
/// ends at the word's lowest flag.
#[inline(always)]
pub(crate) fn plain_len(b: &[u8], word: impl Fn(u64) -> u64, stop: impl Fn(u8) -> bool) -> usize {
    plain_end(b, 0, &word, &stop)
}

/// Where the run of bytes of `b` from `i` without a byte for which `stop` holds ends (as
/// [`plain_len`]).
#[inline(always)]
fn plain_end(b: &[u8], mut i: usize, word: impl Fn(u64) -> u64, stop: impl Fn(u8) -> bool) -> usize {
    while let Some(w) = b.get(i..i + 8) {
        let flags = word(u64::from_le_bytes(w.try_into().unwrap_or_default()));
        if flags != 0 {
            return i + (flags.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    let tail = b.get(i..).unwrap_or_default();
    i + tail.iter().position(|&c| stop(c)).unwrap_or(tail.len())
}

/// The high bit of each byte of `w` from 0x80 (exact: no borrow).
#[inline(always)]
pub(crate) fn non_ascii(w: u64) -> u64 {
    w & (LO * 0x80)
}

/// The length of the prefix of `b` made of plain bytes and two-byte escapes, and whether it
/// holds an escape: runs as [`plain_len`] (`word` and `stop` flag the backslash too), each
/// backslash whose next byte `short` takes skipped with that byte, so an escape does not end
/// the word loop's run. It ends at any other byte `word` flags: a quote, a backslash before
/// another escape (or at the end of `b`).
#[inline(always)]
pub(crate) fn escaped_len(b: &[u8], word: impl Fn(u64) -> u64, stop: impl Fn(u8) -> bool, short: impl Fn(u8) -> bool) -> (usize, bool) {
    let mut i = 0;
    let mut escaped = false;
    loop {
        i = plain_end(b, i, &word, &stop);
        match (b.get(i), b.get(i + 1)) {
            (Some(b'\\'), Some(&c)) if short(c) => {
                i += 2;
                escaped = true;
            }
            _ => return (i, escaped),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `escaped_len` of a JSON string body (stopping at `"`, `\` and control bytes; short
    /// escapes of `"`, `\` and `n`), a byte at a time.
    fn reference(b: &[u8]) -> (usize, bool) {
        let (mut i, mut escaped) = (0, false);
        loop {
            match b.get(i) {
                Some(b'\\') if matches!(b.get(i + 1), Some(b'"' | b'\\' | b'n')) => {
                    i += 2;
                    escaped = true;
                }
                Some(&c) if c != b'"' && c != b'\\' && c >= 0x20 => i += 1,
                _ => return (i, escaped),
            }
        }
    }

    fn fast(b: &[u8]) -> (usize, bool) {
        let word = |w| has_byte(w, b'"') | has_byte(w, b'\\') | has_control(w);
        escaped_len(b, word, |c| c == b'"' || c == b'\\' || c < 0x20, |c| matches!(c, b'"' | b'\\' | b'n'))
    }

    /// Escapes and runs of backslashes of every length before a quote, at every offset in a
    /// word, and random mixes of the bytes that matter.
    #[test]
    fn escaped_len_matches_a_byte_at_a_time_scan() {
        for run in 0..20 {
            for offset in 0..17 {
                for end in [&b"\""[..], b"n", b"u", b"\x01", b"x\"", b""] {
                    let mut b = vec![b'a'; offset];
                    b.extend(std::iter::repeat_n(b'\\', run));
                    b.extend_from_slice(end);
                    b.extend_from_slice(b"tail\"");
                    assert_eq!(fast(&b), reference(&b), "{:?}", String::from_utf8_lossy(&b));
                }
            }
        }
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut draw = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        let alphabet = b"\\\\\\\"\"nu\x01\x1f aZ~\x7f\x80\xff";
        for _ in 0..20000 {
            let len = draw(40);
            let b: Vec<u8> = (0..len).map(|_| alphabet[draw(alphabet.len())]).collect();
            assert_eq!(fast(&b), reference(&b), "{b:?}");
        }
    }
}
