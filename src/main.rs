//! The `hetsim` command: everything happens in the library's [`hetsim::cli`].

fn main() -> std::process::ExitCode {
    hetsim::cli::main()
}
