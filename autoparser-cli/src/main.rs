//! The `autoparser` command line: see [`cli`] (the commands) and [`check`] (the corpus judge).

mod check;
mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
