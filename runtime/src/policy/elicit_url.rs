//! Where a tool's URL elicitation (`host.elicit-url`, or an `elicit-url`
//! request of a `host.ask` batch) may send the user. A client opens the URL
//! for its user, so only a web page goes out: `https:`, or `http:` to this
//! machine (127.0.0.0/8, `[::1]`, `localhost`) — never `javascript:`,
//! `data:`, `file:` or any other scheme, nor a URL with a user name or
//! password (`https://bank.example@evil.example/` reads as the bank's), nor
//! text that is no URL. The policy's `elicit-url-hosts` narrows it to the
//! hosts it lists.
//!
//! [`ElicitUrls::check`] is the one check: the sandbox makes it where a
//! request is granted and counted, before any protocol revision sees it.

use url::{Host, Url};

use super::HostPattern;

/// The most of a refused URL an error repeats.
const SHOWN: usize = 80;

/// The hosts a call's URL elicitations may name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElicitUrls {
    /// `elicit-url-hosts`: only these; `None` (not set) lets any host
    /// through.
    pub hosts: Option<Vec<HostPattern>>,
}

impl ElicitUrls {
    /// The URL as it goes to the client — as parsed and written back, so
    /// the client reads exactly what was checked — or why it may not.
    pub fn check(&self, text: &str) -> Result<String, String> {
        let url = Url::parse(text).map_err(|e| format!("{} is not a URL ({e})", shown(text)))?;
        match url.scheme() {
            "https" => {}
            "http" if is_loopback(&url) => {}
            "http" => {
                return Err(format!(
                    "{} is plain http: to another machine; the user is sent only to https: \
                     (http: only to 127.0.0.1, [::1] or localhost)",
                    shown(text)
                ));
            }
            other => {
                return Err(format!(
                    "a {other}: URL is not a web page the user may be sent to; only https: \
                     (or http: to this machine)"
                ));
            }
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "{} carries a user name or password (user:pass@), which makes a URL read as \
                 another site's",
                shown(text)
            ));
        }
        if let Some(hosts) = &self.hosts {
            let host = url.host_str().unwrap_or_default();
            let port = url.port_or_known_default().unwrap_or(443);
            if !hosts
                .iter()
                .any(|p| p.matches_host(url.scheme(), host, port))
            {
                return Err(format!(
                    "{} is not on a host the policy's `elicit-url-hosts` lists ({})",
                    shown(text),
                    self.describe().unwrap_or_default()
                ));
            }
        }
        Ok(url.into())
    }

    /// The hosts listed, as written (`None`: any host).
    pub fn describe(&self) -> Option<String> {
        self.hosts.as_ref().map(|hosts| match hosts.is_empty() {
            true => "none".to_string(),
            false => hosts
                .iter()
                .map(HostPattern::as_str)
                .collect::<Vec<_>>()
                .join(", "),
        })
    }
}

/// Whether the URL's host is this machine.
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// A URL as an error repeats it: quoted, at most [`SHOWN`] characters.
fn shown(text: &str) -> String {
    let mut clipped: String = text.chars().take(SHOWN).collect();
    if clipped.len() < text.len() {
        clipped.push('…');
    }
    format!("{clipped:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only(hosts: &[&str]) -> ElicitUrls {
        ElicitUrls {
            hosts: Some(hosts.iter().map(|h| h.parse().expect("pattern")).collect()),
        }
    }

    #[test]
    fn only_https_and_loopback_http_go_out() {
        let any = ElicitUrls::default();
        for good in [
            "https://example.com/pay?x=1#top",
            "HTTPS://Example.COM",
            "http://127.0.0.1:8080/callback",
            "http://127.9.9.9/",
            "http://[::1]:3000/",
            "http://localhost/cb",
            "https://[2001:db8::1]/",
        ] {
            assert!(any.check(good).is_ok(), "{good}");
        }
        for (bad, why) in [
            ("javascript:alert(1)", "a javascript: URL"),
            ("JaVaScRiPt:alert(document.cookie)", "a javascript: URL"),
            ("  javascript:alert(1)", "a javascript: URL"),
            ("data:text/html,<script>alert(1)</script>", "a data: URL"),
            ("file:///etc/passwd", "a file: URL"),
            ("vbscript:msgbox(1)", "a vbscript: URL"),
            ("ftp://example.com/x", "a ftp: URL"),
            ("http://example.com/", "plain http: to another machine"),
            (
                "http://127.0.0.1.evil.example/",
                "plain http: to another machine",
            ),
            (
                "http://localhost.evil.example/",
                "plain http: to another machine",
            ),
            (
                "https://bank.example@evil.example/",
                "user name or password",
            ),
            ("https://user:pass@example.com/", "user name or password"),
            ("not a url", "is not a URL"),
            ("", "is not a URL"),
            ("/relative/path", "is not a URL"),
        ] {
            let refused = any.check(bad).expect_err(bad);
            assert!(refused.contains(why), "{bad}: {refused}");
        }
    }

    #[test]
    fn what_goes_out_is_what_was_checked() {
        let any = ElicitUrls::default();
        assert_eq!(
            any.check(" https://Example.com/a\tb ").as_deref(),
            Ok("https://example.com/ab")
        );
        let look_alike = any.check("https://exаmple.com/").expect("a URL");
        assert!(
            look_alike.starts_with("https://xn--"),
            "a look-alike name goes out as what it is: {look_alike}"
        );
    }

    #[test]
    fn elicit_url_hosts_narrows_to_the_hosts_listed() {
        let listed = only(&["example.com", "*.example.org", "localhost:3000"]);
        for good in [
            "https://example.com/x",
            "https://pay.example.org/",
            "https://a.b.example.org/",
            "http://localhost:3000/cb",
        ] {
            assert!(listed.check(good).is_ok(), "{good}");
        }
        for bad in [
            "https://example.org/",
            "https://evil.example/",
            "https://example.com:8443/",
            "https://example.com.evil.example/",
            "http://localhost/",
        ] {
            let refused = listed.check(bad).expect_err(bad);
            assert!(
                refused.contains("elicit-url-hosts")
                    && refused.contains("example.com, *.example.org, localhost:3000"),
                "{bad}: {refused}"
            );
        }
        // The scheme rule holds whatever the list says.
        let refused = listed.check("javascript:alert(1)").expect_err("scheme");
        assert!(refused.contains("javascript:"), "{refused}");
        let none = only(&[]);
        assert!(none.check("https://example.com/").is_err());
        assert_eq!(none.describe().as_deref(), Some("none"));
        assert_eq!(ElicitUrls::default().describe(), None);
    }

    #[test]
    fn a_long_url_is_clipped_in_the_error() {
        let long = format!("http://example.com/{}", "a".repeat(500));
        let refused = ElicitUrls::default().check(&long).expect_err("http");
        assert!(refused.len() < 300, "{refused}");
    }
}
