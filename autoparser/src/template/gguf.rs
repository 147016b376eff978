//! A small, defensive GGUF metadata reader: the header and key/value section only.
//!
//! Layout (little-endian): magic `GGUF`, `u32` version (2 or 3), `u64` tensor count,
//! `u64` KV count, then KV pairs: `string` key, `u32` value type, value. Strings are a `u64`
//! byte length then UTF-8 bytes; arrays are a `u32` element type, a `u64` count, the elements.
//! Every length is bounds-checked against the file size before anything is allocated, and
//! large arrays (the tokenizer vocabulary) are not materialized: only their position is kept.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};

use crate::error::{Error, ErrorKind};

/// Longest string value accepted (chat templates are far smaller).
const MAX_STRING: u64 = 64 << 20;
/// Arrays longer than this are kept as a position only.
const INLINE_ARRAY: u64 = 256;
const MAX_KV: u64 = 1 << 20;
const MAX_ARRAY_DEPTH: usize = 4;

/// A metadata value.
///
/// ```
/// use autoparser::template::{read_gguf_metadata, GgufValue};
/// # // GGUF v3 with no tensors and string metadata (value type 8).
/// # fn gguf(kv: &[(&str, &str)]) -> Vec<u8> {
/// #     let mut b = b"GGUF".to_vec();
/// #     b.extend(3u32.to_le_bytes());
/// #     b.extend(0u64.to_le_bytes());
/// #     b.extend((kv.len() as u64).to_le_bytes());
/// #     let mut string = |b: &mut Vec<u8>, s: &str| { b.extend((s.len() as u64).to_le_bytes()); b.extend(s.as_bytes()); };
/// #     for (k, v) in kv {
/// #         string(&mut b, k);
/// #         b.extend(8u32.to_le_bytes());
/// #         string(&mut b, v);
/// #     }
/// #     b
/// # }
/// let meta = read_gguf_metadata(std::io::Cursor::new(gguf(&[("general.name", "Tiny")]))).unwrap();
/// let name = &meta.kv["general.name"];
/// assert_eq!((name, name.as_str(), name.as_u64()), (&GgufValue::String("Tiny".into()), Some("Tiny"), None));
/// assert_eq!(GgufValue::I64(7).as_u64(), Some(7));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum GgufValue {
    /// Any unsigned integer type.
    U64(u64),
    /// Any signed integer type.
    I64(i64),
    /// `f32` or `f64`.
    F64(f64),
    /// A boolean.
    Bool(bool),
    /// A UTF-8 string.
    String(String),
    /// A short array, materialized.
    Array(Vec<GgufValue>),
    /// A long array (e.g. the vocabulary), not materialized.
    LargeArray {
        /// GGUF type code of the elements.
        elem_type: u32,
        /// Element count.
        len: u64,
        /// File offset of the first element.
        offset: u64,
    },
}

impl GgufValue {
    /// The value as a string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            GgufValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value as an unsigned integer, if it is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            GgufValue::U64(v) => Some(v),
            GgufValue::I64(v) if v >= 0 => Some(v as u64),
            _ => None,
        }
    }
}

/// The metadata key/value section of a GGUF file.
///
/// ```
/// use autoparser::template::read_gguf_metadata;
/// # // GGUF v3 with no tensors and string metadata (value type 8).
/// # fn gguf(kv: &[(&str, &str)]) -> Vec<u8> {
/// #     let mut b = b"GGUF".to_vec();
/// #     b.extend(3u32.to_le_bytes());
/// #     b.extend(0u64.to_le_bytes());
/// #     b.extend((kv.len() as u64).to_le_bytes());
/// #     let mut string = |b: &mut Vec<u8>, s: &str| { b.extend((s.len() as u64).to_le_bytes()); b.extend(s.as_bytes()); };
/// #     for (k, v) in kv {
/// #         string(&mut b, k);
/// #         b.extend(8u32.to_le_bytes());
/// #         string(&mut b, v);
/// #     }
/// #     b
/// # }
/// let bytes = gguf(&[("general.architecture", "llama"), ("tokenizer.chat_template", "{{ messages[0].content }}")]);
/// let meta = read_gguf_metadata(std::io::Cursor::new(bytes)).unwrap();
/// assert_eq!(meta.version, 3);
/// assert_eq!(meta.kv.keys().collect::<Vec<_>>(), ["general.architecture", "tokenizer.chat_template"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct GgufMetadata {
    /// File format version (2 or 3).
    pub version: u32,
    /// Key/value pairs in key order.
    pub kv: BTreeMap<String, GgufValue>,
}

fn err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidSource, format!("invalid GGUF file: {}", msg.into() as String))
}

struct Cursor<R> {
    r: R,
    pos: u64,
    len: u64,
}

impl<R: Read + Seek> Cursor<R> {
    fn need(&self, n: u64, what: &str) -> Result<(), Error> {
        if self.len.saturating_sub(self.pos) < n {
            return Err(err(format!("truncated file: {what} needs {n} bytes at offset {}", self.pos)));
        }
        Ok(())
    }

    fn bytes<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Error> {
        self.need(N as u64, what)?;
        let mut b = [0u8; N];
        self.r.read_exact(&mut b).map_err(|e| err(format!("read error: {e}")))?;
        self.pos += N as u64;
        Ok(b)
    }

    fn u32(&mut self, what: &str) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(self.bytes(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, Error> {
        Ok(u64::from_le_bytes(self.bytes(what)?))
    }

    fn skip(&mut self, n: u64, what: &str) -> Result<(), Error> {
        self.need(n, what)?;
        self.r.seek(SeekFrom::Current(n as i64)).map_err(|e| err(format!("seek error: {e}")))?;
        self.pos += n;
        Ok(())
    }

    fn seek_to(&mut self, pos: u64) -> Result<(), Error> {
        if pos > self.len {
            return Err(err("offset past end of file"));
        }
        self.r.seek(SeekFrom::Start(pos)).map_err(|e| err(format!("seek error: {e}")))?;
        self.pos = pos;
        Ok(())
    }

    fn string(&mut self, what: &str) -> Result<String, Error> {
        let n = self.u64(what)?;
        if n > MAX_STRING {
            return Err(err(format!("{what}: string of {n} bytes is too long")));
        }
        self.need(n, what)?;
        let mut buf = vec![0u8; n as usize];
        self.r.read_exact(&mut buf).map_err(|e| err(format!("read error: {e}")))?;
        self.pos += n;
        String::from_utf8(buf).map_err(|_| err(format!("{what}: string is not UTF-8")))
    }

    fn skip_string(&mut self, what: &str) -> Result<(), Error> {
        let n = self.u64(what)?;
        self.skip(n, what)
    }

    /// Fixed size of a scalar type, `None` for strings/arrays.
    fn scalar_size(t: u32) -> Option<u64> {
        match t {
            0 | 1 | 7 => Some(1),
            2 | 3 => Some(2),
            4..=6 => Some(4),
            10..=12 => Some(8),
            _ => None,
        }
    }

    fn value(&mut self, t: u32, depth: usize, what: &str) -> Result<GgufValue, Error> {
        Ok(match t {
            0 => GgufValue::U64(self.bytes::<1>(what)?[0] as u64),
            1 => GgufValue::I64(self.bytes::<1>(what)?[0] as i8 as i64),
            2 => GgufValue::U64(u16::from_le_bytes(self.bytes(what)?) as u64),
            3 => GgufValue::I64(i16::from_le_bytes(self.bytes(what)?) as i64),
            4 => GgufValue::U64(self.u32(what)? as u64),
            5 => GgufValue::I64(i32::from_le_bytes(self.bytes(what)?) as i64),
            6 => GgufValue::F64(f32::from_le_bytes(self.bytes(what)?) as f64),
            7 => GgufValue::Bool(self.bytes::<1>(what)?[0] != 0),
            8 => GgufValue::String(self.string(what)?),
            9 => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(err(format!("{what}: arrays nested too deep")));
                }
                let elem = self.u32(what)?;
                let len = self.u64(what)?;
                let offset = self.pos;
                // Every element takes at least one byte: reject counts the file cannot hold.
                let min = Self::scalar_size(elem).unwrap_or(if elem == 8 { 8 } else { 12 });
                if len.checked_mul(min).is_none_or(|n| n > self.len - self.pos) {
                    return Err(err(format!("{what}: array of {len} elements exceeds the file")));
                }
                if len <= INLINE_ARRAY {
                    let mut items = Vec::with_capacity(len as usize);
                    for _ in 0..len {
                        items.push(self.value(elem, depth + 1, what)?);
                    }
                    GgufValue::Array(items)
                } else {
                    self.skip_array(elem, len, depth + 1, what)?;
                    GgufValue::LargeArray { elem_type: elem, len, offset }
                }
            }
            10 => GgufValue::U64(self.u64(what)?),
            11 => GgufValue::I64(i64::from_le_bytes(self.bytes(what)?)),
            12 => GgufValue::F64(f64::from_le_bytes(self.bytes(what)?)),
            other => return Err(err(format!("{what}: unknown value type {other}"))),
        })
    }

    fn skip_array(&mut self, elem: u32, len: u64, depth: usize, what: &str) -> Result<(), Error> {
        if let Some(size) = Self::scalar_size(elem) {
            let n = len.checked_mul(size).ok_or_else(|| err(format!("{what}: array too large")))?;
            return self.skip(n, what);
        }
        for _ in 0..len {
            match elem {
                8 => self.skip_string(what)?,
                9 => {
                    if depth >= MAX_ARRAY_DEPTH {
                        return Err(err(format!("{what}: arrays nested too deep")));
                    }
                    let e = self.u32(what)?;
                    let n = self.u64(what)?;
                    self.skip_array(e, n, depth + 1, what)?;
                }
                other => return Err(err(format!("{what}: unknown value type {other}"))),
            }
        }
        Ok(())
    }
}

/// Read a GGUF file's header and metadata (tensor data is never read).
///
/// ```
/// use autoparser::{template::read_gguf_metadata, ErrorKind};
/// # // GGUF v3 with no tensors and string metadata (value type 8).
/// # fn gguf(kv: &[(&str, &str)]) -> Vec<u8> {
/// #     let mut b = b"GGUF".to_vec();
/// #     b.extend(3u32.to_le_bytes());
/// #     b.extend(0u64.to_le_bytes());
/// #     b.extend((kv.len() as u64).to_le_bytes());
/// #     let mut string = |b: &mut Vec<u8>, s: &str| { b.extend((s.len() as u64).to_le_bytes()); b.extend(s.as_bytes()); };
/// #     for (k, v) in kv {
/// #         string(&mut b, k);
/// #         b.extend(8u32.to_le_bytes());
/// #         string(&mut b, v);
/// #     }
/// #     b
/// # }
/// let meta = read_gguf_metadata(std::io::Cursor::new(gguf(&[("tokenizer.chat_template", "{{ bos_token }}")]))).unwrap();
/// assert_eq!(meta.kv["tokenizer.chat_template"].as_str(), Some("{{ bos_token }}"));
/// let truncated = &gguf(&[("a", "b")])[..30];
/// assert_eq!(read_gguf_metadata(std::io::Cursor::new(truncated)).unwrap_err().kind(), ErrorKind::InvalidSource);
/// ```
pub fn read_gguf_metadata<R: Read + Seek>(r: R) -> Result<GgufMetadata, Error> {
    read_inner(r).map(|(m, _)| m)
}

fn read_inner<R: Read + Seek>(mut r: R) -> Result<(GgufMetadata, Cursor<R>), Error> {
    let len = r.seek(SeekFrom::End(0)).map_err(|e| err(format!("seek error: {e}")))?;
    r.seek(SeekFrom::Start(0)).map_err(|e| err(format!("seek error: {e}")))?;
    let mut c = Cursor { r, pos: 0, len };
    if &c.bytes::<4>("magic")? != b"GGUF" {
        return Err(err("not a GGUF file (bad magic)"));
    }
    let version = c.u32("version")?;
    if version != 2 && version != 3 {
        return Err(err(format!("unsupported GGUF version {version} (need 2 or 3)")));
    }
    let _tensors = c.u64("tensor count")?;
    let n_kv = c.u64("kv count")?;
    if n_kv > MAX_KV {
        return Err(err(format!("implausible metadata count {n_kv}")));
    }
    let mut kv = BTreeMap::new();
    for i in 0..n_kv {
        let key = c.string(&format!("key {i}"))?;
        let t = c.u32(&key)?;
        let v = c.value(t, 0, &key)?;
        kv.insert(key, v);
    }
    Ok((GgufMetadata { version, kv }, c))
}

/// Token text at `index` of a (large or inline) string array.
fn token_at<R: Read + Seek>(c: &mut Cursor<R>, arr: &GgufValue, index: u64) -> Result<Option<String>, Error> {
    match arr {
        GgufValue::Array(items) => Ok(items.get(index as usize).and_then(|v| v.as_str()).map(String::from)),
        GgufValue::LargeArray { elem_type: 8, len, offset } => {
            if index >= *len {
                return Ok(None);
            }
            c.seek_to(*offset)?;
            for _ in 0..index {
                c.skip_string("token")?;
            }
            Ok(Some(c.string("token")?))
        }
        _ => Ok(None),
    }
}

/// What GGUF metadata holds of a chat: its templates (name, source) and special tokens. Plain
/// data, so that this reader does not depend on the sources built from it.
#[derive(Debug)]
pub(crate) struct GgufChat {
    pub templates: Vec<(String, String)>,
    pub bos_token: String,
    pub eos_token: String,
}

/// Chat templates and special tokens from GGUF metadata.
pub(crate) fn templates_from_gguf<R: Read + Seek>(r: R) -> Result<GgufChat, Error> {
    let (meta, mut c) = read_inner(r)?;
    let mut templates = Vec::new();
    if let Some(src) = meta.kv.get("tokenizer.chat_template").and_then(|v| v.as_str()) {
        templates.push(("default".to_owned(), src.to_string()));
    }
    for (k, v) in &meta.kv {
        if let (Some(name), Some(src)) = (k.strip_prefix("tokenizer.chat_template."), v.as_str()) {
            templates.push((name.to_string(), src.to_string()));
        }
    }
    if templates.is_empty() {
        return Err(Error::new(ErrorKind::InvalidSource, "GGUF metadata has no tokenizer.chat_template"));
    }
    let mut token = |key: &str| -> Result<String, Error> {
        let (Some(id), Some(tokens)) = (meta.kv.get(key).and_then(|v| v.as_u64()), meta.kv.get("tokenizer.ggml.tokens")) else {
            return Ok(String::new());
        };
        Ok(token_at(&mut c, tokens, id)?.unwrap_or_default())
    };
    let bos_token = token("tokenizer.ggml.bos_token_id")?;
    let eos_token = token("tokenizer.ggml.eos_token_id")?;
    Ok(GgufChat { templates, bos_token, eos_token })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Minimal GGUF writer for tests.
    pub(crate) struct Writer(pub Vec<u8>);

    impl Writer {
        pub fn new(version: u32, n_kv: u64) -> Writer {
            let mut w = Writer(b"GGUF".to_vec());
            w.0.extend(version.to_le_bytes());
            w.0.extend(0u64.to_le_bytes());
            w.0.extend(n_kv.to_le_bytes());
            w
        }
        pub fn str(&mut self, s: &str) {
            self.0.extend((s.len() as u64).to_le_bytes());
            self.0.extend(s.as_bytes());
        }
        pub fn kv_str(&mut self, k: &str, v: &str) {
            self.str(k);
            self.0.extend(8u32.to_le_bytes());
            self.str(v);
        }
        pub fn kv_u32(&mut self, k: &str, v: u32) {
            self.str(k);
            self.0.extend(4u32.to_le_bytes());
            self.0.extend(v.to_le_bytes());
        }
        pub fn kv_str_array(&mut self, k: &str, items: &[&str]) {
            self.str(k);
            self.0.extend(9u32.to_le_bytes());
            self.0.extend(8u32.to_le_bytes());
            self.0.extend((items.len() as u64).to_le_bytes());
            for s in items {
                self.str(s);
            }
        }
    }

    pub(crate) fn sample(n_tokens: usize) -> Vec<u8> {
        let mut w = Writer::new(3, 6);
        w.kv_str("general.architecture", "llama");
        w.kv_str("tokenizer.chat_template", "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}");
        w.kv_str("tokenizer.chat_template.tool_use", "TOOLS{{ eos_token }}");
        let mut toks: Vec<String> = (0..n_tokens).map(|i| format!("tok{i}")).collect();
        toks[1] = "<s>".into();
        toks[2] = "</s>".into();
        let refs: Vec<&str> = toks.iter().map(|s| s.as_str()).collect();
        w.kv_str_array("tokenizer.ggml.tokens", &refs);
        w.kv_u32("tokenizer.ggml.bos_token_id", 1);
        w.kv_u32("tokenizer.ggml.eos_token_id", 2);
        w.0
    }

    #[test]
    fn reads_templates_and_tokens() {
        for n in [10, 1000] {
            let bytes = sample(n);
            let src = templates_from_gguf(std::io::Cursor::new(&bytes)).unwrap();
            assert_eq!(src.bos_token, "<s>");
            assert_eq!(src.eos_token, "</s>");
            let names: Vec<_> = src.templates.iter().map(|(name, _)| name.as_str()).collect();
            assert_eq!(names, ["default", "tool_use"]);
            let meta = read_gguf_metadata(std::io::Cursor::new(&bytes)).unwrap();
            assert_eq!(meta.version, 3);
            assert_eq!(meta.kv["general.architecture"].as_str(), Some("llama"));
        }
    }

    #[test]
    fn corrupt_files_are_errors_not_panics() {
        let bytes = sample(1000);
        // Every truncation point fails cleanly.
        for cut in (0..bytes.len()).step_by(7) {
            let r = templates_from_gguf(std::io::Cursor::new(&bytes[..cut]));
            assert!(r.is_err(), "cut at {cut}");
        }
        // Huge lengths and counts are rejected before allocating.
        let mut w = Writer::new(3, 1);
        w.0.extend(u64::MAX.to_le_bytes());
        assert!(read_gguf_metadata(std::io::Cursor::new(&w.0)).is_err());
        let mut w = Writer::new(3, 1);
        w.str("k");
        w.0.extend(9u32.to_le_bytes());
        w.0.extend(8u32.to_le_bytes());
        w.0.extend((u64::MAX / 2).to_le_bytes());
        assert!(read_gguf_metadata(std::io::Cursor::new(&w.0)).is_err());
        let w = Writer::new(3, u64::MAX);
        assert!(read_gguf_metadata(std::io::Cursor::new(&w.0)).is_err());
        // Bad magic, bad version, unknown type.
        assert!(read_gguf_metadata(std::io::Cursor::new(b"GGUX\x03\0\0\0")).is_err());
        assert!(read_gguf_metadata(std::io::Cursor::new(&Writer::new(1, 0).0)).is_err());
        let mut w = Writer::new(3, 1);
        w.str("k");
        w.0.extend(99u32.to_le_bytes());
        assert!(read_gguf_metadata(std::io::Cursor::new(&w.0)).is_err());
        // Flipping bytes anywhere never panics.
        for i in 0..bytes.len().min(4000) {
            let mut b = bytes.clone();
            b[i] ^= 0xff;
            let _ = templates_from_gguf(std::io::Cursor::new(&b));
        }
    }
}
