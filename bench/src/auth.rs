//! What a caller's credentials cost per call (`--only auth`): `/rpc add`
//! against `airlock serve` with no credentials at all (a policy without
//! `[[tokens]]` or `[oauth]`), with a static `[[tokens]]` bearer (its
//! SHA-256 compared), and with OAuth access tokens: JWTs signed RS256 and
//! ES256 by a stand-in issuer on loopback, verified on every request
//! (signature, `iss`, `aud`, `exp`, scope) against the issuer's keys,
//! fetched once and then cached. The static token and the JWTs go to the
//! same server, whose policy has both, as a deployment would. A fresh pair
//! of servers every round, the callers interleaved (their order rotated
//! round by round); medians of the rounds, and the JWT's extra cost over
//! the static token's as the median of each round's difference.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde_json::{Value, json};

use crate::floor::{Side, medians};
use crate::net::{self, Load};
use crate::{Paths, RPC_ADD, inproc, stats};

/// How many times each caller is measured, interleaved with the others.
const ROUNDS: usize = 5;
const CONCURRENCY: [usize; 2] = [1, 16];
/// The resource identifier the tokens are for (their `aud`).
const RESOURCE: &str = "https://airlock.test/mcp";
/// The static token's secret (the policy holds its SHA-256).
const SECRET: &str = "airlock-bench-static-token";
const SCOPE: &str = "bench";

/// A caller's medians at each concurrency, and what it costs beyond the
/// static token (JWTs only).
pub struct Row {
    pub label: String,
    /// At c=1 and c=16.
    pub sides: [Side; 2],
    /// Beyond the static token: the median of each round's difference of
    /// server CPU per call at c=1 and c=16, and of each round's calls/s
    /// ratio (this ÷ static) at c=16.
    pub over_static: Option<Over>,
    /// JWTs: `jsonwebtoken::decode` of the same token with the same key
    /// and checks, in this process (p50, µs): the verification alone.
    pub decode_us: Option<f64>,
}

#[derive(Clone, Copy)]
pub struct Over {
    pub cpu_us: [f64; 2],
    pub rate: f64,
}

pub struct Auth {
    pub rows: Vec<Row>,
    /// Requests the stand-in issuer answered over the run, and the servers
    /// that accepted its tokens: two per server (metadata, then the key
    /// set) is a fetch once per server, every later token verified with
    /// the cached keys.
    pub issuer_requests: usize,
    pub servers: usize,
    /// Why a key type is missing (RS256 needs the `openssl` command).
    pub missing: Vec<String>,
}

/// A signing key and its JWK.
struct Signer {
    alg: Algorithm,
    kid: &'static str,
    encoding: EncodingKey,
    decoding: DecodingKey,
    jwk: Value,
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl Signer {
    /// A P-256 key made with rcgen (ring), as the tests make theirs.
    fn es256() -> Result<Signer> {
        let pair = rcgen::KeyPair::generate().context("a P-256 key")?;
        let raw = pair.public_key_raw();
        ensure!(raw.len() == 65, "unexpected P-256 public key");
        let (x, y) = (b64url(&raw[1..33]), b64url(&raw[33..65]));
        Ok(Signer {
            alg: Algorithm::ES256,
            kid: "bench-es256",
            encoding: EncodingKey::from_ec_der(&pair.serialize_der()),
            decoding: DecodingKey::from_ec_components(&x, &y)?,
            jwk: json!({"kty": "EC", "crv": "P-256", "kid": "bench-es256", "use": "sig",
                        "alg": "ES256", "x": x, "y": y}),
        })
    }

    /// A 2048-bit RSA key, what most issuers sign with: ring cannot make
    /// one, so `openssl genrsa` does (PKCS#1 PEM on its stdout).
    fn rs256() -> Result<Signer> {
        let out = Command::new("openssl")
            .args(["genrsa", "-traditional", "2048"])
            .output()
            .context("running `openssl genrsa`")?;
        ensure!(
            out.status.success(),
            "openssl genrsa: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        let pem = String::from_utf8(out.stdout)?;
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .context("openssl's PEM")?;
        let (n, e) = rsa_public(&der)?;
        let (n, e) = (b64url(&n), b64url(&e));
        Ok(Signer {
            alg: Algorithm::RS256,
            kid: "bench-rs256",
            encoding: EncodingKey::from_rsa_der(&der),
            decoding: DecodingKey::from_rsa_components(&n, &e)?,
            jwk: json!({"kty": "RSA", "kid": "bench-rs256", "use": "sig", "alg": "RS256",
                        "n": n, "e": e}),
        })
    }

    fn sign(&self, issuer: &str) -> Result<String> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let claims = json!({"iss": issuer, "sub": "bench", "client_id": "airlock-bench",
                            "aud": RESOURCE, "iat": now, "exp": now + 3600, "scope": SCOPE});
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.to_string());
        Ok(jsonwebtoken::encode(&header, &claims, &self.encoding)?)
    }

    /// p50 of `jsonwebtoken::decode` of `token` with this key and the
    /// checks the server makes (signature, `iss`, `aud`, `exp`), in µs.
    fn decode_p50(&self, token: &str, issuer: &str, budget: Duration) -> Result<f64> {
        let mut validation = Validation::new(self.alg);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[RESOURCE]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        jsonwebtoken::decode::<Value>(token, &self.decoding, &validation)?;
        let samples = stats::sample(budget, 1 << 20, || {
            let ok = jsonwebtoken::decode::<Value>(token, &self.decoding, &validation).is_ok();
            u32::from(ok)
        });
        Ok(stats::stats(samples).p50)
    }
}

/// The modulus and public exponent of a PKCS#1 `RSAPrivateKey` (DER:
/// `SEQUENCE { version, n, e, … }`), without the sign byte DER puts before
/// a high bit.
fn rsa_public(der: &[u8]) -> Result<(Vec<u8>, Vec<u8>)> {
    /// One DER item of `tag` at the start of `der`: (its content, the rest).
    fn item(der: &[u8], tag: u8) -> Result<(&[u8], &[u8])> {
        let [t, first, rest @ ..] = der else {
            bail!("truncated DER")
        };
        ensure!(*t == tag, "DER tag {t:#04x}, expected {tag:#04x}");
        let (len, rest) = if *first < 0x80 {
            (usize::from(*first), rest)
        } else {
            let n = usize::from(first & 0x7f);
            ensure!(n <= 4 && rest.len() >= n, "bad DER length");
            let len = rest[..n]
                .iter()
                .fold(0usize, |len, b| len << 8 | usize::from(*b));
            (len, &rest[n..])
        };
        ensure!(rest.len() >= len, "truncated DER");
        Ok(rest.split_at(len))
    }
    let (key, _) = item(der, 0x30)?;
    let (_version, rest) = item(key, 0x02)?;
    let (n, rest) = item(rest, 0x02)?;
    let (e, _) = item(rest, 0x02)?;
    let unsigned = |int: &[u8]| int.iter().copied().skip_while(|b| *b == 0).collect();
    Ok((unsigned(n), unsigned(e)))
}

/// A stand-in authorization server on 127.0.0.1: RFC 8414 metadata and
/// the JWKS, one request per connection, on a thread that lives as long as
/// the process. Returns its URL (the issuer) and its count of requests.
fn issuer(keys: Vec<Value>) -> Result<(String, Arc<AtomicUsize>)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}", listener.local_addr()?);
    let metadata = json!({"issuer": url, "jwks_uri": format!("{url}/jwks")}).to_string();
    let jwks = json!({ "keys": keys }).to_string();
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::Relaxed);
            let _ = answer(stream, &metadata, &jwks);
        }
    });
    Ok((url, served))
}

fn answer(mut stream: TcpStream, metadata: &str, jwks: &str) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    let (status, body) = match head.split_whitespace().nth(1) {
        Some("/.well-known/oauth-authorization-server") => ("200 OK", metadata),
        Some("/jwks") => ("200 OK", jwks),
        _ => ("404 Not Found", "{}"),
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
}

fn sha256_hex(text: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The bench's policy with `[oauth]` (the stand-in issuer, every tool for
/// the scope `bench`) and one static token.
fn guarded_policy(issuer: &str) -> String {
    format!(
        "{}\n[oauth]\nresource = \"{RESOURCE}\"\nissuers = [\"{issuer}\"]\nplain-http = true\n\
         algorithms = [\"RS256\", \"ES256\"]\n\n[[oauth.scopes]]\nscope = \"{SCOPE}\"\n\n\
         [[tokens]]\nname = \"static\"\nsha256 = \"{}\"\n",
        inproc::POLICY,
        sha256_hex(SECRET)
    )
}

/// Every caller, [`ROUNDS`] rounds.
pub fn run(paths: &Paths, budget: Duration) -> Result<Auth> {
    let mut signers = vec![];
    let mut missing = vec![];
    match Signer::rs256() {
        Ok(s) => signers.push(s),
        Err(err) => {
            eprintln!("   no RS256 row: {err:#}");
            missing.push(format!("RS256 (no RSA key: {err:#})"));
        }
    }
    signers.push(Signer::es256()?);
    let (issuer_url, issuer_requests) = issuer(signers.iter().map(|s| s.jwk.clone()).collect())?;
    let guarded = paths.tmp.join("auth.toml");
    std::fs::write(&guarded, guarded_policy(&issuer_url))?;
    let guarded = guarded.to_string_lossy().to_string();
    let plain = paths.policy.to_string_lossy().to_string();
    let wasm = paths.wasm.to_string_lossy().to_string();

    // (label, to the guarded server, bearer)
    let mut callers: Vec<(String, bool, Option<String>)> = vec![
        (
            "no token (no `[[tokens]]`, no `[oauth]`)".into(),
            false,
            None,
        ),
        (
            "static token (`[[tokens]]`)".into(),
            true,
            Some(SECRET.into()),
        ),
    ];
    for s in &signers {
        callers.push((
            format!("JWT {:?} (`[oauth]`, cached keys)", s.alg),
            true,
            Some(s.sign(&issuer_url)?),
        ));
    }
    // runs[caller][concurrency] = one Load per round.
    let mut runs = vec![vec![Vec::<Load>::new(); CONCURRENCY.len()]; callers.len()];
    let mut servers = 0;
    for round in 0..ROUNDS {
        let plain_server = net::serve(&paths.airlock, &paths.cache, &["--policy", &plain, &wasm])?;
        let guarded_server =
            net::serve(&paths.airlock, &paths.cache, &["--policy", &guarded, &wasm])?;
        servers += 1;
        for k in 0..callers.len() {
            let i = (k + round) % callers.len();
            let (label, to_guarded, bearer) = &callers[i];
            eprintln!("   round {}: {label}", round + 1);
            let server = if *to_guarded {
                &guarded_server
            } else {
                &plain_server
            };
            let auth = bearer.as_ref().map(|b| format!("Bearer {b}"));
            let headers: Vec<(&str, &str)> = auth
                .as_deref()
                .map(|a| ("Authorization", a))
                .into_iter()
                .collect();
            let req = net::request_with(&server.addr, "/rpc", &headers, RPC_ADD);
            // Refused or failing calls would be measured as fast errors.
            let (status, body) = net::post_once(&server.addr, &req)?;
            let body = String::from_utf8_lossy(&body);
            if status != 200 || !body.contains(r#""result":42"#) {
                bail!("{label}: HTTP {status}: {body}");
            }
            for (j, c) in CONCURRENCY.into_iter().enumerate() {
                runs[i][j].push(net::load_request(
                    &server.addr,
                    req.clone(),
                    c,
                    budget,
                    &[server.pid()],
                )?);
            }
        }
    }
    let mut decode_us = vec![None, None];
    for (s, (_, _, token)) in signers.iter().zip(&callers[2..]) {
        let token = token.as_deref().context("a JWT caller without a token")?;
        decode_us.push(Some(s.decode_p50(token, &issuer_url, budget / 2)?));
    }
    let cpu = |l: &Load| l.server.map_or(f64::NAN, |c| c.cpu_us);
    let median = |v: Vec<f64>| crate::median(&v).unwrap_or(f64::NAN);
    let rows = callers
        .iter()
        .enumerate()
        .map(|(i, (label, _, _))| {
            let fixed = &runs[1];
            let over_static = (i >= 2).then(|| {
                let paired = |j: usize, f: &dyn Fn(&Load, &Load) -> f64| {
                    median(
                        runs[i][j]
                            .iter()
                            .zip(&fixed[j])
                            .map(|(a, b)| f(a, b))
                            .collect(),
                    )
                };
                Over {
                    cpu_us: [0, 1].map(|j| paired(j, &|a, b| cpu(a) - cpu(b))),
                    rate: paired(1, &|a, b| a.per_sec / b.per_sec),
                }
            });
            Row {
                label: label.clone(),
                sides: [0, 1].map(|j| medians(&runs[i][j])),
                over_static,
                decode_us: decode_us[i],
            }
        })
        .collect();
    Ok(Auth {
        rows,
        issuer_requests: issuer_requests.load(Ordering::Relaxed),
        servers,
        missing,
    })
}

/// The section of BENCHMARKS.md.
pub fn section(auth: Option<&Auth>) -> String {
    let mut md = String::from("\n## Authorization: a static token beside a JWT\n\n");
    let Some(auth) = auth else {
        md.push_str("Not measured in this run (see the suite's output).\n");
        return md;
    };
    md.push_str(&format!(
        "`/rpc add` over HTTP (`airlock-bench --only auth`) with each kind of caller: no \
         credentials, against a server whose policy has no `[[tokens]]` and no `[oauth]`; and, \
         against a second server whose policy has both (docs/policy.md), a static \
         `[[tokens]]` bearer (its SHA-256 compared), and OAuth access tokens — JWTs from a \
         stand-in issuer on loopback (RFC 8414 metadata and a JWKS, on a thread of the \
         bench) with a 2048-bit RSA key (RS256, made by `openssl genrsa`) and a P-256 key \
         (ES256, made by rcgen), the same token on every request as an agent sends it: \
         verified on its first request (signature, `iss`, `aud`, `exp`, scope) with the keys \
         cached after the first fetch (the issuer answered {} requests for {} servers) and \
         remembered until it expires. A fresh pair of servers every round, the callers \
         interleaved, {ROUNDS} rounds; medians of the rounds. *Beyond the static token*: the \
         median of each round's difference of server CPU per call, and of each round's ratio \
         of calls/s at c=16. *Verification alone*: `jsonwebtoken::decode` of the same token \
         with the same key and checks, in the bench's process (p50, one thread): what a \
         token's first request costs on top.{}\n\n",
        auth.issuer_requests,
        auth.servers,
        if auth.missing.is_empty() {
            String::new()
        } else {
            format!(" Not measured: {}.", auth.missing.join("; "))
        }
    ));
    md.push_str(&table(auth));
    md
}

/// The section's table.
pub fn table(auth: &Auth) -> String {
    let mut out = String::from(
        "| caller | calls/s, c=1 | p50, c=1 | calls/s, c=16 | p50 / p99, c=16 | server CPU per call, c=1 / c=16 | beyond the static token: CPU per call, c=1 / c=16 | … calls/s ÷ static's, c=16 | verification alone | errors |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in &auth.rows {
        let [one, sixteen] = &r.sides;
        let (over, rate) = match r.over_static {
            Some(o) => (
                format!("{:+.1} µs / {:+.1} µs", o.cpu_us[0], o.cpu_us[1]),
                format!("{:.2}×", o.rate),
            ),
            None => ("–".into(), "–".into()),
        };
        let decode = r.decode_us.map_or("–".into(), |d| format!("{d:.1} µs"));
        out.push_str(&format!(
            "| {} | {:.0} | {:.0} µs | {:.0} | {:.0} µs / {:.0} µs | {:.1} µs / {:.1} µs | {over} | {rate} | {decode} | {} |\n",
            r.label,
            one.per_sec,
            one.p50,
            sixteen.per_sec,
            sixteen.p50,
            sixteen.p99,
            one.cpu_us,
            sixteen.cpu_us,
            one.errors + sixteen.errors,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rsa_public_key_is_read_from_pkcs1_der() {
        // SEQUENCE { INTEGER 0, INTEGER 0x00C123 (a sign byte), INTEGER 65537, INTEGER 7 }
        let der = [
            0x30, 0x0e, 0x02, 0x01, 0x00, 0x02, 0x03, 0x00, 0xc1, 0x23, 0x02, 0x03, 0x01, 0x00,
            0x01, 0x02, 0x01, 0x07,
        ];
        let (n, e) = rsa_public(&der).unwrap();
        assert_eq!(n, [0xc1, 0x23]);
        assert_eq!(b64url(&e), "AQAB");
        assert!(rsa_public(&der[..8]).is_err());
        assert!(rsa_public(&[0x02, 0x00]).is_err());
    }

    #[test]
    fn the_static_token_is_named_by_its_sha256() {
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let policy = guarded_policy("http://127.0.0.1:1");
        assert!(
            policy.contains("issuers = [\"http://127.0.0.1:1\"]"),
            "{policy}"
        );
        assert!(policy.contains(&sha256_hex(SECRET)));
    }

    #[test]
    fn the_table_shows_the_jwt_beyond_the_static_token() {
        let side = |per_sec, cpu_us| Side {
            per_sec,
            p50: 100.0,
            p99: 300.0,
            cpu_us,
            errors: 0,
        };
        let row = |label: &str, over_static, decode_us| Row {
            label: label.into(),
            sides: [side(8000.0, 90.0), side(30000.0, 45.0)],
            over_static,
            decode_us,
        };
        let auth = Auth {
            rows: vec![
                row("static", None, None),
                row(
                    "JWT RS256",
                    Some(Over {
                        cpu_us: [12.3, 10.5],
                        rate: 0.8,
                    }),
                    Some(21.0),
                ),
            ],
            issuer_requests: 10,
            servers: 5,
            missing: vec![],
        };
        let md = section(Some(&auth));
        assert!(md.contains("answered 10 requests for 5 servers"), "{md}");
        assert!(
            md.contains("| JWT RS256 | 8000 | 100 µs | 30000 | 100 µs / 300 µs | 90.0 µs / 45.0 µs | +12.3 µs / +10.5 µs | 0.80× | 21.0 µs | 0 |"),
            "{md}"
        );
        assert!(md.contains("| – | – | – | 0 |"), "{md}");
        assert!(section(None).contains("Not measured"));
    }
}
