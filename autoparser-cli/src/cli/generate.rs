//! `autoparser generate TEMPLATE --request REQ.json`: everything a server needs for a request.

use std::process::ExitCode;
use std::time::Instant;

use autoparser::PreparedRequest;
use autoparser::Request;
use clap::Args;
use serde_json::json;

use super::{RequestTarget, print_json};

/// Arguments of `generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(flatten)]
    target: RequestTarget,
    /// Include the parser arena (serialized) in the output.
    #[arg(long)]
    arena: bool,
    /// Print analysis and generation times to stderr.
    #[arg(long)]
    timings: bool,
}

/// The JSON of a generated parser (without the arena).
pub fn generated_json(g: &PreparedRequest) -> serde_json::Value {
    json!({
        "prompt": g.prompt,
        "generation_prompt": g.generation_prompt,
        "prefill": g.prefill,
        "grammar": g.grammar,
        "grammar_lazy": g.grammar_lazy,
        "grammar_triggers": g.grammar_triggers,
        "preserved_tokens": g.preserved_tokens,
        "additional_stops": g.additional_stops,
        "warnings": g.warnings,
    })
}

pub fn run(args: &GenerateArgs) -> Result<ExitCode, String> {
    let t = args.target.template.load()?;
    let inputs = args.target.request.load()?;
    let t0 = Instant::now();
    let model = args.target.analysis.model(t)?;
    let t1 = Instant::now();
    let g = model.prepare(&Request::from_json(&inputs).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    if args.timings {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        eprintln!("analysis: {:.3} ms, generate: {:.3} ms", ms(t1 - t0), ms(t1.elapsed()));
    }
    let mut v = generated_json(&g);
    if args.arena {
        v["arena"] = serde_json::to_value(&*g.arena).map_err(|e| e.to_string())?;
    }
    print_json(&v)?;
    Ok(ExitCode::SUCCESS)
}
