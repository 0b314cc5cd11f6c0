//! airlock SDK (docs to come)

extern crate self as airlock_sdk;

mod error;
mod export;
mod host;
mod output;
mod schema;
mod timestamp;
mod tool;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

/// The bindings `wit-bindgen` generates from the contract (`wit/tool.wit`).
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "toolbox",
        pub_export_macro: true,
        export_macro_name: "__export_toolbox",
        default_bindings_module: "airlock_sdk::bindings",
    });
}

pub use airlock_sdk_macros::{ToolSchema, tool};
pub use error::Error;
pub use host::{Level, cancelled, log, progress};
pub use output::{Content, EmbeddedResource, Media, Output, ResourceBody, ResourceLink};
pub use schema::ToolSchema;
pub use timestamp::{Timestamp, TimestampError};
pub use tool::{Hints, Icon, TaskSupport, Tool, ToolEntry, ToolInfo, Toolbox};
