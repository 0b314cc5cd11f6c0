//! The keys of a tool's requests to the client: `ask`, the kinds it may
//! make (`elicit`, `sample`, `roots`; none by default), and
//! `elicit-url-hosts`, the only hosts a URL elicitation may send the user
//! to. Both are replaced as a whole by a more specific section (so a tool
//! section can take a request away). The limits of each kind are limits
//! (`limits.rs`), shown on the same line.

use serde::Deserialize;
use serde_json::{Value, json};
use toml::Spanned;

use super::HostPattern;
use super::context::Parser;
use super::elicit_url::ElicitUrls;
use super::grant::{Asks, Grant};
use super::key::{SectionKey, ShownGrant};
use super::limits::Shown;
use super::settings::Settings;

/// One kind of request to the client a tool may make (`ask`).
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(super) enum RawAsk {
    Elicit,
    Sample,
    Roots,
}

/// `ask = ["elicit", "sample", "roots"]`.
pub(super) struct Ask;

impl SectionKey for Ask {
    type Raw = Vec<RawAsk>;
    type Checked = Asks;

    fn check(_: &Parser<'_>, kinds: Vec<RawAsk>) -> Option<Asks> {
        Some(asks(&kinds))
    }

    fn merge(asks: &Asks, settings: &mut Settings) {
        settings.asks = *asks;
    }

    /// The kinds granted, the limits shown with them, the hosts; in the
    /// audit entry only when a kind is granted.
    fn shown(grant: &Grant) -> Option<ShownGrant> {
        let mut ask = serde_json::Map::new();
        ask.insert("granted".into(), json!(grant.asks.names()));
        ask.extend(grant.limits.json(|shown| matches!(shown, Shown::Ask(_))));
        let hosts = grant
            .elicit_urls
            .hosts
            .as_ref()
            .map(|hosts| hosts.iter().map(|p| p.to_string()).collect::<Vec<_>>());
        ask.insert("elicit_url_hosts".into(), json!(hosts));
        Some(ShownGrant {
            json: Value::Object(ask),
            lines: vec![grant.ask_line()],
            audit: match grant.asks.any() {
                true => vec![("ask", json!(grant.asks.names()))],
                false => Vec::new(),
            },
        })
    }
}

/// `elicit-url-hosts = ["example.com", "*.example.org"]`: shown on the
/// ask line.
pub(super) struct ElicitUrlHosts;

impl SectionKey for ElicitUrlHosts {
    type Raw = Vec<Spanned<String>>;
    type Checked = Vec<HostPattern>;

    fn check(parser: &Parser<'_>, hosts: Self::Raw) -> Option<Vec<HostPattern>> {
        Some(parser.elicit_url_hosts(hosts))
    }

    fn merge(hosts: &Vec<HostPattern>, settings: &mut Settings) {
        settings.elicit_urls = ElicitUrls {
            hosts: Some(hosts.clone()),
        };
    }
}

impl Grant {
    /// What the grant lets a call ask the client, in one line: the kinds
    /// granted, the per-call limits of those kinds only, and the hosts a
    /// URL elicitation may name when the policy lists them.
    pub fn ask_line(&self) -> String {
        let (asks, l) = (self.asks, &self.limits);
        if !asks.any() {
            return "ask: none (the tool may not ask the client anything)".to_string();
        }
        // The limits of each kind granted, as their declarations word them.
        let limits: Vec<String> = asks
            .names()
            .into_iter()
            .filter_map(|kind| l.ask_text(kind))
            .collect();
        // Where a URL elicitation may send the user, when the policy narrows it.
        let urls = match (asks.elicit, self.elicit_urls.describe()) {
            (true, Some(hosts)) => format!("; elicit-url-hosts: {hosts}"),
            _ => String::new(),
        };
        format!(
            "ask: {} (per call: {}{urls})",
            asks.names().join(", "),
            limits.join(", ")
        )
    }
}

impl Parser<'_> {
    /// `elicit-url-hosts`: host patterns as `network`'s, without a scheme
    /// (a URL elicitation is https:, or http: to this machine, whatever the
    /// list says); a pattern in error is left out.
    fn elicit_url_hosts(&self, raw: Vec<Spanned<String>>) -> Vec<HostPattern> {
        let mut hosts = Vec::new();
        for written in raw {
            let at = written.span().start;
            if written.get_ref().contains("://") {
                self.report(self.error(
                    at,
                    format!(
                        "elicit-url-hosts lists hosts, without a scheme (a URL the user is sent \
                         to is always https:, or http: to this machine): write {:?}",
                        written.get_ref().split_once("://").map_or("", |(_, host)| host)
                    ),
                ));
                continue;
            }
            if let Some(pattern) = self.keep(self.pattern(&written)) {
                hosts.push(pattern);
            }
        }
        hosts
    }
}

/// `ask = [...]`: the kinds listed (an unknown one was refused when read).
fn asks(kinds: &[RawAsk]) -> Asks {
    let mut asks = Asks::default();
    for kind in kinds {
        match kind {
            RawAsk::Elicit => asks.elicit = true,
            RawAsk::Sample => asks.sample = true,
            RawAsk::Roots => asks.roots = true,
        }
    }
    asks
}
