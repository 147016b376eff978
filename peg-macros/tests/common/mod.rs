//! Grammars shared by the integration tests (arena equivalence, parser equivalence).
#![allow(dead_code)]

use peg_macros::chat_peg;

chat_peg! {
    /// Reasoning, content, and Hermes-style tool calls with JSON arguments.
    pub grammar hermes {
        root = reasoning? #content(until("<tool_call>")) tool_call* _ end;
        rule reasoning = "<think>" #reasoning(until("</think>")) "</think>" _;
        trigger rule tool_call = #tool("<tool_call>" _ "{" _ call _ "}" _ "</tool_call>") _;
        rule call = each_tool(
            json_member("name", "\"" #tool_name(tool_name) "\"") _ "," _
            json_member("arguments", #tool_args(tool_schema(json_object)))
        );
    }
}

chat_peg! {
    /// Qwen3-Coder style XML parameters.
    pub grammar xml_params {
        root = #content(until("<tool_call>")) (tool _)* end;
        trigger rule tool = #tool(
            "<tool_call>\n<function=" each_tool(#tool_name(tool_name) ">\n" param*) "</function>\n</tool_call>"
        );
        rule param = #tool_arg(
            "<parameter=" each_arg_placeholder ">\n" until("\n</parameter>") "\n</parameter>\n"
        );
        rule each_arg_placeholder = ["a-zA-Z0-9_"]+;
    }
}

chat_peg! {
    /// Every combinator at least once.
    pub grammar kitchen_sink {
        custom_tags = [json];
        root = start (item / other)* end;
        rule item = &"<" !"<<" marker _ / ["0-9"]*<1,3> "." ["0-9"]+ / "x"*<2> / "y"*<,2> "z"*<1,>;
        rule other = atomic(#json(json)) / python / json_string_content / "'" any / eps "#" rest
            / json_array / json_number / json_bool / json_null / json_string / json_object
            / python_dict / python_list / python_str / python_number / python_bool / python_none
            / schema(until_gt, "gt", r#"{"type":"string"}"#) / schema_raw(until_gt, "gt2", "{}")
            / gbnf(["a-z"]+, "[a-z]+") / space "\t";
        rule until_gt = until(">", ">>");
    }
}
