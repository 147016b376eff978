//! The generation-time part of the registry: arenas of their own for the registered formats
//! the general builder cannot build. They follow the request's [`Policy`] like the general
//! builder does (tools, calls off/optional/required, one or several, the response schema,
//! reasoning extracted or kept) and constrain JSON with the same pieces.

use peg_runtime::chat::{tags, RecoveryKind};
use peg_runtime::{Arena, Builder, Error};

use crate::format::TemplateAnalysis;
use crate::policy::{json_arguments, json_response, Calls, Policy};

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
    let addressed = |recipient| channel() + b.space() + "to=" + recipient + b.until("<|message|>") + "<|message|>";
    let other = || {
        if !recovering {
            return addressed(b.eps()) + b.until_one_of(stops) + msg_end();
        }
        let builtin = b.choice([b.literal("python") + b.negate(b.chars("[a-zA-Z0-9_]", 1, Some(1))), b.literal("browser."), b.literal("container.")]);
        let unplaced = addressed(b.eps()) + b.tag(tags::CONTENT, b.until_one_of(stops)) + msg_end();
        b.choice([addressed(builtin) + b.until_one_of(stops) + msg_end(), b.tag(RecoveryKind::UnplacedText.tag(), unplaced)])
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
            let args = json_arguments(&b, name, schema);
            b.tag(tags::TOOL, open + b.until("<|message|>") + "<|message|>" + args + b.tag(tags::TOOL_CLOSE, msg_end()))
        })
        .collect();
    let declared = b.choice(names) + b.negate(b.chars("[a-zA-Z0-9_]", 1, Some(1)));
    let call_ahead = if recovering {
        // A call of an undeclared function is kept as a call (the parser reports the name).
        let open = b.tag(tags::TOOL_OPEN, "to=functions." + b.tag(tags::TOOL_NAME, word()));
        calls.push(b.tag(tags::TOOL, open + b.until("<|message|>") + "<|message|>" + b.tag(tags::TOOL_ARGS, b.json()) + b.tag(tags::TOOL_CLOSE, msg_end())));
        b.peek(message(channel() + b.space() + "to=functions."))
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

    fn parse(choice: ToolChoice, parallel: bool, output: &str) -> Result<(String, Vec<String>), String> {
        parse_as(Strictness::Strict, choice, parallel, output).map(|(content, calls, _)| (content, calls))
    }

    fn parse_as(strictness: Strictness, choice: ToolChoice, parallel: bool, output: &str) -> Result<(String, Vec<String>, Vec<RecoveryKind>), String> {
        let mut a = TemplateAnalysis { builder: Some(super::GPT_OSS_HARMONY.into()), ..TemplateAnalysis::default() };
        a.tools.format.mode = ToolFormat::TagWithJson;
        let tools =
            json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
        let req = Request::from_json(&json!({"tools": tools, "tool_choice": choice, "parallel_tool_calls": parallel})).unwrap();
        let arena = crate::generator::parse_arena(&a, &crate::policy::Policy::new(&req, &a)).map_err(|e| e.to_string())?;
        let tools = tools.as_array().into_iter().flatten().filter_map(peg_runtime::chat::ToolSpec::from_openai).collect();
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
}
