//! The generation-time part of the registry: arenas of their own for the registered formats
//! the general builder cannot build. They follow the request's [`Policy`] like the general
//! builder does (tools, calls off/optional/required, one or several, the response schema,
//! reasoning extracted or kept) and constrain JSON with the same pieces.

use peg_runtime::chat::{RecoveryKind, tags};
use peg_runtime::{Arena, Builder, Error};

use crate::format::TemplateAnalysis;
use crate::policy::{Calls, Policy, json_arguments, json_response, python_dict_arguments};

/// The name of the gpt-oss harmony builder (`TemplateAnalysis::builder`).
pub(crate) const GPT_OSS_HARMONY: &str = "gpt_oss_harmony";

/// The arena of the builder recorded in the analysis, when that builder builds its own.
/// `recovering`: the arena parses (lenient parsing reads and reports what the grammar for
/// generation would not allow); otherwise a grammar is generated from it.
pub(crate) fn build(a: &TemplateAnalysis, policy: &Policy, recovering: bool) -> Option<Result<Arena, Error>> {
    match a.builder.as_deref()? {
        GPT_OSS_HARMONY => Some(harmony(policy, recovering)),
        _ => None,
    }
}

/// gpt-oss harmony: the output is a series of channel messages,
/// `<|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final<|message|>...`;
/// a call is a message addressed `to=functions.NAME` whose body is the JSON arguments.
/// Channels and recipients are not markers around content, so the general builder cannot
/// express them.
fn harmony(policy: &Policy, recovering: bool) -> Result<Arena, Error> {
    let b = Builder::new();
    let stops = ["<|end|>", "<|return|>", "<|call|>", "<|start|>"];
    let msg_end = || b.optional(b.choice(["<|end|>", "<|return|>", "<|call|>"]));
    let word = || b.chars("[a-zA-Z0-9_.]", 1, None);
    let channel = || b.optional("<|channel|>" + word());
    // `<|channel|>commentary to=assistant` addresses the user: a no-op prefix.
    let to_assistant = || b.optional(b.literal("<|channel|>commentary to=assistant"));
    let analysis_body = b.until_one_of(stops);
    let analysis = if policy.extract_reasoning {
        "<|channel|>analysis<|message|>" + b.tag(tags::REASONING, analysis_body) + msg_end()
    } else {
        b.tag(tags::CONTENT, "<|channel|>analysis<|message|>" + analysis_body + b.optional(b.literal("<|end|>")))
    };
    let constrain = || b.optional(b.space() + b.optional(b.literal("<|constrain|>")) + word());
    // What follows a recipient up to `<|message|>`: harmony's own parts only
    // (`<|channel|>commentary json`, ` <|constrain|>json`). A parse keeps any other text there
    // as content, reported (`report`: unless the whole message is), rather than skip it.
    let header = |report: bool| {
        let known = b.space() + channel() + constrain() + b.space() + "<|message|>";
        if !recovering {
            return known;
        }
        let rest = b.tag(tags::CONTENT, b.until_one_of(std::iter::once("<|message|>").chain(stops))) + "<|message|>";
        b.choice([known, if report { b.tag(RecoveryKind::UnplacedText.tag(), rest) } else { rest }])
    };
    // A recipient is a whole word: `pythonic` is not `python`.
    let boundary = || b.negate(b.chars("[a-zA-Z0-9_]", 1, Some(1)));
    let final_body = match &policy.response_schema {
        Some(schema) => json_response(&b, schema),
        None => b.tag(tags::CONTENT, b.until_one_of(stops)),
    };
    let final_msg = "<|channel|>" + b.choice(["final", "commentary"]) + constrain() + "<|message|>" + final_body + msg_end();
    let message = |body| b.space() + b.optional(b.literal("<|start|>assistant")) + to_assistant() + body;
    // Messages to other recipients are not calls of the request. Those to harmony's built-in
    // tools are calls the server runs itself: skipped, as llama.cpp does. A grammar lets the
    // model address anyone; a parse keeps the text of a message to anyone else (an unknown
    // recipient, a function when calls are off) as content and reports it.
    let addressed = |recipient, report| channel() + b.space() + "to=" + recipient + header(report);
    let other = || {
        if !recovering {
            return addressed(word(), false) + b.until_one_of(stops) + msg_end();
        }
        let builtin = b.peek(b.choice([b.literal("python") + boundary(), b.literal("browser."), b.literal("container.")])) + word();
        let anyone = b.chars("[a-zA-Z0-9_.]", 0, None);
        let unplaced = addressed(anyone, false) + b.tag(tags::CONTENT, b.until_one_of(stops)) + msg_end();
        b.choice([addressed(builtin, true) + b.until_one_of(stops) + msg_end(), b.tag(RecoveryKind::UnplacedText.tag(), unplaced)])
    };
    if !policy.calls_on() {
        let text = b.zero_or_more(message(b.choice([other(), analysis, final_msg])));
        return b.finish((text + b.space() + b.end()).id());
    }
    let names: Vec<_> = policy.tools.iter().map(|(name, _)| b.literal(name)).collect();
    let mut calls: Vec<_> = policy
        .tools
        .iter()
        .map(|(name, schema)| {
            let open = b.tag(tags::TOOL_OPEN, "to=functions." + b.tag(tags::TOOL_NAME, b.literal(name)));
            // A name the recipient only starts with is an undeclared function's (a grammar's
            // header allows no word after the name; GBNF has no lookahead).
            let open = if recovering { open + boundary() } else { open };
            let args = json_arguments(&b, name, schema);
            let args = if recovering {
                let (quoted, past) = python_dict_arguments(&b);
                b.choice([quoted, args, past])
            } else {
                args
            };
            b.tag(tags::TOOL, open + header(true) + args + b.tag(tags::TOOL_CLOSE, msg_end()))
        })
        .collect();
    let declared = b.choice(names) + boundary();
    let call_ahead = if recovering {
        // A call of an undeclared function is kept as a call (the parser reports the name).
        let open = b.tag(tags::TOOL_OPEN, "to=functions." + b.tag(tags::TOOL_NAME, word()));
        calls.push(b.tag(tags::TOOL, open + header(true) + b.tag(tags::TOOL_ARGS, b.json()) + b.tag(tags::TOOL_CLOSE, msg_end())));
        // A declared function addressed without its namespace (`to=get_weather`) is that
        // function's call, reported; `python` stays harmony's built-in tool.
        let bare: Vec<_> = policy.tools.iter().filter(|(name, _)| name != "python").map(|(name, _)| b.literal(name)).collect();
        if bare.is_empty() {
            b.peek(message(channel() + b.space() + "to=functions."))
        } else {
            let bare = || b.choice(bare.clone()) + boundary();
            let open = b.tag(tags::TOOL_OPEN, "to=" + b.tag(tags::TOOL_NAME, bare()));
            let call = b.tag(tags::TOOL, open + header(true) + b.tag(tags::TOOL_ARGS, b.json()) + b.tag(tags::TOOL_CLOSE, msg_end()));
            calls.push(b.tag(RecoveryKind::CallShape.tag(), call));
            b.peek(message(channel() + b.space() + "to=" + b.choice([b.literal("functions."), bare()])))
        }
    } else {
        b.peek(message(channel() + b.space() + "to=functions." + declared))
    };
    let text = b.zero_or_more(b.negate(call_ahead) + message(b.choice([other(), analysis, final_msg])));
    // The grammar names the calls once: the first call and the repeated ones refer to it.
    let one_call = if recovering { b.choice(calls) } else { b.rule("call", b.choice(calls)) };
    let more = if policy.parallel { b.zero_or_more(message(channel() + b.space() + one_call)) } else { b.eps() };
    // Messages before the call(s) (reasoning, a preamble); after them, none when calls are
    // required. A lazy grammar starts at the first call's trigger, so the rule holds all
    // that may follow it, up to the trailing whitespace.
    // (A grammar has no lookahead: there the messages after the calls are any messages.)
    let after = match policy.calls {
        Calls::Required => b.eps(),
        _ if recovering => text,
        _ => b.zero_or_more(message(b.choice([other(), analysis, final_msg]))),
    };
    let calls = message(channel() + b.space() + b.trigger_rule("tool-call", one_call + more + after + b.space()));
    let root = match policy.calls {
        Calls::Required => text + calls,
        _ => text + b.optional(calls),
    };
    b.finish((root + b.space() + b.end()).id())
}

#[cfg(test)]
mod tests {
    use peg_runtime::chat::{ChatParseOptions, ChatParser, RecoveryKind};
    use serde_json::json;

    use crate::format::{TemplateAnalysis, ToolFormat};
    use crate::request::{Request, ToolChoice};
    use peg_runtime::chat::ParseMode;
    use peg_runtime::chat::Strictness;

    fn policy(choice: ToolChoice, parallel: bool) -> (TemplateAnalysis, Request) {
        let mut a = TemplateAnalysis { builder: Some(super::GPT_OSS_HARMONY.into()), ..TemplateAnalysis::default() };
        a.tools.format.mode = ToolFormat::TagWithJson;
        let req = Request::from_json(&json!({"tools": tools(), "tool_choice": choice, "parallel_tool_calls": parallel})).unwrap();
        (a, req)
    }

    fn tools() -> serde_json::Value {
        json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])
    }

    /// Whether the arena a grammar is generated from matches all of `output`.
    fn grammar_matches(output: &str) -> bool {
        let (a, req) = policy(ToolChoice::Auto, false);
        let arena = super::harmony(&crate::policy::Policy::new(&req, &a), false).unwrap();
        let r = arena.parse(output.as_bytes(), false).unwrap().result;
        r.outcome == peg_runtime::Outcome::Success && r.end == output.len()
    }

    fn parse(choice: ToolChoice, parallel: bool, output: &str) -> Result<(String, Vec<String>), String> {
        parse_as(Strictness::Strict, choice, parallel, output).map(|(content, calls, _)| (content, calls))
    }

    fn parse_as(strictness: Strictness, choice: ToolChoice, parallel: bool, output: &str) -> Result<(String, Vec<String>, Vec<RecoveryKind>), String> {
        let (a, req) = policy(choice, parallel);
        let arena = crate::generator::parse_arena(&a, &crate::policy::Policy::new(&req, &a)).map_err(|e| e.to_string())?;
        let tools = tools().as_array().into_iter().flatten().filter_map(peg_runtime::chat::ToolSpec::from_openai).collect();
        let parser = ChatParser::new(std::sync::Arc::new(arena), ChatParseOptions { strictness, tools, ..ChatParseOptions::default() });
        let p = parser.parse(output, ParseMode::Complete).map_err(|e| e.to_string())?;
        let m = p.message;
        Ok((m.content, m.tool_calls.iter().map(|c| c.name.clone()).collect(), p.recoveries.iter().map(|r| r.kind).collect()))
    }

    const ANSWER: &str = "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Sunny.";
    const CALL: &str = "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";

    /// The registered arena follows the request policy as the general builder does.
    #[test]
    fn harmony_follows_tool_choice_and_parallel_calls() {
        assert_eq!(parse(ToolChoice::Auto, false, ANSWER).unwrap(), ("Sunny.".into(), vec![]));
        assert_eq!(parse(ToolChoice::Auto, false, CALL).unwrap().1, ["get_weather"]);
        assert_eq!(parse(ToolChoice::Required, false, CALL).unwrap().1, ["get_weather"]);
        assert!(parse(ToolChoice::Required, false, ANSWER).is_err(), "a required call is missing");
        // With calls off, a function message is another recipient's: its text is content,
        // reported (an error when strict).
        let off = parse_as(Strictness::Lenient, ToolChoice::None, false, CALL).unwrap();
        assert_eq!(off, ("{\"city\": \"Paris\"}".into(), vec![], vec![RecoveryKind::UnplacedText]));
        assert!(parse(ToolChoice::None, false, CALL).is_err());
        let two = format!("{CALL}<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{{\"city\": \"Rome\"}}<|call|>");
        assert_eq!(parse(ToolChoice::Auto, true, &two).unwrap().1, ["get_weather", "get_weather"]);
        assert!(parse(ToolChoice::Required, false, &two).is_err(), "one call only");
    }

    /// Nothing the model writes disappears: a message to an unknown recipient is content, a
    /// call of an undeclared function a call, each reported; built-in tools' messages are
    /// skipped, as the server runs them itself.
    #[test]
    fn harmony_keeps_what_it_cannot_place() {
        let lenient = |out: &str| parse_as(Strictness::Lenient, ToolChoice::Auto, false, out).unwrap();
        for out in ["<|channel|>analysis to=x<|message|>secret text", "<|channel|>final to=x<|message|>secret text", "to=<|message|>secret text"] {
            assert_eq!(lenient(out), ("secret text".into(), vec![], vec![RecoveryKind::UnplacedText]), "{out}");
        }
        let undeclared = "<|channel|>commentary to=functions.special_function <|constrain|>json<|message|>{\"a\": 1}";
        assert_eq!(lenient(undeclared), ("".into(), vec!["special_function".into()], vec![RecoveryKind::UnknownTool]));
        let builtin = "<|channel|>commentary to=python <|constrain|>code<|message|>print(1)";
        assert_eq!(lenient(builtin), ("".into(), vec![], vec![]));
        assert_eq!(lenient("<|channel|>commentary to=pythonic<|message|>text"), ("text".into(), vec![], vec![RecoveryKind::UnplacedText]));
    }

    /// Between a recipient and `<|message|>` a header holds harmony's own parts: read as
    /// such, and all a grammar allows there.
    #[test]
    fn harmony_reads_the_header_parts() {
        let known = [
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>",
            "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>",
            "<|channel|>commentary to=functions.get_weather<|message|>{\"city\": \"Paris\"}<|call|>",
        ];
        for out in known {
            assert_eq!(parse(ToolChoice::Auto, false, out).unwrap(), ("".into(), vec!["get_weather".into()]), "{out}");
            assert!(grammar_matches(out), "{out}");
        }
    }

    /// Other text in a call's header is content, reported: a parse skips none of it, a
    /// grammar does not allow it.
    #[test]
    fn harmony_keeps_text_in_a_call_header() {
        let lenient = |out: &str| parse_as(Strictness::Lenient, ToolChoice::Auto, false, out).unwrap();
        let out = "<|channel|>commentary to=functions.get_weather (a note) json<|message|>{\"city\": \"Paris\"}<|call|>";
        assert_eq!(lenient(out), ("(a note) json".into(), vec!["get_weather".into()], vec![RecoveryKind::UnplacedText]));
        assert!(parse(ToolChoice::Auto, false, out).is_err());
        assert!(!grammar_matches(out));
    }

    /// The same in the header of a call of an undeclared function.
    #[test]
    fn harmony_keeps_text_in_an_undeclared_call_header() {
        let out = "to=functions.special_function note<|channel|>commentary json<|message|>{\"a\": 1}";
        let (content, calls, mut kinds) = parse_as(Strictness::Lenient, ToolChoice::Auto, false, out).unwrap();
        kinds.sort_by_key(|k| k.name());
        assert_eq!(content, "note<|channel|>commentary json");
        assert_eq!((calls, kinds), (vec!["special_function".into()], vec![RecoveryKind::UnknownTool, RecoveryKind::UnplacedText]));
    }

    /// A declared function addressed without its `functions.` namespace is its call,
    /// reported; any other bare recipient is still another recipient's message.
    #[test]
    fn harmony_reads_a_recipient_without_its_namespace() {
        let lenient = |out: &str| parse_as(Strictness::Lenient, ToolChoice::Auto, true, out).unwrap();
        let bare = "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary to=get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";
        assert_eq!(lenient(bare), ("".into(), vec!["get_weather".into()], vec![RecoveryKind::CallShape]));
        assert!(parse(ToolChoice::Auto, false, bare).is_err(), "strict: a recovery");
        let both = format!("{CALL}<|start|>assistant<|channel|>commentary to=get_weather json<|message|>{{\"city\": \"Rome\"}}<|call|>");
        assert_eq!(lenient(&both), ("".into(), vec!["get_weather".into(), "get_weather".into()], vec![RecoveryKind::CallShape]));
        let longer = "<|channel|>commentary to=get_weather2<|message|>text";
        assert_eq!(lenient(longer), ("text".into(), vec![], vec![RecoveryKind::UnplacedText]));
    }

    /// A recipient that only starts with a declared name calls an undeclared function.
    #[test]
    fn harmony_reads_the_whole_name() {
        let out = "<|channel|>commentary to=functions.get_weather2 <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";
        let lenient = parse_as(Strictness::Lenient, ToolChoice::Auto, false, out).unwrap();
        assert_eq!(lenient, ("".into(), vec!["get_weather2".into()], vec![RecoveryKind::UnknownTool]));
    }

    /// A message to anyone else is content and reported whole, its header's other text too.
    #[test]
    fn harmony_keeps_text_in_another_recipients_header() {
        let out = "<|channel|>commentary to=x note<|channel|>analysis<|message|>secret text";
        let lenient = parse_as(Strictness::Lenient, ToolChoice::Auto, false, out).unwrap();
        assert_eq!(lenient, ("note<|channel|>analysissecret text".into(), vec![], vec![RecoveryKind::UnplacedText]));
        assert!(!grammar_matches(out));
    }
}
