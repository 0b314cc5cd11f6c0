//! The `airlock` command; the work lives in the library (`airlock::cli`).

airlock::global_allocator!();

fn main() -> std::process::ExitCode {
    airlock::cli::main()
}
