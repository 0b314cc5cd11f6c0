//! The one table of MCP methods and the one dispatch over it.
//!
//! A method is one entry in [`METHODS`]: its name, the revisions that have
//! it, what its caller needs (tasks on, a token), what it holds while it
//! runs (a call, a wait), the params field its `Mcp-Name` header mirrors
//! (2026-07-28), what a transport does with it first ([`Before`]: open a
//! session, wait for loading components, check mirrored headers), and its
//! handler. Transports ask the table what a message is before it runs
//! ([`long_kind`], [`name_field`], [`is_stateless`], [`before`],
//! [`awaits_loading`]) and never match a method's name; they get back a
//! typed answer ([`Answered`]: the body and its error code), so no
//! transport reads an answer's JSON back or decides a method's facts again. The capabilities `initialize` and `server/discover` announce are
//! read from the same table.

use std::sync::Arc;
use std::sync::atomic::AtomicU8;

use serde_json::{Map, Value, json};

pub use super::answered::Answered;
use super::context::Ctx;
pub use super::method::{Before, HeaderCheck, Long, Method, Needs, Revisions};
use super::method::{Handled, Handler, Handling};
use super::model::{self, ListParams, NoParams};
use super::request::{Answer, Meta, read_meta};
use super::revision::{META_VERSION, Revision};
use super::server::Server;
use super::session::Session;
use super::{
    completion, lifecycle, mirrored, prompts, resources, skills, subscriptions, tasks, tools,
};
use crate::protocol::jsonrpc::{ErrorObject, Id, Incoming, Message, Request};
use crate::protocol::outbox::Outbox;
use crate::tool::Level;

/// A handler: `|ctx, params: Type| body`, the body an `Answer`; the
/// params are parsed into their [`model`] type first (-32602 when they do
/// not fit), owned.
macro_rules! handler {
    (|$ctx:ident, $params:ident: $ty:ty| $body:expr) => {{
        fn handle<'c>($ctx: &'c Ctx<'c>, params: Value) -> Handled<'c> {
            Box::pin(async move {
                let $params: $ty = match model::parse(params) {
                    Ok(params) => params,
                    Err(error) => return Answer::Error(error),
                };
                $body
            })
        }
        Handling::Handler(handle as Handler)
    }};
}

/// Every method, in one place.
static METHODS: [Method; 23] = [
    Method {
        name: "initialize",
        revisions: Revisions::Sessions,
        needs: Needs::Nothing,
        long: None,
        name_field: None,
        before: Before::OpensSession,
        handling: Handling::Session,
    },
    Method {
        name: "ping",
        revisions: Revisions::Sessions,
        needs: Needs::Nothing,
        long: None,
        name_field: None,
        before: Before::Nothing,
        handling: Handling::Session,
    },
    Method {
        name: "server/discover",
        revisions: Revisions::Stateless,
        needs: Needs::Nothing,
        long: None,
        name_field: None,
        before: Before::Nothing,
        handling: handler!(|ctx, _params: NoParams| Answer::Result(lifecycle::discover(
            capabilities(ctx.revision, ctx.caller().token().is_some())
        ))),
    },
    Method {
        name: "logging/setLevel",
        revisions: Revisions::Sessions,
        needs: Needs::Nothing,
        long: None,
        name_field: None,
        before: Before::Nothing,
        handling: handler!(
            |ctx, params: model::lifecycle::SetLevelParams| lifecycle::set_level(ctx, &params)
                .into()
        ),
    },
    Method {
        name: "tools/list",
        revisions: Revisions::Both,
        needs: Needs::Nothing,
        long: None,
        name_field: None,
        before: Before::AwaitsLoading,
        handling: handler!(|ctx, params: ListParams| tools::list(ctx, &params).into()),
    },
    Method {
        name: "tools/call",
        revisions: Revisions::Both,
        needs: Needs::Nothing,
        long: Some(Long::Call),
        name_field: Some("name"),
        before: Before::ChecksHeaders(mirrored::check),
        handling: handler!(|ctx, params: model::tools::CallParams| tools::call(ctx, params).await),
    },
    Method {
        name: "tasks/get",
        revisions: Revisions::Both,
        needs: Needs::Tasks,
        long: None,
        name_field: Some("taskId"),
        before: Before::Nothing,
        handling: handler!(
            |ctx, params: model::tasks::TaskParams| tasks::get(ctx, &params).await.into()
        ),
    },
    Method {
        name: "tasks/cancel",
        revisions: Revisions::Both,
        needs: Needs::Tasks,
        long: None,
        name_field: Some("taskId"),
        before: Before::Nothing,
        handling: handler!(
            |ctx, params: model::tasks::TaskParams| tasks::cancel(ctx, &params).await.into()
        ),
    },
    Method {
        name: "tasks/result",
        revisions: Revisions::Sessions,
        needs: Needs::Tasks,
        long: Some(Long::Wait),
        name_field: None,
        before: Before::Nothing,
        handling: handler!(
            |ctx, params: model::tasks::TaskParams| tasks::result(ctx, &params).await
        ),
    },
    Method {
        name: "tasks/list",
        revisions: Revisions::Sessions,
        needs: Needs::TasksAndToken,
        long: None,
        name_field: None,
        before: Before::Nothing,
        handling: handler!(|ctx, params: ListParams| tasks::list(ctx, &params).await.into()),
    },
    Method {
        name: "tasks/update",
        revisions: Revisions::Stateless,
        needs: Needs::Tasks,
        long: None,
        name_field: Some("taskId"),
        before: Before::Nothing,
        handling: handler!(
            |ctx, params: model::tasks::UpdateParams| tasks::update(ctx, params).await.into()
        ),
    },
    Method {
        name: "subscriptions/listen",
        revisions: Revisions::Stateless,
        needs: Needs::Nothing,
        long: Some(Long::Wait),
        name_field: None,
        before: Before::Nothing,
        handling: handler!(|ctx, params: model::subscriptions::ListenParams| {
            subscriptions::listen(ctx, params).await
        }),
    },
    Method {
        name: "resources/list",
        revisions: Revisions::Both,
        needs: Needs::Nothing,
        long: None,
        name_field: None,
        before: Before::AwaitsLoading,
        handling: handler!(|ctx, params: ListParams| resources::list(ctx, &params).into()),
    },
    Method {
        name: "resources/templates/list",
        revisions: Revisions::Both,
        needs: Needs::Nothing,
        long: None,
        name_field: None,
        before: Before::AwaitsLoading,
        handling: handler!(|ctx, params: ListParams| resources::templates(ctx, &params).into()),
    },
    Method {
        name: "resources/read",
        revisions: Revisions::Both,
        needs: Needs::Nothing,
        long: Some(Long::Call),
        name_field: Some("uri"),
        before: Before::Nothing,
        handling: handler!(|ctx, params: model::resources::ReadParams| resources::read(
            ctx, params
        )
        .await),
    },
    Method {
        name: "resources/subscribe",
        revisions: Revisions::Sessions,
        needs: Needs::Nothing,
        long: None,
        name_field: None,
        before: Before::Nothing,
        handling: handler!(
            |ctx, params: model::resources::SubscribeParams| resources::subscribe(ctx, &params)
                .into()
        ),
    },
    Method {
        name: "resources/unsubscribe",
        revisions: Revisions::Sessions,
        needs: Needs::Nothing,
        long: None,
        name_field: None,
        before: Before::Nothing,
        handling: handler!(|ctx, params: model::resources::UnsubscribeParams| {
            resources::unsubscribe(ctx, &params).into()
        }),
    },
    Method {
        name: "skills/list",
        revisions: Revisions::Both,
        needs: Needs::Nothing,
        long: None,
        name_field: None,
        before: Before::AwaitsLoading,
        handling: handler!(|ctx, params: ListParams| skills::list(ctx, &params).into()),
    },
    Method {
        name: "skills/get",
        revisions: Revisions::Both,
        needs: Needs::Nothing,
        long: None,
        name_field: None,
        before: Before::Nothing,
        handling: handler!(
            |ctx, params: model::skills::GetParams| skills::get(ctx, &params).into()
        ),
    },
    Method {
        name: "resources/directory/read",
        revisions: Revisions::Both,
        needs: Needs::Nothing,
        long: None,
        name_field: None,
        before: Before::Nothing,
        handling: handler!(|ctx, params: model::skills::DirectoryParams| {
            skills::directory(ctx, &params).into()
        }),
    },
    Method {
        name: "prompts/list",
        revisions: Revisions::Both,
        needs: Needs::Nothing,
        long: None,
        name_field: None,
        before: Before::AwaitsLoading,
        handling: handler!(|ctx, params: ListParams| prompts::list(ctx, &params).into()),
    },
    Method {
        name: "prompts/get",
        revisions: Revisions::Both,
        needs: Needs::Nothing,
        long: Some(Long::Call),
        name_field: Some("name"),
        before: Before::Nothing,
        handling: handler!(
            |ctx, params: model::prompts::GetParams| prompts::get(ctx, params).await
        ),
    },
    Method {
        name: "completion/complete",
        revisions: Revisions::Both,
        needs: Needs::Nothing,
        long: Some(Long::Call),
        name_field: None,
        before: Before::Nothing,
        handling: handler!(
            |ctx, params: model::completion::CompleteParams| completion::complete(ctx, params)
                .await
        ),
    },
];

/// The method named `name`, served or not.
pub fn method(name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|m| m.name == name)
}

/// What `initialize` (a session of `revision`) and `server/discover`
/// announce: read from the table, so a method and its capability cannot
/// disagree.
pub fn capabilities(revision: Revision, token: bool) -> Value {
    let reached =
        |name: &str| method(name).is_some_and(|m| m.reached(revision, true, token).is_ok());
    let mut capabilities = Map::new();
    capabilities.insert("logging".into(), json!({}));
    if reached("tools/list") {
        capabilities.insert("tools".into(), json!({ "listChanged": true }));
    }
    // Announced whether or not a component offers any yet: one may load
    // later (list_changed then says so), as tools may.
    if reached("resources/list") {
        let subscribe = reached("resources/subscribe");
        let resources = json!({ "subscribe": subscribe, "listChanged": true });
        capabilities.insert("resources".into(), resources);
    }
    if reached("prompts/list") {
        capabilities.insert("prompts".into(), json!({ "listChanged": true }));
    }
    if reached("completion/complete") {
        capabilities.insert("completions".into(), json!({}));
    }
    revision.wire().announce(&mut capabilities, &reached);
    if reached("skills/list") {
        let skills = skills::announced(reached("resources/directory/read"));
        let extensions = capabilities
            .entry("extensions")
            .or_insert_with(|| json!({}));
        if let Some(extensions) = extensions.as_object_mut() {
            extensions.insert(skills::EXTENSION.into(), skills);
        }
    }
    Value::Object(capabilities)
}

/// Whether handling `message` may take long, and what it holds meanwhile,
/// so a transport does not wait for it before reading on, and bounds it.
pub fn long_kind(message: &Message) -> Option<Long> {
    match message {
        Message::Request(r) if r.id.is_some() => method(&r.method)?.long,
        _ => None,
    }
}

/// The params field that `Mcp-Name` mirrors for `method`, if any.
pub fn name_field(method_name: &str) -> Option<&'static str> {
    method(method_name)?.name_field
}

/// What a transport does with `request` before the dispatch runs it.
pub fn before(request: &Request) -> Before {
    method(&request.method).map_or(Before::Nothing, |m| m.before)
}

/// Whether a request in `incoming` lists what the components offer, and so
/// waits for the start's components still loading.
pub fn awaits_loading(incoming: &Incoming) -> bool {
    let lists = |m: &Message| matches!(m, Message::Request(r) if matches!(before(r), Before::AwaitsLoading));
    match incoming {
        Incoming::Single(message) => lists(message),
        Incoming::Batch(messages) => messages.iter().any(lists),
        Incoming::Error(_) => false,
    }
}

/// The revision a request declares for itself: 2026-07-28 when its
/// `_meta` names a revision, or when its method exists only there (it then
/// fails that revision's checks); `None` for a request of a session.
pub fn declared(request: &Request) -> Option<Revision> {
    if matches!(before(request), Before::OpensSession) {
        return None;
    }
    let names_one = request
        .params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_VERSION))
        .is_some();
    let stateless_only =
        method(&request.method).is_some_and(|m| m.revisions == Revisions::Stateless);
    (names_one || stateless_only).then_some(Revision::V2026_07_28)
}

/// Whether a body belongs to the stateless revision: the transport's
/// `MCP-Protocol-Version` header says so, or its single request does.
pub fn is_stateless(header: Option<&str>, request: Option<&Request>) -> bool {
    header
        .map(str::trim)
        .and_then(Revision::parse)
        .is_some_and(Revision::is_stateless)
        || request.and_then(declared).is_some()
}

/// Handles a whole body or line that came through `session`: a single
/// message, a batch (its responses in one array), or what failed to parse.
/// `meta` is the `_meta` of a 2026-07-28 request that the transport has
/// read and checked already ([`read_meta`]): it is not read again.
pub async fn handle(
    server: &Arc<Server>,
    session: &Arc<Session>,
    incoming: Incoming,
    meta: Option<Meta>,
    out: &Outbox,
) -> Answered {
    match incoming {
        Incoming::Error(error) => Answered::error(&Id::null(), &error),
        Incoming::Single(message) => one(server, session, message, meta, out).await,
        Incoming::Batch(messages) => {
            let mut responses = Vec::new();
            for message in messages {
                if let Some(response) = one(server, session, message, None, out).await.body {
                    responses.push(response);
                }
            }
            Answered {
                body: (!responses.is_empty()).then_some(Value::Array(responses)),
                error: None,
            }
        }
    }
}

async fn one(
    server: &Arc<Server>,
    session: &Arc<Session>,
    message: Message,
    meta: Option<Meta>,
    out: &Outbox,
) -> Answered {
    match message {
        Message::Invalid(id, error) => Answered::error(&id, &error),
        Message::Reply(reply) => {
            session.reply(reply);
            Answered::nothing()
        }
        Message::Request(mut request) => {
            let Some(id) = request.id.clone() else {
                session.notification(&request);
                return Answered::nothing();
            };
            let span = super::traced::start(server, session, &id, &request).await;
            let answering = answer(server, session, &id, &mut request, meta, out);
            Answered::of(&id, super::traced::run(span, answering).await)
        }
    }
}

/// Builds the request's context and answers it; takes its params (no copy
/// of large arguments).
async fn answer(
    server: &Arc<Server>,
    session: &Arc<Session>,
    id: &Id,
    request: &mut Request,
    meta: Option<Meta>,
    out: &Outbox,
) -> Answer {
    let declared = match meta {
        Some(_) => Some(Revision::V2026_07_28),
        None => declared(request),
    };
    let params = request.params.take();
    let name = request.method.as_str();
    let (revision, client, log_level) = match declared {
        Some(revision) => {
            let meta = match meta.map_or_else(|| read_meta(params.as_ref()), Ok) {
                Ok(meta) => meta,
                Err(error) => return Answer::Error(error),
            };
            // No level asked: no logs at all.
            let level = meta
                .log_level
                .map_or(Level::ALL.len() as u8, |level| level as u8);
            (revision, meta.client, Arc::new(AtomicU8::new(level)))
        }
        None => match (name, session.revision()) {
            ("initialize", _) => {
                let params = params.unwrap_or(Value::Null);
                return lifecycle::initialize(session, params, |revision| {
                    capabilities(revision, session.token_name().is_some())
                })
                .into();
            }
            ("ping", _) => return Answer::Result(json!({})),
            (_, None) => {
                return Answer::Error(ErrorObject::invalid_request(
                    "the session is not initialized; send initialize first",
                ));
            }
            (_, Some(revision)) => (revision, session.client(), session.level().clone()),
        },
    };
    let ctx = Ctx {
        server,
        session,
        id,
        revision,
        client,
        log_level,
        out,
    };
    let handler = match method(name).map(|m| (m, m.handling)) {
        Some((m, Handling::Handler(handler))) => {
            match m.reached(revision, client.tasks, ctx.caller().token().is_some()) {
                Ok(()) => handler,
                Err(error) => return Answer::Error(error),
            }
        }
        _ => return Answer::Error(ErrorObject::method_not_found(name)),
    };
    match handler(&ctx, params.unwrap_or_else(|| json!({}))).await {
        Answer::Result(result) => Answer::Result(revision.wire().decorate(result)),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc;
    use crate::protocol::mcp::request::TASKS_EXTENSION;

    fn request(text: &str) -> Request {
        match jsonrpc::message(serde_json::from_str(text).expect("json")) {
            Message::Request(r) => r,
            _ => panic!("not a request"),
        }
    }

    const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    #[test]
    fn the_table_says_what_a_transport_does_before_a_request_runs() {
        let request = |method: &str| {
            request(&format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"{method}"}}"#
            ))
        };
        assert!(matches!(
            before(&request("initialize")),
            Before::OpensSession
        ));
        assert!(matches!(
            before(&request("tools/call")),
            Before::ChecksHeaders(_)
        ));
        for list in [
            "tools/list",
            "resources/list",
            "resources/templates/list",
            "prompts/list",
        ] {
            assert!(
                matches!(before(&request(list)), Before::AwaitsLoading),
                "{list}"
            );
            let one = Incoming::Single(Message::Request(request(list)));
            assert!(awaits_loading(&one), "{list}");
        }
        for other in ["ping", "tools/call", "resources/read", "no/such"] {
            let one = Incoming::Single(Message::Request(request(other)));
            assert!(!awaits_loading(&one), "{other}");
        }
        let batch = Incoming::Batch(vec![
            Message::Request(request("ping")),
            Message::Request(request("prompts/list")),
        ]);
        assert!(awaits_loading(&batch));
    }

    #[test]
    fn stateless_requests_are_recognized() {
        let with_meta = request(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{META}}}}}"#
        ));
        assert_eq!(declared(&with_meta), Some(Revision::V2026_07_28));
        let discover = request(r#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#);
        assert_eq!(declared(&discover), Some(Revision::V2026_07_28));
        let progress = request(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":1}}}"#,
        );
        assert_eq!(declared(&progress), None);
        let initialize = request(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"_meta":{META}}}}}"#
        ));
        assert_eq!(declared(&initialize), None);
        assert!(is_stateless(Some(" 2026-07-28 "), None));
        assert!(!is_stateless(Some("2025-11-25"), Some(&progress)));
        assert!(is_stateless(None, Some(&with_meta)));
        assert!(!is_stateless(Some("garbage"), None));
    }

    /// Every method of the table, in every revision, with and without the
    /// tasks extension and a token: reached, not found, or a missing
    /// capability — the rules the old dispatch wrote as guards.
    #[test]
    fn who_reaches_each_method() {
        use Revision::*;
        let reach = |name: &str, revision, tasks, token| match method(name)
            .expect("in the table")
            .reached(revision, tasks, token)
        {
            Ok(()) => "ok",
            Err(e) if e.code == jsonrpc::METHOD_NOT_FOUND => "none",
            Err(e) if e.code == super::super::request::MISSING_CAPABILITY => "declare",
            Err(e) => panic!("{name}: {e:?}"),
        };
        for (name, old, tasks_session, stateless, stateless_tasks) in [
            ("tools/call", "ok", "ok", "ok", "ok"),
            ("logging/setLevel", "ok", "ok", "none", "none"),
            ("server/discover", "none", "none", "ok", "ok"),
            ("subscriptions/listen", "none", "none", "ok", "ok"),
            ("tasks/get", "none", "ok", "declare", "ok"),
            ("tasks/cancel", "none", "ok", "declare", "ok"),
            ("tasks/update", "none", "none", "declare", "ok"),
            ("tasks/result", "none", "ok", "none", "none"),
            ("prompts/get", "ok", "ok", "ok", "ok"),
            ("resources/subscribe", "ok", "ok", "none", "none"),
        ] {
            assert_eq!(
                reach(name, V2025_06_18, false, false),
                old,
                "{name} 2025-06-18"
            );
            assert_eq!(
                reach(name, V2025_11_25, false, false),
                tasks_session,
                "{name} 2025-11-25"
            );
            assert_eq!(
                reach(name, V2026_07_28, false, false),
                stateless,
                "{name} 2026-07-28"
            );
            assert_eq!(
                reach(name, V2026_07_28, true, false),
                stateless_tasks,
                "{name} +tasks"
            );
        }
        assert_eq!(reach("tasks/list", V2025_11_25, false, false), "none");
        assert_eq!(reach("tasks/list", V2025_11_25, false, true), "ok");
        assert_eq!(reach("tasks/list", V2026_07_28, true, true), "none");
    }

    #[test]
    fn the_table_answers_what_transports_ask() {
        let call = jsonrpc::message(json!({"jsonrpc":"2.0","id":1,"method":"tools/call"}));
        assert_eq!(long_kind(&call), Some(Long::Call));
        let listen =
            jsonrpc::message(json!({"jsonrpc":"2.0","id":1,"method":"subscriptions/listen"}));
        assert_eq!(long_kind(&listen), Some(Long::Wait));
        let notification = jsonrpc::message(json!({"jsonrpc":"2.0","method":"tools/call"}));
        assert_eq!(long_kind(&notification), None);
        assert_eq!(name_field("tools/call"), Some("name"));
        assert_eq!(name_field("resources/read"), Some("uri"));
        assert_eq!(name_field("tasks/update"), Some("taskId"));
        assert_eq!(name_field("tools/list"), None);
        // Each name once.
        for (i, m) in METHODS.iter().enumerate() {
            assert!(METHODS[..i].iter().all(|o| o.name != m.name), "{}", m.name);
        }
    }

    #[test]
    fn capabilities_follow_the_table() {
        let session = capabilities(Revision::V2025_11_25, false);
        assert_eq!(session["tools"], json!({"listChanged": true}));
        assert_eq!(
            session["resources"],
            json!({"subscribe": true, "listChanged": true})
        );
        assert_eq!(session["prompts"], json!({"listChanged": true}));
        assert_eq!(session["completions"], json!({}));
        assert_eq!(session["tasks"]["cancel"], json!({}));
        assert!(session["tasks"].get("list").is_none());
        assert_eq!(
            capabilities(Revision::V2025_11_25, true)["tasks"]["list"],
            json!({})
        );
        assert!(
            capabilities(Revision::V2025_06_18, false)
                .get("tasks")
                .is_none()
        );
        let stateless = capabilities(Revision::V2026_07_28, false);
        assert!(stateless["extensions"][TASKS_EXTENSION].is_object());
        // The Skills extension, with directory reads, in both: beside the
        // tasks extension, not instead of it.
        let skills = json!({"directoryRead": true});
        assert_eq!(stateless["extensions"][skills::EXTENSION], skills);
        assert_eq!(session["extensions"][skills::EXTENSION], skills);
        for name in ["skills/list", "skills/get", "resources/directory/read"] {
            let m = method(name).expect("in the table");
            assert!(
                m.reached(Revision::V2025_11_25, false, false).is_ok(),
                "{name}"
            );
            assert!(
                m.reached(Revision::V2026_07_28, false, false).is_ok(),
                "{name}"
            );
        }
        assert!(stateless.get("tasks").is_none());
    }
}
