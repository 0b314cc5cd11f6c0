//! A component that lies in its metadata: `loop` (see `../liar/common.rs`).

wit_bindgen::generate!({ path: "../../../wit", world: "toolbox" });

const LIE: &str = "loop";

include!("../../liar/common.rs");
