//! `autoparser verify TEMPLATE`: the template's own renders parsed back by its parser.

use std::process::ExitCode;

use autoparser::verify::VerifyOptions;
use autoparser::{Model, Request};
use clap::Args;

/// Arguments of `verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    template: super::TemplateArg,
    /// A request whose messages and tools the generated turns answer (default: one user
    /// message and the built-in probe tools).
    #[arg(long, short = 'r')]
    request: Option<std::path::PathBuf>,
    /// Seed of the generated messages.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Cases per feature.
    #[arg(long, default_value_t = 20)]
    cases: usize,
    /// Print the whole report as JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &VerifyArgs) -> Result<ExitCode, String> {
    let t = args.template.load()?;
    let request = match &args.request {
        Some(p) => Some(Request::from_json(&super::read_json(p)?).map_err(|e| e.to_string())?),
        None => None,
    };
    let model = Model::analyze(t).map_err(|e| e.to_string())?;
    let report = model.verify(&VerifyOptions { seed: args.seed, cases: args.cases, request, ..VerifyOptions::default() });
    if args.json {
        super::print_json(&report)?;
    } else {
        print!("{}", report.text());
    }
    Ok(if report.passed() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
