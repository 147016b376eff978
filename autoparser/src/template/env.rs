//! The minijinja environment configured to behave like Hugging Face's jinja2 sandbox.
//!
//! HF renders chat templates with `ImmutableSandboxedEnvironment(trim_blocks=True,
//! lstrip_blocks=True, extensions=[loopcontrols, generation])`, a `tojson` filter that is
//! `json.dumps(ensure_ascii=False)`, and the globals `raise_exception` and `strftime_now`.

use minijinja::value::{Kwargs, Rest, StringInput, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, UndefinedBehavior, Value};

use super::pyfmt::{self, JsonOpts, ensure_room, fuel_bytes};

/// Context key holding the render clock (Unix seconds) that `strftime_now` reads.
pub(crate) const NOW_KEY: &str = "__chat_peg_now__";

/// Resource bounds for compiling and rendering untrusted templates: every template ends in a
/// result or an [`Error`](crate::Error) of kind
/// [`LimitExceeded`](crate::ErrorKind::LimitExceeded), naming the [`Limit`](crate::Limit), in
/// bounded time and memory. Set them with [`ChatTemplate::with_limits`](super::ChatTemplate::with_limits).
///
/// Fuel is minijinja's measure of work: one per instruction executed, and about one per 64 bytes
/// of data a render creates (output, strings, lists) or a filter processes. It is deterministic:
/// the same template and context always use the same fuel.
///
/// ```
/// use autoparser::template::{ChatTemplate, Limits};
/// use autoparser::Limit;
/// let limits = Limits { output_bytes: 64, ..Limits::default() };
/// let t = ChatTemplate::with_limits("{% for m in messages %}{{ m.content }}{% endfor %}", "", "", limits).unwrap();
/// assert_eq!(t.limits().output_bytes, 64);
/// let long = serde_json::json!({"messages": [{"role": "user", "content": "x".repeat(100)}]});
/// assert_eq!(t.render(&long).unwrap_err().limit(), Some(Limit::OutputSize));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The fuel of one render ([`Limit::Fuel`](crate::Limit::Fuel)). It bounds the render's time
    /// and its memory: about `fuel * 64` bytes, 256 MiB by default.
    pub fuel: u64,
    /// The fuel of all the renders of one analysis ([`Model::analyze`](crate::Model::analyze)), one
    /// prepared request ([`Model::prepare`](crate::Model::prepare)) or one capability detection
    /// ([`Limit::TotalFuel`](crate::Limit::TotalFuel)): about 1.5 s of the heaviest work by default.
    pub total_fuel: u64,
    /// Maximum nesting of macro calls / includes (minijinja recursion limit).
    pub recursion: usize,
    /// Maximum rendered output, in bytes.
    pub output_bytes: usize,
    /// Maximum nesting of one tag: the blocks open around it, their `elif`s, and its operators
    /// (`+`, `~`, `and`, `|filter`, `.attr`, `[i]`, calls...). Checked on the source before
    /// compiling ([`Limit::ExpressionDepth`](crate::Limit::ExpressionDepth)), because the
    /// template compiler recurses that deep: the default stays far below what overflows a
    /// 2 MiB thread stack, and raising it risks aborting the process instead of an error.
    pub expression_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { fuel: 4_000_000, total_fuel: 10_000_000, recursion: 500, output_bytes: 16 << 20, expression_depth: 256 }
    }
}

/// Error source attached by `raise_exception`, so callers can tell a refusal from a bug.
#[derive(Debug)]
pub(crate) struct Raised(pub String);

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Raised {}

/// Build the environment (no templates added yet).
pub(crate) fn build_env(limits: &Limits) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_syntax(minijinja::syntax::SyntaxConfig::builder().trim_blocks(true).lstrip_blocks(true).build().expect("default delimiters are valid"));
    env.set_undefined_behavior(UndefinedBehavior::Lenient);
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_fuel(Some(limits.fuel));
    env.set_recursion_limit(limits.recursion);
    env.set_formatter(|out, state, value| {
        let written = match value.as_str() {
            Some(s) => out.write_str(s),
            None => {
                let s = pyfmt::py_str(value, pyfmt::serialized_bytes(state))?;
                pyfmt::charge_serialized(state, &s)?;
                out.write_str(&s)
            }
        };
        written.map_err(|_| Error::new(ErrorKind::WriteFailure, "write failed"))
    });
    env.set_unknown_method_callback(call_method);

    env.add_filter("tojson", tojson);
    env.add_filter("string", |state: &State, v: &Value| {
        if v.kind() == ValueKind::String {
            return Ok(v.clone());
        }
        let s = pyfmt::py_str(v, pyfmt::serialized_bytes(state))?;
        pyfmt::charge_serialized(state, &s)?;
        Ok::<_, Error>(Value::from(s))
    });
    env.add_filter("join", join);
    env.add_filter("pprint", |state: &State, v: &Value| {
        let mut out = String::new();
        pyfmt::write_capped(&mut out, pyfmt::serialized_bytes(state), format_args!("{v:#?}"))?;
        pyfmt::charge_serialized(state, &out)?;
        Ok::<_, Error>(out)
    });
    env.add_filter("int", int_filter);
    env.add_filter("float", float_filter);
    env.add_filter("from_json", from_json);
    env.add_filter("trim", trim_filter);
    // jinja2's Undefined has len() 0; None and numbers have no length.
    env.add_filter("length", length);
    env.add_filter("count", length);
    env.add_filter("center", |s: String, width: Option<usize>| {
        let width = width.unwrap_or(80).min(1 << 16);
        call_center(&s, width)
    });
    env.add_filter("truncate", minijinja_contrib::filters::truncate);
    env.add_filter("wordcount", |s: String| {
        // jinja2: number of `\w+` runs.
        s.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).count()
    });
    env.add_filter("striptags", minijinja_contrib::filters::striptags);
    // markupsafe's entities (`&#39;`, `&#34;`), not minijinja's (`&#x27;`, `&quot;`); safe
    // strings pass as they are.
    let escape = |state: &State, v: &Value| -> Result<Value, Error> {
        if v.is_safe() {
            return Ok(v.clone());
        }
        let s = pyfmt::py_str(v, pyfmt::serialized_bytes(state))?;
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '"' => out.push_str("&#34;"),
                '\'' => out.push_str("&#39;"),
                c => out.push(c),
            }
        }
        Ok(Value::from_safe_string(out))
    };
    env.add_filter("escape", escape);
    env.add_filter("e", escape);
    env.add_filter("filesizeformat", minijinja_contrib::filters::filesizeformat);

    // jinja2's Undefined supports iter() and len(), so it is both iterable and a sequence;
    // None is neither.
    env.add_test("iterable", |v: &Value| {
        matches!(v.kind(), ValueKind::String | ValueKind::Seq | ValueKind::Map | ValueKind::Iterable | ValueKind::Bytes | ValueKind::Undefined)
    });
    env.add_test("sequence", |v: &Value| matches!(v.kind(), ValueKind::String | ValueKind::Seq | ValueKind::Map | ValueKind::Bytes | ValueKind::Undefined));
    env.add_test("mapping", |v: &Value| v.kind() == ValueKind::Map);
    env.add_test("string", |v: &Value| v.kind() == ValueKind::String);
    env.add_test("boolean", |v: &Value| v.kind() == ValueKind::Bool);
    env.add_test("integer", |v: &Value| v.kind() == ValueKind::Number && v.is_integer());
    env.add_test("float", |v: &Value| v.kind() == ValueKind::Number && !v.is_integer());

    env.add_function("raise_exception", |state: &State, msg: Option<Value>| -> Result<Value, Error> {
        let msg = match msg {
            Some(m) => pyfmt::py_str(&m, pyfmt::serialized_bytes(state))?,
            None => String::new(),
        };
        Err(Error::new(ErrorKind::InvalidOperation, msg.clone()).with_source(Raised(msg)))
    });
    env.add_function("strftime_now", |state: &State, fmt: String| -> Result<Value, Error> {
        let now = state.lookup(NOW_KEY).and_then(|v| i64::try_from(v).ok()).unwrap_or(0);
        // A directive writes at most 5 bytes per byte of the format.
        ensure_room("", fmt.len().saturating_mul(5), fuel_bytes(state))?;
        Ok(Value::from(strftime(&fmt, now)))
    });
    env
}

/// HF's `tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)`:
/// `json.dumps` with those arguments (positional in that order, or by keyword).
fn tojson(state: &State, value: &Value, args: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let limit = pyfmt::serialized_bytes(state);
    if args.len() > 4 {
        return Err(Error::new(ErrorKind::TooManyArguments, "tojson takes at most 4 arguments"));
    }
    let arg = |i: usize, name: &str| -> Result<Option<Value>, Error> { Ok(kwargs.get::<Option<Value>>(name)?.or_else(|| args.get(i).cloned())) };
    let mut opts = JsonOpts::default();
    if let Some(v) = arg(0, "ensure_ascii")? {
        opts.ensure_ascii = v.is_true();
    }
    let indent = arg(1, "indent")?;
    let separators = arg(2, "separators")?;
    if let Some(v) = arg(3, "sort_keys")? {
        opts.sort_keys = v.is_true();
    }
    kwargs.assert_all_used()?;
    if let Some(ind) = indent.filter(|v| !v.is_none() && !v.is_undefined()) {
        opts.indent = Some(match ind.kind() {
            ValueKind::String => ind.as_str().unwrap_or_default().to_string(),
            ValueKind::Number => " ".repeat(ind.as_usize().unwrap_or(0).min(64)),
            _ => return Err(Error::new(ErrorKind::InvalidOperation, "indent must be int or str")),
        });
        opts.item_sep = ",".into();
    }
    if let Some(sep) = separators.filter(|v| !v.is_none()) {
        let items: Vec<Value> = sep.try_iter()?.collect();
        match items.as_slice() {
            [a, b] => {
                opts.item_sep = pyfmt::py_str(a, limit)?;
                opts.key_sep = pyfmt::py_str(b, limit)?;
            }
            _ => return Err(Error::new(ErrorKind::InvalidOperation, "separators must be a pair")),
        }
    }
    let json = pyfmt::to_json(value, &opts, limit)?;
    pyfmt::charge_serialized(state, &json)?;
    Ok(Value::from(json))
}

/// The engine's `join(d='', attribute=None)`, paying for the result as it grows: the built-in
/// checks that only when the separator is not empty, so `([s] * 100)|join` could build
/// gigabytes before its fuel ran out.
fn join(state: &State, value: &Value, joiner: Option<StringInput<'_>>, attribute: Option<&str>, kwargs: Kwargs) -> Result<Value, Error> {
    let joiner = match joiner {
        Some(joiner) => Some(joiner),
        None => kwargs.get::<Option<StringInput<'_>>>("d")?,
    };
    let attribute = match attribute {
        Some(attribute) => Some(attribute),
        None => kwargs.get::<Option<&str>>("attribute")?,
    };
    kwargs.assert_all_used()?;
    let joiner = joiner.as_ref().map(StringInput::as_str).unwrap_or_default();
    let items = value.try_iter().map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("cannot join value of type {}", value.kind())).with_source(e))?;
    Ok(Value::from(join_items(state, items.checked(), joiner, attribute)?))
}

/// The items' text joined by `joiner`, refused once it grows past what the fuel left can pay.
fn join_items(state: &State, items: impl Iterator<Item = Result<Value, Error>>, joiner: &str, attribute: Option<&str>) -> Result<String, Error> {
    let limit = fuel_bytes(state);
    let mut out = String::new();
    for (i, item) in items.enumerate() {
        // The built-in's charge per item (half a fuel), rounded up.
        state.consume_fuel(1)?;
        let mut item = item?;
        if let Some(path) = attribute {
            item = attribute_path(&item, path);
        }
        if i > 0 {
            ensure_room(&out, joiner.len(), limit)?;
            out.push_str(joiner);
        }
        match item.as_str() {
            Some(s) => {
                ensure_room(&out, s.len(), limit)?;
                out.push_str(s);
            }
            None => pyfmt::write_capped(&mut out, limit, format_args!("{item}"))?,
        }
    }
    Ok(out)
}

/// `item.a.0.b` as the built-in filters look attributes up: numbers index, a missing step is
/// undefined.
fn attribute_path(item: &Value, path: &str) -> Value {
    let mut v = item.clone();
    for part in path.split('.') {
        let next = match part.parse::<usize>() {
            Ok(i) => v.get_item(&Value::from(i)),
            Err(_) => v.get_attr(part),
        };
        match next {
            Ok(n) if !n.is_undefined() => v = n,
            _ => return Value::UNDEFINED,
        }
    }
    v
}

/// jinja2's `int`: never raises, falls back to `default` (0).
fn int_filter(value: &Value, default: Option<Value>, base: Option<u32>) -> Value {
    let default = default.unwrap_or(Value::from(0));
    let base = base.unwrap_or(10);
    match value.kind() {
        ValueKind::Bool => Value::from(value.is_true() as i64),
        ValueKind::Number if value.is_integer() => value.clone(),
        ValueKind::Number => match f64::try_from(value.clone()) {
            Ok(f) if f.is_finite() => Value::from(f.trunc() as i64),
            _ => default,
        },
        ValueKind::String => {
            let s = value.as_str().unwrap_or_default().trim().replace('_', "");
            let (neg, digits) = match s.strip_prefix('-') {
                Some(r) => (true, r.to_string()),
                None => (false, s.strip_prefix('+').unwrap_or(&s).to_string()),
            };
            let lower = digits.to_ascii_lowercase();
            let digits = match base {
                16 => lower.strip_prefix("0x").unwrap_or(&lower).to_string(),
                8 => lower.strip_prefix("0o").unwrap_or(&lower).to_string(),
                2 => lower.strip_prefix("0b").unwrap_or(&lower).to_string(),
                _ => lower,
            };
            if (2..=36).contains(&base)
                && let Ok(i) = i64::from_str_radix(&digits, base)
            {
                return Value::from(if neg { -i } else { i });
            }
            match s.parse::<f64>() {
                Ok(f) if f.is_finite() => Value::from(f.trunc() as i64),
                _ => default,
            }
        }
        _ => default,
    }
}

/// jinja2's `float`: never raises, falls back to `default` (0.0).
fn float_filter(value: &Value, default: Option<Value>) -> Value {
    let default = default.unwrap_or(Value::from(0.0));
    match value.kind() {
        ValueKind::Bool => Value::from(value.is_true() as i64 as f64),
        ValueKind::Number => f64::try_from(value.clone()).map(Value::from).unwrap_or(default),
        ValueKind::String => {
            let s = value.as_str().unwrap_or_default().trim().to_ascii_lowercase();
            match s.as_str() {
                "inf" | "+inf" | "infinity" => Value::from(f64::INFINITY),
                "-inf" | "-infinity" => Value::from(f64::NEG_INFINITY),
                "nan" => Value::from(f64::NAN),
                _ => s.parse::<f64>().map(Value::from).unwrap_or(default),
            }
        }
        _ => default,
    }
}

fn from_json(state: &State, value: &Value) -> Result<Value, Error> {
    match value.as_str() {
        Some(s) => {
            // Parsed values are far larger than their text (`[[],[],…]`: two bytes each): pay
            // for every value the text can hold before building them.
            let values = s.bytes().filter(|b| matches!(b, b'[' | b'{' | b',' | b':')).count() + 1;
            state.consume_fuel((values as u64).saturating_mul(2))?;
            let v: serde_json::Value = serde_json::from_str(s).map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("from_json: invalid JSON: {e}")))?;
            Ok(Value::from(minijinja::value::Serde(&v)))
        }
        // Already structured (arguments passed as objects): nothing to parse.
        None => Ok(value.clone()),
    }
}

fn length(state: &State, value: &Value) -> Result<Value, Error> {
    if value.is_undefined() {
        return Ok(Value::from(0));
    }
    match value.len() {
        Some(n) => Ok(Value::from(n)),
        // Lazy sequences (range, filter results) are bounded: count them, paying for the items.
        None if value.kind() == ValueKind::Iterable => {
            let n = value.try_iter()?.count();
            state.consume_fuel((n / 2) as u64)?;
            Ok(Value::from(n))
        }
        None => Err(Error::new(ErrorKind::InvalidOperation, format!("object of type '{}' has no len()", value.kind()))),
    }
}

/// Python `str.center(width)`.
fn call_center(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n >= width {
        return s.to_string();
    }
    let pad = width - n;
    let left = pad / 2 + (pad & width & 1);
    format!("{}{s}{}", " ".repeat(left), " ".repeat(pad - left))
}

fn trim_filter(state: &State, value: &Value, chars: Option<String>) -> Result<Value, Error> {
    let s = match value.kind() {
        ValueKind::String => value.as_str().unwrap_or_default().to_string(),
        _ => pyfmt::py_str(value, pyfmt::serialized_bytes(state))?,
    };
    Ok(Value::from(match chars {
        Some(c) => s.trim_matches(|x| c.contains(x)).to_string(),
        None => s.trim().to_string(),
    }))
}

/// The replacement fields of a `str.format` string, and the sum of the numbers in their specs
/// (widths and precisions): what the formatted text can grow by.
fn format_fields(s: &str) -> (usize, usize) {
    let (mut fields, mut widths) = (0usize, 0usize);
    let mut rest = s;
    while let Some(i) = rest.find('{') {
        rest = &rest[i + 1..];
        if let Some(r) = rest.strip_prefix('{') {
            rest = r;
            continue;
        }
        let end = rest.find('}').unwrap_or(rest.len());
        fields += 1;
        if let Some((_, spec)) = rest[..end].split_once(':') {
            for number in spec.split(|c: char| !c.is_ascii_digit()).filter(|n| !n.is_empty()) {
                widths = widths.saturating_add(number.parse().unwrap_or(usize::MAX));
            }
        }
        rest = &rest[end..];
    }
    (fields, widths)
}

fn arg_str(args: &[Value], i: usize) -> Option<&str> {
    args.get(i).and_then(|v| v.as_str())
}

/// Python's `str.title`.
fn py_title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut after_letter = false;
    for c in s.chars() {
        if after_letter {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        after_letter = c.is_alphabetic();
    }
    out
}

fn unsafe_method(value: &Value, method: &str) -> Error {
    // HF renders in jinja2's ImmutableSandboxedEnvironment: mutating methods are refused.
    Error::new(ErrorKind::InvalidOperation, format!("access to attribute '{method}' of '{}' object is unsafe.", value.kind()))
}

/// Python methods on strings, lists and dicts beyond minijinja-contrib's pycompat set.
///
/// Methods pay for what they scan and build: the engine charges only the value they return, so
/// a method whose result is much larger than that (many parts, a repeated separator) pays ahead.
fn call_method(state: &mut State, value: &Value, method: &str, args: &[Value]) -> Result<Value, Error> {
    match value.kind() {
        ValueKind::String => {
            let s = value.as_str().unwrap_or_default();
            state.consume_fuel((s.len() / 64) as u64)?;
            match method {
                "join" => {
                    let (items,): (&Value,) = minijinja::value::from_args(args)?;
                    return Ok(Value::from(join_items(state, items.try_iter()?.checked(), s, None)?));
                }
                "format" => {
                    // Widths, precisions and repeated fields can ask for far more text than the
                    // format and its arguments hold.
                    let limit = fuel_bytes(state);
                    let (fields, widths) = format_fields(s);
                    let mut longest = 0;
                    for arg in args {
                        let len = match arg.as_str() {
                            Some(a) => a.len(),
                            None => {
                                let mut text = String::new();
                                pyfmt::write_capped(&mut text, limit, format_args!("{arg}"))?;
                                text.len()
                            }
                        };
                        longest = longest.max(len);
                    }
                    ensure_room(s, widths.saturating_add(fields.saturating_mul(longest)), limit)?;
                }
                "split" | "rsplit" | "splitlines" => {
                    // One fuel per part (a value and its string), before they exist.
                    let parts = match arg_str(args, 0).filter(|sep| !sep.is_empty() && method != "splitlines") {
                        Some(sep) => s.matches(sep).count(),
                        None => s.bytes().filter(u8::is_ascii_whitespace).count(),
                    };
                    state.consume_fuel(parts as u64 + 1)?;
                }
                _ => {}
            }
            match method {
                "removeprefix" => {
                    let p = arg_str(args, 0).unwrap_or_default();
                    return Ok(Value::from(s.strip_prefix(p).unwrap_or(s)));
                }
                "removesuffix" => {
                    let p = arg_str(args, 0).unwrap_or_default();
                    return Ok(Value::from(s.strip_suffix(p).unwrap_or(s)));
                }
                "partition" | "rpartition" => {
                    let sep = arg_str(args, 0).unwrap_or_default();
                    if sep.is_empty() {
                        return Err(Error::new(ErrorKind::InvalidOperation, "empty separator"));
                    }
                    let found = if method == "partition" { s.find(sep) } else { s.rfind(sep) };
                    let parts: [&str; 3] = match found {
                        Some(i) => [&s[..i], sep, &s[i + sep.len()..]],
                        None if method == "partition" => [s, "", ""],
                        None => ["", "", s],
                    };
                    return Ok(Value::from(parts.iter().map(|p| Value::from(*p)).collect::<Vec<_>>()));
                }
                "rsplit" => {
                    let sep = args.first().filter(|v| !v.is_none()).map(|v| v.as_str().unwrap_or_default());
                    let max = args.get(1).and_then(|v| i64::try_from(v.clone()).ok()).unwrap_or(-1);
                    let max = if max < 0 { usize::MAX } else { max as usize };
                    let mut parts: Vec<&str> = Vec::new();
                    match sep {
                        Some("") => return Err(Error::new(ErrorKind::InvalidOperation, "empty separator")),
                        Some(sep) => {
                            let mut it = s.rsplitn(max.saturating_add(1), sep);
                            parts.extend(&mut it);
                        }
                        None => {
                            // Python: split on whitespace runs from the right; the head keeps its
                            // leading whitespace once maxsplit is reached.
                            let mut rest = s.trim_end();
                            while !rest.is_empty() {
                                if parts.len() == max {
                                    parts.push(rest);
                                    break;
                                }
                                match rest.rfind(char::is_whitespace) {
                                    Some(i) => {
                                        let w = rest[i..].chars().next().map_or(1, char::len_utf8);
                                        parts.push(&rest[i + w..]);
                                        rest = rest[..i].trim_end();
                                    }
                                    None => {
                                        parts.push(rest);
                                        break;
                                    }
                                }
                            }
                        }
                    }
                    parts.reverse();
                    return Ok(Value::from(parts.into_iter().map(Value::from).collect::<Vec<_>>()));
                }
                "index" | "rindex" => {
                    let sub = arg_str(args, 0).unwrap_or_default();
                    let found = if method == "index" { s.find(sub) } else { s.rfind(sub) };
                    return match found {
                        Some(i) => Ok(Value::from(s[..i].chars().count())),
                        None => Err(Error::new(ErrorKind::InvalidOperation, "substring not found")),
                    };
                }
                "zfill" => {
                    let w = args.first().and_then(|v| v.as_usize()).unwrap_or(0).min(1 << 16);
                    let n = s.chars().count();
                    if n >= w {
                        return Ok(value.clone());
                    }
                    let (sign, rest) = match s.chars().next() {
                        Some(c @ ('+' | '-')) => (c.to_string(), &s[1..]),
                        _ => (String::new(), s),
                    };
                    return Ok(Value::from(format!("{sign}{}{rest}", "0".repeat(w - n))));
                }
                "ljust" | "rjust" | "center" => {
                    let w = args.first().and_then(|v| v.as_usize()).unwrap_or(0).min(1 << 16);
                    let fill = arg_str(args, 1).and_then(|f| f.chars().next()).unwrap_or(' ');
                    let n = s.chars().count();
                    if n >= w {
                        return Ok(value.clone());
                    }
                    let pad = w - n;
                    let (l, r) = match method {
                        "ljust" => (0, pad),
                        "rjust" => (pad, 0),
                        _ => {
                            let l = pad / 2 + (pad & w & 1);
                            (l, pad - l)
                        }
                    };
                    let f = fill.to_string();
                    return Ok(Value::from(format!("{}{s}{}", f.repeat(l), f.repeat(r))));
                }
                "swapcase" => {
                    let mut out = String::with_capacity(s.len());
                    for c in s.chars() {
                        if c.is_uppercase() {
                            out.extend(c.to_lowercase());
                        } else {
                            out.extend(c.to_uppercase());
                        }
                    }
                    return Ok(Value::from(out));
                }
                // Python's `str.title`: a letter after a letter is lowered, any other raised
                // (`it's` → `It'S`); the `title` filter splits words on spaces and brackets.
                "title" => return Ok(Value::from(py_title(s))),
                "istitle" => return Ok(Value::from(py_title(s) == s && s.chars().any(char::is_alphabetic))),
                "strip" | "lstrip" | "rstrip" if args.first().is_some_and(|a| a.is_none()) => {
                    return minijinja_contrib::pycompat::unknown_method_callback(state, value, method, &[]);
                }
                _ => {}
            }
        }
        ValueKind::Seq => match method {
            "index" | "count" => {
                state.consume_fuel((value.len().unwrap_or(0) / 2) as u64)?;
                if method == "count" {
                    return minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args);
                }
                let needle = args.first().cloned().unwrap_or_default();
                for (i, item) in value.try_iter()?.enumerate() {
                    if item == needle {
                        return Ok(Value::from(i));
                    }
                }
                return Err(Error::new(ErrorKind::InvalidOperation, "value is not in list"));
            }
            "append" | "extend" | "insert" | "pop" | "remove" | "clear" | "sort" | "reverse" => {
                return Err(unsafe_method(value, method));
            }
            _ => {}
        },
        ValueKind::Map => match method {
            "update" | "pop" | "popitem" | "setdefault" | "clear" => {
                return Err(unsafe_method(value, method));
            }
            "copy" => return Ok(value.clone()),
            _ => {}
        },
        _ => {}
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

const DAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const MONTHS: [&str; 12] = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/// Days since 1970-01-01 to (year, month 1-12, day 1-31) in the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// Python `time.strftime(fmt)` for the UTC instant `now` (Unix seconds), C locale.
pub fn strftime(fmt: &str, now: i64) -> String {
    let days = now.div_euclid(86_400);
    let secs = now.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let wday = (days + 3).rem_euclid(7) as usize; // 1970-01-01 was a Thursday; 0 = Monday
    const CUM: [u32; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let yday = CUM[(m - 1) as usize] + d + u32::from(m > 2 && is_leap(y));
    let mut out = String::new();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&y.to_string()),
            Some('y') => out.push_str(&format!("{:02}", y.rem_euclid(100))),
            Some('m') => out.push_str(&format!("{m:02}")),
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('e') => out.push_str(&format!("{d:2}")),
            Some('H') => out.push_str(&format!("{hh:02}")),
            Some('I') => out.push_str(&format!("{:02}", if hh % 12 == 0 { 12 } else { hh % 12 })),
            Some('p') => out.push_str(if hh < 12 { "AM" } else { "PM" }),
            Some('M') => out.push_str(&format!("{mm:02}")),
            Some('S') => out.push_str(&format!("{ss:02}")),
            Some('j') => out.push_str(&format!("{yday:03}")),
            Some('B') => out.push_str(MONTHS[(m - 1) as usize]),
            Some('b') | Some('h') => out.push_str(&MONTHS[(m - 1) as usize][..3]),
            Some('A') => out.push_str(DAYS[wday]),
            Some('a') => out.push_str(&DAYS[wday][..3]),
            Some('w') => out.push_str(&((wday + 1) % 7).to_string()),
            Some('u') => out.push_str(&(wday + 1).to_string()),
            Some('Z') => out.push_str("UTC"),
            Some('z') => out.push_str("+0000"),
            Some('F') => out.push_str(&format!("{y}-{m:02}-{d:02}")),
            Some('T') => out.push_str(&format!("{hh:02}:{mm:02}:{ss:02}")),
            Some('D') => out.push_str(&format!("{m:02}/{d:02}/{:02}", y.rem_euclid(100))),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Rewrite HF's `{% generation %}` / `{% endgeneration %}` (assistant-mask markers whose body
/// renders unchanged) into an always-true `if` block with the same whitespace control.
///
/// Tags are found as the engine finds them (not inside strings, comments or raw blocks); the
/// source is untrusted, so every slice is bounded by a tag the scan closed.
pub(crate) fn strip_generation_tags(source: &str) -> std::borrow::Cow<'_, str> {
    if !source.contains("generation") {
        return std::borrow::Cow::Borrowed(source);
    }
    let b = source.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    for tag in super::scan::tags(source).filter(|t| t.block && t.closed) {
        let modifier = |i: usize| matches!(b[i], b'-' | b'+').then(|| b[i] as char);
        let lmod = modifier(tag.start + 2);
        let inner_start = tag.start + 2 + usize::from(lmod.is_some());
        let close = tag.end - 2;
        // `{%-%}`: one modifier, on the left.
        let rmod = if close > inner_start { modifier(close - 1) } else { None };
        let inner = &source[inner_start..close - usize::from(rmod.is_some())];
        let keyword = match inner.trim_matches(|c: char| c.is_ascii_whitespace()) {
            "generation" => "if true",
            "endgeneration" => "endif",
            _ => continue,
        };
        out.push_str(&source[copied..tag.start]);
        let (l, r) = (lmod.map(String::from).unwrap_or_default(), rmod.map(String::from).unwrap_or_default());
        out.push_str(&format!("{{%{l} {keyword} {r}%}}"));
        copied = tag.end;
    }
    if copied == 0 {
        return std::borrow::Cow::Borrowed(source);
    }
    out.push_str(&source[copied..]);
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strftime_matches_python() {
        // 2025-01-01 12:00:00 UTC, a Wednesday.
        let t = 1_735_732_800;
        assert_eq!(strftime("%Y-%m-%d", t), "2025-01-01");
        assert_eq!(strftime("%d %b %Y", t), "01 Jan 2025");
        assert_eq!(strftime("%B %d, %Y", t), "January 01, 2025");
        assert_eq!(strftime("%A %H:%M:%S %j", t), "Wednesday 12:00:00 001");
        assert_eq!(strftime("%Y-%m-%d", 1_767_268_800), "2026-01-01");
        assert_eq!(strftime("%Y-%m-%d %a", 951_782_400), "2000-02-29 Tue");
    }

    #[test]
    fn format_fields_and_their_widths() {
        assert_eq!(format_fields("{} and {0:>10} {{literal}} {x:.3f} 2024"), (3, 13));
        assert_eq!(format_fields("{:{}}"), (1, 0));
        assert_eq!(format_fields("{:99999999999999999999999}"), (1, usize::MAX));
    }

    #[test]
    fn generation_tags_become_if_blocks() {
        assert_eq!(strip_generation_tags("a{%- generation %}b{% endgeneration -%}c"), "a{%- if true %}b{% endif -%}c");
        assert_eq!(strip_generation_tags("{{ x }}{% if y %}{% endif %}"), "{{ x }}{% if y %}{% endif %}");
        assert_eq!(strip_generation_tags("{%generation%}{%+ endgeneration+%}"), "{% if true %}{%+ endif +%}");
        // Not tags: in a string, a comment, a raw block.
        for text in ["{{ '{% generation %}' }}", "{# {% generation %} #}", "{% raw %}{% generation %}{% endraw %}"] {
            assert_eq!(strip_generation_tags(text), text);
        }
    }

    #[test]
    fn generation_rewrite_never_slices_out_of_bounds() {
        // Overlapping delimiters, lone modifiers, multi-byte characters next to them: none is a
        // generation tag.
        let odd = "{%}generation {%-%}generation {%-}generation%} {%é%}generation {%-é-%}generation {%generation generation{% \
                   {%%}generation {%- generation é%} {%é generation %} {%} {%-} {%+}generation%} {%-generation-é%}";
        for src in odd.split(' ') {
            assert_eq!(strip_generation_tags(src), src);
        }
    }
}
