//! OAuth access tokens on `airlock serve` (`[oauth]` in the policy), from
//! a stand-in issuer on loopback whose signing key is this test's: every
//! way a token can be wrong is refused with the status and header MCP's
//! authorization section says, the scopes (and claims) decide which tools,
//! resources and prompts a caller sees, static `[[tokens]]` keep working
//! beside it, and a hostile issuer holds up nothing but its own tokens. (`tests/clients/python` runs the
//! official SDK's OAuth client against a real authorization server.)

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::support;
use crate::support::http::{Reply, Served, http, serve};
use crate::support::oauth::{Issuer, Key};
use crate::support::servers::{Answer, Server};

const RESOURCE: &str = "https://airlock.test/mcp";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

fn claims(issuer: &str, scope: &str) -> Value {
    json!({"iss": issuer, "sub": "alice", "client_id": "agent-7", "aud": RESOURCE,
           "exp": now() + 300, "iat": now(), "scope": scope})
}

fn policy(issuers: &[&str]) -> String {
    format!(
        "[oauth]\nresource = \"{RESOURCE}\"\nissuers = {issuers:?}\nplain-http = true\n\
         algorithms = [\"ES256\", \"RS256\"]\n\
         [[oauth.scopes]]\nscope = \"prices\"\ntools = [\"lookup_price\"]\n\
         [[oauth.scopes]]\nscope = \"everything\"\n\
         [[tokens]]\nname = \"ops\"\nsha256 = \"{}\"\n",
        sha256_hex("ops-secret")
    )
}

/// A key, a stand-in issuer serving it, and `airlock serve` trusting that
/// issuer with [`policy`].
fn one_issuer() -> (Key, Issuer, Served) {
    let key = Key::new("k1");
    let issuer = Issuer::new(vec![key.jwk.clone()]);
    let served = serve(
        &policy(&[&issuer.url]),
        &[support::component("catalog")],
        &[],
    );
    (key, issuer, served)
}

fn sha256_hex(text: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// `tools/list` over /rpc's MCP sibling: a stateless 2026-07-28 POST would
/// need `_meta`; `/rpc`'s `rpc.discover` lists the methods (tools) a caller
/// may use, which is what the scopes decide.
fn discover(addr: std::net::SocketAddr, bearer: Option<&str>) -> Reply {
    let auth = bearer.map(|b| format!("Bearer {b}"));
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(auth) = &auth {
        headers.push(("Authorization", auth.as_str()));
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "rpc.discover"});
    http(addr, "POST", "/rpc", &headers, body.to_string().as_bytes())
}

fn methods(reply: &Reply) -> Vec<String> {
    let mut names: Vec<String> = reply.json()["result"]["methods"]
        .as_array()
        .expect("methods")
        .iter()
        .filter_map(|m| m["name"].as_str().map(String::from))
        .filter(|n| !n.starts_with("rpc."))
        .collect();
    names.sort();
    names
}

fn challenge(reply: &Reply) -> String {
    reply
        .header("www-authenticate")
        .unwrap_or_else(|| panic!("no WWW-Authenticate on {}: {}", reply.status, reply.body))
        .to_string()
}

#[test]
fn the_metadata_and_the_challenge_point_clients_at_the_issuer() {
    let (_key, issuer, served) = one_issuer();
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let reply = http(served.addr, "GET", path, &[], b"");
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
        let metadata = reply.json();
        assert_eq!(metadata["resource"], RESOURCE);
        assert_eq!(metadata["authorization_servers"], json!([issuer.url]));
        assert_eq!(
            metadata["scopes_supported"],
            json!(["prices", "everything"])
        );
        assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
    }
    let reply = discover(served.addr, None);
    assert_eq!(reply.status, 401);
    assert_eq!(
        challenge(&reply),
        "Bearer resource_metadata=\"https://airlock.test/.well-known/oauth-protected-resource/mcp\", \
         scope=\"prices everything\""
    );
}

#[test]
fn scopes_decide_the_tools_and_static_tokens_work_beside_them() {
    let (key, issuer, served) = one_issuer();

    let prices = key.sign(&claims(&issuer.url, "openid prices"));
    let reply = discover(served.addr, Some(&prices));
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(methods(&reply), ["lookup_price"]);

    let everything = key.sign(&claims(&issuer.url, "everything"));
    assert_eq!(
        methods(&discover(served.addr, Some(&everything))),
        ["lookup_price", "restock"]
    );
    assert_eq!(
        methods(&discover(served.addr, Some("ops-secret"))),
        ["lookup_price", "restock"]
    );

    // A call the scopes allow runs; one they do not is not there.
    let call = |bearer: &str, method: &str| {
        let auth = format!("Bearer {bearer}");
        let body =
            json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": {"sku": "SKU-1001"}});
        http(
            served.addr,
            "POST",
            "/rpc",
            &[
                ("Content-Type", "application/json"),
                ("Authorization", &auth),
            ],
            body.to_string().as_bytes(),
        )
    };
    assert_eq!(call(&prices, "lookup_price").json()["result"], 12.5);
    let refused = call(&prices, "restock").json();
    assert!(refused["error"].is_object(), "{refused}");

    // A token whose scopes give nothing here: 403, naming the scopes that would.
    let none = key.sign(&claims(&issuer.url, "openid email"));
    let reply = discover(served.addr, Some(&none));
    assert_eq!(reply.status, 403, "{}", reply.body);
    assert!(
        challenge(&reply).contains("scope=\"prices everything\", error=\"insufficient_scope\""),
        "{}",
        challenge(&reply)
    );
}

#[test]
fn every_wrong_token_is_refused_with_401_and_invalid_token() {
    let key = Key::new("k1");
    let stranger = Key::new("k1");
    let issuer = Issuer::new(vec![key.jwk.clone()]);
    let other = Issuer::new(vec![stranger.jwk.clone()]);
    let served = serve(
        &policy(&[&issuer.url]),
        &[support::component("catalog")],
        &[],
    );
    let good = claims(&issuer.url, "everything");
    let with = |change: &dyn Fn(&mut Value)| {
        let mut c = good.clone();
        change(&mut c);
        c
    };
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let unsigned = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT"})),
        b64(&good)
    );
    // HS256 keyed with what is public: the issuer's JWK.
    let confused = {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".into());
        let secret = EncodingKey::from_secret(key.jwk.to_string().as_bytes());
        jsonwebtoken::encode(&header, &good, &secret).expect("sign")
    };
    let cases: Vec<(&str, String)> = vec![
        (
            "expired",
            key.sign(&with(&|c| c["exp"] = json!(now() - 3600))),
        ),
        (
            "not yet valid",
            key.sign(&with(&|c| c["nbf"] = json!(now() + 3600))),
        ),
        (
            "another resource",
            key.sign(&with(&|c| c["aud"] = json!("https://other.test/mcp"))),
        ),
        (
            "an untrusted issuer",
            stranger.sign(&with(&|c| c["iss"] = json!(other.url))),
        ),
        ("a key not in the JWKS", stranger.sign(&good)),
        ("alg none", unsigned),
        ("HS256 with the public key", confused),
        (
            "exp as a string",
            key.sign(&with(&|c| c["exp"] = json!("9999999999"))),
        ),
        (
            "no exp",
            key.sign(&with(&|c| {
                c.as_object_mut().expect("object").remove("exp");
            })),
        ),
        ("not a JWT", "abc.def".into()),
        // Signed by the issuer's key, but asking for an extension airlock
        // does not understand (RFC 7515 §4.1.11), or an unencoded payload
        // (RFC 7797).
        (
            "crit",
            key.sign_with_header(json!({"crit": ["exp"], "exp": 0}), &good),
        ),
        (
            "b64 false",
            key.sign_with_header(json!({"b64": false, "crit": ["b64"]}), &good),
        ),
        // Signed by a stranger that names its own key, or where to fetch
        // one: keys come only from the trusted issuer's set.
        (
            "a key in the header",
            stranger.sign_with_header(
                json!({"jwk": stranger.jwk, "jku": format!("{}/jwks", other.url),
                       "x5u": format!("{}/cert", other.url)}),
                &good,
            ),
        ),
    ];
    for (what, token) in cases {
        let reply = discover(served.addr, Some(&token));
        assert_eq!(reply.status, 401, "{what}: {}", reply.body);
        let header = challenge(&reply);
        assert!(
            header.contains("error=\"invalid_token\""),
            "{what}: {header}"
        );
        assert!(header.contains("resource_metadata="), "{what}: {header}");
    }
    // The stranger's issuer was never asked for keys: only trusted ones are.
    assert!(other.server.seen().is_empty());
}

#[test]
fn a_hostile_issuer_holds_up_only_its_own_tokens() {
    let key = Key::new("k1");
    let good = Issuer::new(vec![key.jwk.clone()]);
    // One issuer never answers, one sends a key set without end, one
    // redirects forever.
    let stalled = Server::stalled();
    let endless = Server::http(|_| Answer::Endless);
    let looping = Server::http(|r| Answer::Full {
        status: 302,
        headers: vec![("Location".into(), r.path.clone())],
        body: Vec::new(),
    });
    let hostile: Vec<String> = [stalled.port(), endless.port(), looping.port()]
        .iter()
        .map(|p| format!("http://127.0.0.1:{p}"))
        .collect();
    let mut issuers: Vec<&str> = hostile.iter().map(String::as_str).collect();
    issuers.push(&good.url);
    let served = serve(&policy(&issuers), &[support::component("catalog")], &[]);

    for url in &hostile {
        let forged = key.sign(&claims(url, "everything"));
        let started = Instant::now();
        let reply = discover(served.addr, Some(&forged));
        assert_eq!(reply.status, 401, "{url}: {}", reply.body);
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{url}: a token of a hostile issuer was held {:?}",
            started.elapsed()
        );
    }
    // Meanwhile and after, the good issuer's tokens and the static token work.
    let token = key.sign(&claims(&good.url, "prices"));
    assert_eq!(
        methods(&discover(served.addr, Some(&token))),
        ["lookup_price"]
    );
    assert_eq!(discover(served.addr, Some("ops-secret")).status, 200);
}

#[test]
fn a_flood_of_unknown_key_ids_does_not_become_a_flood_of_fetches() {
    let (key, issuer, served) = one_issuer();
    let good = key.sign(&claims(&issuer.url, "prices"));
    assert_eq!(discover(served.addr, Some(&good)).status, 200);
    let fetches = || {
        issuer
            .server
            .seen()
            .iter()
            .filter(|r| r.path == "/jwks")
            .count()
    };
    assert_eq!(fetches(), 1);
    for n in 0..20 {
        let forged = Key::new(&format!("made-up-{n}")).sign(&claims(&issuer.url, "prices"));
        assert_eq!(discover(served.addr, Some(&forged)).status, 401);
    }
    // The key set was fetched moments ago: a key it lacks is looked for
    // again at most every 30 s, whatever the tokens name.
    assert_eq!(fetches(), 1);
    assert_eq!(discover(served.addr, Some(&good)).status, 200);
}

#[test]
fn claims_give_tools_beside_scopes() {
    let key = Key::new("k1");
    let issuer = Issuer::new(vec![key.jwk.clone()]);
    let policy = format!(
        "{}\n[[oauth.claims]]\nclaim = \"groups\"\nvalue = \"stock\"\ntools = [\"restock\"]\n",
        policy(&[&issuer.url])
    );
    let served = serve(&policy, &[support::component("catalog")], &[]);
    let token = |scope: &str, groups: Value| {
        let mut c = claims(&issuer.url, scope);
        c["groups"] = groups;
        key.sign(&c)
    };
    // A group alone, and a group beside a scope: the union.
    let stock = token("openid", json!(["staff", "stock"]));
    assert_eq!(methods(&discover(served.addr, Some(&stock))), ["restock"]);
    let both = token("prices", json!(["stock"]));
    assert_eq!(
        methods(&discover(served.addr, Some(&both))),
        ["lookup_price", "restock"]
    );
    // A group the policy does not name, and a groups claim of another
    // shape, give nothing.
    for other in [json!(["staff"]), json!({"stock": true}), json!(7)] {
        assert_eq!(
            discover(served.addr, Some(&token("openid", other))).status,
            403
        );
    }
}

/// A scope names a skill as a token's `resources` does: by its
/// `SKILL.md`'s URI, which gives the whole skill (its entry in
/// `skills/list`, every file); a scope that names only tools sees no skill.
#[test]
fn a_scope_names_a_skill_as_a_token_does() {
    let key = Key::new("k1");
    let issuer = Issuer::new(vec![key.jwk.clone()]);
    let policy = format!(
        "[oauth]\nresource = \"{RESOURCE}\"\nissuers = [\"{}\"]\nplain-http = true\n\
         algorithms = [\"ES256\"]\n\
         [[oauth.scopes]]\nscope = \"pricing\"\n\
         resources = [\"skill://catalog-pricing/SKILL.md\"]\n\
         [[oauth.scopes]]\nscope = \"prices\"\ntools = [\"lookup_price\"]\n",
        issuer.url
    );
    let catalog = support::component("catalog");
    let served = serve(&policy, std::slice::from_ref(&catalog), &[]);
    let connect = |scope: &str| {
        let auth = format!("Bearer {}", key.sign(&claims(&issuer.url, scope)));
        support::http::Mcp::connect(served.addr, json!({}), &[("Authorization", &auth)])
    };
    let skills = |answer: &Value| -> Vec<String> {
        answer["result"]["skills"]
            .as_array()
            .unwrap_or_else(|| panic!("no skills: {answer}"))
            .iter()
            .filter_map(|s| s["uri"].as_str().map(String::from))
            .collect()
    };

    let mut pricing = connect("pricing");
    let listed = pricing.request("skills/list", json!({}));
    assert_eq!(
        skills(&listed),
        ["skill://catalog-pricing/SKILL.md"],
        "{listed}"
    );
    let file = "skill://catalog-pricing/references/articles.md";
    let read = pricing.request("resources/read", json!({ "uri": file }));
    assert!(read["result"]["contents"].is_array(), "{read}");
    let tools = pricing.request("tools/list", json!({}));
    assert_eq!(tools["result"]["tools"], json!([]), "{tools}");

    let mut prices = connect("prices");
    let listed = prices.request("skills/list", json!({}));
    assert_eq!(skills(&listed), Vec::<String>::new(), "{listed}");
    let hidden = prices.request("resources/read", json!({ "uri": file }));
    assert_eq!(hidden["error"]["code"], -32002, "{hidden}");
}

/// `[[oauth.scopes]]` and `[[oauth.claims]]` give resources and prompts as
/// `[[tokens]]` do: an entry that lists any of `tools`, `resources` and
/// `prompts` gives only what it lists; the union over a token's entries;
/// one listing nothing gives everything. `airlock check` names what they
/// list that nothing serves, and a bad list is an error at its line and
/// column.
#[test]
fn scopes_and_claims_give_resources_and_prompts_like_tokens() {
    let key = Key::new("k1");
    let issuer = Issuer::new(vec![key.jwk.clone()]);
    let policy = format!(
        "[oauth]\nresource = \"{RESOURCE}\"\nissuers = [\"{}\"]\nplain-http = true\n\
         algorithms = [\"ES256\"]\n\
         [[oauth.scopes]]\nscope = \"notes\"\n\
         resources = [\"test://static-text\", \"test://template/{{id}}/data\"]\n\
         [[oauth.scopes]]\nscope = \"greet\"\nprompts = [\"greeting\"]\ntools = [\"echo\"]\n\
         [[oauth.scopes]]\nscope = \"everything\"\n\
         [[oauth.claims]]\nclaim = \"groups\"\nvalue = \"art\"\nprompts = [\"with_image\"]\n",
        issuer.url
    );
    let offers = support::test_component("offers");
    let served = serve(&policy, std::slice::from_ref(&offers), &[]);
    let token = |scope: &str, groups: Value| {
        let mut c = claims(&issuer.url, scope);
        c["groups"] = groups;
        key.sign(&c)
    };
    let connect = |bearer: &str| {
        let auth = format!("Bearer {bearer}");
        support::http::Mcp::connect(served.addr, json!({}), &[("Authorization", &auth)])
    };
    let names = |answer: &Value, list: &str, key: &str| -> Vec<String> {
        answer["result"][list]
            .as_array()
            .unwrap_or_else(|| panic!("no {list}: {answer}"))
            .iter()
            .filter_map(|v| v[key].as_str().map(String::from))
            .collect()
    };

    // Resources only: no tool, no prompt.
    let mut notes = connect(&token("notes", json!([])));
    let listed = notes.request("resources/list", json!({}));
    assert_eq!(names(&listed, "resources", "uri"), ["test://static-text"]);
    let templates = notes.request("resources/templates/list", json!({}));
    assert_eq!(
        names(&templates, "resourceTemplates", "uriTemplate"),
        ["test://template/{id}/data"]
    );
    let read = notes.request("resources/read", json!({"uri": "test://template/7/data"}));
    assert!(read["result"]["contents"].is_array(), "{read}");
    let hidden = notes.request("resources/read", json!({"uri": "test://static-binary"}));
    assert_eq!(hidden["error"]["code"], -32002, "{hidden}");
    let prompts = notes.request("prompts/list", json!({}));
    assert_eq!(names(&prompts, "prompts", "name"), Vec::<String>::new());
    let tools = notes.request("tools/list", json!({}));
    assert_eq!(names(&tools, "tools", "name"), Vec::<String>::new());

    // A scope and a claim: the union of their prompts, the scope's tool,
    // no resource.
    let mut greet = connect(&token("greet", json!(["art"])));
    let prompts = greet.request("prompts/list", json!({}));
    assert_eq!(
        names(&prompts, "prompts", "name"),
        ["greeting", "with_image"]
    );
    let got = greet.request(
        "prompts/get",
        json!({"name": "greeting", "arguments": {"name": "Ada"}}),
    );
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"],
        "Hello, Ada!"
    );
    let refused = greet.request("prompts/get", json!({"name": "ask_topic"}));
    assert!(refused["error"].is_object(), "{refused}");
    let tools = greet.request("tools/list", json!({}));
    assert_eq!(names(&tools, "tools", "name"), ["echo"]);
    let listed = greet.request("resources/list", json!({}));
    assert_eq!(names(&listed, "resources", "uri"), Vec::<String>::new());

    // A scope that lists nothing gives everything, whatever else is held.
    let mut all = connect(&token("notes everything", json!([])));
    let listed = all.request("resources/list", json!({}));
    assert_eq!(
        listed["result"]["resources"].as_array().map(Vec::len),
        Some(6)
    );
    let prompts = all.request("prompts/list", json!({}));
    assert_eq!(
        prompts["result"]["prompts"].as_array().map(Vec::len),
        Some(4)
    );
    drop(served);

    // `airlock check` names what nothing serves.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("airlock.toml");
    let typos = policy
        .replace("\"test://static-text\"", "\"test://statik\"")
        .replace("\"with_image\"", "\"with_imag\"");
    std::fs::write(&file, typos).expect("policy");
    let check = support::airlock_command(&["check"])
        .arg(&file)
        .arg(&offers)
        .output()
        .expect("check");
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(!check.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "[[oauth.scopes]] \"notes\" gives the resource \"test://statik\", which no \
             component at hand serves"
        ) && stderr.contains(
            "[[oauth.claims]] groups = \"art\" gives the prompt \"with_imag\", which no \
             component at hand declares"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("\"greeting\", which"), "{stderr}");

    // A list of the wrong shape, or a misspelt key, is an error where written.
    let root = support::workspace();
    let bad = policy.replace("prompts = [\"greeting\"]", "prompts = \"greeting\"");
    let err = airlock::policy::Policy::parse(&bad, &root)
        .expect_err("not a list")
        .to_string();
    assert!(err.contains("<policy>:11:11"), "{err}");
    let bad = policy.replace("prompts = [\"with_image\"]", "prompt = [\"with_image\"]");
    let err = airlock::policy::Policy::parse(&bad, &root)
        .expect_err("unknown key")
        .to_string();
    assert!(
        err.contains("<policy>:18:1") && err.contains("`resources`") && err.contains("`prompts`"),
        "{err}"
    );
}
