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
    let mut i = 0;
    while let Some(w) = b.get(i..i + 8) {
        let flags = word(u64::from_le_bytes(w.try_into().unwrap_or_default()));
        if flags != 0 {
            return i + (flags.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + b[i..].iter().position(|&c| stop(c)).unwrap_or(b.len() - i)
}

/// The high bit of each byte of `w` from 0x80 (exact: no borrow).
#[inline(always)]
pub(crate) fn non_ascii(w: u64) -> u64 {
    w & (LO * 0x80)
}
