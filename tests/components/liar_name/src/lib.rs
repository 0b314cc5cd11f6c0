//! A component that lies in its metadata: `name` (see `../liar/common.rs`).

wit_bindgen::generate!({ path: "../../../wit", world: "toolbox" });

const LIE: &str = "name";

include!("../../liar/common.rs");
