//! The bridge to the WIT contract: converts the SDK's types to the bindings
//! that `wit-bindgen` generates from `wit/tool.wit`, and the
//! [`export_tools!`](crate::export_tools) macro that exports a [`Toolbox`].

use crate::bindings::airlock::tool::types as wit;
use crate::{Content, Error, Icon, Output, ResourceBody, TaskSupport, ToolInfo, Toolbox};

impl From<Icon> for wit::Icon {
    fn from(icon: Icon) -> Self {
        wit::Icon {
            src: icon.src,
            mime_type: icon.mime_type,
            sizes: icon.sizes,
        }
    }
}

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
            icons: info.icons.into_iter().map(Into::into).collect(),
            task_support: match info.task_support {
                TaskSupport::Forbidden => wit::TaskSupport::Forbidden,
                TaskSupport::Optional => wit::TaskSupport::Optional,
                TaskSupport::Required => wit::TaskSupport::Required,
            },
        }
    }
}

impl From<Content> for wit::Content {
    fn from(content: Content) -> Self {
        let media = |m: crate::Media| wit::Media {
            data: m.data,
            mime_type: m.mime_type,
        };
        match content {
            Content::Text(t) => wit::Content::Text(t),
            Content::Image(m) => wit::Content::Image(media(m)),
            Content::Audio(m) => wit::Content::Audio(media(m)),
            Content::Embedded(r) => wit::Content::Embedded(wit::EmbeddedResource {
                uri: r.uri,
                mime_type: r.mime_type,
                body: r.body.into(),
            }),
            Content::Link(l) => wit::Content::Link(wit::ResourceLink {
                uri: l.uri,
                name: l.name,
                title: l.title,
                description: l.description,
                mime_type: l.mime_type,
                size: l.size,
            }),
        }
    }
}

impl From<ResourceBody> for wit::ResourceBody {
    fn from(body: ResourceBody) -> Self {
        match body {
            ResourceBody::Text(t) => wit::ResourceBody::Text(t),
            ResourceBody::Blob(b) => wit::ResourceBody::Blob(b),
        }
    }
}

impl From<Output> for wit::Output {
    fn from(output: Output) -> Self {
        wit::Output {
            content: output.content.into_iter().map(Into::into).collect(),
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

/// Exports the given `#[tool]`, `#[resource]`, `#[resource_template]`,
/// `#[prompt]` and `#[complete]` functions and `#[skills]` structs: the
/// component's tools, and its resources, prompts, completions and skills
/// (each list empty when it declares none).
///
/// Write it once per component, at the crate root:
///
/// ```ignore
/// airlock_sdk::export_tools!(lookup_price, restock, price_list, summarize);
/// ```
///
/// It defines `pub static TOOLS: airlock_sdk::Toolbox` (so native tests can
/// call `TOOLS.describe()`, `TOOLS.call(name, json)`, `TOOLS.read(uri)`,
/// `TOOLS.get_prompt(name, args)` …), a type `AirlockComponent` that
/// implements the contract's `tools`, `resources`, `prompts`,
/// `completions` and `skills` interfaces (world `server`), and, when compiling for
/// WebAssembly, the component's exports.
#[macro_export]
macro_rules! export_tools {
    ($($item:path),+ $(,)?) => {
        /// What this component exports.
        pub static TOOLS: $crate::Toolbox = $crate::toolbox![$($item),+];

        /// Implements the contract's interfaces with [`TOOLS`].
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

        impl $crate::bindings::exports::airlock::tool::resources::Guest for AirlockComponent {
            fn describe() -> $crate::bindings::exports::airlock::tool::resources::Catalog {
                TOOLS.catalog_wit()
            }

            fn read(
                uri: ::std::string::String,
            ) -> ::std::result::Result<
                ::std::vec::Vec<$crate::bindings::exports::airlock::tool::resources::Contents>,
                $crate::bindings::exports::airlock::tool::resources::ReadError,
            > {
                TOOLS.read_wit(&uri)
            }
        }

        impl $crate::bindings::exports::airlock::tool::prompts::Guest for AirlockComponent {
            fn describe() -> ::std::vec::Vec<$crate::bindings::exports::airlock::tool::prompts::Prompt> {
                TOOLS.prompts_wit()
            }

            fn get(
                name: ::std::string::String,
                arguments: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::std::result::Result<
                $crate::bindings::exports::airlock::tool::prompts::PromptMessages,
                $crate::bindings::airlock::tool::types::Error,
            > {
                TOOLS.get_prompt_wit(&name, arguments)
            }
        }

        impl $crate::bindings::exports::airlock::tool::completions::Guest for AirlockComponent {
            fn complete(
                reference: $crate::bindings::exports::airlock::tool::completions::Reference,
                argument: ::std::string::String,
                value: ::std::string::String,
                context: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::std::result::Result<
                $crate::bindings::exports::airlock::tool::completions::Completion,
                $crate::bindings::airlock::tool::types::Error,
            > {
                TOOLS.complete_wit(reference, &argument, &value, &context)
            }
        }

        impl $crate::bindings::exports::airlock::tool::skills::Guest for AirlockComponent {
            fn describe() -> ::std::vec::Vec<$crate::bindings::exports::airlock::tool::skills::Skill> {
                TOOLS.skills_wit()
            }
        }

        #[cfg(target_family = "wasm")]
        $crate::bindings::__export_server!(AirlockComponent with_types_in $crate::bindings);
    };
}
