//! Message and delta types with OpenAI chat-completions field names.
//!
//! [`ChatMessage`] is what a whole parse yields; [`ChatDelta`] is one streaming increment, shaped
//! like `choices[0].delta` of a `chat.completion.chunk`. Tool calls serialize in OpenAI's nested
//! form (`{"id", "type": "function", "function": {"name", "arguments"}}`) and deserialize from it
//! or from the flat `{"name", "arguments", "id"}` form the golden corpus uses.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One tool call of an assistant message. `arguments` is JSON text, as in the OpenAI API.
///
/// ```
/// use peg_runtime::chat::ChatToolCall;
/// use serde_json::json;
/// let call = ChatToolCall { id: "call_0".into(), name: "now".into(), arguments: "{}".into() };
/// let wire = json!({"id": "call_0", "type": "function", "function": {"name": "now", "arguments": "{}"}});
/// assert_eq!(serde_json::to_value(&call).unwrap(), wire);
/// // Read back from the wire form, or from a flat one with the arguments as an object.
/// assert_eq!(serde_json::from_value::<ChatToolCall>(wire).unwrap(), call);
/// let flat: ChatToolCall = serde_json::from_value(json!({"name": "now", "arguments": {"tz": "UTC"}})).unwrap();
/// assert_eq!(flat.arguments, r#"{"tz":"UTC"}"#);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatToolCall {
    /// The call id: taken from the model output when it carries one, else generated.
    pub id: String,
    /// The function name.
    pub name: String,
    /// The arguments as JSON text (raw text so far for a partial call).
    pub arguments: String,
}

#[derive(Serialize, Deserialize)]
struct FunctionWire {
    #[serde(default)]
    name: String,
    #[serde(default)]
    arguments: String,
}

#[derive(Serialize)]
struct ToolCallOut<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionRef<'a>,
}

#[derive(Serialize)]
struct FunctionRef<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Deserialize)]
struct ToolCallIn {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionWire>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<ArgumentsIn>,
}

/// Arguments arrive as JSON text in OpenAI payloads, but some producers put the object itself.
#[derive(Deserialize)]
#[serde(untagged)]
enum ArgumentsIn {
    Text(String),
    Value(serde_json::Value),
}

impl ArgumentsIn {
    fn into_text(self) -> String {
        match self {
            ArgumentsIn::Text(s) => s,
            ArgumentsIn::Value(v) => v.to_string(),
        }
    }
}

impl Serialize for ChatToolCall {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ToolCallOut { id: &self.id, kind: "function", function: FunctionRef { name: &self.name, arguments: &self.arguments } }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ChatToolCall {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ChatToolCall, D::Error> {
        let w = ToolCallIn::deserialize(d)?;
        let (name, arguments) = match w.function {
            Some(f) => (f.name, f.arguments),
            None => (w.name.unwrap_or_default(), w.arguments.map(ArgumentsIn::into_text).unwrap_or_default()),
        };
        Ok(ChatToolCall { id: w.id.unwrap_or_default(), name, arguments })
    }
}

fn assistant() -> String {
    "assistant".to_owned()
}

/// An assistant message: content, reasoning and tool calls.
///
/// ```
/// use peg_runtime::chat::{ChatMessage, ChatToolCall};
/// let mut m = ChatMessage::default();
/// m.content = "Hi".into();
/// m.tool_calls.push(ChatToolCall { id: "call_0".into(), name: "f".into(), arguments: "{}".into() });
/// let v = serde_json::to_value(&m).unwrap();
/// assert_eq!(v["role"], "assistant");
/// assert_eq!(v["tool_calls"][0]["function"]["name"], "f");
/// let back: ChatMessage = serde_json::from_value(v).unwrap();
/// assert_eq!(back, m);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Always `assistant` for parsed output.
    #[serde(default = "assistant")]
    pub role: String,
    /// The visible answer text.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub content: String,
    /// The reasoning ("thinking") text, empty when the output has none.
    #[serde(default, skip_serializing_if = "String::is_empty", deserialize_with = "null_as_empty")]
    pub reasoning_content: String,
    /// Tool calls in output order.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub tool_calls: Vec<ChatToolCall>,
}

impl Default for ChatMessage {
    fn default() -> ChatMessage {
        ChatMessage { role: assistant(), content: String::new(), reasoning_content: String::new(), tool_calls: Vec::new() }
    }
}

fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

fn null_as_default<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

impl ChatMessage {
    /// Whether this message extends `earlier`, as the message of a longer output extends that
    /// of its prefix (partial parses and streams only add): text and argument texts only grow,
    /// calls keep their name and their id (a call announced before its id, where the format
    /// writes the id after the arguments, gets it later).
    ///
    /// ```
    /// use peg_runtime::chat::ChatMessage;
    /// let earlier = ChatMessage { content: "Hel".into(), ..Default::default() };
    /// let later = ChatMessage { content: "Hello".into(), ..Default::default() };
    /// assert!(later.extends(&earlier) && !earlier.extends(&later));
    /// ```
    pub fn extends(&self, earlier: &ChatMessage) -> bool {
        self.content.starts_with(&earlier.content)
            && self.reasoning_content.starts_with(&earlier.reasoning_content)
            && earlier.tool_calls.len() <= self.tool_calls.len()
            && earlier
                .tool_calls
                .iter()
                .zip(&self.tool_calls)
                .all(|(a, b)| (a.id.is_empty() || a.id == b.id) && a.name == b.name && b.arguments.starts_with(&a.arguments))
    }

    /// Appends one streaming delta: text is concatenated, a tool call is created at its first
    /// appearance (`index`), later fragments extend its arguments. Calls appear in index order
    /// in a stream, so a fragment whose index skips ahead of the next new call is ignored.
    ///
    /// ```
    /// use peg_runtime::chat::{ChatDelta, ChatMessage, ToolCallDelta};
    /// let mut m = ChatMessage::default();
    /// m.apply(&ChatDelta::content("Hel"));
    /// m.apply(&ChatDelta::content("lo"));
    /// m.apply(&ChatDelta::tool_call(ToolCallDelta::header(0, "call_0", "f")));
    /// m.apply(&ChatDelta::tool_call(ToolCallDelta::arguments(0, "{}")));
    /// assert_eq!(m.content, "Hello");
    /// assert_eq!(m.tool_calls[0].arguments, "{}");
    /// ```
    pub fn apply(&mut self, delta: &ChatDelta) {
        if let Some(c) = &delta.content {
            self.apply_ref(DeltaRef::Content(c));
        }
        if let Some(r) = &delta.reasoning_content {
            self.apply_ref(DeltaRef::Reasoning(r));
        }
        for t in &delta.tool_calls {
            let (id, name, arguments) = (t.id.as_deref(), t.name.as_deref(), t.arguments.as_deref());
            self.apply_ref(DeltaRef::ToolCall { index: t.index, id, name, arguments });
        }
    }

    /// The message all `deltas` add up to.
    ///
    /// ```
    /// use peg_runtime::chat::{ChatDelta, ChatMessage, ToolCallDelta};
    /// let deltas = [
    ///     ChatDelta::reasoning("Hm."),
    ///     ChatDelta::tool_call(ToolCallDelta::header(0, "call_0", "now")),
    ///     ChatDelta::tool_call(ToolCallDelta::arguments(0, "{}")),
    /// ];
    /// let m = ChatMessage::from_deltas(&deltas);
    /// assert_eq!((m.reasoning_content.as_str(), m.tool_calls[0].arguments.as_str()), ("Hm.", "{}"));
    /// ```
    pub fn from_deltas<'d>(deltas: impl IntoIterator<Item = &'d ChatDelta>) -> ChatMessage {
        let mut m = ChatMessage::default();
        for d in deltas {
            m.apply(d);
        }
        m
    }
}

/// A tool-call fragment of a streaming delta, as OpenAI sends it: `index` always, `id` and
/// `name` on the call's first fragment, then pieces of `arguments` text. One exception: in
/// formats that write a call's id after its arguments (Mistral Nemo's
/// `{"name": .., "arguments": {..}, "id": ".."}`), the arguments stream before the id is known,
/// so the first fragment has no id and a later fragment carries it alone (clients that
/// accumulate fragments field by field, as OpenAI's SDKs do, get the whole call).
///
/// ```
/// use peg_runtime::chat::ToolCallDelta;
/// use serde_json::json;
/// let first = ToolCallDelta::header(0, "call_0", "get_time");
/// assert_eq!(serde_json::to_value(&first).unwrap(), json!({"index": 0, "id": "call_0", "type": "function", "function": {"name": "get_time"}}));
/// let next = ToolCallDelta::arguments(0, r#"{"tz": "#);
/// assert_eq!(serde_json::to_value(&next).unwrap(), json!({"index": 0, "function": {"arguments": "{\"tz\": "}}));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCallDelta {
    /// Position of the call in the message's `tool_calls`.
    pub index: usize,
    /// The call id (first fragment, or a later one of its own; see above).
    pub id: Option<String>,
    /// The function name (first fragment only).
    pub name: Option<String>,
    /// The next piece of argument text.
    pub arguments: Option<String>,
}

impl ToolCallDelta {
    /// The first fragment of a call: its id (none when empty: it comes later) and name.
    pub fn header(index: usize, id: impl Into<String>, name: impl Into<String>) -> ToolCallDelta {
        let id: String = id.into();
        ToolCallDelta { index, id: (!id.is_empty()).then_some(id), name: Some(name.into()), arguments: None }
    }

    /// The id of a call announced without one.
    pub fn late_id(index: usize, id: impl Into<String>) -> ToolCallDelta {
        ToolCallDelta { index, id: Some(id.into()), name: None, arguments: None }
    }

    /// A piece of argument text.
    pub fn arguments(index: usize, text: impl Into<String>) -> ToolCallDelta {
        ToolCallDelta { index, id: None, name: None, arguments: Some(text.into()) }
    }
}

#[derive(Serialize, Deserialize)]
struct ToolCallDeltaWire {
    index: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    function: Option<FunctionDeltaWire>,
}

#[derive(Serialize, Deserialize)]
struct FunctionDeltaWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    arguments: Option<String>,
}

/// Whether a fragment says the call's `type`: its first fragment (the name) and the one that
/// brings its id.
fn announces_call(id: Option<&str>, name: Option<&str>) -> bool {
    id.is_some() || name.is_some()
}

// Every fragment carries `function`, empty when it brings only a late id: OpenAI's streams always
// do, and its Python SDK's stream helper asserts it for each fragment of a function call.
impl Serialize for ToolCallDelta {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let function = Some(FunctionDeltaWire { name: self.name.clone(), arguments: self.arguments.clone() });
        let kind = announces_call(self.id.as_deref(), self.name.as_deref()).then(|| "function".to_owned());
        ToolCallDeltaWire { index: self.index, id: self.id.clone(), kind, function }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolCallDelta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ToolCallDelta, D::Error> {
        let w = ToolCallDeltaWire::deserialize(d)?;
        let (name, arguments) = w.function.map(|f| (f.name, f.arguments)).unwrap_or_default();
        Ok(ToolCallDelta { index: w.index, id: w.id, name, arguments })
    }
}

/// One streaming increment, shaped like an OpenAI `chat.completion.chunk`'s `choices[0].delta`.
///
/// The stream parser fills exactly one of the fields per delta.
///
/// ```
/// use peg_runtime::chat::{ChatDelta, ToolCallDelta};
/// let d = ChatDelta::tool_call(ToolCallDelta::arguments(1, "{\"a\""));
/// assert_eq!(
///     serde_json::to_string(&d).unwrap(),
///     r#"{"tool_calls":[{"index":1,"function":{"arguments":"{\"a\""}}]}"#
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatDelta {
    /// A piece of content text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// A piece of reasoning text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Tool-call fragments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallDelta>,
}

impl ChatDelta {
    /// A content piece.
    pub fn content(text: impl Into<String>) -> ChatDelta {
        ChatDelta { content: Some(text.into()), ..ChatDelta::default() }
    }

    /// A reasoning piece.
    pub fn reasoning(text: impl Into<String>) -> ChatDelta {
        ChatDelta { reasoning_content: Some(text.into()), ..ChatDelta::default() }
    }

    /// A tool-call fragment.
    pub fn tool_call(t: ToolCallDelta) -> ChatDelta {
        ChatDelta { tool_calls: vec![t], ..ChatDelta::default() }
    }

    /// Whether the delta carries nothing.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.content.is_none() && self.reasoning_content.is_none() && self.tool_calls.is_empty()
    }
}

/// One streaming increment borrowed from a [`DeltaBuffer`]: the same information as a
/// [`ChatDelta`] (exactly one field set), without owning its text.
///
/// It serializes exactly like the equivalent [`ChatDelta`], so a server can write it straight
/// into a reused output buffer:
///
/// ```
/// use peg_runtime::chat::{ChatDelta, DeltaRef, ToolCallDelta};
/// let d = DeltaRef::ToolCall { index: 0, id: Some("call_0"), name: Some("f"), arguments: Some("{") };
/// let owned = ChatDelta::tool_call(ToolCallDelta {
///     index: 0,
///     id: Some("call_0".into()),
///     name: Some("f".into()),
///     arguments: Some("{".into()),
/// });
/// assert_eq!(d.to_delta(), owned);
/// assert_eq!(serde_json::to_string(&d).unwrap(), serde_json::to_string(&owned).unwrap());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeltaRef<'a> {
    /// A piece of content text.
    Content(&'a str),
    /// A piece of reasoning text.
    Reasoning(&'a str),
    /// A tool-call fragment: `id` and `name` on the call's first fragment, then argument text.
    ToolCall {
        /// Position of the call in the message's `tool_calls`.
        index: usize,
        /// The call id (first fragment, or a later one of its own: see [`ToolCallDelta`]).
        id: Option<&'a str>,
        /// The function name (first fragment only).
        name: Option<&'a str>,
        /// The next piece of argument text.
        arguments: Option<&'a str>,
    },
}

impl DeltaRef<'_> {
    /// The owned delta.
    pub fn to_delta(&self) -> ChatDelta {
        match *self {
            DeltaRef::Content(s) => ChatDelta::content(s),
            DeltaRef::Reasoning(s) => ChatDelta::reasoning(s),
            DeltaRef::ToolCall { index, id, name, arguments } => {
                ChatDelta::tool_call(ToolCallDelta { index, id: id.map(str::to_owned), name: name.map(str::to_owned), arguments: arguments.map(str::to_owned) })
            }
        }
    }
}

impl Serialize for DeltaRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1))?;
        match *self {
            DeltaRef::Content(c) => m.serialize_entry("content", c)?,
            DeltaRef::Reasoning(r) => m.serialize_entry("reasoning_content", r)?,
            DeltaRef::ToolCall { index, id, name, arguments } => m.serialize_entry("tool_calls", &[ToolCallRef { index, id, name, arguments }])?,
        }
        m.end()
    }
}

/// The wire form of a borrowed tool-call fragment, as [`ToolCallDelta`] serializes.
struct ToolCallRef<'a> {
    index: usize,
    id: Option<&'a str>,
    name: Option<&'a str>,
    arguments: Option<&'a str>,
}

impl Serialize for ToolCallRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let announces = announces_call(self.id, self.name);
        let n = 2 + usize::from(self.id.is_some()) + usize::from(announces);
        let mut m = s.serialize_map(Some(n))?;
        m.serialize_entry("index", &self.index)?;
        if let Some(id) = self.id {
            m.serialize_entry("id", id)?;
        }
        if announces {
            m.serialize_entry("type", "function")?;
        }
        m.serialize_entry("function", &FunctionDeltaRef { name: self.name, arguments: self.arguments })?;
        m.end()
    }
}

#[derive(Serialize)]
struct FunctionDeltaRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a str>,
}

/// `dst.push_str(s)`, with the copy of a token-sized `s` (up to 8 bytes, the common streamed
/// chunk) inlined instead of a call to `memcpy`.
#[inline(always)]
pub(crate) fn push_token(dst: &mut String, s: &str) {
    // Each arm copies a length known at compile time (the slice is all of `s`).
    match s.len() {
        0 => {}
        1 => dst.push_str(&s[..1]),
        2 => dst.push_str(&s[..2]),
        3 => dst.push_str(&s[..3]),
        4 => dst.push_str(&s[..4]),
        5 => dst.push_str(&s[..5]),
        6 => dst.push_str(&s[..6]),
        7 => dst.push_str(&s[..7]),
        8 => dst.push_str(&s[..8]),
        _ => dst.push_str(s),
    }
}

/// A span of [`DeltaBuffer::text`].
type Span = (usize, usize);

#[derive(Debug, Clone, Copy)]
enum Item {
    Content(Span),
    Reasoning(Span),
    ToolCall { index: usize, header: Option<(Span, Span)>, arguments: Option<Span> },
    LateId { index: usize, id: Span },
}

/// Reusable storage for the deltas of one [`ChatStream::push_into`](crate::chat::ChatStream::push_into):
/// all their text lives in one string whose capacity is kept across pushes, so a stream in
/// steady state allocates nothing per chunk. Consecutive pieces of the same field coalesce
/// into one delta, as in [`ChatStream::push`](crate::chat::ChatStream::push).
///
/// ```
/// use std::sync::Arc;
/// use peg_runtime::chat::{ChatParseOptions, ChatParser, DeltaBuffer, DeltaRef, SimpleBuilder};
/// let arena = SimpleBuilder::build(|p| p.content(p.rest())).unwrap();
/// let parser = ChatParser::new(Arc::new(arena), ChatParseOptions::default());
/// let mut stream = parser.stream();
/// let mut deltas = DeltaBuffer::new();
/// let mut sse = Vec::new();
/// for chunk in ["Hel", "lo", " world"] {
///     stream.push_into(chunk, &mut deltas).unwrap();
///     for d in deltas.iter() {
///         sse.clear();
///         serde_json::to_writer(&mut sse, &d).unwrap(); // send `data: {sse}`
///     }
/// }
/// stream.finish_into(&mut deltas).unwrap();
/// assert_eq!(stream.message().content, "Hello world");
/// ```
#[derive(Debug, Clone, Default)]
pub struct DeltaBuffer {
    text: String,
    items: Vec<Item>,
}

impl DeltaBuffer {
    /// An empty buffer.
    pub fn new() -> DeltaBuffer {
        DeltaBuffer::default()
    }

    /// Drops the deltas, keeping the capacity.
    #[inline]
    pub fn clear(&mut self) {
        self.text.clear();
        self.items.clear();
    }

    /// How many deltas the buffer holds.
    #[inline]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the buffer holds no delta.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The `i`-th delta.
    #[inline]
    pub fn get(&self, i: usize) -> Option<DeltaRef<'_>> {
        Some(self.resolve(self.items.get(i)?))
    }

    #[inline(always)]
    fn resolve(&self, item: &Item) -> DeltaRef<'_> {
        // Spans are made by `append`: always in range and on character boundaries.
        let t = |(a, b): Span| self.text.get(a..b).unwrap_or_default();
        match *item {
            Item::Content(s) => DeltaRef::Content(t(s)),
            Item::Reasoning(s) => DeltaRef::Reasoning(t(s)),
            Item::ToolCall { index, header, arguments } => DeltaRef::ToolCall {
                index,
                // Empty: the id comes later, in a fragment of its own.
                id: header.map(|(id, _)| t(id)).filter(|s| !s.is_empty()),
                name: header.map(|(_, name)| t(name)),
                arguments: arguments.map(t),
            },
            Item::LateId { index, id } => DeltaRef::ToolCall { index, id: Some(t(id)), name: None, arguments: None },
        }
    }

    /// The deltas in order.
    #[inline]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = DeltaRef<'_>> + '_ {
        self.items.iter().map(|item| self.resolve(item))
    }

    /// The deltas as owned values.
    pub fn to_deltas(&self) -> Vec<ChatDelta> {
        self.iter().map(|d| d.to_delta()).collect()
    }

    #[inline]
    fn append(&mut self, s: &str) -> Span {
        let a = self.text.len();
        push_token(&mut self.text, s);
        (a, self.text.len())
    }

    /// Appends a content piece, joining it to the last delta if that is content.
    #[inline]
    pub(crate) fn content(&mut self, s: &str) {
        let (_, b) = self.append(s);
        match self.items.last_mut() {
            Some(Item::Content(span)) => span.1 = b,
            _ => self.items.push(Item::Content((b - s.len(), b))),
        }
    }

    /// Appends a reasoning piece, joining it to the last delta if that is reasoning.
    #[inline]
    pub(crate) fn reasoning(&mut self, s: &str) {
        let (_, b) = self.append(s);
        match self.items.last_mut() {
            Some(Item::Reasoning(span)) => span.1 = b,
            _ => self.items.push(Item::Reasoning((b - s.len(), b))),
        }
    }

    /// Appends `delta` (as the sink calls that wrote it would).
    pub(crate) fn push_ref(&mut self, delta: DeltaRef<'_>) {
        match delta {
            DeltaRef::Content(c) => self.content(c),
            DeltaRef::Reasoning(r) => self.reasoning(r),
            DeltaRef::ToolCall { index, id, name, arguments } => {
                match (name, id) {
                    (Some(name), id) => self.header(index, id.unwrap_or(""), name),
                    (None, Some(id)) => self.late_id(index, id),
                    (None, None) => {}
                }
                if let Some(a) = arguments {
                    self.args(index, a);
                }
            }
        }
    }

    /// Appends a call's first fragment.
    pub(crate) fn header(&mut self, index: usize, id: &str, name: &str) {
        let id = self.append(id);
        let name = self.append(name);
        self.items.push(Item::ToolCall { index, header: Some((id, name)), arguments: None });
    }

    /// Appends the id of a call announced without one.
    pub(crate) fn late_id(&mut self, index: usize, id: &str) {
        let id = self.append(id);
        self.items.push(Item::LateId { index, id });
    }

    /// Appends argument text, joining it to the last delta if that is a fragment of the same
    /// call (its header included).
    #[inline]
    pub(crate) fn args(&mut self, index: usize, s: &str) {
        self.args_with(index, |t| push_token(t, s));
    }

    /// [`DeltaBuffer::args`] of the text `write` appends to the buffer's text; returns that
    /// text.
    #[inline]
    pub(crate) fn args_with(&mut self, index: usize, write: impl FnOnce(&mut String)) -> &str {
        let a = self.text.len();
        write(&mut self.text);
        let b = self.text.len();
        match self.items.last_mut() {
            // The last item's text ends where this piece starts: spans stay contiguous.
            Some(Item::ToolCall { index: i, arguments, .. }) if *i == index => match arguments {
                Some(span) => span.1 = b,
                None => *arguments = Some((a, b)),
            },
            _ => self.items.push(Item::ToolCall { index, header: None, arguments: Some((a, b)) }),
        }
        &self.text[a..b]
    }
}

impl ChatMessage {
    /// [`ChatMessage::apply`] for a borrowed delta.
    pub fn apply_ref(&mut self, delta: DeltaRef<'_>) {
        match delta {
            DeltaRef::Content(c) => self.content.push_str(c),
            DeltaRef::Reasoning(r) => self.reasoning_content.push_str(r),
            DeltaRef::ToolCall { index, id, name, arguments } => {
                if index > self.tool_calls.len() {
                    return;
                }
                if index == self.tool_calls.len() {
                    self.tool_calls.push(ChatToolCall::default());
                }
                let call = &mut self.tool_calls[index];
                if let Some(id) = id {
                    id.clone_into(&mut call.id);
                }
                if let Some(name) = name {
                    name.clone_into(&mut call.name);
                }
                if let Some(a) = arguments {
                    call.arguments.push_str(a);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_reads_flat_and_nested() {
        let flat: ChatToolCall = serde_json::from_str(r#"{"name":"f","arguments":"{\"a\":1}","id":""}"#).unwrap();
        assert_eq!(flat.name, "f");
        assert_eq!(flat.arguments, r#"{"a":1}"#);
        let nested: ChatToolCall = serde_json::from_str(r#"{"id":"x","type":"function","function":{"name":"f","arguments":"{}"}}"#).unwrap();
        assert_eq!(nested, ChatToolCall { id: "x".into(), name: "f".into(), arguments: "{}".into() });
        let obj: ChatToolCall = serde_json::from_str(r#"{"name":"f","arguments":{"a":1}}"#).unwrap();
        assert_eq!(obj.arguments, r#"{"a":1}"#);
    }

    #[test]
    fn message_reads_corpus_shape() {
        let m: ChatMessage =
            serde_json::from_str(r#"{"role":"assistant","content":null,"reasoning_content":"r","tool_calls":[{"name":"f","arguments":"{}","id":""}]}"#)
                .unwrap();
        assert_eq!(m.content, "");
        assert_eq!(m.reasoning_content, "r");
        assert_eq!(m.tool_calls.len(), 1);
    }

    #[test]
    fn out_of_order_index_is_ignored() {
        let mut m = ChatMessage::default();
        m.apply(&ChatDelta::tool_call(ToolCallDelta::arguments(usize::MAX, "x")));
        m.apply(&ChatDelta::tool_call(ToolCallDelta::header(0, "a", "f")));
        assert_eq!(m.tool_calls.len(), 1);
    }

    #[test]
    fn buffer_coalesces_like_owned_deltas() {
        let mut b = DeltaBuffer::new();
        b.content("a");
        b.content("b");
        b.header(0, "call_0", "f");
        b.args(0, "{");
        b.args(0, "}");
        b.args(1, "x");
        b.reasoning("r");
        b.content("");
        let want = vec![
            ChatDelta::content("ab"),
            ChatDelta::tool_call(ToolCallDelta { index: 0, id: Some("call_0".into()), name: Some("f".into()), arguments: Some("{}".into()) }),
            ChatDelta::tool_call(ToolCallDelta::arguments(1, "x")),
            ChatDelta::reasoning("r"),
            ChatDelta::content(""),
        ];
        assert_eq!(b.to_deltas(), want);
        for (r, d) in b.iter().zip(&want) {
            assert_eq!(serde_json::to_string(&r).unwrap(), serde_json::to_string(d).unwrap());
        }
        let mut m1 = ChatMessage::default();
        let mut m2 = ChatMessage::default();
        b.iter().for_each(|d| m1.apply_ref(d));
        want.iter().for_each(|d| m2.apply(d));
        assert_eq!(m1, m2);
        b.clear();
        assert!(b.is_empty());
    }

    #[test]
    fn push_token_appends_any_length() {
        let mut dst = String::from("x");
        let mut want = dst.clone();
        for s in ["", "a", "ab", "abc", "é", "😀", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh", "abcdefghi", "é😀é", "a long token text"] {
            push_token(&mut dst, s);
            want.push_str(s);
            assert_eq!(dst, want);
        }
    }

    #[test]
    fn delta_round_trip() {
        let d = ChatDelta::tool_call(ToolCallDelta::header(0, "call_0", "get"));
        let s = serde_json::to_string(&d).unwrap();
        assert_eq!(s, r#"{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"get"}}]}"#);
        assert_eq!(serde_json::from_str::<ChatDelta>(&s).unwrap(), d);
    }

    #[test]
    fn every_call_fragment_has_a_function_and_the_first_a_type() {
        let fragments = [
            (ToolCallDelta::header(0, "", "get"), r#"{"index":0,"type":"function","function":{"name":"get"}}"#),
            (ToolCallDelta::arguments(0, "{}"), r#"{"index":0,"function":{"arguments":"{}"}}"#),
            (ToolCallDelta::late_id(0, "x"), r#"{"index":0,"id":"x","type":"function","function":{}}"#),
        ];
        for (fragment, wire) in fragments {
            let owned = serde_json::to_string(&ChatDelta::tool_call(fragment.clone())).unwrap();
            assert_eq!(owned, format!(r#"{{"tool_calls":[{wire}]}}"#));
            let (id, name, arguments) = (fragment.id.as_deref(), fragment.name.as_deref(), fragment.arguments.as_deref());
            let borrowed = DeltaRef::ToolCall { index: fragment.index, id, name, arguments };
            assert_eq!(serde_json::to_string(&borrowed).unwrap(), owned);
        }
    }
}
