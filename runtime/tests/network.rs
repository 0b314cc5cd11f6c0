//! Outgoing network made binding: the hostile component's HTTP and TCP tools
//! against real servers on 127.0.0.1 that record whether they were reached.
//! A refused request must fail inside the guest *and* never arrive.

use crate::support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use airlock::Runtime;
use airlock::call::CallError;
use serde_json::{Value, json};
use support::servers::{Answer, Server};
use support::{call, test_component, text};

/// A server that answers every request with `200 hello` and records the
/// request lines that arrived.
fn recorder() -> Server {
    Server::http(|_| Answer::ok("hello"))
}

/// A server that reads each request's head, records it, and never answers
/// (the connection held for 10 s).
fn silent() -> Server {
    Server::http(|_| Answer::Silent(Duration::from_secs(10)))
}

/// A server that sends the response head at once and the body in two
/// parts 100 ms apart, so a guest asking early finds it not ready.
fn slow_body_server() -> Server {
    let pause = Duration::from_millis(100);
    Server::http(move |_| Answer::Paced {
        length: 11,
        parts: vec![(pause, b"hello".to_vec()), (pause, b" world".to_vec())],
    })
}

fn runtime(network: &[String]) -> Runtime {
    let list: Vec<String> = network.iter().map(|n| format!("{n:?}")).collect();
    let policy = format!(
        "[components.hostile]\nnetwork = [{}]\nlimits = {{ time = \"5s\" }}\n",
        list.join(", ")
    );
    support::runtime(&policy, &[test_component("hostile")])
}

/// One HTTP request from the guest, run beside well-behaved calls.
fn http(runtime: &Runtime, tool: &str, method: &str, url: &str) -> Result<String, CallError> {
    let args = json!({"url": url, "method": method});
    support::beside_good_calls(runtime, || call(runtime, tool, args)).map(|out| text(&out))
}

fn refused(result: Result<String, CallError>, code: &str) {
    let err = result.expect_err("the request must be refused");
    assert!(
        err.to_string().contains(code),
        "expected {code}, got: {err}"
    );
}

/// One raw TCP connection from the guest, run beside well-behaved calls.
fn tcp(runtime: &Runtime, tool: &str, addr: &str) -> Result<Value, CallError> {
    let args = json!({ "addr": addr });
    support::beside_good_calls(runtime, || call(runtime, tool, args)).map(|out| json!(text(&out)))
}

#[test]
fn http_from_a_tool_that_is_not_open_world_is_refused() {
    let server = recorder();
    let runtime = runtime(&[format!("127.0.0.1:{}", server.port())]);
    let url = format!("http://127.0.0.1:{}/", server.port());
    refused(
        http(&runtime, "http_closed", "GET", &url),
        "HttpRequestDenied",
    );
    server.assert_not_reached();
}

#[test]
fn http_to_a_listed_address_reaches_it_and_returns_the_response() {
    let server = recorder();
    let runtime = runtime(&[format!("127.0.0.1:{}", server.port())]);
    let url = format!("http://127.0.0.1:{}/path?q=1", server.port());
    let out = http(&runtime, "http_open", "GET", &url).expect("allowed request");
    assert_eq!(out, "200 hello");
    // Only the path goes on the request line, never the absolute URL.
    assert_eq!(server.lines(), vec!["GET /path?q=1 HTTP/1.1".to_string()]);
}

#[test]
fn http_to_an_unlisted_host_is_refused() {
    let listed = recorder();
    let runtime = runtime(&[format!("127.0.0.1:{}", listed.port())]);
    // Another loopback address, and a name, on the listed port.
    let other_addr = SocketAddr::from(([127, 0, 0, 2], listed.port()));
    let other = Server::http_on(other_addr, |_| Answer::ok("hello"));
    let url = format!("http://127.0.0.2:{}/", listed.port());
    refused(
        http(&runtime, "http_open", "GET", &url),
        "HttpRequestDenied",
    );
    let url = format!("http://localhost:{}/", listed.port());
    refused(
        http(&runtime, "http_open", "GET", &url),
        "HttpRequestDenied",
    );
    other.assert_not_reached();
    listed.assert_not_reached();
}

#[test]
fn http_to_an_unlisted_port_of_a_listed_host_is_refused() {
    let listed = recorder();
    let unlisted = recorder();
    let runtime = runtime(&[format!("127.0.0.1:{}", listed.port())]);
    let url = format!("http://127.0.0.1:{}/", unlisted.port());
    refused(
        http(&runtime, "http_open", "GET", &url),
        "HttpRequestDenied",
    );
    unlisted.assert_not_reached();
    listed.assert_not_reached();
}

#[test]
fn post_from_a_read_only_open_world_tool_is_refused_while_get_works() {
    let server = recorder();
    let runtime = runtime(&[format!("127.0.0.1:{}", server.port())]);
    let url = format!("http://127.0.0.1:{}/", server.port());
    for method in ["POST", "PUT", "DELETE", "PATCH"] {
        refused(
            http(&runtime, "http_read_only", method, &url),
            "HttpRequestDenied",
        );
    }
    server.assert_not_reached();
    for method in ["GET", "HEAD", "OPTIONS"] {
        http(&runtime, "http_read_only", method, &url).expect("a safe method");
    }
    assert_eq!(
        server.lines(),
        ["GET / HTTP/1.1", "HEAD / HTTP/1.1", "OPTIONS / HTTP/1.1"]
    );
    // The same POST from an open-world tool that is not read-only goes out.
    http(&runtime, "http_open", "POST", &url).expect("POST from a writing tool");
    assert_eq!(
        server.lines().last().map(String::as_str),
        Some("POST / HTTP/1.1")
    );
}

#[test]
fn a_name_resolving_to_loopback_is_refused_unless_an_address_pattern_allows_it() {
    let server = recorder();
    let port = server.port();
    let url = format!("http://localhost:{port}/");

    // The name is listed, but it resolves to the machine itself.
    let by_name = runtime(&[format!("localhost:{port}")]);
    refused(
        http(&by_name, "http_open", "GET", &url),
        "DestinationIpProhibited",
    );
    // Raw sockets never match names: the guest cannot even look one up.
    tcp(&by_name, "tcp_open", &format!("localhost:{port}")).expect_err("tcp by name");
    server.assert_not_reached();

    // Listing the loopback addresses as well allows it.
    let with_addr = runtime(&[
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ]);
    let out = http(&with_addr, "http_open", "GET", &url).expect("listed address");
    assert_eq!(out, "200 hello");
    assert_eq!(server.lines(), ["GET / HTTP/1.1"]);
    // A raw socket may use the name too: what counts is the address.
    let out = tcp(&with_addr, "tcp_open", &format!("localhost:{port}")).expect("tcp");
    assert_eq!(out, json!("connected"));
}

#[test]
fn tcp_reaches_a_listed_address_only() {
    let listed = recorder();
    let unlisted = recorder();
    let runtime = runtime(&[format!("127.0.0.1:{}", listed.port())]);

    let out = tcp(&runtime, "tcp_open", &listed.addr.to_string()).expect("listed address");
    assert_eq!(out, json!("connected"));
    // The guest's line arrives (the server may still be reading it).
    let until = Instant::now() + Duration::from_secs(5);
    while listed.lines().is_empty() && Instant::now() < until {
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(listed.lines(), ["hello from the guest"]);

    tcp(&runtime, "tcp_open", &unlisted.addr.to_string()).expect_err("unlisted port");
    unlisted.assert_not_reached();

    // A tool that is not open-world gets no sockets at all.
    let before = listed.connections();
    tcp(&runtime, "tcp_closed", &listed.addr.to_string()).expect_err("closed tool");
    thread::sleep(Duration::from_millis(50));
    assert_eq!(
        listed.connections(),
        before,
        "closed tool reached the server"
    );
}

#[test]
fn a_silent_server_does_not_hold_the_call_past_its_deadline() {
    let server = silent();
    let policy = format!(
        "[components.hostile]\nnetwork = [\"127.0.0.1:{}\"]\nlimits = {{ time = \"1s\" }}\n",
        server.port()
    );
    let runtime = support::runtime(&policy, &[test_component("hostile")]);
    let url = format!("http://127.0.0.1:{}/", server.port());
    let started = Instant::now();
    let result = http(&runtime, "http_open", "GET", &url);
    let took = started.elapsed();
    assert!(result.is_err(), "a silent server cannot answer: {result:?}");
    assert!(took < Duration::from_secs(3), "the call took {took:?}");
    assert_eq!(server.lines(), ["GET / HTTP/1.1"]);
}

#[test]
fn cancelling_a_call_ends_its_pending_request() {
    let server = silent();
    let policy = format!(
        "[components.hostile]\nnetwork = [\"127.0.0.1:{}\"]\nlimits = {{ time = \"60s\" }}\n",
        server.port()
    );
    let runtime = Arc::new(support::runtime(&policy, &[test_component("hostile")]));
    let url = format!("http://127.0.0.1:{}/", server.port());
    let prepared = runtime
        .prepare(
            airlock::call::Caller::CommandLine,
            "http_open",
            json!({ "url": url, "method": "GET" }),
        )
        .expect("prepared");
    let cancel = prepared.cancel_token().clone();
    let started = Instant::now();
    let pending = thread::spawn(move || prepared.run(Arc::new(airlock::observe::Unobserved)));
    let until = Instant::now() + Duration::from_secs(5);
    while server.lines().is_empty() && Instant::now() < until {
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(server.lines(), ["GET / HTTP/1.1"]);
    cancel.cancel();
    let result = pending.join().expect("call thread");
    assert!(
        result.is_err(),
        "a cancelled call cannot succeed: {result:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the call ran on for {:?}",
        started.elapsed()
    );
}

#[test]
fn non_blocking_reads_of_a_response_not_ready_yet_do_not_panic_the_host() {
    // `future-incoming-response.get` and `input-stream.read` before their
    // pollables are ready, in a loop: legal WASI, and once a host panic.
    let server = slow_body_server();
    let port = server.port();
    let runtime = runtime(&[format!("127.0.0.1:{port}")]);
    let url = format!("http://127.0.0.1:{port}/");
    for eager in [true, false] {
        let mut args = json!({"url": url, "method": "GET"});
        if eager {
            args["eager"] = json!(true);
        }
        let out = support::beside_good_calls(&runtime, || call(&runtime, "http_open", args))
            .map(|out| text(&out))
            .expect("the response, read early or by waiting");
        assert_eq!(out, "200 hello world", "eager: {eager}");
    }
}
