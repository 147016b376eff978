//! `autoparser check --corpus DIR --templates DIR`: replay a corpus, judge every case.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::check::{CheckOptions, run as run_check};

/// Arguments of `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The corpus directory (`chat-cases.jsonl`, `render/`).
    #[arg(long)]
    corpus: PathBuf,
    /// The templates directory (`NAME.jinja`, `NAME.json`, `NAME.gguf`, `NAME/tokenizer_config.json`).
    #[arg(long)]
    templates: PathBuf,
    /// Only cases whose id contains this (render ids are `render:TEMPLATE/SCENARIO`).
    #[arg(long)]
    filter: Option<String>,
    /// Only cases of this kind (repeatable): parse, prompt, generation_prompt, capability, render.
    #[arg(long = "kind")]
    kinds: Vec<String>,
    /// Streaming chunk sizes in bytes, comma-separated; `0` disables the streaming rule.
    #[arg(long, value_delimiter = ',', default_value = "1,3,7")]
    chunks: Vec<usize>,
    /// Do not apply the grammar rule.
    #[arg(long)]
    no_grammar: bool,
    /// Print the whole report as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Print analysis, generation and parse times before the summary.
    #[arg(long)]
    timings: bool,
}

pub fn run(args: &CheckArgs) -> Result<ExitCode, String> {
    let opts = CheckOptions {
        filter: args.filter.clone(),
        kinds: args.kinds.clone(),
        chunk_sizes: args.chunks.iter().copied().filter(|&n| n > 0).collect(),
        grammar: !args.no_grammar,
        ..CheckOptions::new(&args.templates)
    };
    if !args.templates.is_dir() {
        return Err(format!("{}: not a directory", args.templates.display()));
    }
    let report = run_check(&args.corpus, &opts).map_err(|e| e.to_string())?;
    if args.json {
        super::print_json(&report.to_json())?;
    } else {
        print!("{}", report.text(args.timings));
    }
    Ok(if report.failed() == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
