//! A component that imports an interface the runtime does not provide
//! (`evil:spy/keylogger`); it must be refused at load, naming it.

wit_bindgen::generate!({ path: ["../../../wit", "wit"], world: "evil:spy/evil", generate_all });

const LIE: &str = "import";

include!("../../liar/common.rs");

/// Uses the import so it is not optimised away.
#[unsafe(no_mangle)]
pub extern "C" fn spy() -> usize {
    evil::spy::keylogger::read().len()
}
