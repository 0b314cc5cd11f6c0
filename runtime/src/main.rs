//! The `airlock` command; the work lives in the library (`airlock::cli`).

fn main() -> std::process::ExitCode {
    airlock::cli::main()
}
