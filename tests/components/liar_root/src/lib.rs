//! A component that lies in its metadata: `root` (see `../liar/common.rs`).

wit_bindgen::generate!({ path: "../../../wit", world: "toolbox" });

const LIE: &str = "root";

include!("../../liar/common.rs");
