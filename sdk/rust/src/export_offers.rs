//! The bridge for the `server` world's other exports: converts resources,
//! prompts, completions and skills of a [`Toolbox`] to the `resources`,
//! `prompts`, `completions` and `skills` interfaces of `wit/tool.wit`.

use crate::bindings::airlock::tool::types as wit;
use crate::bindings::exports::airlock::tool::{completions, prompts, resources, skills};
use crate::completion::{Completion, CompletionRef};
use crate::prompt::{Message, PromptInfo, PromptMessages, Role};
use crate::resource::{Annotations, Contents, ReadError, ResourceInfo, TemplateInfo};
use crate::{Error, Toolbox};

impl From<Role> for wit::Role {
    fn from(role: Role) -> Self {
        match role {
            Role::User => wit::Role::User,
            Role::Assistant => wit::Role::Assistant,
        }
    }
}

impl From<Annotations> for resources::Annotations {
    fn from(a: Annotations) -> Self {
        resources::Annotations {
            audience: a.audience.into_iter().map(Into::into).collect(),
            priority: a.priority,
            last_modified: a.last_modified,
        }
    }
}

impl From<ResourceInfo> for resources::Resource {
    fn from(r: ResourceInfo) -> Self {
        resources::Resource {
            uri: r.uri,
            name: r.name,
            title: r.title,
            description: r.description,
            mime_type: r.mime_type,
            size: r.size,
            annotations: r.annotations.map(Into::into),
            icons: r.icons.into_iter().map(Into::into).collect(),
            meta: r.meta.map(|m| m.to_string()),
        }
    }
}

impl From<TemplateInfo> for resources::ResourceTemplate {
    fn from(t: TemplateInfo) -> Self {
        resources::ResourceTemplate {
            uri_template: t.uri_template,
            name: t.name,
            title: t.title,
            description: t.description,
            mime_type: t.mime_type,
            annotations: t.annotations.map(Into::into),
            icons: t.icons.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<Contents> for resources::Contents {
    fn from(c: Contents) -> Self {
        resources::Contents {
            uri: c.uri,
            mime_type: c.mime_type,
            body: c.body.into(),
            meta: c.meta.map(|m| m.to_string()),
        }
    }
}

impl From<ReadError> for resources::ReadError {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::NotFound(m) => resources::ReadError::NotFound(m),
            ReadError::Failed(m) => resources::ReadError::Failed(m),
        }
    }
}

impl From<PromptInfo> for prompts::Prompt {
    fn from(p: PromptInfo) -> Self {
        prompts::Prompt {
            name: p.name,
            title: p.title,
            description: p.description,
            arguments: p
                .arguments
                .into_iter()
                .map(|a| prompts::Argument {
                    name: a.name,
                    title: a.title,
                    description: a.description,
                    required: a.required,
                })
                .collect(),
            icons: p.icons.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<Message> for prompts::Message {
    fn from(m: Message) -> Self {
        prompts::Message {
            role: m.role.into(),
            content: m.content.into(),
        }
    }
}

impl From<PromptMessages> for prompts::PromptMessages {
    fn from(p: PromptMessages) -> Self {
        prompts::PromptMessages {
            description: p.description,
            messages: p.messages.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<Completion> for completions::Completion {
    fn from(c: Completion) -> Self {
        completions::Completion {
            values: c.values,
            total: c.total,
            has_more: c.has_more,
        }
    }
}

impl Toolbox {
    /// `resources.describe` of the contract.
    pub fn catalog_wit(&self) -> resources::Catalog {
        resources::Catalog {
            resources: self.resources().into_iter().map(Into::into).collect(),
            templates: self.templates().into_iter().map(Into::into).collect(),
            tool_meta: self
                .tool_meta()
                .into_iter()
                .map(|(tool, meta)| resources::ToolMeta {
                    tool,
                    meta: meta.to_string(),
                })
                .collect(),
        }
    }

    /// `resources.read` of the contract.
    pub fn read_wit(&self, uri: &str) -> Result<Vec<resources::Contents>, resources::ReadError> {
        self.read(uri)
            .map(|c| c.into_iter().map(Into::into).collect())
            .map_err(Into::into)
    }

    /// `skills.describe` of the contract: the bundled skills, as they are.
    pub fn skills_wit(&self) -> Vec<skills::Skill> {
        self.skills()
            .into_iter()
            .map(|skill| skills::Skill {
                path: skill.path,
                files: skill
                    .files
                    .into_iter()
                    .map(|(path, bytes)| skills::File { path, bytes })
                    .collect(),
            })
            .collect()
    }

    /// `prompts.describe` of the contract.
    pub fn prompts_wit(&self) -> Vec<prompts::Prompt> {
        self.prompts().into_iter().map(Into::into).collect()
    }

    /// `prompts.get` of the contract.
    pub fn get_prompt_wit(
        &self,
        name: &str,
        arguments: Vec<(String, String)>,
    ) -> Result<prompts::PromptMessages, wit::Error> {
        self.get_prompt(name, arguments)
            .map(Into::into)
            .map_err(Into::into)
    }

    /// `completions.complete` of the contract.
    pub fn complete_wit(
        &self,
        reference: completions::Reference,
        argument: &str,
        value: &str,
        context: &[(String, String)],
    ) -> Result<completions::Completion, wit::Error> {
        let reference = match &reference {
            completions::Reference::Prompt(name) => CompletionRef::Prompt(name),
            completions::Reference::ResourceTemplate(t) => CompletionRef::ResourceTemplate(t),
        };
        self.complete(reference, argument, value, context)
            .map(Into::into)
            .map_err(|e: Error| e.into())
    }
}
