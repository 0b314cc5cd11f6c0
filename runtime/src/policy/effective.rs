//! Hints become capabilities: the one place where a tool's declared hints
//! narrow what the policy grants it.
//!
//! [`effective`] is a pure function of the merged [`Settings`] and the
//! tool's [`Hints`]. It can only take away: nothing here widens a grant.
//! The rules (for operators: `docs/policy.md`, "Capabilities"):
//!
//! | hints | folders | network | consent |
//! | --- | --- | --- | --- |
//! | read-only | all read-only | listed hosts, GET/HEAD/OPTIONS only (if open-world) | policy's mode if also destructive, else allow |
//! | neither read-only nor destructive | read-write → create-only | listed hosts (if open-world) | allow |
//! | destructive | as the policy says | listed hosts (if open-world) | policy's `destructive` mode |
//! | not open-world | — | none, whatever the policy lists | — |
//!
//! Every narrowing is recorded with its reason, so `airlock inspect` can show why a tool gets less than the policy
//! lists.
//!
//! The sandbox then provisions the grant capability by capability
//! (`sandbox/provision.rs`, laid out as these rules are): a key of a
//! section is declared in the table of `keys.rs` (read, checked, merged,
//! shown), narrowed here unless the grant copies it, provisioned there.

use super::file::{FolderMode, Settings};
use super::grant::{Access, Grant, HttpMethods, Mount, Narrowing, NetworkGrant, Offline};
use crate::tool::Hints;

const READ_ONLY: &str = "tool is read-only";
const NOT_DESTRUCTIVE: &str = "tool is neither read-only nor destructive";
const NOT_OPEN_WORLD: &str = "tool is not open-world";

fn narrowing(what: &str, from: &str, to: &str, reason: &str) -> Narrowing {
    Narrowing {
        what: what.to_string(),
        from: from.to_string(),
        to: to.to_string(),
        reason: reason.to_string(),
    }
}

/// The grant of one call of a tool with `hints` under `settings`.
pub fn effective(settings: &Settings, hints: Hints) -> Grant {
    let mut narrowings = Vec::new();

    let mounts = settings
        .folders
        .iter()
        .map(|f| {
            // Read-only wins over destructive: a tool claiming both gets the
            // stricter folders (and, below, still needs consent).
            let (access, reason) = match f.mode {
                FolderMode::ReadOnly => (Access::ReadOnly, None),
                FolderMode::ReadWrite if hints.read_only => (Access::ReadOnly, Some(READ_ONLY)),
                FolderMode::ReadWrite if hints.destructive => (Access::ReadWrite, None),
                FolderMode::ReadWrite => (Access::CreateOnly, Some(NOT_DESTRUCTIVE)),
            };
            if let Some(reason) = reason {
                narrowings.push(narrowing(
                    &f.guest,
                    f.mode.as_str(),
                    access.as_str(),
                    reason,
                ));
            }
            Mount {
                host: f.host.clone(),
                guest: f.guest.clone(),
                access,
            }
        })
        .collect();

    let network = if settings.network.is_empty() {
        None
    } else if !hints.open_world {
        let listed: Vec<String> = settings.network.iter().map(|p| p.to_string()).collect();
        narrowings.push(narrowing(
            "network",
            &listed.join(", "),
            "none",
            NOT_OPEN_WORLD,
        ));
        None
    } else {
        let methods = if hints.read_only {
            narrowings.push(narrowing(
                "http methods",
                "any",
                "GET, HEAD, OPTIONS",
                READ_ONLY,
            ));
            HttpMethods::SafeOnly
        } else {
            HttpMethods::Any
        };
        Some(NetworkGrant {
            allow: settings.network.clone(),
            methods,
            credentials: settings.credentials.clone(),
            untraced: settings.untraced.clone(),
            trust: settings.trust.clone(),
        })
    };

    // Only destructive calls need consent; the rest have no consent rule at
    // all (not "allow"), so nothing shows one where it does not apply.
    let consent = hints.destructive.then_some(settings.destructive);

    let offline = if !hints.open_world {
        Offline::NotOpenWorld
    } else if settings.no_policy {
        Offline::NoPolicy
    } else {
        Offline::NotListed
    };
    // The rest (env, config, limits, asks, elicit-url-hosts) the grant
    // takes as the settings give it: the `copied` keys of `keys.rs`.
    Grant {
        mounts,
        network,
        offline,
        consent,
        narrowings,
        ..Grant::copied(settings)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::policy::file::Folder;
    use crate::policy::grant::Consent;
    use crate::policy::{HostPattern, Limits};

    const LISTED: [&str; 2] = ["api.example.com", "10.0.0.0/8"];

    fn settings(mode: FolderMode, network: bool, destructive: Consent) -> Settings {
        Settings {
            folders: vec![Folder {
                host: PathBuf::from("/srv/data"),
                guest: "/data".to_string(),
                mode,
            }],
            network: if network {
                LISTED
                    .iter()
                    .map(|p| p.parse::<HostPattern>().expect("pattern"))
                    .collect()
            } else {
                Vec::new()
            },
            env: vec![("API_URL".to_string(), "https://api.example.com".to_string())],
            config: vec![("region".to_string(), "eu-west".to_string())],
            limits: Limits {
                memory: 1 << 20,
                ..Limits::default()
            },
            destructive,
            // The rest as no section sets them: a new key needs no edit here.
            ..Settings::default()
        }
    }

    /// Folder access by (read-only, destructive, policy mode), written out
    /// as a table rather than derived, so the test does not repeat the code.
    const ACCESS: [(bool, bool, FolderMode, Access, Option<&str>); 8] = [
        (false, false, FolderMode::ReadOnly, Access::ReadOnly, None),
        (
            false,
            false,
            FolderMode::ReadWrite,
            Access::CreateOnly,
            Some(NOT_DESTRUCTIVE),
        ),
        (false, true, FolderMode::ReadOnly, Access::ReadOnly, None),
        (false, true, FolderMode::ReadWrite, Access::ReadWrite, None),
        (true, false, FolderMode::ReadOnly, Access::ReadOnly, None),
        (
            true,
            false,
            FolderMode::ReadWrite,
            Access::ReadOnly,
            Some(READ_ONLY),
        ),
        (true, true, FolderMode::ReadOnly, Access::ReadOnly, None),
        (
            true,
            true,
            FolderMode::ReadWrite,
            Access::ReadOnly,
            Some(READ_ONLY),
        ),
    ];

    #[test]
    fn every_hint_combination_against_every_grant() {
        let mut cases = 0;
        for hints in Hints::all_combinations() {
            for mode in [FolderMode::ReadOnly, FolderMode::ReadWrite] {
                for listed in [true, false] {
                    for policy_consent in [Consent::Deny, Consent::Allow, Consent::Confirm] {
                        let s = settings(mode, listed, policy_consent);
                        let g = effective(&s, hints);
                        let case = format!("{hints:?} {mode:?} listed={listed} {policy_consent:?}");
                        let mut expected_narrowings = Vec::new();

                        let &(_, _, _, access, reason) = ACCESS
                            .iter()
                            .find(|r| {
                                r.0 == hints.read_only && r.1 == hints.destructive && r.2 == mode
                            })
                            .expect("row for every combination");
                        assert_eq!(g.mounts.len(), 1, "{case}");
                        assert_eq!(g.mounts[0].access, access, "{case}");
                        assert_eq!(g.mounts[0].guest, "/data", "{case}");
                        assert_eq!(g.mounts[0].host, PathBuf::from("/srv/data"), "{case}");
                        if let Some(reason) = reason {
                            expected_narrowings.push((
                                "/data",
                                "read-write",
                                access.as_str(),
                                reason,
                            ));
                        }

                        match (listed, hints.open_world) {
                            (false, _) => assert_eq!(g.network, None, "{case}"),
                            (true, false) => {
                                assert_eq!(g.network, None, "{case}");
                                expected_narrowings.push((
                                    "network",
                                    "api.example.com, 10.0.0.0/8",
                                    "none",
                                    NOT_OPEN_WORLD,
                                ));
                            }
                            (true, true) => {
                                let net = g.network.as_ref().expect("network granted");
                                let allow: Vec<String> =
                                    net.allow.iter().map(|p| p.to_string()).collect();
                                assert_eq!(allow, LISTED, "{case}");
                                if hints.read_only {
                                    assert_eq!(net.methods, HttpMethods::SafeOnly, "{case}");
                                    expected_narrowings.push((
                                        "http methods",
                                        "any",
                                        "GET, HEAD, OPTIONS",
                                        READ_ONLY,
                                    ));
                                } else {
                                    assert_eq!(net.methods, HttpMethods::Any, "{case}");
                                }
                            }
                        }

                        let consent = hints.destructive.then_some(policy_consent);
                        assert_eq!(g.consent, consent, "{case}");
                        assert_eq!(g.env, s.env, "{case}");
                        assert_eq!(g.config, s.config, "{case}");
                        assert_eq!(g.limits, s.limits, "{case}");

                        let got: Vec<(&str, &str, &str, &str)> = g
                            .narrowings
                            .iter()
                            .map(|n| {
                                (
                                    n.what.as_str(),
                                    n.from.as_str(),
                                    n.to.as_str(),
                                    n.reason.as_str(),
                                )
                            })
                            .collect();
                        assert_eq!(got, expected_narrowings, "{case}");
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 16 * 2 * 2 * 3);
    }

    #[test]
    fn a_tool_declaring_nothing_is_create_only_and_offline() {
        let g = effective(
            &settings(FolderMode::ReadWrite, true, Consent::Allow),
            Hints::default(),
        );
        assert_eq!(g.mounts[0].access, Access::CreateOnly);
        assert_eq!(g.network, None);
        let shown: Vec<String> = g.narrowings.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "/data: read-write → create-only (tool is neither read-only nor destructive)",
                "network: api.example.com, 10.0.0.0/8 → none (tool is not open-world)",
            ]
        );
    }

    /// Without network the grant says why, for the refusal of a request.
    #[test]
    fn no_network_says_why() {
        let open = Hints {
            open_world: true,
            ..Hints::default()
        };
        let unlisted = settings(FolderMode::ReadOnly, false, Consent::Deny);
        assert_eq!(effective(&unlisted, open).offline, Offline::NotListed);
        assert_eq!(
            effective(&unlisted, Hints::default()).offline,
            Offline::NotOpenWorld
        );
        let no_policy = crate::policy::Policy::default().settings_for("weather", "current");
        let grant = effective(&no_policy, open);
        assert_eq!(grant.offline, Offline::NoPolicy);
        assert!(grant.offline.to_string().contains("no policy was loaded"));
    }

    #[test]
    fn read_only_and_destructive_gets_the_stricter_of_each() {
        let hints = Hints {
            read_only: true,
            destructive: true,
            idempotent: false,
            open_world: true,
        };
        let g = effective(
            &settings(FolderMode::ReadWrite, true, Consent::Confirm),
            hints,
        );
        assert_eq!(g.mounts[0].access, Access::ReadOnly);
        assert_eq!(g.consent, Some(Consent::Confirm));
        assert_eq!(g.network.map(|n| n.methods), Some(HttpMethods::SafeOnly));
        assert_eq!(
            g.narrowings[0].to_string(),
            "/data: read-write → read-only (tool is read-only)"
        );
    }

    #[test]
    fn nothing_granted_means_nothing_narrowed() {
        let all = Hints {
            read_only: true,
            destructive: true,
            idempotent: true,
            open_world: true,
        };
        for hints in [Hints::default(), all] {
            let g = effective(&Settings::default(), hints);
            assert!(g.mounts.is_empty());
            assert_eq!(g.network, None);
            assert!(g.env.is_empty());
            assert!(g.narrowings.is_empty());
            assert_eq!(g.limits, Limits::default());
        }
        assert_eq!(
            effective(&Settings::default(), all).consent,
            Some(Consent::Deny)
        );
        assert_eq!(
            effective(&Settings::default(), Hints::default()).consent,
            None
        );
    }
}
