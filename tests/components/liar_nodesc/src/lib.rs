//! A component that lies in its metadata: `nodesc` (see `../liar/common.rs`).

wit_bindgen::generate!({ path: "../../../wit", world: "toolbox" });

const LIE: &str = "nodesc";

include!("../../liar/common.rs");
