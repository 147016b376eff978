//! Template sources: a `.jinja` file, a `tokenizer_config.json`, or GGUF metadata.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde_json::Value as Json;

use super::ChatTemplate;
use crate::error::{Error, ErrorKind};

/// One chat template of a source (`default`, `tool_use`, `rag`...).
///
/// ```
/// use autoparser::template::TemplateSource;
/// let config = r#"{"chat_template": [
///     {"name": "default", "template": "{{ messages[0].content }}"},
///     {"name": "tool_use", "template": "{{ tools | length }}"}
/// ], "bos_token": {"content": "<s>"}}"#;
/// let source = TemplateSource::from_tokenizer_config(config).unwrap();
/// let tool_use = source.get("tool_use").unwrap();
/// assert_eq!(tool_use.source, "{{ tools | length }}");
/// let t = tool_use.compile(&source.bos_token, &source.eos_token).unwrap();
/// assert_eq!(t.render(&serde_json::json!({"tools": [1, 2]})).unwrap(), "2");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedTemplate {
    /// The template's name; a single unnamed template is called `default`.
    pub name: String,
    /// The Jinja source.
    pub source: String,
}

impl NamedTemplate {
    /// Compile this template with the given special tokens.
    pub fn compile(&self, bos_token: &str, eos_token: &str) -> Result<ChatTemplate, Error> {
        ChatTemplate::from_source(&self.source, bos_token, eos_token)
    }
}

/// Every template a source holds, with its BOS/EOS tokens.
///
/// ```
/// use autoparser::{template::TemplateSource, ErrorKind};
/// let config = r#"{"chat_template": [
///     {"name": "default", "template": "{{ messages[0].content }}"},
///     {"name": "tool_use", "template": "{{ tools | length }}"}
/// ], "bos_token": {"content": "<s>"}}"#;
/// let source = TemplateSource::from_tokenizer_config(config).unwrap();
/// assert_eq!(source.templates.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["default", "tool_use"]);
/// assert_eq!((source.bos_token.as_str(), source.eos_token.as_str()), ("<s>", ""));
/// assert_eq!(source.default_template().unwrap().name, "default");
/// assert_eq!(source.get("rag").unwrap_err().kind(), ErrorKind::NotFound);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TemplateSource {
    /// Named templates, the default first when there is one.
    pub templates: Vec<NamedTemplate>,
    /// BOS token text (empty when the source has none).
    pub bos_token: String,
    /// EOS token text (empty when the source has none).
    pub eos_token: String,
}

impl TemplateSource {
    /// A bare Jinja source with no special tokens.
    ///
    /// ```
    /// use autoparser::template::TemplateSource;
    /// let source = TemplateSource::from_jinja("{{ messages[0].content }}");
    /// let t = source.default_template().unwrap().compile("", "").unwrap();
    /// assert_eq!(t.render(&serde_json::json!({"messages": [{"content": "Hi"}]})).unwrap(), "Hi");
    /// ```
    pub fn from_jinja(source: &str) -> TemplateSource {
        TemplateSource { templates: vec![NamedTemplate { name: "default".into(), source: source.into() }], ..Default::default() }
    }

    /// Parse a `tokenizer_config.json`: `chat_template` as a string or a list of
    /// `{"name", "template"}`; `bos_token`/`eos_token` as strings or `{"content": ..}` objects.
    ///
    /// ```
    /// use autoparser::{template::TemplateSource, ErrorKind};
    /// let source = TemplateSource::from_tokenizer_config(r#"{"chat_template": "{{ messages }}", "eos_token": "</s>"}"#).unwrap();
    /// assert_eq!((source.templates[0].name.as_str(), source.eos_token.as_str()), ("default", "</s>"));
    /// let err = TemplateSource::from_tokenizer_config(r#"{"eos_token": "</s>"}"#).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::InvalidSource);
    /// ```
    pub fn from_tokenizer_config(json: &str) -> Result<TemplateSource, Error> {
        let cfg: Json =
            serde_json::from_str(json).map_err(|e| Error::new(ErrorKind::InvalidSource, format!("tokenizer_config.json is not valid JSON: {e}")))?;
        let Json::Object(cfg) = cfg else {
            return Err(Error::new(ErrorKind::InvalidSource, "tokenizer_config.json is not a JSON object"));
        };
        let templates = match cfg.get("chat_template") {
            Some(Json::String(s)) => vec![NamedTemplate { name: "default".into(), source: s.clone() }],
            Some(Json::Array(items)) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let name = item.get("name").and_then(Json::as_str);
                    let src = item.get("template").and_then(Json::as_str);
                    match (name, src) {
                        (Some(n), Some(s)) => out.push(NamedTemplate { name: n.into(), source: s.into() }),
                        _ => return Err(Error::new(ErrorKind::InvalidSource, format!("chat_template[{i}] needs string fields \"name\" and \"template\""))),
                    }
                }
                if out.is_empty() {
                    return Err(Error::new(ErrorKind::InvalidSource, "chat_template is an empty list"));
                }
                out
            }
            Some(Json::Null) | None => {
                return Err(Error::new(ErrorKind::InvalidSource, "tokenizer_config.json has no chat_template (it may be in chat_template.jinja)"));
            }
            Some(other) => {
                return Err(Error::new(
                    ErrorKind::InvalidSource,
                    format!("chat_template must be a string or a list of named templates, not {}", json_kind(other)),
                ));
            }
        };
        Ok(TemplateSource {
            templates,
            bos_token: special_token(cfg.get("bos_token"), "bos_token")?,
            eos_token: special_token(cfg.get("eos_token"), "eos_token")?,
        })
    }

    /// Read templates and special tokens from GGUF bytes.
    ///
    /// ```
    /// use autoparser::template::TemplateSource;
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
    /// let bytes = gguf(&[("tokenizer.chat_template", "{{ messages[0].content }}"), ("tokenizer.chat_template.rag", "{{ documents }}")]);
    /// let source = TemplateSource::from_gguf_bytes(&bytes).unwrap();
    /// assert_eq!(source.templates.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["default", "rag"]);
    /// ```
    pub fn from_gguf_bytes(bytes: &[u8]) -> Result<TemplateSource, Error> {
        super::gguf::templates_from_gguf(std::io::Cursor::new(bytes)).map(TemplateSource::from_gguf)
    }

    fn from_gguf(g: super::gguf::GgufChat) -> TemplateSource {
        let templates = g.templates.into_iter().map(|(name, source)| NamedTemplate { name, source }).collect();
        TemplateSource { templates, bos_token: g.bos_token, eos_token: g.eos_token }
    }

    /// The template named `default`, else the first one.
    pub fn default_template(&self) -> Result<&NamedTemplate, Error> {
        self.templates
            .iter()
            .find(|t| t.name == "default")
            .or_else(|| self.templates.first())
            .ok_or_else(|| Error::new(ErrorKind::InvalidSource, "no chat template"))
    }

    /// The template called `name`.
    pub fn get(&self, name: &str) -> Result<&NamedTemplate, Error> {
        self.templates.iter().find(|t| t.name == name).ok_or_else(|| {
            Error::new(ErrorKind::NotFound, format!("{name:?} (available: {:?})", self.templates.iter().map(|t| t.name.as_str()).collect::<Vec<_>>()))
        })
    }
}

fn json_kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

fn special_token(v: Option<&Json>, field: &str) -> Result<String, Error> {
    match v {
        None | Some(Json::Null) => Ok(String::new()),
        Some(Json::String(s)) => Ok(s.clone()),
        Some(Json::Object(o)) => match o.get("content") {
            Some(Json::String(s)) => Ok(s.clone()),
            _ => Err(Error::new(ErrorKind::InvalidSource, format!("{field} object needs a string \"content\""))),
        },
        Some(other) => Err(Error::new(ErrorKind::InvalidSource, format!("{field} must be a string or an object, not {}", json_kind(other)))),
    }
}

/// Load every template of a file: `.gguf` (or GGUF magic), `.json` (a `tokenizer_config.json`;
/// when it has no `chat_template`, a sibling `chat_template.jinja` is used), else Jinja.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = std::env::temp_dir().join(format!("autoparser-load-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("tokenizer_config.json"), r#"{"eos_token": "</s>"}"#)?;
/// std::fs::write(dir.join("chat_template.jinja"), "{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}")?;
/// let source = autoparser::template::load(&dir.join("tokenizer_config.json"))?;
/// # std::fs::remove_dir_all(&dir)?;
/// assert_eq!(source.eos_token, "</s>");
/// assert!(source.default_template()?.source.contains("eos_token"));
/// # Ok(())
/// # }
/// ```
pub fn load(path: &Path) -> Result<TemplateSource, Error> {
    let io_err = |e: std::io::Error| Error::new(ErrorKind::Io, format!("{}: {e}", path.display())).with_source(e);
    let mut f = File::open(path).map_err(io_err)?;
    let mut magic = [0u8; 4];
    let is_gguf = {
        use std::io::Read;
        let n = f.read(&mut magic).map_err(io_err)?;
        n == 4 && &magic == b"GGUF"
    };
    if is_gguf || path.extension().is_some_and(|e| e == "gguf") {
        use std::io::Seek;
        f.rewind().map_err(io_err)?;
        return super::gguf::templates_from_gguf(BufReader::new(f)).map(TemplateSource::from_gguf);
    }
    drop(f);
    let text = std::fs::read_to_string(path).map_err(io_err)?;
    if path.extension().is_some_and(|e| e == "json") {
        // Newer HF repos keep the template beside the config, in `chat_template.jinja`.
        let sibling = path.with_file_name("chat_template.jinja");
        let cfg: Option<Json> = serde_json::from_str(&text).ok();
        let has_template = cfg.as_ref().and_then(|c| c.get("chat_template")).is_some_and(|t| !t.is_null());
        if !has_template && sibling.is_file() {
            let jinja = std::fs::read_to_string(&sibling).map_err(|e| Error::new(ErrorKind::Io, format!("{}: {e}", sibling.display())).with_source(e))?;
            let mut cfg = cfg.unwrap_or_default();
            if let Json::Object(m) = &mut cfg {
                m.insert("chat_template".into(), Json::String(jinja));
            }
            return TemplateSource::from_tokenizer_config(&cfg.to_string());
        }
        TemplateSource::from_tokenizer_config(&text)
    } else {
        Ok(TemplateSource::from_jinja(&text))
    }
}

/// Load and compile one template of a file: `name` or the default.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let path = std::env::temp_dir().join(format!("autoparser-load-named-{}.json", std::process::id()));
/// let config = r#"{"chat_template": [
///     {"name": "default", "template": "{{ messages[0].content }}"},
///     {"name": "tool_use", "template": "{{ tools | length }}"}
/// ], "bos_token": {"content": "<s>"}}"#;
/// std::fs::write(&path, config)?;
/// let t = autoparser::template::load_named(&path, Some("tool_use"))?;
/// # std::fs::remove_file(&path)?;
/// assert_eq!((t.source(), t.bos_token()), ("{{ tools | length }}", "<s>"));
/// # Ok(())
/// # }
/// ```
pub fn load_named(path: &Path, name: Option<&str>) -> Result<ChatTemplate, Error> {
    let src = load(path)?;
    let t = match name {
        Some(n) => src.get(n)?,
        None => src.default_template()?,
    };
    t.compile(&src.bos_token, &src.eos_token)
}
