//! The `autoparser` command line: see [`autoparser::cli`].

fn main() -> std::process::ExitCode {
    autoparser::cli::main()
}
