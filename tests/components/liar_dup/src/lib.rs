//! A component that lies in its metadata: `dup` (see `../liar/common.rs`).

wit_bindgen::generate!({ path: "../../../wit", world: "toolbox" });

const LIE: &str = "dup";

include!("../../liar/common.rs");
