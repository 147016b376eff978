//! Byte searches for the short runs between the special bytes of JSON and Python text, where a
//! general vectorized search's setup costs more than it saves: word-at-a-time (SWAR) flags for
//! the chat layer's normalizer, and string bodies sixteen bytes at a time for the JSON scanner
//! and the one-pass check (an SSE2 mask on x86-64, a byte loop elsewhere).

/// The high bit of each byte of `w` equal to `x` (the lowest exact, those above it may be
/// false: a borrow).
#[cfg(feature = "chat")]
#[inline(always)]
pub(crate) fn has_byte(w: u64, x: u8) -> u64 {
    let v = w ^ (u64::from(x) * LO);
    v.wrapping_sub(LO) & !v & (LO * 0x80)
}

#[cfg(feature = "chat")]
const LO: u64 = 0x0101_0101_0101_0101;

/// The high bit of each byte of `w` below 0x20, a control byte (the lowest exact, as
/// [`has_byte`]).
#[cfg(feature = "chat")]
#[inline(always)]
pub(crate) fn has_control(w: u64) -> u64 {
    w.wrapping_sub(LO * 0x20) & !w & (LO * 0x80)
}

/// The length of the prefix of `b` without a byte for which `stop` holds; `word` flags the
/// high bit of each such byte of a word (as [`has_byte`] and [`has_control`] do: the lowest
/// flag exact, those above it may be false), so a run is skipped eight bytes at a time and
/// ends at the word's lowest flag.
#[cfg(feature = "chat")]
#[inline(always)]
pub(crate) fn plain_len(b: &[u8], word: impl Fn(u64) -> u64, stop: impl Fn(u8) -> bool) -> usize {
    let mut i = 0;
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

/// The length of the prefix of a string body `b` (quoted with `quote`) made of plain bytes
/// and two-byte escapes, and whether it holds an escape. It ends at the quote, a control byte,
/// a byte from 0x80 if `non_ascii`, or a backslash but one whose next byte `short` takes
/// (that escape is skipped whole: code escapes a quote or backslash every few bytes, and an
/// escape must not end the fast loop).
#[inline(always)]
pub(crate) fn escaped_len(b: &[u8], quote: u8, non_ascii: bool, short: impl Fn(u8) -> bool) -> (usize, bool) {
    let mut i = 0;
    let mut escaped = false;
    'blocks: while let Some(block) = b.get(i..i + 16) {
        let Ok(block) = <&[u8; 16]>::try_from(block) else { break };
        let mut stops = string_stops(block, quote, non_ascii);
        while stops != 0 {
            let k = stops.trailing_zeros() as usize;
            let at = i + k;
            if b[at] != b'\\' || !b.get(at + 1).is_some_and(|&n| short(n)) {
                return (at, escaped);
            }
            escaped = true;
            if k >= 14 {
                // The escape ends at or past the block's end: go on after it.
                i = at + 2;
                continue 'blocks;
            }
            // The escape's two bytes are passed.
            stops &= !0 << (k + 2);
        }
        i += 16;
    }
    while let Some(&c) = b.get(i) {
        if is_string_stop(c, quote, non_ascii) {
            if c != b'\\' || !b.get(i + 1).is_some_and(|&n| short(n)) {
                return (i, escaped);
            }
            escaped = true;
            i += 2;
        } else {
            i += 1;
        }
    }
    (i, escaped)
}

#[inline(always)]
fn is_string_stop(c: u8, quote: u8, non_ascii: bool) -> bool {
    (c == quote) | (c == b'\\') | (c < 0x20) | (non_ascii & (c >= 0x80))
}

/// A bit per byte of `block` for which [`is_string_stop`] holds: SSE2 compares and one mask.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn string_stops(block: &[u8; 16], quote: u8, non_ascii: bool) -> u32 {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set_epi64x, _mm_set1_epi8};
    let half = |h: &[u8]| i64::from_le_bytes(h.try_into().unwrap_or_default());
    let (lo, hi) = (half(&block[..8]), half(&block[8..]));
    // SAFETY: SSE2 is part of every x86-64 target; these intrinsics read no memory.
    let (stops, high) = unsafe {
        let v = _mm_set_epi64x(hi, lo);
        let quotes = _mm_cmpeq_epi8(v, _mm_set1_epi8(quote as i8));
        let backslashes = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // Below 0x20, unsigned: the byte is its own minimum with 0x1f.
        let controls = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
        // The mask of the bytes themselves is their high bits: the bytes from 0x80.
        (_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quotes, backslashes), controls)), _mm_movemask_epi8(v))
    };
    let stops = stops as u32;
    if non_ascii { stops | high as u32 } else { stops }
}

/// [`string_stops`] a byte at a time (other targets, and the reference of the vector one).
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
fn string_stops_bytewise(block: &[u8; 16], quote: u8, non_ascii: bool) -> u32 {
    let mut stops = 0;
    for (k, &c) in block.iter().enumerate() {
        stops |= u32::from(is_string_stop(c, quote, non_ascii)) << k;
    }
    stops
}

#[cfg(not(target_arch = "x86_64"))]
use string_stops_bytewise as string_stops;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// `escaped_len` of a JSON string body (stopping at `"`, `\` and control bytes, and at
    /// bytes from 0x80 if `non_ascii`; short escapes of `"`, `\` and `n`), a byte at a time.
    fn reference(b: &[u8], non_ascii: bool) -> (usize, bool) {
        let (mut i, mut escaped) = (0, false);
        loop {
            match b.get(i) {
                Some(b'\\') if matches!(b.get(i + 1), Some(b'"' | b'\\' | b'n')) => {
                    i += 2;
                    escaped = true;
                }
                Some(&c) if c != b'"' && c != b'\\' && c >= 0x20 && !(non_ascii && c >= 0x80) => i += 1,
                _ => return (i, escaped),
            }
        }
    }

    fn fast(b: &[u8], non_ascii: bool) -> (usize, bool) {
        escaped_len(b, b'"', non_ascii, |c| matches!(c, b'"' | b'\\' | b'n'))
    }

    #[test]
    fn string_stops_equal_their_bytewise_reference() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for _ in 0..20000 {
            let mut block = [0u8; 16];
            for b in &mut block {
                // Near the boundaries that matter: 0x1f/0x20, the quotes, the backslash, 0x7f/0x80.
                *b = rng.pick(&[0x00, 0x1f, 0x20, b'"', b'\'', b'\\', b'a', 0x7f, 0x80, 0xff]).wrapping_add(rng.below(2) as u8);
            }
            for (quote, non_ascii) in [(b'"', false), (b'"', true), (b'\'', true)] {
                assert_eq!(string_stops(&block, quote, non_ascii), string_stops_bytewise(&block, quote, non_ascii), "{block:?}");
            }
        }
    }

    /// Escapes and runs of backslashes of every length before a quote, at every offset in a
    /// block, and random mixes of the bytes that matter, long enough for several blocks.
    #[test]
    fn escaped_len_matches_a_byte_at_a_time_scan() {
        for non_ascii in [false, true] {
            for run in 0..20 {
                for offset in 0..33 {
                    for end in [&b"\""[..], b"n", b"u", b"\x01", b"\xc3\xa9\"", b"x\"", b""] {
                        let mut b = vec![b'a'; offset];
                        b.extend(std::iter::repeat_n(b'\\', run));
                        b.extend_from_slice(end);
                        b.extend_from_slice(b"tail\"");
                        assert_eq!(fast(&b, non_ascii), reference(&b, non_ascii), "{:?}", String::from_utf8_lossy(&b));
                    }
                }
            }
        }
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut draw = |n: usize| rng.below(n);
        // Mostly plain bytes, so that runs cross blocks.
        let alphabet = b"\\\\\\\"\"nu\x01\x1f aZ~\x7f\x80\xffabcdefghijklmnopqrstuvwxyz0123456789";
        for _ in 0..20000 {
            let len = draw(80);
            let b: Vec<u8> = (0..len).map(|_| alphabet[draw(alphabet.len())]).collect();
            for non_ascii in [false, true] {
                assert_eq!(fast(&b, non_ascii), reference(&b, non_ascii), "{b:?}");
            }
        }
    }
}
