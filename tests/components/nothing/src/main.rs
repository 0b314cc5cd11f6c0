//! A plain command: it exports only `wasi:cli/run`, an entry point for
//! other hosts, so airlock has nothing to serve and says so before
//! compiling it.

fn main() {
    println!("nothing to see");
}
