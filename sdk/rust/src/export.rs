//! The bridge to the WIT contract: converts the SDK's types to the bindings
//! that `wit-bindgen` generates from `wit/tool.wit`, and the
//! [`export_tools!`](crate::export_tools) macro that exports a [`Toolbox`].

use crate::bindings::airlock::tool::types as wit;
use crate::{Content, Error, Output, ResourceBody, TaskSupport, ToolInfo, Toolbox};

impl From<ToolInfo> for wit::Tool {
    fn from(info: ToolInfo) -> Self {
        let mut hints = wit::Hints::empty();
        hints.set(wit::Hints::READ_ONLY, info.hints.read_only);
        hints.set(wit::Hints::DESTRUCTIVE, info.hints.destructive);
        hints.set(wit::Hints::IDEMPOTENT, info.hints.idempotent);
        hints.set(wit::Hints::OPEN_WORLD, info.hints.open_world);
        wit::Tool {
            name: info.name,
            title: info.title,
            description: info.description,
            input_schema: info.input_schema.to_string(),
            output_schema: info.output_schema.map(|s| s.to_string()),
            hints,
            icons: info
                .icons
                .into_iter()
                .map(|i| wit::Icon {
                    src: i.src,
                    mime_type: i.mime_type,
                    sizes: i.sizes,
                })
                .collect(),
            task_support: match info.task_support {
                TaskSupport::Forbidden => wit::TaskSupport::Forbidden,
                TaskSupport::Optional => wit::TaskSupport::Optional,
                TaskSupport::Required => wit::TaskSupport::Required,
            },
        }
    }
}

impl From<Output> for wit::Output {
    fn from(output: Output) -> Self {
        let media = |m: crate::Media| wit::Media {
            data: m.data,
            mime_type: m.mime_type,
        };
        wit::Output {
            content: output
                .content
                .into_iter()
                .map(|c| match c {
                    Content::Text(t) => wit::Content::Text(t),
                    Content::Image(m) => wit::Content::Image(media(m)),
                    Content::Audio(m) => wit::Content::Audio(media(m)),
                    Content::Embedded(r) => wit::Content::Embedded(wit::EmbeddedResource {
                        uri: r.uri,
                        mime_type: r.mime_type,
                        body: match r.body {
                            ResourceBody::Text(t) => wit::ResourceBody::Text(t),
                            ResourceBody::Blob(b) => wit::ResourceBody::Blob(b),
                        },
                    }),
                    Content::Link(l) => wit::Content::Link(wit::ResourceLink {
                        uri: l.uri,
                        name: l.name,
                        title: l.title,
                        description: l.description,
                        mime_type: l.mime_type,
                        size: l.size,
                    }),
                })
                .collect(),
            structured: output.structured.map(|s| s.to_string()),
        }
    }
}

impl From<Error> for wit::Error {
    fn from(error: Error) -> Self {
        match error {
            Error::InvalidArguments(m) => wit::Error::InvalidArguments(m),
            Error::Failed(m) => wit::Error::Failed(m),
        }
    }
}

impl Toolbox {
    /// `describe` of the contract: every tool in its WIT form.
    pub fn describe_wit(&self) -> Vec<wit::Tool> {
        self.describe().into_iter().map(Into::into).collect()
    }

    /// `call` of the contract, in its WIT form.
    pub fn call_wit(&self, name: &str, arguments: &str) -> Result<wit::Output, wit::Error> {
        self.call(name, arguments)
            .map(Into::into)
            .map_err(Into::into)
    }
}

/// Exports the given `#[tool]` functions as the component's tools.
///
/// Write it once per component, at the crate root:
///
/// ```ignore
/// airlock_sdk::export_tools!(lookup_price, restock);
/// ```
///
/// It defines `pub static TOOLS: airlock_sdk::Toolbox` (so native tests can
/// call `TOOLS.describe()` and `TOOLS.call(name, json)`), a type
/// `AirlockComponent` that implements the contract's `tools` interface, and,
/// when compiling for WebAssembly, the component's exports.
#[macro_export]
macro_rules! export_tools {
    ($($tool:path),+ $(,)?) => {
        /// The tools this component exports.
        pub static TOOLS: $crate::Toolbox = $crate::toolbox![$($tool),+];

        /// Implements the contract's `tools` interface with [`TOOLS`].
        pub struct AirlockComponent;

        impl $crate::bindings::exports::airlock::tool::tools::Guest for AirlockComponent {
            fn describe() -> ::std::vec::Vec<$crate::bindings::airlock::tool::types::Tool> {
                TOOLS.describe_wit()
            }

            fn call(
                name: ::std::string::String,
                arguments: ::std::string::String,
            ) -> ::std::result::Result<
                $crate::bindings::airlock::tool::types::Output,
                $crate::bindings::airlock::tool::types::Error,
            > {
                TOOLS.call_wit(&name, &arguments)
            }
        }

        #[cfg(target_family = "wasm")]
        $crate::bindings::__export_toolbox!(AirlockComponent with_types_in $crate::bindings);
    };
}
