//! Outgoing network of one call: the rules of the `wasi:http` filter and
//! the raw-socket check, both driven only by the call's [`NetworkGrant`].
//! Pure checks, no I/O: `outgoing` sends what they allow.
//!
//! # Rules
//!
//! No grant (`Grant::network == None`, which is what every tool that is not
//! open-world gets) means no network at all: every HTTP request fails with
//! `HTTP-request-denied`, TCP and UDP sockets cannot be created and names
//! cannot be looked up.
//!
//! With a grant, an outgoing HTTP request is checked **before anything
//! leaves the machine** (not even a DNS query):
//!
//! 1. the method: a read-only tool (`HttpMethods::SafeOnly`) may only use
//!    GET, HEAD and OPTIONS;
//! 2. the destination: scheme, host and port of the URL must match one of the
//!    grant's [`HostPattern`]s ([`HostPattern::matches_host`]);
//!    A pattern that names a scheme allows only that scheme: `http` to a
//!    host listed as `https://host` is refused, and the other way round;
//!    a request is never silently moved to another scheme.
//!
//! Then the runtime resolves a host name itself and checks **every** address
//! it resolves to: each must be a public unicast address, or be allowed by an
//! IP literal or CIDR pattern of the grant (address *and* port). A name that
//! resolves to loopback, a private, link-local (cloud metadata), shared,
//! multicast or otherwise special address is refused with
//! `destination-IP-prohibited` unless the operator listed that address: a
//! name pattern alone never opens the machine's own or its neighbours'
//! services (SSRF, DNS rebinding). The connection then goes to exactly the
//! checked addresses — the request is never handed to anything that would
//! resolve the name a second time. An IP literal in the URL is only matched
//! by IP and CIDR patterns and is not resolved.
//!
//! An `https` request runs TLS over that checked socket (`tls`): the server
//! name sent (SNI) and the certificate's check are the URL's host name,
//! never the address, against the grant's [`crate::policy::Trust`]. A failed
//! handshake reaches the guest as `TLS-certificate-error`,
//! `TLS-alert-received` or `TLS-protocol-error`, and the operator's log says
//! why in words and which policy key would change it.
//!
//! The grant's credentials whose pattern matches the request
//! ([`crate::policy::Credential::applies_to`]) are added as headers once the
//! addresses are checked, replacing any header of the same name the guest
//! set (never merged with it); no other request carries them. The names of
//! those used are kept for the audit log, and guest text in this module's
//! log lines is redacted (`redact`).
//!
//! A request never outlives its call: connecting, waiting for the response
//! head and reading the body all stop at the call's wall-time deadline (from
//! `limits.time`) or when the call is cancelled, whichever comes first; the
//! guest's own (shorter) connect and first-byte timeouts are honoured.
//!
//! Raw sockets (`wasi:sockets`) carry no host name, only addresses, so they
//! are matched against **IP literal and CIDR patterns only**
//! ([`HostPattern::matches_addr`]; name patterns allow HTTP only). TCP and
//! guest name lookup are enabled only when the grant has at least one such
//! pattern — with names only there is nothing a socket could reach, and a
//! lookup would only be a channel out through the resolver. A guest may
//! connect to a listed address; it may not listen, accept, or bind other
//! than the implicit bind of `connect`; each socket holds a place among the
//! call's descriptors (`limits.open`, see `sockets`). UDP is always off. A
//! guest's name lookups are answered by the host's resolver (and so are
//! visible to it); what the answer may be used for is decided by the address
//! check.
//!
//! A refusal is logged for the operator with the policy key that would allow
//! it; the guest sees only the WASI error code.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use http::uri::Scheme;
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi_http::Error as HttpError;

use crate::policy::{Credential, HostPattern, HttpMethods, NetworkGrant, Offline};

/// Why an outgoing request was refused (for the operator's log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial {
    /// The call has no network grant, for this reason.
    NoNetwork(Offline),
    /// A read-only tool tried a method other than GET, HEAD or OPTIONS.
    Method(String),
    /// Not `http` or `https`, or no host in the URL.
    BadUrl(String),
    /// No pattern of the grant matches `scheme://host:port`.
    NotListed {
        scheme: String,
        host: String,
        port: u16,
    },
    /// The name did not resolve.
    NotFound(String),
    /// The name resolved to an address that is not public and not listed.
    Prohibited { host: String, addr: IpAddr },
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Denial::NoNetwork(why) => write!(f, "the tool has no network access: {why}"),
            Denial::Method(m) => write!(
                f,
                "method {m} refused: the tool is read-only, so only GET, HEAD and OPTIONS"
            ),
            Denial::BadUrl(why) => write!(f, "invalid request URL: {why}"),
            Denial::NotListed { scheme, host, port } => write!(
                f,
                "{scheme}://{host}:{port} is not listed in the policy's `network`"
            ),
            Denial::NotFound(host) => write!(f, "{host} did not resolve to any address"),
            Denial::Prohibited { host, addr } => write!(
                f,
                "{host} resolves to {addr}, which is not a public address; list the \
                 address (or its range) in the policy's `network` to allow it"
            ),
        }
    }
}

impl Denial {
    /// The error code the guest sees.
    pub(super) fn to_error(&self) -> HttpError {
        match self {
            Denial::NoNetwork(_) | Denial::Method(_) | Denial::NotListed { .. } => {
                HttpError::HttpRequestDenied
            }
            Denial::BadUrl(_) => HttpError::HttpRequestUriInvalid,
            Denial::NotFound(_) => HttpError::DnsError {
                rcode: Some("no address".into()),
                info_code: None,
            },
            Denial::Prohibited { .. } => HttpError::DestinationIpProhibited,
        }
    }
}

/// Where a checked request may go, before resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// An IP literal that an IP or CIDR pattern allows: used as is.
    Addr(SocketAddr),
    /// A name that a name pattern allows: resolve, then [`check_resolved`].
    Name(String, u16),
}

/// A request that passed [`check_request`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub destination: Destination,
    /// `https`: TLS to [`Checked::server_name`].
    pub https: bool,
    /// The grant's credentials this request gets (by index), one per header
    /// name: the first listed wins.
    pub credentials: Vec<usize>,
}

impl Checked {
    /// The name TLS sends and checks the certificate against: the URL's
    /// host (a name, or an IP literal), never a resolved address.
    pub fn server_name(&self) -> String {
        match &self.destination {
            Destination::Name(host, _) => host.clone(),
            Destination::Addr(addr) => addr.ip().to_string(),
        }
    }
}

/// Checks method and URL of a request against the grant. Pure: no I/O.
pub fn check_request(
    grant: Result<&NetworkGrant, Offline>,
    method: &http::Method,
    uri: &http::Uri,
) -> Result<Checked, Denial> {
    let grant = grant.map_err(Denial::NoNetwork)?;
    if grant.methods == HttpMethods::SafeOnly
        && ![http::Method::GET, http::Method::HEAD, http::Method::OPTIONS].contains(method)
    {
        return Err(Denial::Method(method.to_string()));
    }
    let scheme = match uri.scheme() {
        Some(s) if *s == Scheme::HTTP => "http",
        Some(s) if *s == Scheme::HTTPS => "https",
        Some(s) => return Err(Denial::BadUrl(format!("scheme {s} is not http or https"))),
        None => return Err(Denial::BadUrl("no scheme".into())),
    };
    let authority = uri
        .authority()
        .ok_or_else(|| Denial::BadUrl("no host".into()))?;
    if authority.as_str().contains('@') {
        return Err(Denial::BadUrl("user information in the authority".into()));
    }
    let host = authority.host();
    if host.is_empty() {
        return Err(Denial::BadUrl("no host".into()));
    }
    let port = authority
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    if !grant
        .allow
        .iter()
        .any(|p| p.matches_host(scheme, host, port))
    {
        return Err(Denial::NotListed {
            scheme: scheme.into(),
            host: host.into(),
            port,
        });
    }
    let mut credentials: Vec<usize> = Vec::new();
    for (i, c) in grant.credentials.iter().enumerate() {
        if c.applies_to(scheme, host, port)
            && !credentials
                .iter()
                .any(|&j| grant.credentials[j].header == c.header)
        {
            credentials.push(i);
        }
    }
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let destination = match bare.parse::<IpAddr>() {
        Ok(ip) => Destination::Addr(SocketAddr::new(ip.to_canonical(), port)),
        Err(_) => Destination::Name(host.trim_end_matches('.').to_ascii_lowercase(), port),
    };
    Ok(Checked {
        destination,
        https: scheme == "https",
        credentials,
    })
}

/// Puts the credentials into `headers`: each replaces every value of its
/// name that the guest set.
pub(super) fn inject(
    headers: &mut http::HeaderMap,
    credentials: &[&Credential],
) -> Result<(), HttpError> {
    for c in credentials {
        // Both were checked when the policy was loaded.
        let name = http::HeaderName::from_bytes(c.header.as_bytes())
            .map_err(|_| HttpError::ConfigurationError)?;
        let mut value = http::HeaderValue::from_str(c.value.expose())
            .map_err(|_| HttpError::ConfigurationError)?;
        value.set_sensitive(true);
        headers.remove(&name);
        headers.insert(name, value);
    }
    Ok(())
}

/// Checks what `host` resolved to: every address must be public unicast or
/// be allowed by an IP/CIDR pattern. Returns the addresses to connect to.
pub fn check_resolved(
    allow: &[HostPattern],
    host: &str,
    addrs: impl IntoIterator<Item = IpAddr>,
    port: u16,
) -> Result<Vec<SocketAddr>, Denial> {
    let mut checked: Vec<SocketAddr> = Vec::new();
    for ip in addrs {
        let ip = ip.to_canonical();
        let listed = allow
            .iter()
            .any(|p| !p.is_name() && p.matches_addr(ip, port));
        if !listed && !is_public(ip) {
            return Err(Denial::Prohibited {
                host: host.into(),
                addr: ip,
            });
        }
        let addr = SocketAddr::new(ip, port);
        if !checked.contains(&addr) {
            checked.push(addr);
        }
    }
    if checked.is_empty() {
        return Err(Denial::NotFound(host.into()));
    }
    Ok(checked)
}

/// Whether `ip` is a public unicast address: reachable on the internet, and
/// none of the machine's own, its network's, or a special-purpose address.
/// Errs on the side of "not public".
pub fn is_public(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let bits = u32::from(ip);
    // (network, prefix length) of every special-purpose IPv4 block.
    const SPECIAL: [(u32, u32); 16] = [
        (0x0000_0000, 8),  // 0.0.0.0/8 "this network"
        (0x0A00_0000, 8),  // 10.0.0.0/8 private
        (0x6440_0000, 10), // 100.64.0.0/10 shared (carrier-grade NAT)
        (0x7F00_0000, 8),  // 127.0.0.0/8 loopback
        (0xA9FE_0000, 16), // 169.254.0.0/16 link-local, cloud metadata
        (0xAC10_0000, 12), // 172.16.0.0/12 private
        (0xC000_0000, 24), // 192.0.0.0/24 protocol assignments
        (0xC000_0200, 24), // 192.0.2.0/24 documentation
        (0xC058_6300, 24), // 192.88.99.0/24 6to4 relay
        (0xC0A8_0000, 16), // 192.168.0.0/16 private
        (0xC612_0000, 15), // 198.18.0.0/15 benchmarking
        (0xC633_6400, 24), // 198.51.100.0/24 documentation
        (0xCB00_7100, 24), // 203.0.113.0/24 documentation
        (0xE000_0000, 4),  // 224.0.0.0/4 multicast
        (0xF000_0000, 4),  // 240.0.0.0/4 reserved, broadcast
        (0xFFFF_FFFF, 32), // broadcast (inside the above; kept explicit)
    ];
    !SPECIAL
        .iter()
        .any(|&(net, len)| bits >> (32 - len) == net >> (32 - len))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let bits = u128::from(ip);
    let within = |net: u128, len: u32| bits >> (128 - len) == net >> (128 - len);
    // Only global unicast (2000::/3) can be public; everything else (loopback,
    // unspecified, ULA fc00::/7 incl. cloud metadata, link-local, multicast,
    // NAT64 64:ff9b::/96, IPv4-compatible) is not.
    within(0x2000 << 112, 3)
        // 2001::/23 protocol assignments (Teredo, benchmarking, ORCHID ...).
        && !within(0x2001 << 112, 23)
        // 2001:db8::/32 and 3fff::/20 documentation.
        && !within((0x2001 << 112) | (0x0db8 << 96), 32)
        && !within(0x3fff << 112, 20)
        // 2002::/16 6to4: embeds an IPv4 address of any kind.
        && !within(0x2002 << 112, 16)
}

/// Whether a raw socket may use `addr` for `purpose` under `allow`.
pub fn socket_allowed(allow: &[HostPattern], addr: SocketAddr, purpose: SocketAddrUse) -> bool {
    match purpose {
        // The implicit bind of `connect` (wildcard address, any port). An
        // explicit bind to anything else, listening and accepting are refused.
        SocketAddrUse::TcpBind => addr.ip().is_unspecified() && addr.port() == 0,
        SocketAddrUse::TcpConnect => allow
            .iter()
            .any(|p| !p.is_name() && p.matches_addr(addr.ip(), addr.port())),
        _ => false,
    }
}

/// Sets up `wasi:sockets` for a call: see the module documentation.
pub fn configure_sockets(builder: &mut WasiCtxBuilder, grant: Option<&NetworkGrant>) {
    builder.allow_udp(false);
    let allow: Vec<HostPattern> = grant
        .map(|g| g.allow.iter().filter(|p| !p.is_name()).cloned().collect())
        .unwrap_or_default();
    if allow.is_empty() {
        builder.allow_tcp(false).allow_ip_name_lookup(false);
        return;
    }
    builder
        .allow_tcp(true)
        .allow_ip_name_lookup(true)
        .socket_addr_check(move |addr, purpose| {
            let ok = socket_allowed(&allow, addr, purpose);
            if !ok {
                tracing::warn!(
                    "socket {purpose:?} {addr} refused: not listed as an address or range \
                     in the policy's `network`"
                );
            }
            Box::pin(async move { ok })
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(patterns: &[&str], methods: HttpMethods) -> NetworkGrant {
        NetworkGrant {
            allow: patterns
                .iter()
                .map(|p| p.parse().expect("pattern"))
                .collect(),
            methods,
            credentials: Vec::new(),
            untraced: Vec::new(),
            trust: Default::default(),
        }
    }

    fn uri(text: &str) -> http::Uri {
        text.parse().expect("uri")
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("ip")
    }

    #[test]
    fn no_grant_refuses_everything() {
        let r = check_request(
            Err(Offline::NoPolicy),
            &http::Method::GET,
            &uri("http://127.0.0.1:80/"),
        );
        assert_eq!(r, Err(Denial::NoNetwork(Offline::NoPolicy)));
        let why = r.map(|_| ()).unwrap_err().to_string();
        assert!(why.contains("no policy was loaded"), "{why}");
    }

    #[test]
    fn host_scheme_and_port_must_match() {
        let g = grant(&["api.example.com", "127.0.0.1:8080"], HttpMethods::Any);
        let get = http::Method::GET;
        let to = |u: &str| check_request(Ok(&g), &get, &uri(u)).map(|c| c.destination);
        assert_eq!(
            to("http://api.example.com/x?y=1"),
            Ok(Destination::Name("api.example.com".into(), 80))
        );
        assert_eq!(
            to("http://127.0.0.1:8080/"),
            Ok(Destination::Addr("127.0.0.1:8080".parse().unwrap()))
        );
        for bad in [
            "http://api.example.com:8080/",
            "http://other.example.com/",
            "http://127.0.0.1:8081/",
            "http://127.0.0.1/",
            "http://localhost:8080/",
            "http://2130706433:8080/",
        ] {
            assert!(
                matches!(
                    check_request(Ok(&g), &get, &uri(bad)),
                    Err(Denial::NotListed { .. })
                ),
                "{bad} allowed"
            );
        }
        let https = check_request(Ok(&g), &get, &uri("https://API.example.com./")).expect("https");
        assert!(https.https);
        assert_eq!(https.server_name(), "api.example.com");
        assert_eq!(
            https.destination,
            Destination::Name("api.example.com".into(), 443)
        );
        let by_addr = check_request(Ok(&g), &get, &uri("https://127.0.0.1:8080/")).expect("ip");
        assert_eq!(by_addr.server_name(), "127.0.0.1");
        assert!(matches!(
            check_request(Ok(&g), &get, &uri("http://u:p@api.example.com/")),
            Err(Denial::BadUrl(_))
        ));
    }

    #[test]
    fn a_scheme_in_the_pattern_is_the_only_scheme() {
        let g = grant(
            &[
                "https://secure.example.com",
                "http://plain.example.com",
                "both.example.com",
            ],
            HttpMethods::Any,
        );
        let get = http::Method::GET;
        let ok = |u: &str| check_request(Ok(&g), &get, &uri(u)).is_ok();
        assert!(ok("https://secure.example.com/"));
        assert!(!ok("http://secure.example.com/"));
        assert!(!ok("http://secure.example.com:443/"));
        assert!(ok("http://plain.example.com/"));
        assert!(!ok("https://plain.example.com/"));
        assert!(ok("http://both.example.com/"));
        assert!(ok("https://both.example.com/"));
    }

    #[test]
    fn credentials_go_to_their_host_only_and_the_first_listed_wins() {
        use crate::policy::{Credential, Secret};
        let credential = |host: &str, header: &str, value: &str| Credential {
            host: host.parse().expect("pattern"),
            header: header.into(),
            from: "T".into(),
            secret: Secret::new(value),
            value: Secret::new(value),
        };
        let mut g = grant(
            &["api.example.com", "*.example.com", "other.example.org"],
            HttpMethods::Any,
        );
        g.credentials = vec![
            credential("api.example.com", "authorization", "first-secret"),
            credential("*.example.com", "authorization", "wildcard-secret"),
            credential("*.example.com", "x-api-key", "key-secret"),
        ];
        let get = http::Method::GET;
        let gets = |u: &str| {
            check_request(Ok(&g), &get, &uri(u))
                .expect("allowed")
                .credentials
        };
        assert_eq!(gets("https://api.example.com/"), vec![0, 2]);
        assert_eq!(gets("https://www.example.com/"), vec![1, 2]);
        assert_eq!(gets("https://other.example.org/"), Vec::<usize>::new());
        // A pattern without a scheme sends its secret over https only.
        assert_eq!(gets("http://api.example.com/"), Vec::<usize>::new());

        let mut headers = http::HeaderMap::new();
        headers.append("Authorization", "guest-one".parse().unwrap());
        headers.append("authorization", "guest-two".parse().unwrap());
        headers.insert("accept", "text/plain".parse().unwrap());
        inject(&mut headers, &[&g.credentials[0], &g.credentials[2]]).expect("inject");
        let auth: Vec<_> = headers.get_all("authorization").iter().collect();
        assert_eq!(auth, ["first-secret"]);
        assert!(auth[0].is_sensitive());
        assert_eq!(headers["x-api-key"], "key-secret");
        assert_eq!(headers["accept"], "text/plain");
    }

    #[test]
    fn read_only_tools_use_safe_methods() {
        let g = grant(&["api.example.com"], HttpMethods::SafeOnly);
        let u = uri("http://api.example.com/");
        for ok in [http::Method::GET, http::Method::HEAD, http::Method::OPTIONS] {
            assert!(check_request(Ok(&g), &ok, &u).is_ok(), "{ok}");
        }
        for bad in [
            http::Method::POST,
            http::Method::PUT,
            http::Method::DELETE,
            http::Method::PATCH,
            http::Method::CONNECT,
            http::Method::TRACE,
            http::Method::from_bytes(b"PURGE").unwrap(),
        ] {
            assert_eq!(
                check_request(Ok(&g), &bad, &u),
                Err(Denial::Method(bad.to_string()))
            );
        }
        let any = grant(&["api.example.com"], HttpMethods::Any);
        assert!(check_request(Ok(&any), &http::Method::POST, &u).is_ok());
    }

    #[test]
    fn resolved_addresses_must_be_public_or_listed() {
        let names: Vec<HostPattern> = vec!["localhost:8080".parse().unwrap()];
        assert!(matches!(
            check_resolved(&names, "localhost", [ip("127.0.0.1")], 8080),
            Err(Denial::Prohibited { .. })
        ));
        // One bad address spoils the answer (no picking the good one).
        assert!(matches!(
            check_resolved(&names, "x", [ip("93.184.216.34"), ip("10.0.0.1")], 8080),
            Err(Denial::Prohibited { .. })
        ));
        assert_eq!(
            check_resolved(&names, "x", [ip("93.184.216.34")], 8080),
            Ok(vec!["93.184.216.34:8080".parse().unwrap()])
        );
        assert_eq!(
            check_resolved(&names, "x", [], 8080),
            Err(Denial::NotFound("x".into()))
        );
        let with_ip: Vec<HostPattern> = vec![
            "localhost:8080".parse().unwrap(),
            "127.0.0.1:8080".parse().unwrap(),
        ];
        assert_eq!(
            check_resolved(&with_ip, "localhost", [ip("127.0.0.1")], 8080),
            Ok(vec!["127.0.0.1:8080".parse().unwrap()])
        );
        // The IP pattern allows its port only.
        assert!(check_resolved(&with_ip, "localhost", [ip("127.0.0.1")], 8081).is_err());
        assert!(check_resolved(&with_ip, "localhost", [ip("::ffff:127.0.0.1")], 8080).is_ok());
    }

    #[test]
    fn public_addresses() {
        for public in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(ip(public)), "{public}");
        }
        for special in [
            "0.0.0.0",
            "10.1.2.3",
            "100.64.0.1",
            "127.0.0.1",
            "127.255.0.1",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.1",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "2002:7f00:1::1",
        ] {
            assert!(!is_public(ip(special)), "{special}");
        }
    }

    #[test]
    fn sockets_reach_listed_addresses_only() {
        let allow: Vec<HostPattern> = vec![
            "127.0.0.1:9000".parse().unwrap(),
            "localhost:9001".parse().unwrap(),
        ];
        let sa = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert!(socket_allowed(
            &allow,
            sa("127.0.0.1:9000"),
            SocketAddrUse::TcpConnect
        ));
        assert!(!socket_allowed(
            &allow,
            sa("127.0.0.1:9001"),
            SocketAddrUse::TcpConnect
        ));
        assert!(!socket_allowed(
            &allow,
            sa("10.0.0.1:9000"),
            SocketAddrUse::TcpConnect
        ));
        assert!(socket_allowed(
            &allow,
            sa("0.0.0.0:0"),
            SocketAddrUse::TcpBind
        ));
        assert!(socket_allowed(&allow, sa("[::]:0"), SocketAddrUse::TcpBind));
        assert!(!socket_allowed(
            &allow,
            sa("0.0.0.0:9000"),
            SocketAddrUse::TcpBind
        ));
        assert!(!socket_allowed(
            &allow,
            sa("127.0.0.1:0"),
            SocketAddrUse::TcpBind
        ));
        assert!(!socket_allowed(
            &allow,
            sa("0.0.0.0:0"),
            SocketAddrUse::TcpListen
        ));
        assert!(!socket_allowed(
            &allow,
            sa("127.0.0.1:9000"),
            SocketAddrUse::TcpAccept
        ));
        assert!(!socket_allowed(
            &allow,
            sa("127.0.0.1:9000"),
            SocketAddrUse::UdpSend
        ));
    }
}
