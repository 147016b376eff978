//! Character classes for the `chars` combinator: `[a-z0-9_]`, `[^"\\]`, escapes.

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind};

/// A set of Unicode scalar values written as a bracket expression.
///
/// ```
/// use peg_runtime::CharClass;
/// let c = CharClass::parse("[a-z_]").unwrap();
/// assert!(c.matches('q') && c.matches('_') && !c.matches('Q'));
/// let n = CharClass::parse("[^\\n\"]").unwrap();
/// assert!(n.matches('x') && !n.matches('\n'));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CharClass {
    /// Inclusive ranges, sorted and merged.
    pub ranges: Vec<(char, char)>,
    /// The class matches every character *not* in `ranges`.
    pub negated: bool,
}

impl CharClass {
    /// Parses `[...]`, `[^...]`, or a bare body such as `a-zA-Z`.
    ///
    /// Escapes: `\n \r \t \\ \] \[ \- \^ \xHH \uHHHH`, and the shorthands
    /// `\d \w \s` (ASCII digits, word characters, whitespace).
    ///
    /// ```
    /// use peg_runtime::{CharClass, ErrorKind};
    /// let hex = CharClass::parse("0-9a-fA-F").unwrap(); // brackets optional
    /// assert!(hex.matches('c') && !hex.matches('g'));
    /// assert!(CharClass::parse(r"[\d_]").unwrap().matches('7'));
    /// assert_eq!(CharClass::parse("[z-a]").unwrap_err().kind(), ErrorKind::InvalidCharClass);
    /// ```
    pub fn parse(spec: &str) -> Result<CharClass, Error> {
        let invalid = |msg: &str| Error::new(ErrorKind::InvalidCharClass, format!("{msg} in `{spec}`"));
        let body = match spec.strip_prefix('[') {
            Some(rest) => rest.strip_suffix(']').ok_or_else(|| invalid("missing closing `]`"))?,
            None => spec,
        };
        let (negated, body) = match body.strip_prefix('^') {
            Some(rest) if spec.starts_with('[') => (true, rest),
            _ => (false, body),
        };
        let mut items: Vec<char> = Vec::new();
        let mut ranges = Vec::new();
        let mut it = body.chars().peekable();
        // Each element is a single char (possibly escaped) or a shorthand that adds ranges directly.
        let read_one = |it: &mut std::iter::Peekable<std::str::Chars<'_>>, ranges: &mut Vec<(char, char)>| -> Result<Option<char>, Error> {
            let c = it.next().expect("caller checked");
            if c != '\\' {
                return Ok(Some(c));
            }
            let e = it.next().ok_or_else(|| invalid("dangling `\\`"))?;
            Ok(Some(match e {
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                '0' => '\0',
                'x' | 'u' => {
                    let n = if e == 'x' { 2 } else { 4 };
                    let hex: String = (0..n).filter_map(|_| it.next()).collect();
                    if hex.len() != n {
                        return Err(invalid("short hex escape"));
                    }
                    let v = u32::from_str_radix(&hex, 16).map_err(|_| invalid("bad hex escape"))?;
                    char::from_u32(v).ok_or_else(|| invalid("escape is not a scalar value"))?
                }
                'd' => {
                    ranges.push(('0', '9'));
                    return Ok(None);
                }
                'w' => {
                    ranges.extend([('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')]);
                    return Ok(None);
                }
                's' => {
                    ranges.extend([(' ', ' '), ('\t', '\t'), ('\n', '\n'), ('\r', '\r'), ('\x0b', '\x0c')]);
                    return Ok(None);
                }
                other => other,
            }))
        };
        while it.peek().is_some() {
            let Some(lo) = read_one(&mut it, &mut ranges)? else { continue };
            if it.peek() == Some(&'-') {
                let mut look = it.clone();
                look.next();
                if look.peek().is_some() {
                    it.next();
                    let hi = read_one(&mut it, &mut ranges)?.ok_or_else(|| invalid("shorthand as range end"))?;
                    if hi < lo {
                        return Err(invalid("range out of order"));
                    }
                    ranges.push((lo, hi));
                    continue;
                }
            }
            items.push(lo);
        }
        ranges.extend(items.into_iter().map(|c| (c, c)));
        if ranges.is_empty() && !negated {
            return Err(invalid("empty class"));
        }
        Ok(CharClass::from_ranges(ranges, negated))
    }

    /// Builds a class from ranges, sorting and merging them.
    pub fn from_ranges(mut ranges: Vec<(char, char)>, negated: bool) -> CharClass {
        ranges.sort_unstable();
        let mut merged: Vec<(char, char)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            match merged.last_mut() {
                Some(last) if (last.1 as u32).saturating_add(1) >= lo as u32 => {
                    if hi > last.1 {
                        last.1 = hi;
                    }
                }
                _ => merged.push((lo, hi)),
            }
        }
        CharClass { ranges: merged, negated }
    }

    /// Whether `c` belongs to the class.
    #[inline]
    pub fn matches(&self, c: char) -> bool {
        let inside = self
            .ranges
            .binary_search_by(|&(lo, hi)| {
                if c < lo {
                    std::cmp::Ordering::Greater
                } else if c > hi {
                    std::cmp::Ordering::Less
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok();
        inside != self.negated
    }
}

impl std::fmt::Display for CharClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn esc(f: &mut std::fmt::Formatter<'_>, c: char) -> std::fmt::Result {
            match c {
                '\n' => f.write_str("\\n"),
                '\r' => f.write_str("\\r"),
                '\t' => f.write_str("\\t"),
                '\\' | ']' | '[' | '-' | '^' => write!(f, "\\{c}"),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => write!(f, "\\x{:02X}", c as u32),
                c => write!(f, "{c}"),
            }
        }
        f.write_str("[")?;
        if self.negated {
            f.write_str("^")?;
        }
        for &(lo, hi) in &self.ranges {
            esc(f, lo)?;
            if hi != lo {
                f.write_str("-")?;
                esc(f, hi)?;
            }
        }
        f.write_str("]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_escapes_and_negation() {
        let c = CharClass::parse("[a-zA-Z0-9_\\-]").unwrap();
        assert!(c.matches('-') && c.matches('Z') && !c.matches(' '));
        let c = CharClass::parse("[^\\]]").unwrap();
        assert!(!c.matches(']') && c.matches('a'));
        let c = CharClass::parse("[\\u00e9\\x41]").unwrap();
        assert!(c.matches('é') && c.matches('A'));
        let c = CharClass::parse("[a-]").unwrap();
        assert!(c.matches('-') && c.matches('a'));
    }

    #[test]
    fn rejects_bad_classes() {
        assert!(CharClass::parse("[z-a]").is_err());
        assert!(CharClass::parse("[abc").is_err());
        assert!(CharClass::parse("[]").is_err());
        assert!(CharClass::parse("[\\u12]").is_err());
    }

    #[test]
    fn display_round_trips() {
        for spec in ["[a-z_]", "[^\\n\"\\\\]", "[\\-\\]x]"] {
            let c = CharClass::parse(spec).unwrap();
            assert_eq!(CharClass::parse(&c.to_string()).unwrap(), c);
        }
    }
}
