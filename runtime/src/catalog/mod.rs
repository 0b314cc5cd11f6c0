//! The catalog: loads components, checks every tool they declare (and the
//! resources, templates and prompts of a component of world `server`), and
//! indexes the tools by name, resources by URI, templates and prompts —
//! each name unique among the components served (`claims.rs`).
//!
//! A component is accepted or refused as a whole: one bad tool (or
//! resource, prompt …) refuses the component, with an error naming it and
//! the rule it breaks.

mod claims;
mod kind;
pub mod offers;
pub mod skills;
pub mod uri_template;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwap;
use sha2::{Digest, Sha256};

use crate::args::{ArgumentSchema, OutputSchema};
use crate::functions::DescribeError;
use crate::offer::DescribedOffers;
use crate::sandbox::{DescribedTool, Exports, Linked, RunError, Sandbox, Tier};
use crate::tool::{Hints, ToolInfo};

pub use claims::{Claim, claims};
pub use kind::{Kind, export_names};
pub use offers::{APP_MIME, Offers, Template};
pub use skills::{Skill, SkillFile};
pub use validate::check_name;

pub use crate::sandbox::CONTRACT;

/// Why a component was refused.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a WebAssembly file")]
    NotWasm { path: PathBuf },
    #[error(
        "{path}: a core WebAssembly module, not a component; build it for `wasm32-wasip2` \
         (or wrap it with `wasm-tools component new`)"
    )]
    CoreModule { path: PathBuf },
    #[error("{path}: not a valid component: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error("{path}: imports {interface}, which airlock does not provide")]
    UnknownImport { path: PathBuf, interface: String },
    #[error(
        "{path}: does not export `{CONTRACT}`; build it with the airlock SDK or against wit/tool.wit"
    )]
    NoContract { path: PathBuf },
    /// A wasmcp tools component that needs what only wasmcp's composition
    /// provides.
    #[error("{path}: {reason}")]
    Wasmcp { path: PathBuf, reason: String },
    /// Nothing it exports can be served, found before compiling.
    #[error("{path}: {reason}")]
    NothingToServe { path: PathBuf, reason: String },
    /// A plain-function component that cannot be served as it is.
    #[error("{path}: {cause}")]
    Functions { path: PathBuf, cause: DescribeError },
    #[error("{path}: listing its tools failed: {cause}")]
    Describe { path: PathBuf, cause: RunError },
    #[error("{path}: tool {tool:?}: {rule}")]
    BadTool {
        path: PathBuf,
        tool: String,
        rule: String,
    },
    /// A resource, template, prompt or tool `_meta` that breaks a rule.
    #[error("{path}: {what}: {rule}")]
    BadOffer {
        path: PathBuf,
        what: String,
        rule: String,
    },
    #[error("{path}: listing its resources and prompts failed: {cause}")]
    DescribeOffers { path: PathBuf, cause: RunError },
    /// Nothing to serve: no tool, and (world `server`) no resource,
    /// template or prompt either.
    #[error("{path}: {what}")]
    Empty { path: PathBuf, what: &'static str },
    /// The policy has tool sections for tools the component does not
    /// declare. Refused rather than served: such a section may narrow a
    /// tool's grant, and a misspelt narrowing must not widen it silently.
    #[error(
        "{path}: the policy configures tools it does not declare: {}",
        sections.errors().iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    UnmatchedTools {
        path: PathBuf,
        sections: crate::policy::PolicyError,
    },
    #[error(
        "tool {tool:?} is declared by both {first} and {second} (a tool's name is unique \
         among the components served: rename the tool in one of them, or serve them from \
         separate airlock processes)"
    )]
    Clash {
        tool: String,
        first: PathBuf,
        second: PathBuf,
    },
    /// A resource URI, template or prompt name another component serves.
    #[error(
        "{what} is declared by both {first} and {second} (it is unique among the components \
         served: rename it in one of them, or serve them from separate airlock processes)"
    )]
    OfferClash {
        what: String,
        first: PathBuf,
        second: PathBuf,
    },
    /// A component named by reference could not be fetched or verified.
    #[error(transparent)]
    Source(#[from] crate::source::SourceError),
}

/// A loaded component: its code, ready to instantiate, and what it imports.
pub struct Component {
    /// The file stem, e.g. `catalog` for `catalog.wasm` (for a reference,
    /// its policy section's name or its last part); policy sections use it.
    pub name: String,
    /// The file, or the reference (`oci://…`) it was fetched by.
    pub path: PathBuf,
    /// SHA-256 of the file, lowercase hex.
    pub digest: String,
    pub imports: Vec<String>,
    /// How it is served: its own contract, plain functions, or wasmcp's
    /// tools.
    pub kind: Kind,
    /// The code calls instantiate; the optimised code replaces quick-tier
    /// code under running calls (each keeps what it started with).
    code: ArcSwap<Linked>,
    /// The file's bytes while its code is quick-tier, for compiling the
    /// optimised code (see [`crate::runtime`]'s `optimize`); taken by that compile.
    unoptimized: Mutex<Option<Arc<[u8]>>>,
    /// Its resources, templates and prompts, checked (set once at load).
    offered: OnceLock<Offers>,
    /// The places of its reads, prompts and completions under its
    /// section's concurrency limit.
    pub offer_places: Arc<Places>,
}

impl Component {
    /// What it offers beside its tools (nothing for a `toolbox` component).
    pub fn offers(&self) -> &Offers {
        self.offered.get().unwrap_or(&offers::NOTHING)
    }

    /// The linked code a call instantiates now.
    pub fn code(&self) -> Arc<Linked> {
        self.code.load_full()
    }

    /// Which tier compiled the code calls run on now.
    pub fn tier(&self, sandbox: &Sandbox) -> Tier {
        sandbox.tier(self.code.load().engine())
    }

    /// The bytes to compile optimised code from, once: `None` when the
    /// code is optimised already or its compile has begun.
    pub(crate) fn take_unoptimized(&self) -> Option<Arc<[u8]>> {
        self.unoptimized
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Whether optimised code is still to be compiled for it.
    pub(crate) fn awaits_optimizing(&self) -> bool {
        self.unoptimized
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Puts `code` (linked like the code it replaces) in place for the
    /// calls that start from now on.
    pub(crate) fn replace_code(&self, code: Linked) {
        self.code.store(Arc::new(code));
    }
}

/// Places under a concurrency limit (see `call::running`): how many run,
/// how many wait for a place, and the wake-up of a waiter when a place is
/// given back. Each tool has its own; a component's reads, prompts and
/// completions share one.
#[derive(Default)]
pub struct Places {
    pub running: std::sync::atomic::AtomicU32,
    pub waiting: std::sync::atomic::AtomicU32,
    pub freed: tokio::sync::Notify,
}

/// One tool, checked, with its compiled schemas and its component.
pub struct Tool {
    pub info: ToolInfo,
    pub args: ArgumentSchema,
    pub output: Option<OutputSchema>,
    pub component: Arc<Component>,
    /// Whether the component declares this tool's hints itself (else the
    /// policy may, see [`apply_policy_hints`]).
    pub own_hints: bool,
    /// Its calls' places under the per-tool concurrency limit.
    pub places: Arc<Places>,
    /// How long its recent runs took: whether a call may skip the lanes.
    pub pace: crate::lanes::Pace,
}

/// Every tool of every loaded component, by name; and what the components
/// offer beside: resources by URI, templates by their text, prompts by name
/// (each with the component that serves it).
#[derive(Default, Clone)]
pub struct Catalog {
    tools: BTreeMap<String, Arc<Tool>>,
    components: Vec<Arc<Component>>,
    /// Each with its component and its place in the component's list (a
    /// listing looks nothing up again).
    resources: BTreeMap<String, (Arc<Component>, usize)>,
    templates: BTreeMap<String, (Arc<Component>, usize)>,
    prompts: BTreeMap<String, (Arc<Component>, usize)>,
}

/// SHA-256 of `bytes` as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl Catalog {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn tool(&self, name: &str) -> Option<&Arc<Tool>> {
        self.tools.get(name)
    }

    /// Tools in name order (deterministic, for listings and pagination).
    pub fn tools(&self) -> impl Iterator<Item = &Arc<Tool>> {
        self.tools.values()
    }

    pub fn components(&self) -> &[Arc<Component>] {
        &self.components
    }

    /// Every resource, in URI order, with its component.
    pub fn resources(
        &self,
    ) -> impl Iterator<Item = (&crate::offer::ResourceInfo, &Arc<Component>)> {
        self.resources
            .values()
            .filter_map(|(c, at)| Some((c.offers().resources.get(*at)?, c)))
    }

    /// Every resource template, in the order of its text, with its component.
    pub fn templates(&self) -> impl Iterator<Item = (&Template, &Arc<Component>)> {
        self.templates
            .values()
            .filter_map(|(c, at)| Some((c.offers().templates.get(*at)?, c)))
    }

    /// Every prompt, in name order, with its component.
    pub fn prompts(&self) -> impl Iterator<Item = (&crate::offer::PromptInfo, &Arc<Component>)> {
        self.prompts
            .values()
            .filter_map(|(c, at)| Some((c.offers().prompts.get(*at)?, c)))
    }

    pub fn prompt(&self, name: &str) -> Option<(&crate::offer::PromptInfo, &Arc<Component>)> {
        let (component, at) = self.prompts.get(name)?;
        Some((component.offers().prompts.get(*at)?, component))
    }

    /// The component serving `uri`: its resource of that URI, else the
    /// first template (in the order of their text) it matches; with the
    /// template when one matched.
    pub fn resource_for(&self, uri: &str) -> Option<(&Arc<Component>, Option<&Template>)> {
        if let Some((component, _)) = self.resources.get(uri) {
            return Some((component, None));
        }
        self.templates()
            .find_map(|(t, c)| t.parsed.matches(uri).map(|_| (c, Some(t))))
    }

    /// The template written `uri_template`, with its component.
    pub fn template(&self, uri_template: &str) -> Option<(&Template, &Arc<Component>)> {
        let (component, at) = self.templates.get(uri_template)?;
        Some((component.offers().templates.get(*at)?, component))
    }

    /// The component that holds `claim` in this catalog, if any.
    fn holder(&self, claim: &Claim) -> Option<&Arc<Component>> {
        match *claim {
            Claim::Tool(name) => self.tools.get(name).map(|t| &t.component),
            Claim::Resource(uri) => self.resources.get(uri).map(|(c, _)| c),
            Claim::Template(text) => self.templates.get(text).map(|(c, _)| c),
            Claim::Prompt(name) => self.prompts.get(name).map(|(c, _)| c),
        }
    }

    /// Each component with its tools, in the order they were added (to
    /// build a catalog of some of them again).
    pub fn served(&self) -> Vec<Served> {
        self.components
            .iter()
            .map(|component| Served {
                component: component.clone(),
                tools: self
                    .tools()
                    .filter(|t| Arc::ptr_eq(&t.component, component))
                    .cloned()
                    .collect(),
            })
            .collect()
    }

    /// How much it serves, for a readiness answer: `2 tool(s)`, with
    /// `, 1 resource(s), 1 resource template(s), 1 prompt(s)` for those it has.
    pub fn counted(&self) -> String {
        let mut counted = format!("{} tool(s)", self.tools.len());
        for (n, what) in [
            (self.resources.len(), "resource"),
            (self.templates.len(), "resource template"),
            (self.prompts.len(), "prompt"),
        ] {
            if n > 0 {
                counted += &format!(", {n} {what}(s)");
            }
        }
        counted
    }

    /// Adds a loaded component; refuses the whole component when one of
    /// its names (a tool's, a URI, a template, a prompt's) is already taken.
    pub fn add(&mut self, loaded: Loaded) -> Result<(), LoadError> {
        self.add_shared(&loaded.share())
    }

    /// Like [`Catalog::add`], for a component already shared (a hot reload
    /// keeps the tools of components whose files did not change).
    pub fn add_shared(&mut self, served: &Served) -> Result<(), LoadError> {
        let Served { component, tools } = served;
        for claim in served.claims() {
            if let Some(first) = self.holder(&claim) {
                return Err(claim.clash(&first.path, &component.path));
            }
        }
        let offers = component.offers();
        for (at, r) in offers.resources.iter().enumerate() {
            self.resources
                .insert(r.uri.clone(), (component.clone(), at));
        }
        for (at, t) in offers.templates.iter().enumerate() {
            let key = t.info.uri_template.clone();
            self.templates.insert(key, (component.clone(), at));
        }
        for (at, p) in offers.prompts.iter().enumerate() {
            self.prompts.insert(p.name.clone(), (component.clone(), at));
        }
        self.components.push(component.clone());
        for tool in tools {
            self.tools.insert(tool.info.name.clone(), tool.clone());
        }
        Ok(())
    }
}

/// A component as loading gives it: its checked tools (none for one that
/// only offers resources or prompts), their hints still the policy's to give.
pub struct Loaded {
    pub component: Arc<Component>,
    pub tools: Vec<Tool>,
}

impl Loaded {
    /// Its tools shared, as the catalog holds them.
    pub fn share(self) -> Served {
        Served {
            component: self.component,
            tools: self.tools.into_iter().map(Arc::new).collect(),
        }
    }

    pub fn tool_names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.info.name.clone()).collect()
    }

    /// Every name it would take in a catalog (see [`claims`]).
    pub fn claims(&self) -> Vec<Claim<'_>> {
        claims(
            &self.component,
            self.tools.iter().map(|t| t.info.name.as_str()),
        )
    }
}

/// A loaded component as a catalog holds it: its tools shared with the
/// calls running them.
#[derive(Clone)]
pub struct Served {
    pub component: Arc<Component>,
    pub tools: Vec<Arc<Tool>>,
}

impl Served {
    pub fn tool_names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.info.name.clone()).collect()
    }

    /// Every name it takes in a catalog (see [`claims`]).
    pub fn claims(&self) -> Vec<Claim<'_>> {
        claims(
            &self.component,
            self.tools.iter().map(|t| t.info.name.as_str()),
        )
    }
}

/// Compiles (through the compile cache), links and describes one component
/// file's bytes (read or fetched by the caller, who may have checked a
/// digest pin and a signature), and checks every tool it declares (and
/// what a component of world `server` offers beside). `path` names it in
/// messages; `name` is what policy sections call it. A component with no
/// tool is served when it offers a resource, a template or a prompt.
///
/// What the component exports is read before it is compiled, so that a
/// component airlock cannot serve is refused at once.
pub fn load_bytes(
    sandbox: &Sandbox,
    path: &Path,
    name: &str,
    bytes: &[u8],
) -> Result<Loaded, LoadError> {
    load_listed(sandbox, path, name, bytes, &|code| list(sandbox, code))
}

/// What a component's guest lists when asked at load: its tools, and what
/// else it offers (`None` for a kind that offers nothing else). Each part
/// fails on its own, as its load error says.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Listing {
    pub tools: Result<Vec<DescribedTool>, RunError>,
    pub offers: Option<Result<DescribedOffers, RunError>>,
}

/// Runs the guest's listing exports here, in this process's sandbox.
pub fn list(sandbox: &Sandbox, code: &Linked) -> Listing {
    let tools = match code {
        Linked::Tool(pre) => sandbox.describe(pre),
        Linked::Wasmcp(pre) => sandbox.list_wasmcp(pre),
        Linked::Functions(_) => Ok(Vec::new()),
    };
    let offers = match code {
        Linked::Tool(pre) => Some(sandbox.describe_offers(pre).and_then(|mut offers| {
            offers.skills = sandbox.describe_skills(pre)?;
            Ok(offers)
        })),
        Linked::Wasmcp(pre) => Some(sandbox.list_wasmcp_offers(pre)),
        Linked::Functions(_) => None,
    };
    Listing { tools, offers }
}

/// [`load_bytes`], with the guest's listing from `lister` (a cordon's
/// worker lists the components whose guests it runs: the serving process
/// runs none of their code).
pub fn load_listed(
    sandbox: &Sandbox,
    path: &Path,
    name: &str,
    bytes: &[u8],
    lister: &dyn Fn(&Linked) -> Listing,
) -> Result<Loaded, LoadError> {
    let path_buf = path.to_path_buf();
    validate::check_header(path, bytes)?;
    let kind = kind::detect(bytes).map_err(|reason| LoadError::NothingToServe {
        path: path_buf.clone(),
        reason,
    })?;
    let (exports, described) = match kind {
        Kind::Tool => (Exports::Contract, None),
        Kind::Wasmcp => (Exports::Wasmcp, None),
        Kind::Functions => {
            let functions =
                crate::functions::describe(bytes).map_err(|cause| LoadError::Functions {
                    path: path_buf.clone(),
                    cause,
                })?;
            let described = functions.iter().map(plain_tool).collect();
            (Exports::Functions(functions), Some(described))
        }
    };
    let digest = sha256_hex(bytes);
    let compiled = sandbox
        .compile(&digest, bytes)
        .map_err(|e| LoadError::Invalid {
            path: path_buf.clone(),
            reason: format!("{e:#}"),
        })?;
    let imports = sandbox.imports(&compiled);
    if kind == Kind::Wasmcp {
        crate::sandbox::check_wasmcp_imports(&compiled).map_err(|reason| LoadError::Wasmcp {
            path: path_buf.clone(),
            reason,
        })?;
    }
    let pre = sandbox
        .link(&compiled, exports)
        .map_err(|e| validate::link_error(path, &imports, e))?;
    // The optimiser compiles quick-tier code again from these bytes.
    let unoptimized = (sandbox.tier(compiled.engine()) == Tier::Quick).then(|| Arc::from(bytes));
    let component = Arc::new(Component {
        name: name.to_string(),
        path: path_buf.clone(),
        digest,
        imports,
        kind,
        code: ArcSwap::from_pointee(pre),
        unoptimized: Mutex::new(unoptimized),
        offered: OnceLock::new(),
        offer_places: Arc::default(),
    });
    let code = component.code();
    let (listed, offers) = match (described, code.as_ref()) {
        (Some(described), _) => (Ok(described), None),
        (None, Linked::Functions(_)) => return Err(LoadError::NoContract { path: path_buf }),
        (None, code) => {
            let listing = lister(code);
            (listing.tools, listing.offers)
        }
    };
    let described = listed.map_err(|cause| LoadError::Describe {
        path: path_buf.clone(),
        cause,
    })?;
    let tools = validate::tools(path, described, &component)?;
    if let Some(offers) = offers {
        let offers = offers.map_err(|cause| LoadError::DescribeOffers {
            path: path_buf.clone(),
            cause,
        })?;
        let names: Vec<&str> = tools.iter().map(|t| t.info.name.as_str()).collect();
        let offers = offers::check(path, offers, &names)?;
        // Set once, here, before the component is shared.
        let _ = component.offered.set(offers);
    }
    if tools.is_empty() && component.offers().is_empty() {
        return Err(LoadError::Empty {
            path: path_buf,
            what: match component.kind {
                Kind::Tool => {
                    "declares no tools and offers no resources, templates or prompts; export \
                     at least one tool (`tools.describe`), or build it for world `server` and \
                     declare a resource or template (`resources.describe`) or a prompt \
                     (`prompts.describe`)"
                }
                Kind::Wasmcp => {
                    "lists no tools, resources, resource templates or prompts; export wasmcp's \
                     `tools` with a tool, or `resources` or `prompts` with an entry \
                     (`completions` alone completes nothing)"
                }
                Kind::Functions => "declares no tools; export at least one",
            },
        });
    }
    Ok(Loaded { component, tools })
}

/// A plain function as the catalog checks tools: no title, icons or hints
/// of its own (the policy may declare hints, see [`apply_policy_hints`]).
fn plain_tool(function: &crate::functions::Function) -> DescribedTool {
    DescribedTool {
        name: function.tool.clone(),
        title: None,
        description: function.description(),
        input_schema: crate::json::to_string(&function.input_schema()),
        output_schema: Some(crate::json::to_string(&function.output_schema())),
        hints: Hints::default(),
        own_hints: false,
        icons: Vec::new(),
        task_support: Default::default(),
    }
}

/// Gives the tools of a component the hints its policy declares for them
/// (`hints` of `[components.NAME.tools.TOOL]`, else of `[components.NAME]`),
/// with the section that declares them. Only tools that carry no hints of
/// their own (plain functions, wasmcp tools without annotated hints) may
/// be given hints: a policy never rewrites, and so never widens, what a
/// tool says of itself.
pub fn apply_policy_hints(
    tools: &mut [Tool],
    declared: impl Fn(&str) -> Option<(Hints, String)>,
) -> Result<(), LoadError> {
    for tool in tools {
        let Some((hints, section)) = declared(&tool.info.name) else {
            continue;
        };
        if tool.own_hints {
            return Err(LoadError::BadTool {
                path: tool.component.path.clone(),
                tool: tool.info.name.clone(),
                rule: format!(
                    "the policy declares hints for it, but the component ({}) declares its own, \
                     which a policy never widens; remove `hints` from {section}",
                    tool.component.kind.as_str(),
                ),
            });
        }
        tool.info.hints = hints;
    }
    Ok(())
}
