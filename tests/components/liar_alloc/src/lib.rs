//! A component that lies in its metadata: `alloc` (see `../liar/common.rs`).

wit_bindgen::generate!({ path: "../../../wit", world: "toolbox" });

const LIE: &str = "alloc";

include!("../../liar/common.rs");
