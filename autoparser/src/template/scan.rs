//! A pre-scan of template source for syntax deeper than minijinja can compile.
//!
//! minijinja's parser guards its recursion into parentheses and nested statements, but builds
//! operator chains (`a + b + …`, `x|f|g…`, `x.a.b…`, `x[0][0]…`, `f()()…`) and `elif` chains
//! as left-deep trees without a bound, and its code generator and the tree's `Drop` recurse
//! over them: a couple of thousand links overflow a 2 MiB thread stack, which aborts the process.
//! So the source is scanned first, with the tokenizer's rules (tags, string literals with
//! escapes, comments, raw blocks), and refused when a tag nests too deep: its operators plus
//! the blocks and `elif`s around it ([`Limits::expression_depth`](super::Limits)).

/// The deepest tag of a source: its chain depth and 1-based line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Depth {
    /// Operators of the tag, plus the blocks open around it and their `elif` links.
    pub depth: usize,
    /// The line the tag starts on.
    pub line: usize,
}

/// The tag with the most nesting in `source`, as minijinja (default delimiters) tokenizes it:
/// the blocks open around it, the `elif` links of those blocks, and its operators. Every token
/// that can add a level to a syntax tree counts as one, so the count is never below the depth
/// the compiler recurses to for that tag.
pub(crate) fn deepest_tag(source: &str) -> Depth {
    let (mut deepest, mut at) = (0, 0);
    // Open blocks, each with its levels: itself and its `elif`s so far.
    let mut open: Vec<usize> = Vec::new();
    let mut nesting = 0usize;
    for tag in tags(source) {
        match tag.first_word {
            FirstWord::Open => {
                open.push(1);
                nesting += 1;
            }
            FirstWord::Elif => {
                if let Some(n) = open.last_mut() {
                    *n += 1;
                    nesting += 1;
                }
            }
            FirstWord::End => nesting -= open.pop().unwrap_or(0),
            FirstWord::Other => {}
        }
        if tag.operators + nesting > deepest {
            (deepest, at) = (tag.operators + nesting, tag.start);
        }
    }
    Depth { depth: deepest, line: 1 + memchr::memchr_iter(b'\n', &source.as_bytes()[..at]).count() }
}

/// A `{{ … }}` or `{% … %}` tag.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tag {
    /// Offset of its opening `{`.
    pub start: usize,
    /// Offset after its closing delimiter; the source's length when the tag or a string in it
    /// never ends (minijinja refuses that source, and the scan stops).
    pub end: usize,
    /// The tag has its closing delimiter (at `end - 2`, after the opening one).
    pub closed: bool,
    /// A block tag (`{% %}`), not a variable tag.
    pub block: bool,
    /// Operator tokens in the tag.
    pub operators: usize,
    /// The statement's keyword, where it matters (block tags).
    pub first_word: FirstWord,
}

/// The tags of `source`, in order, as minijinja's tokenizer with the default delimiters finds
/// them: comments and `{% raw %}` blocks are text, a closing delimiter inside a string literal
/// or inside brackets does not close a tag.
pub(crate) fn tags(source: &str) -> impl Iterator<Item = Tag> + '_ {
    let b = source.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while let Some(k) = memchr::memchr(b'{', b.get(i..)?) {
            let start = i + k;
            let marker = b.get(start + 1).copied();
            let body = start + 2 + usize::from(matches!(b.get(start + 2), Some(b'-' | b'+')));
            match marker {
                Some(b'#') => i = find(b, body, b"#}")? + 2,
                Some(b'%') if basic_tag(b, body, b"raw", false).is_some() => {
                    // Everything up to `{% endraw %}` is text.
                    let mut p = body;
                    i = loop {
                        let open = find(b, p, b"{%")?;
                        if let Some(end) = basic_tag(b, open + 2, b"endraw", true) {
                            break end;
                        }
                        p = open + 2;
                    };
                }
                Some(m @ (b'{' | b'%')) => {
                    let block = m == b'%';
                    let mut tag = scan_tag(b, body, if block { b"%}" } else { b"}}" });
                    tag.start = start;
                    tag.block = block;
                    if !block {
                        tag.first_word = FirstWord::Other;
                    }
                    i = tag.end;
                    return Some(tag);
                }
                _ => i = start + 1,
            }
        }
        None
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FirstWord {
    /// A statement with a body: `for`, `if`, `macro`, `set` without `=`...
    Open,
    /// `elif`: nests the rest of its `if` one level deeper.
    Elif,
    /// `endfor`, `endif`...
    End,
    Other,
}

/// Tokenizes one tag from `i` (after its opening delimiter and whitespace marker) to `close`
/// at bracket balance zero, like minijinja's tokenizer.
fn scan_tag(b: &[u8], mut i: usize, close: &[u8; 2]) -> Tag {
    let mut tag = Tag { start: 0, end: b.len(), closed: false, block: true, operators: 0, first_word: FirstWord::Other };
    let mut balance = 0isize;
    let mut first = true;
    // `{% set x = … %}` assigns; only `{% set x %}…{% endset %}` is a block.
    let (mut set, mut assigns) = (false, false);
    // The last token ends a value: a `(` or `[` after it is a call or subscript, a link of a
    // chain. Grouping parentheses and list literals are not: the parser bounds their nesting.
    let mut after_value = false;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if balance == 0 {
            let at = if matches!(c, b'-' | b'+') { i + 1 } else { i };
            if b[at..].starts_with(close) {
                if set && assigns {
                    tag.first_word = FirstWord::Other;
                }
                tag.end = at + 2;
                tag.closed = true;
                return tag;
            }
        }
        match c {
            b'\'' | b'"' => match string_end(b, i) {
                Some(end) => {
                    i = end;
                    after_value = true;
                }
                None => return tag,
            },
            b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                // Identifiers and numbers alike; a number's `.`, exponent sign or radix prefix
                // is left to count as an operator (a few too many never hurts).
                let n = b[i..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count();
                let word = &b[i..i + n];
                let operator = matches!(word, b"and" | b"or" | b"not" | b"in" | b"is" | b"if" | b"else");
                tag.operators += usize::from(operator);
                after_value = !operator;
                if first {
                    tag.first_word = match word {
                        b"for" | b"if" | b"macro" | b"call" | b"filter" | b"with" | b"block" | b"autoescape" | b"set" => FirstWord::Open,
                        b"elif" => FirstWord::Elif,
                        b"endfor" | b"endif" | b"endmacro" | b"endcall" | b"endfilter" | b"endwith" | b"endblock" | b"endautoescape" | b"endset" => {
                            FirstWord::End
                        }
                        _ => FirstWord::Other,
                    };
                    set = word == b"set";
                }
                i += n;
            }
            _ => {
                match c {
                    b'(' | b'[' | b'{' => balance += 1,
                    b')' | b']' | b'}' => balance -= 1,
                    _ => {}
                }
                // `//`, `**`, `==`, `!=`, `<=`, `>=` count once; `{`, `,`, `:`, `=` and the
                // closing brackets make no chain.
                let pair = matches!(b.get(i..i + 2), Some(b"//" | b"**" | b"==" | b"!=" | b"<=" | b">="));
                assigns |= c == b'=' && !pair && balance == 0;
                let postfix = after_value && matches!(c, b'(' | b'[');
                if pair || postfix || matches!(c, b'+' | b'-' | b'*' | b'/' | b'%' | b'~' | b'<' | b'>' | b'.' | b'|') {
                    tag.operators += 1;
                }
                after_value = !pair && matches!(c, b')' | b']' | b'}');
                i += if pair { 2 } else { 1 };
            }
        }
        first = false;
    }
    tag
}

/// The offset after the string literal opening at `i` (backslash escapes the next byte).
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let quote = b[i];
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            c if c == quote => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// `{% name %}` after its `{%` at `i`: the offset after its `%}`, as minijinja's tokenizer
/// recognizes `raw` and `endraw` (whitespace markers, ASCII whitespace).
fn basic_tag(b: &[u8], mut i: usize, name: &[u8], marker: bool) -> Option<usize> {
    if marker && matches!(b.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    if !b.get(i..).is_some_and(|rest| rest.starts_with(name)) {
        return None;
    }
    i += name.len();
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    if matches!(b.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    b.get(i..).is_some_and(|rest| rest.starts_with(b"%}")).then_some(i + 2)
}

fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(b.get(from..)?, needle).map(|k| from + k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(src: &str) -> usize {
        deepest_tag(src).depth
    }

    #[test]
    fn counts_operators_per_tag() {
        assert_eq!(depth("{{ a + b + c }}"), 2);
        assert_eq!(depth("{{ x.y[0]|upper }}{{ a }}"), 3);
        // The `if` block counts as one level for its own tag.
        assert_eq!(depth("{%- if a and not b -%}{% endif %}"), 4);
        assert_eq!(depth("{{ f()() }}"), 2);
        assert_eq!(depth("{{ x[0]['a'](1) }}"), 3);
        // Grouping and list literals nest within the parser's own bound.
        assert_eq!(depth("{{ ((a)) }}{{ [[1], [2]] }}{{ f((1)) }}"), 1);
        assert_eq!(depth("{{ a == b != c }}"), 2);
        // `//` and `**` are one operator each.
        assert_eq!(depth("{{ a // b ** c }}"), 2);
    }

    #[test]
    fn skips_strings_comments_and_raw() {
        assert_eq!(depth("{{ 'a + b }} + c' }}"), 0);
        assert_eq!(depth(r#"{{ "a\" + }}" ~ 'b\\' }}"#), 1);
        assert_eq!(depth("{# {{ a + b }} #}{{ x }}"), 0);
        assert_eq!(depth("{% raw %}{{ a + b }}{% endraw %}"), 0);
        assert_eq!(depth("{%- raw -%}{{ a+b }}{%- endraw +%}{{ a.b }}"), 1);
        // Text between tags is not an expression.
        assert_eq!(depth("a + b + c {{ x }} d.e.f"), 0);
    }

    #[test]
    fn a_brace_inside_a_tag_does_not_end_it() {
        // `}}` closing a dict literal is not the tag's end (bracket balance), as in minijinja.
        assert_eq!(depth("{{ {'a': {'b': 1}} + 1 + 1 }}"), 2);
    }

    #[test]
    fn elif_chains_nest() {
        let src = format!("{{% if a %}}{}{{% endif %}}{{{{ x }}}}", "{% elif b %}".repeat(50));
        assert_eq!(depth(&src), 51);
        // Closed blocks no longer count.
        assert_eq!(depth(&format!("{src}{{% if a %}}{{% elif b %}}{{% endif %}}")), 51);
        let d = deepest_tag("\n{% if a %}{% elif b %}{% if c %}{% elif d + e %}{% endif %}{% endif %}");
        assert_eq!((d.depth, d.line), (5, 2));
    }

    #[test]
    fn blocks_nest() {
        assert_eq!(depth("{% for a in b %}{% if c %}{{ x }}{% endif %}{% endfor %}{{ y }}"), 3);
        // An assigning `set` opens nothing; a `set` block does.
        assert_eq!(depth("{% set x = f(a=1) %}{{ z.w }}"), 1);
        assert_eq!(depth("{% set y %}{{ z.w }}{% endset %}"), 2);
        assert_eq!(depth("{% set x | f(a=1) %}{{ z }}{% endset %}"), 3);
    }

    #[test]
    fn unterminated_input_ends_the_scan() {
        assert_eq!(depth("{{ a + 'b"), 1);
        assert_eq!(depth("{{ a + b"), 1);
        assert_eq!(depth("{# a"), 0);
        assert_eq!(depth("{% raw %}{{ a + b }}"), 0);
        assert_eq!(depth("{"), 0);
        assert_eq!(depth("{{"), 0);
        assert_eq!(depth("{%"), 0);
        assert_eq!(depth("{%}"), 0);
    }
}
