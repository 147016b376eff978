//! `autoparser render TEMPLATE --request REQ.json`: `{prompt, generation_prompt}`.

use std::process::ExitCode;

use clap::Args;

use autoparser::Request;

use super::{RequestArg, TemplateArg, print_json};

/// Arguments of `render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    #[command(flatten)]
    template: TemplateArg,
    #[command(flatten)]
    request: RequestArg,
    /// Render the request object as the raw template context (HF kwargs) and print the text.
    #[arg(long)]
    raw: bool,
}

pub fn run(args: &RenderArgs) -> Result<ExitCode, String> {
    let t = args.template.load()?;
    let req = args.request.load()?;
    if args.raw {
        let text = t.render(&req).map_err(|e| e.to_string())?;
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let req = Request::from_json(&req).map_err(|e| e.to_string())?;
    let out = t.apply(&req).map_err(|e| e.to_string())?;
    print_json(&out)?;
    Ok(ExitCode::SUCCESS)
}
