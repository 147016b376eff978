//! Seeded assistant messages for `verify`: one kind of message per [`Feature`], argument
//! values drawn from the tools' JSON schemas.

use serde_json::{Map, Value, json};

use super::Feature;

/// SplitMix64: small, seedable, and the same sequence on every platform.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// The probe tools `verify` uses when the request declares none: one tool per kind of value,
/// so a failure points at the value kind.
pub fn probe_tools() -> Vec<Value> {
    let tool = |name: &str, description: &str, properties: Value, required: &[&str]| {
        json!({"type": "function", "function": {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}})
    };
    let p = |ty: Value, description: &str| json!({"type": ty, "description": description});
    vec![
        tool(
            "get_weather",
            "Current weather for a city.",
            json!({"city": p(json!("string"), "City name."), "days": p(json!("integer"), "Days of forecast."),
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit."}}),
            &["city"],
        ),
        tool(
            "send_message",
            "Send a text message.",
            json!({"recipient": p(json!("string"), "Who gets it."), "text": p(json!("string"), "The message.")}),
            &["recipient", "text"],
        ),
        tool("set_counter", "Set a counter.", json!({"value": p(json!("integer"), "New value."), "step": p(json!("integer"), "Increment.")}), &["value"]),
        tool("set_ratio", "Set a ratio.", json!({"ratio": p(json!("number"), "The ratio."), "scale": p(json!("number"), "A scale factor.")}), &["ratio"]),
        tool(
            "toggle_feature",
            "Turn a feature on or off.",
            json!({"feature": p(json!("string"), "Feature name."), "enabled": p(json!("boolean"), "On or off.")}),
            &["feature", "enabled"],
        ),
        tool(
            "update_note",
            "Replace or clear a note.",
            json!({"note_id": p(json!("integer"), "Which note."), "note": p(json!(["string", "null"]), "New text, or null to clear.")}),
            &["note_id", "note"],
        ),
        tool(
            "create_event",
            "Create a calendar event.",
            json!({"title": p(json!("string"), "Event title."),
                "location": {"type": "object", "description": "Where it is.", "properties": {
                    "city": p(json!("string"), "City."), "zip": p(json!("string"), "Postal code."),
                    "floor": p(json!("integer"), "Floor.")},
                    "required": ["city"]},
                "attendees": {"type": "array", "description": "Who comes.", "items": {"type": "object", "properties": {
                    "name": p(json!("string"), "Name."), "email": p(json!("string"), "Email.")}, "required": ["name"]}}}),
            &["title", "location", "attendees"],
        ),
        tool(
            "configure",
            "Set options and tags.",
            json!({"options": p(json!("object"), "Free-form options."),
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags."}}),
            &["options", "tags"],
        ),
        tool("ping", "Check the service is up.", json!({}), &[]),
    ]
}

const WORDS: &[&str] =
    &["Paris", "weather", "tomorrow", "report", "blue", "Lisbon", "meeting", "quarterly", "plan", "garden", "river", "Tokyo", "coffee", "seven", "notes"];

/// Strings that break formats which do not escape: quotes, backslashes, newlines, markup.
const HARD_STRINGS: &[&str] = &[
    "He said \"hello\" and left",
    "C:\\Users\\me\\file.txt",
    "line one\nline two\n\nline four",
    "a </tag> inside",
    "ends with ]]> here",
    "x < y && y > z",
    "it's 'quoted' too",
    "Zürich — 東京 🌧 ok",
    "tab\tseparated\tvalues",
    "{\"looks\": \"like json\"}",
    "</parameter> and </function>",
    "[not, a, list]",
    "100",
    "true",
];

const CONTENT: &[&str] = &[
    "Sure, here is what I found.",
    "The forecast for Paris is sunny, 24 °C.",
    "Let me look that up for you.",
    "Done! The event is on your calendar:\n- Monday 10:00\n- Room 4",
    "Zürich: 🌧 light rain, 12 °C.",
    "I could not find that file; could you check the name?",
];

const REASONING: &[&str] = &[
    "The user wants the weather. I should call the tool.",
    "Step 1: read the question.\nStep 2: decide which tool fits.",
    "They asked about two cities, so two calls are needed.",
    "Hmm, the note should be cleared: pass null.",
];

fn word(rng: &mut Rng) -> String {
    (*rng.pick(WORDS)).to_owned()
}

/// What the value generator favours: the feature under test decides the hard cases.
#[derive(Debug, Clone, Copy)]
struct Bias {
    feature: Feature,
}

impl Bias {
    fn string(self, rng: &mut Rng) -> String {
        if self.feature == Feature::StringArguments { (*rng.pick(HARD_STRINGS)).to_owned() } else { format!("{} {}", word(rng), word(rng)) }
    }

    fn integer(self, rng: &mut Rng) -> Value {
        if self.feature == Feature::IntegerArguments {
            json!(*rng.pick(&[0i64, 7, -42, 1_234_567_890_123, -9_007_199_254_740_991, 65536]))
        } else {
            json!(rng.below(100))
        }
    }

    fn number(self, rng: &mut Rng) -> Value {
        json!(*rng.pick(&[3.25f64, -0.5, 0.001, 123.456, -98.6, 1.5e-5, 2.75]))
    }
}

/// A value of `schema`, favouring what `bias` tests. `depth` bounds nesting.
fn value(schema: &Value, rng: &mut Rng, bias: Bias, depth: usize) -> Value {
    if let Some(options) = schema.get("enum").and_then(Value::as_array).filter(|o| !o.is_empty()) {
        return rng.pick(options).clone();
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array).filter(|o| !o.is_empty()) {
            let null = options.iter().find(|o| o.get("type").and_then(Value::as_str) == Some("null"));
            if bias.feature == Feature::NullArguments && null.is_some() {
                return Value::Null;
            }
            let non_null: Vec<&Value> = options.iter().filter(|o| Some(*o) != null).collect();
            let chosen = if non_null.is_empty() { options[0].clone() } else { (*rng.pick(&non_null)).clone() };
            return value(&chosen, rng, bias, depth);
        }
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if schema.get("properties").is_some() => vec!["object"],
        _ if schema.get("items").is_some() => vec!["array"],
        _ => vec!["string"],
    };
    if bias.feature == Feature::NullArguments && types.contains(&"null") {
        return Value::Null;
    }
    let ty = types.iter().copied().find(|t| *t != "null").unwrap_or("null");
    match ty {
        "string" => Value::String(bias.string(rng)),
        "integer" => bias.integer(rng),
        "number" => bias.number(rng),
        "boolean" => Value::Bool(rng.chance(50)),
        "null" => Value::Null,
        "array" => {
            let empty = bias.feature == Feature::EmptyContainers;
            let n = if empty || depth == 0 { 0 } else { 1 + rng.below(3) };
            let items = schema.get("items").cloned().unwrap_or(json!({"type": "string"}));
            Value::Array((0..n).map(|_| value(&items, rng, bias, depth.saturating_sub(1))).collect())
        }
        _ => object(schema, rng, bias, depth),
    }
}

/// An object of `schema`: every required property, some optional ones (all of them when the
/// feature is about nesting), or a small free-form object when none are declared.
fn object(schema: &Value, rng: &mut Rng, bias: Bias, depth: usize) -> Value {
    let mut out = Map::new();
    let required: Vec<&str> = schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    match schema.get("properties").and_then(Value::as_object) {
        Some(props) => {
            for (k, s) in props {
                let all = matches!(bias.feature, Feature::ObjectArguments | Feature::ArrayArguments);
                if required.contains(&k.as_str()) || all || rng.chance(50) {
                    out.insert(k.clone(), value(s, rng, bias, depth.saturating_sub(1)));
                }
            }
        }
        None if bias.feature == Feature::EmptyContainers || depth == 0 => {}
        None => {
            out.insert("mode".into(), json!(word(rng)));
            out.insert("level".into(), json!(rng.below(10)));
        }
    }
    Value::Object(out)
}

/// The tools as `(name, parameters)`.
fn tool_list(tools: &[Value]) -> Vec<(String, Value)> {
    tools.iter().filter_map(peg_runtime::chat::ToolSpec::from_openai).map(|t| (t.name, t.parameters)).collect()
}

/// Whether a value of `schema` can hold what `feature` tests.
fn schema_has(schema: &Value, feature: Feature, depth: usize) -> bool {
    if depth == 0 {
        return false;
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let here = match feature {
        Feature::StringArguments => types.contains(&"string") && schema.get("enum").is_none(),
        Feature::IntegerArguments => types.contains(&"integer"),
        Feature::NumberArguments => types.contains(&"number"),
        Feature::BooleanArguments => types.contains(&"boolean"),
        Feature::NullArguments => {
            types.contains(&"null")
                || ["anyOf", "oneOf"]
                    .iter()
                    .any(|k| schema.get(*k).and_then(Value::as_array).is_some_and(|o| o.iter().any(|s| s.get("type").and_then(Value::as_str) == Some("null"))))
        }
        Feature::ArrayArguments => types.contains(&"array") && schema.get("items").is_some_and(|i| i.get("type").and_then(Value::as_str) == Some("object")),
        Feature::EmptyContainers => (types.contains(&"object") && schema.get("properties").is_none()) || types.contains(&"array"),
        _ => false,
    };
    here || schema.get("properties").and_then(Value::as_object).is_some_and(|p| {
        p.values().any(|s| {
            let nested_object = feature == Feature::ObjectArguments && s.get("type").and_then(Value::as_str) == Some("object") && s.get("properties").is_some();
            nested_object || schema_has(s, feature, depth - 1)
        })
    })
}

/// The tools a call of `feature` may use: those whose schema can hold the feature's values
/// (all tools for features that are not about values).
fn tools_for(tools: &[(String, Value)], feature: Feature) -> Vec<&(String, Value)> {
    if !feature.is_value_kind() {
        return tools.iter().collect();
    }
    tools.iter().filter(|(_, s)| schema_has(s, feature, 4)).collect()
}

/// One tool call in OpenAI form (arguments as JSON text).
fn call(tool: &(String, Value), rng: &mut Rng, feature: Feature, id: String) -> Value {
    let args = object(&tool.1, rng, Bias { feature }, 4);
    json!({"id": id, "type": "function", "function": {"name": tool.0, "arguments": args.to_string()}})
}

/// Nine letters and digits: the one id shape every template accepts (Mistral's raise on
/// any other).
fn call_id(rng: &mut Rng) -> String {
    const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..9).map(|_| ALNUM[rng.below(ALNUM.len())] as char).collect()
}

/// Sets the reasoning of `msg` under each name templates read it by (`null` clears it).
pub(crate) fn set_reasoning(msg: &mut Value, reasoning: Value) {
    for key in ["reasoning_content", "thinking", "reasoning"] {
        msg[key] = reasoning.clone();
    }
}

/// The assistant message of case `index` of `feature`, or why `tools` cannot make one.
pub(crate) fn message(feature: Feature, tools: &[Value], rng: &mut Rng) -> Result<Value, String> {
    let tools = tool_list(tools);
    let mut msg = json!({"role": "assistant", "content": ""});
    let text = |rng: &mut Rng| (*rng.pick(CONTENT)).to_owned();
    let calls = match feature {
        Feature::Content => {
            msg["content"] = json!(text(rng));
            0
        }
        Feature::Reasoning => {
            msg["content"] = json!(text(rng));
            set_reasoning(&mut msg, json!(*rng.pick(REASONING)));
            0
        }
        Feature::ParallelCalls => 2 + rng.below(2),
        Feature::ContentWithCalls => {
            msg["content"] = json!(text(rng));
            1 + rng.below(2)
        }
        Feature::ReasoningWithCalls => {
            set_reasoning(&mut msg, json!(*rng.pick(REASONING)));
            1
        }
        _ => 1,
    };
    if calls > 0 {
        let usable = tools_for(&tools, feature);
        if usable.is_empty() {
            return Err(format!("no tool of the request takes {}", feature.name()));
        }
        let list: Vec<Value> = (0..calls)
            .map(|_| {
                let id = call_id(rng);
                let tool = *rng.pick(&usable);
                call(tool, rng, feature, id)
            })
            .collect();
        msg["tool_calls"] = Value::Array(list);
    }
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_messages() {
        let tools = probe_tools();
        for f in Feature::ALL {
            let a = message(f, &tools, &mut Rng::new(7)).unwrap();
            let b = message(f, &tools, &mut Rng::new(7)).unwrap();
            assert_eq!(a, b, "{f:?}");
        }
    }

    #[test]
    fn value_features_use_tools_that_hold_the_value() {
        let tools = probe_tools();
        let args_of = |f: Feature, seed: u64| {
            let m = message(f, &tools, &mut Rng::new(seed)).unwrap();
            let text = m["tool_calls"][0]["function"]["arguments"].as_str().unwrap().to_owned();
            serde_json::from_str::<Value>(&text).unwrap()
        };
        for seed in 0..20 {
            let null = args_of(Feature::NullArguments, seed);
            assert!(null.as_object().unwrap().values().any(Value::is_null), "{null}");
            let empty = args_of(Feature::EmptyContainers, seed);
            assert!(empty.as_object().unwrap().values().any(|v| v == &json!({}) || v == &json!([])), "{empty}");
            let arr = args_of(Feature::ArrayArguments, seed);
            assert!(arr.as_object().unwrap().values().any(|v| v.as_array().is_some_and(|a| a.iter().any(Value::is_object))), "{arr}");
        }
        // A request whose tools take only strings has nothing for booleans.
        let strings = vec![json!({"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}})];
        assert!(message(Feature::BooleanArguments, &strings, &mut Rng::new(1)).is_err());
        assert!(message(Feature::OneCall, &strings, &mut Rng::new(1)).is_ok());
    }
}
