//! Network destinations the policy allows: host names, `*.` wildcards, IP
//! literals and CIDR ranges, each optionally with a scheme and a port.
//!
//! Accepted forms (names compared case-insensitively):
//!
//! | pattern | allows |
//! | --- | --- |
//! | `api.example.com` | http on 80 and https on 443 to that name |
//! | `api.example.com:8443` | that name on port 8443, http or https |
//! | `*.example.org` | any subdomain (not `example.org` itself), 80/443 |
//! | `https://x.example.net` | https on 443 only |
//! | `http://x.example.net:8080` | http on 8080 only |
//! | `10.1.2.3`, `::1` | that address, 80/443 |
//! | `10.1.2.3:9000`, `[::1]:8080` | that address on that port |
//! | `10.0.0.0/8`, `fd00::/8`, `[fd00::/8]:443` | any address in the range |
//!
//! A pattern without a port allows only the default port of its scheme (or of
//! the request's scheme when the pattern names none), for HTTP requests and
//! raw sockets alike: listing an address never opens all of its ports.
//! Name patterns never match raw socket addresses ([`HostPattern::matches_addr`]);
//! the sandbox decides what a name may resolve to.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// The scheme a pattern is limited to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Scheme {
    Http,
    Https,
}

impl Scheme {
    fn parse(text: &str) -> Option<Scheme> {
        match text.to_ascii_lowercase().as_str() {
            "http" => Some(Scheme::Http),
            "https" => Some(Scheme::Https),
            _ => None,
        }
    }

    fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// What a pattern names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Target {
    /// One host name, lower case, without a trailing dot.
    Name(String),
    /// `*.suffix`: any name ending in `.suffix` (lower case).
    Subdomains(String),
    /// One address (IPv4-mapped IPv6 stored as IPv4).
    Addr(IpAddr),
    /// A range: network address (host bits zero) and prefix length.
    Range(IpAddr, u8),
}

/// A network destination the policy allows. Parse with [`str::parse`];
/// [`fmt::Display`] shows the pattern as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPattern {
    written: String,
    scheme: Option<Scheme>,
    target: Target,
    port: Option<u16>,
}

/// Why a host pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid host pattern {pattern:?}: {reason}")]
pub struct HostPatternError {
    pub pattern: String,
    pub reason: String,
}

impl HostPattern {
    /// The pattern as written in the policy.
    pub fn as_str(&self) -> &str {
        &self.written
    }

    /// Whether the pattern names hosts (`name`, `*.name`) rather than addresses.
    pub fn is_name(&self) -> bool {
        matches!(self.target, Target::Name(_) | Target::Subdomains(_))
    }

    /// Whether the pattern is limited to plain `http` (`http://…`).
    pub fn scheme_is_http(&self) -> bool {
        self.scheme == Some(Scheme::Http)
    }

    /// The TCP ports the pattern lets a tool connect to: its own, else its
    /// scheme's default, else 80 and 443 (the rule of `port_allowed`). The
    /// serving process's confinement (`crate::confine`) opens these.
    pub fn ports(&self) -> Vec<u16> {
        match (self.port, self.scheme) {
            (Some(port), _) => vec![port],
            (None, Some(scheme)) => vec![scheme.default_port()],
            (None, None) => vec![80, 443],
        }
    }

    /// Whether an outgoing HTTP request to `scheme://host:port` is allowed.
    /// `scheme` is `"http"` or `"https"` (anything else is refused); `host`
    /// may be a name or an IP literal (IPv6 with or without brackets).
    pub fn matches_host(&self, scheme: &str, host: &str, port: u16) -> bool {
        let Some(scheme) = Scheme::parse(scheme) else {
            return false;
        };
        if self.scheme.is_some_and(|s| s != scheme) {
            return false;
        }
        if !self.port_allowed(Some(scheme), port) {
            return false;
        }
        let host = host.trim_end_matches('.');
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        match &self.target {
            Target::Name(name) => host.eq_ignore_ascii_case(name),
            Target::Subdomains(suffix) => {
                // `x.example.com` matches `*.example.com`; `example.com` and
                // `badexample.com` do not.
                host.len() > suffix.len() + 1
                    && host.as_bytes()[host.len() - suffix.len() - 1] == b'.'
                    && host[host.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
            }
            Target::Addr(_) | Target::Range(..) => match bare.parse::<IpAddr>() {
                Ok(ip) => self.addr_in_target(ip),
                Err(_) => false,
            },
        }
    }

    /// Whether a connection to `ip:port` is allowed (raw sockets, and the
    /// addresses a name resolved to). Only address and range patterns match.
    pub fn matches_addr(&self, ip: IpAddr, port: u16) -> bool {
        self.port_allowed(None, port) && self.addr_in_target(ip)
    }

    fn addr_in_target(&self, ip: IpAddr) -> bool {
        // `::ffff:10.0.0.1` is 10.0.0.1: compare in one form so a mapped
        // address neither slips past nor misses a v4 pattern.
        let ip = ip.to_canonical();
        match self.target {
            Target::Addr(addr) => addr == ip,
            Target::Range(net, len) => in_range(ip, net, len),
            Target::Name(_) | Target::Subdomains(_) => false,
        }
    }

    /// The port rule: an explicit port is the only one; without one, the
    /// default port of the pattern's scheme, or of the request's scheme, or
    /// (neither known, as for raw sockets) 80 or 443.
    fn port_allowed(&self, request: Option<Scheme>, port: u16) -> bool {
        if let Some(p) = self.port {
            return p == port;
        }
        match self.scheme.or(request) {
            Some(s) => s.default_port() == port,
            None => port == 80 || port == 443,
        }
    }
}

fn in_range(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => {
            mask_bits(u32::from(ip).into(), 32, len) == u128::from(u32::from(net))
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) => mask_bits(u128::from(ip), 128, len) == u128::from(net),
        _ => false,
    }
}

/// Keeps the top `len` bits of a `width`-bit address.
fn mask_bits(addr: u128, width: u8, len: u8) -> u128 {
    if len == 0 {
        return 0;
    }
    let keep = u32::from(width - len);
    let mask = if keep >= 128 { 0 } else { u128::MAX << keep };
    addr & mask & (u128::MAX >> (128 - u32::from(width)))
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

impl FromStr for HostPattern {
    type Err = HostPatternError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = |reason: &str| HostPatternError {
            pattern: text.to_string(),
            reason: reason.to_string(),
        };
        let written = text.trim();
        if written.is_empty() {
            return Err(err("it is empty"));
        }
        let (scheme, mut rest) = match written.split_once("://") {
            Some((s, rest)) => (
                Some(Scheme::parse(s).ok_or_else(|| err("the scheme must be http or https"))?),
                rest,
            ),
            None => (None, written),
        };
        if scheme.is_some() {
            // `https://x.example.net/` is how URLs are often copied.
            rest = rest.strip_suffix('/').unwrap_or(rest);
        }
        if rest.contains(['?', '#', '@']) || rest.matches('/').count() > 1 {
            return Err(err("a host pattern has no path, query or user part"));
        }

        // Split host and port: `[v6]:port`, bare `v6` (two or more colons),
        // `host:port`, `host`.
        let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
            let (inside, after) = inner
                .split_once(']')
                .ok_or_else(|| err("missing ']' after an IPv6 address"))?;
            let port = match after {
                "" => None,
                _ => Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| err("expected ':PORT' after ']'"))?,
                ),
            };
            if !inside.contains(':') {
                return Err(err("brackets are only for IPv6 addresses"));
            }
            (inside, port)
        } else if rest.matches(':').count() > 1 {
            (rest, None)
        } else if let Some((h, p)) = rest.split_once(':') {
            (h, Some(p))
        } else {
            (rest, None)
        };
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(0) | Err(_) => return Err(err("the port must be a number from 1 to 65535")),
                Ok(p) => Some(p),
            },
        };

        let target = if let Some((addr, len)) = host.split_once('/') {
            let addr: IpAddr = addr.parse().map_err(|_| {
                err("a host pattern has no path (a range is written ADDRESS/LENGTH)")
            })?;
            let width = if addr.is_ipv4() { 32 } else { 128 };
            let len: u8 = len
                .parse()
                .ok()
                .filter(|l| *l <= width)
                .ok_or_else(|| err(&format!("the prefix length must be 0 to {width}")))?;
            let bits = match addr {
                IpAddr::V4(a) => u128::from(u32::from(a)),
                IpAddr::V6(a) => u128::from(a),
            };
            // `10.0.0.1/8` is most likely a typo for one address or for
            // `10.0.0.0/8`; refuse rather than guess.
            if mask_bits(bits, width, len) != bits {
                return Err(err("the range has bits set after the prefix length"));
            }
            Target::Range(addr, len)
        } else if let Ok(addr) = host.parse::<IpAddr>() {
            Target::Addr(addr.to_canonical())
        } else if let Some(suffix) = host.strip_prefix("*.") {
            Target::Subdomains(check_name(suffix).map_err(|r| err(&r))?)
        } else {
            if host.contains('*') {
                return Err(err("a wildcard is only allowed as a leading '*.'"));
            }
            Target::Name(check_name(host).map_err(|r| err(&r))?)
        };
        Ok(HostPattern {
            written: written.to_string(),
            scheme,
            target,
            port,
        })
    }
}

/// Checks a DNS name and returns it in lower case without a trailing dot.
fn check_name(name: &str) -> Result<String, String> {
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    if name.is_empty() || name.len() > 253 {
        return Err("a host name must have 1 to 253 characters".into());
    }
    for label in name.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err("each part of a host name must have 1 to 63 characters".into());
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!("{label:?} is not a valid host name part"));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(format!("{label:?} may not start or end with '-'"));
        }
    }
    // `10.1.2.300` is a mistyped address, not a name.
    if name
        .rsplit('.')
        .next()
        .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err("not a valid IP address, and a host name cannot end in a number".into());
    }
    Ok(name)
}

impl<'de> serde::Deserialize<'de> for HostPattern {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for HostPattern {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> HostPattern {
        text.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("test address")
    }

    #[test]
    fn plain_name_uses_default_ports_of_both_schemes() {
        let pat = p("api.example.com");
        assert!(pat.is_name());
        assert!(pat.matches_host("https", "api.example.com", 443));
        assert!(pat.matches_host("http", "api.example.com", 80));
        assert!(!pat.matches_host("http", "api.example.com", 443));
        assert!(!pat.matches_host("https", "api.example.com", 80));
        assert!(!pat.matches_host("https", "api.example.com", 8443));
        assert!(!pat.matches_host("https", "other.example.com", 443));
        assert!(!pat.matches_host("https", "x.api.example.com", 443));
        assert!(!pat.matches_host("ftp", "api.example.com", 443));
    }

    #[test]
    fn names_are_case_insensitive() {
        let pat = p("API.Example.COM");
        assert_eq!(pat.to_string(), "API.Example.COM");
        assert!(pat.matches_host("https", "api.example.com", 443));
        assert!(pat.matches_host("HTTPS", "Api.EXAMPLE.com", 443));
        assert!(pat.matches_host("https", "api.example.com.", 443));
        assert!(p("*.Example.org").matches_host("https", "A.EXAMPLE.ORG", 443));
    }

    #[test]
    fn explicit_port_is_the_only_port() {
        let pat = p("api.example.com:8443");
        assert!(pat.matches_host("https", "api.example.com", 8443));
        assert!(pat.matches_host("http", "api.example.com", 8443));
        assert!(!pat.matches_host("https", "api.example.com", 443));
        assert!(!pat.matches_host("http", "api.example.com", 80));
    }

    #[test]
    fn wildcard_matches_subdomains_only() {
        let pat = p("*.example.org");
        assert!(pat.is_name());
        assert!(pat.matches_host("https", "a.example.org", 443));
        assert!(pat.matches_host("https", "a.b.example.org", 443));
        assert!(!pat.matches_host("https", "example.org", 443));
        assert!(!pat.matches_host("https", "badexample.org", 443));
        assert!(!pat.matches_host("https", "example.org.evil.com", 443));
        assert!(!pat.matches_host("https", ".example.org", 443));
        assert!(!pat.matches_host("https", "a.example.org", 8443));
    }

    #[test]
    fn scheme_limits_scheme_and_default_port() {
        let pat = p("https://x.example.net");
        assert!(pat.matches_host("https", "x.example.net", 443));
        assert!(!pat.matches_host("http", "x.example.net", 80));
        assert!(!pat.matches_host("http", "x.example.net", 443));
        let pat = p("http://x.example.net:8080/");
        assert_eq!(pat.to_string(), "http://x.example.net:8080/");
        assert!(pat.matches_host("http", "x.example.net", 8080));
        assert!(!pat.matches_host("https", "x.example.net", 8080));
        assert!(!pat.matches_host("http", "x.example.net", 80));
    }

    #[test]
    fn ip_literals() {
        let pat = p("10.1.2.3");
        assert!(!pat.is_name());
        assert!(pat.matches_host("http", "10.1.2.3", 80));
        assert!(pat.matches_addr(ip("10.1.2.3"), 443));
        assert!(!pat.matches_addr(ip("10.1.2.3"), 22));
        assert!(!pat.matches_addr(ip("10.1.2.4"), 80));
        assert!(pat.matches_addr(ip("::ffff:10.1.2.3"), 80));
        assert!(!pat.matches_host("http", "api.example.com", 80));

        let pat = p("[::1]:8080");
        assert!(pat.matches_addr(ip("::1"), 8080));
        assert!(!pat.matches_addr(ip("::1"), 80));
        assert!(pat.matches_host("http", "[::1]", 8080));
        assert!(pat.matches_host("http", "::1", 8080));
        assert!(!pat.matches_addr(ip("127.0.0.1"), 8080));

        let pat = p("::1");
        assert!(pat.matches_addr(ip("::1"), 443));
        let pat = p("127.0.0.1:9000");
        assert!(pat.matches_addr(ip("127.0.0.1"), 9000));
        assert!(!pat.matches_addr(ip("127.0.0.1"), 9001));
    }

    #[test]
    fn cidr_ranges() {
        let pat = p("10.0.0.0/8");
        assert!(pat.matches_addr(ip("10.0.0.1"), 443));
        assert!(pat.matches_addr(ip("10.255.255.255"), 80));
        assert!(!pat.matches_addr(ip("11.0.0.0"), 80));
        assert!(!pat.matches_addr(ip("10.0.0.1"), 8080));
        assert!(pat.matches_addr(ip("::ffff:10.9.9.9"), 80));
        assert!(pat.matches_host("https", "10.2.3.4", 443));
        assert!(!pat.matches_host("https", "ten.example.com", 443));

        let pat = p("192.168.1.0/24:5432");
        assert!(pat.matches_addr(ip("192.168.1.77"), 5432));
        assert!(!pat.matches_addr(ip("192.168.2.77"), 5432));

        let pat = p("fd00::/8");
        assert!(pat.matches_addr(ip("fd12:3456::1"), 443));
        assert!(!pat.matches_addr(ip("fe80::1"), 443));
        assert!(!pat.matches_addr(ip("10.0.0.1"), 443));
        let pat = p("[2001:db8::/32]:443");
        assert!(pat.matches_addr(ip("2001:db8:1::5"), 443));
        assert!(!pat.matches_addr(ip("2001:db9::5"), 443));
        assert!(!pat.matches_addr(ip("2001:db8::5"), 80));

        let all = p("0.0.0.0/0:53");
        assert!(all.matches_addr(ip("8.8.8.8"), 53));
        assert!(!all.matches_addr(ip("::8"), 53));
        assert!(p("::/0").matches_addr(ip("2001::1"), 443));
        assert!(p("10.1.2.3/32").matches_addr(ip("10.1.2.3"), 80));
        assert!(!p("10.1.2.3/32").matches_addr(ip("10.1.2.4"), 80));
    }

    #[test]
    fn names_never_match_addresses() {
        assert!(!p("localhost").matches_addr(ip("127.0.0.1"), 80));
        assert!(!p("*.example.com").matches_addr(ip("127.0.0.1"), 80));
    }

    #[test]
    fn invalid_patterns() {
        for bad in [
            "",
            "*",
            "*.",
            "a.*.example.com",
            "ex*ample.com",
            "ftp://example.com",
            "https://example.com/path",
            "example.com:0",
            "example.com:70000",
            "example.com:http",
            "user@example.com",
            "exa mple.com",
            "-bad.example.com",
            "10.1.2.300",
            "10.0.0.1/8",
            "10.0.0.0/33",
            "fd00::/129",
            "[10.0.0.1]:80",
            "[::1",
            "[::1]8080",
            "a..b",
        ] {
            assert!(bad.parse::<HostPattern>().is_err(), "{bad:?} accepted");
        }
        let e = "10.0.0.1/8".parse::<HostPattern>().unwrap_err();
        assert!(e.to_string().contains("10.0.0.1/8"), "{e}");
    }
}
