//! A component that lies in its metadata: `schema` (see `../liar/common.rs`).

wit_bindgen::generate!({ path: "../../../wit", world: "toolbox" });

const LIE: &str = "schema";

include!("../../liar/common.rs");
