//! HTTPS on the listener (`serve --tls-cert --tls-key`): MCP and /rpc over
//! TLS with a certificate from a throwaway CA, plain HTTP on that port told
//! to use https:// (and served nothing), a renewed certificate served without a restart (and a broken
//! renewal not), and the start refused with a reason for a pair that
//! cannot work.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};

use crate::support::http::{Reply, parse_response, serve};
use crate::support::tls::{Ca, Leaf};
use crate::support::{self, airlock_command};

/// One request over HTTPS to `addr` as `localhost`, trusting only `ca`;
/// the reply and the certificate the server presented.
fn https(ca: &Ca, addr: SocketAddr, path: &str, body: &Value) -> (Reply, CertificateDer<'static>) {
    let name = ServerName::try_from("localhost").expect("server name");
    let conn = rustls::ClientConnection::new(ca.client_config(), name).expect("client");
    let sock = TcpStream::connect(addr).expect("connect");
    sock.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let mut tls = rustls::StreamOwned::new(conn, sock);
    let body = body.to_string();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost:{}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n",
        addr.port(),
        body.len()
    );
    tls.write_all(head.as_bytes()).expect("write head");
    tls.write_all(body.as_bytes()).expect("write body");
    let mut raw = Vec::new();
    // A server that closes without close_notify ends in UnexpectedEof
    // after the whole answer; what was read is what counts.
    let _ = tls.read_to_end(&mut raw);
    let presented = tls.conn.peer_certificates().expect("a certificate")[0].clone();
    (parse_response(&raw), presented.into_owned())
}

fn first_cert(path: &Path) -> CertificateDer<'static> {
    CertificateDer::from_pem_file(path).expect("a certificate")
}

#[test]
fn mcp_and_rpc_are_served_over_https() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = Ca::new();
    let (cert, key) = ca.write_leaf(dir.path(), Leaf::For(&["localhost", "127.0.0.1"]));
    let (cert, key) = (cert.to_str().expect("utf-8"), key.to_str().expect("utf-8"));
    let served = serve(
        "",
        &[support::component("catalog")],
        &["--tls-cert", cert, "--tls-key", key],
    );

    let (reply, presented) = https(
        &ca,
        served.addr,
        "/rpc",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "lookup_price", "params": {"sku": "SKU-1001"}}),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.json(),
        json!({"jsonrpc": "2.0", "id": 1, "result": 12.5})
    );
    assert_eq!(presented, first_cert(Path::new(cert)));

    let (reply, _) = https(
        &ca,
        served.addr,
        "/mcp",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "tls-test", "version": "1"}}}),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["result"]["serverInfo"]["name"], "airlock");
    assert!(reply.header("mcp-session-id").is_some());
}

/// Plain HTTP on the TLS port is served nothing: it gets a `400` that names
/// the https:// address to use (not a TLS alert, which curl shows as
/// "Received HTTP/0.9 when not allowed"), and TLS clients are served as
/// before.
#[test]
fn plain_http_on_the_tls_port_is_told_to_use_https() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = Ca::new();
    let (cert, key) = ca.write_leaf(dir.path(), Leaf::For(&["localhost"]));
    let (cert, key) = (cert.to_str().expect("utf-8"), key.to_str().expect("utf-8"));
    let served = serve(
        "",
        &[support::component("catalog")],
        &["--tls-cert", cert, "--tls-key", key],
    );
    let port = served.addr.port();
    let plain = |request: &str| {
        let mut sock = TcpStream::connect(served.addr).expect("connect");
        sock.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        sock.write_all(request.as_bytes()).expect("write");
        let mut raw = Vec::new();
        let _ = sock.read_to_end(&mut raw);
        parse_response(&raw)
    };
    let reply = plain(&format!(
        "GET /healthz HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n"
    ));
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(
        reply.body,
        format!("this port speaks HTTPS: use https://localhost:{port}/healthz\n")
    );
    assert!(!reply.body.contains("alive"), "{}", reply.body);
    // A POST with a body, as an MCP client sends, is told the same.
    let reply = plain(&format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Length: 2\r\n\r\n{{}}"
    ));
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert!(
        reply.body.contains("use https://localhost:"),
        "{}",
        reply.body
    );

    let (reply, _) = https(
        &ca,
        served.addr,
        "/rpc",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "lookup_price", "params": {"sku": "SKU-1001"}}),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
}

/// What docs/serving.md tells a curl user: `--cacert` trusts a
/// certificate curl does not know, and `http://` to the HTTPS port is
/// answered with the address to use (curl used to say "Received HTTP/0.9
/// when not allowed").
#[test]
fn curl_trusts_the_certificate_with_cacert_and_is_told_to_use_https() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = Ca::new();
    let (cert, key) = ca.write_leaf(dir.path(), Leaf::For(&["localhost"]));
    let ca_pem = ca.write_pem(dir.path());
    let (cert, key) = (cert.to_str().expect("utf-8"), key.to_str().expect("utf-8"));
    let served = serve(
        "",
        &[support::component("catalog")],
        &["--tls-cert", cert, "--tls-key", key],
    );
    let port = served.addr.port();
    let curl = |args: &[&str]| {
        let out = std::process::Command::new("curl")
            .args(["-sS", "--max-time", "30"])
            .args(args)
            .output()
            .expect("curl (the guide's client) is installed");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let https = format!("https://localhost:{port}/healthz");
    let (code, _, err) = curl(&[&https]);
    assert_eq!(code, Some(60), "an unknown certificate: {err}");
    let (code, out, err) = curl(&["--cacert", ca_pem.to_str().expect("utf-8"), &https]);
    assert_eq!((code, out.trim()), (Some(0), "alive"), "{err}");
    let (code, out, err) = curl(&[&format!("http://localhost:{port}/healthz")]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, format!("this port speaks HTTPS: use {https}\n"));
}

#[test]
fn a_renewed_certificate_is_served_without_a_restart_and_a_broken_one_is_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = Ca::new();
    let (cert, key) = ca.write_leaf(dir.path(), Leaf::For(&["localhost"]));
    let served = serve(
        "",
        &[support::component("catalog")],
        &[
            "--tls-cert",
            cert.to_str().expect("utf-8"),
            "--tls-key",
            key.to_str().expect("utf-8"),
        ],
    );
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "rpc.discover"});
    let (_, first) = https(&ca, served.addr, "/rpc", &ping);
    assert_eq!(first, first_cert(&cert));

    // Renewal: a new key and certificate, written over the old files.
    ca.write_leaf(dir.path(), Leaf::For(&["localhost"]));
    let renewed = first_cert(&cert);
    assert_ne!(renewed, first);
    // The files are looked at every 10 s.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (reply, presented) = https(&ca, served.addr, "/rpc", &ping);
        assert_eq!(reply.status, 200, "{}", reply.body);
        if presented == renewed {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the renewed certificate was not served within 60 s"
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    // A broken renewal (the key is gone from its file) keeps the last
    // good pair serving.
    std::fs::write(&key, "not a key\n").expect("break the key");
    std::thread::sleep(Duration::from_secs(12));
    let (reply, presented) = https(&ca, served.addr, "/rpc", &ping);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(presented, renewed);
}

/// `airlock serve` with `args`, which must refuse to start; its stderr.
fn refused_start(args: &[&str]) -> String {
    let out = airlock_command(&["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .arg(support::component("catalog"))
        .output()
        .expect("run airlock");
    assert!(!out.status.success(), "started with {args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_pair_that_cannot_work_is_refused_at_start_with_the_reason() {
    let ca = Ca::new();
    let (one, other) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let (cert, key) = ca.write_leaf(one.path(), Leaf::For(&["localhost"]));
    let (_, other_key) = ca.write_leaf(other.path(), Leaf::For(&["localhost"]));
    let (cert, key, other_key) = (
        cert.to_str().expect("utf-8"),
        key.to_str().expect("utf-8"),
        other_key.to_str().expect("utf-8"),
    );

    let err = refused_start(&["--tls-cert", cert, "--tls-key", other_key]);
    assert!(
        err.contains(&format!(
            "the key in {other_key} does not belong to the certificate in {cert}"
        )),
        "{err}"
    );
    // The two files swapped.
    let err = refused_start(&["--tls-cert", key, "--tls-key", cert]);
    assert!(
        err.contains(&format!("{key} holds no certificate")),
        "{err}"
    );
    let err = refused_start(&["--tls-cert", cert, "--tls-key", "/nonexistent/key.pem"]);
    assert!(err.contains("cannot read /nonexistent/key.pem"), "{err}");
    // One without the other.
    let err = refused_start(&["--tls-cert", cert]);
    assert!(err.contains("--tls-key"), "{err}");
}

#[test]
fn one_flag_of_the_pair_overrides_its_key_in_the_config_file() {
    let (one, other) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let ca = Ca::new();
    let (cert, key) = ca.write_leaf(one.path(), Leaf::For(&["localhost"]));
    let (other_cert, _) = ca.write_leaf(other.path(), Leaf::For(&["localhost"]));
    let (cert, key, other_cert) = (
        cert.to_str().expect("utf-8"),
        key.to_str().expect("utf-8"),
        other_cert.to_str().expect("utf-8"),
    );
    let config = one.path().join("serve.toml");
    std::fs::write(&config, format!("tls-cert = {cert:?}\ntls-key = {key:?}\n")).expect("toml");
    let config = config.to_str().expect("utf-8");
    // The file's pair, with --tls-cert alone given on the command line: the
    // flag wins and the file's key completes it (here a key of another
    // certificate, so the start names the flag's file).
    let err = refused_start(&["--config", config, "--tls-cert", other_cert]);
    assert!(
        err.contains(&format!(
            "the key in {key} does not belong to the certificate in {other_cert}"
        )),
        "{err}"
    );
}
