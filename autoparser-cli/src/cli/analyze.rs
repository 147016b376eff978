//! `autoparser analyze TEMPLATE`: the analysis JSON, plus the probed capabilities.

use std::process::ExitCode;
use std::time::Instant;

use autoparser::analysis::analyze;
use clap::Args;

use super::{TemplateArg, print_json};

/// Arguments of `analyze`.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    template: TemplateArg,
    /// Print only the analysis (the format `--analysis` reads), without capabilities.
    #[arg(long)]
    bare: bool,
    /// Print the analysis time to stderr.
    #[arg(long)]
    timings: bool,
}

pub fn run(args: &AnalyzeArgs) -> Result<ExitCode, String> {
    let t = args.template.load()?;
    let t0 = Instant::now();
    let a = analyze(&t).map_err(|e| e.to_string())?;
    if args.timings {
        eprintln!("analysis: {:.3} ms", t0.elapsed().as_secs_f64() * 1e3);
    }
    let mut v = serde_json::to_value(&a).map_err(|e| e.to_string())?;
    if !args.bare
        && let Some(m) = v.as_object_mut()
    {
        let caps: serde_json::Map<_, _> = t.capabilities().to_pairs().iter().map(|(k, v)| (k.to_string(), (*v).into())).collect();
        m.insert("template_capabilities".into(), caps.into());
    }
    print_json(&v)?;
    Ok(ExitCode::SUCCESS)
}
