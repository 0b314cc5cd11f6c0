//! Who asked for a call: what the audit log records, whatever the door the
//! call came through.

use std::fmt;
use std::net::SocketAddr;

use crate::policy::Identity;

/// The caller of one call. Every call has one: a bearer token's name when
/// the client authenticated, else what the transport knows of the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A client presenting this bearer token (by its name in the policy).
    Token(String),
    /// A client presenting an access token of an `[oauth]` issuer: who it
    /// speaks for, and the token's name (`SUBJECT@ISSUER`).
    Issued { name: String, identity: Identity },
    /// An MCP session (2025-11-25 and older) opened without a token, by its
    /// number in this process, from `peer` over HTTP.
    Session { key: u64, peer: Option<SocketAddr> },
    /// The client at the other end of stdin/stdout.
    Stdio,
    /// An HTTP client without a token or session (revision 2026-07-28,
    /// `/rpc`), by its address.
    Peer(SocketAddr),
    /// `airlock call` on the command line.
    CommandLine,
}

impl Caller {
    /// The kind of caller, as the audit log's `caller_kind` spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            Caller::Token(_) => "token",
            Caller::Issued { .. } => "oauth",
            Caller::Session { .. } => "session",
            Caller::Stdio => "stdio",
            Caller::Peer(_) => "http",
            Caller::CommandLine => "cli",
        }
    }

    /// The caller presenting `token`, when there is one; else `otherwise`
    /// (what the transport knows of the client).
    pub fn of(token: Option<&crate::policy::Token>, otherwise: Caller) -> Caller {
        match token {
            Some(token) => match token.identity() {
                Some(identity) => Caller::Issued {
                    name: token.name.clone(),
                    identity: identity.clone(),
                },
                None => Caller::Token(token.name.clone()),
            },
            None => otherwise,
        }
    }

    /// The token's name, when the caller presented one (a `[[tokens]]`
    /// entry's, or an access token's `SUBJECT@ISSUER`).
    pub fn token(&self) -> Option<&str> {
        match self {
            Caller::Token(name) | Caller::Issued { name, .. } => Some(name),
            _ => None,
        }
    }

    /// Who an access token speaks for, when the caller presented one.
    pub fn identity(&self) -> Option<&Identity> {
        match self {
            Caller::Issued { identity, .. } => Some(identity),
            _ => None,
        }
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Caller::Token(name) => f.write_str(name),
            Caller::Issued { identity, .. } => {
                write!(f, "{}@{}", identity.subject, identity.issuer)?;
                match &identity.client_id {
                    Some(client) if *client != identity.subject => {
                        write!(f, " (client {client})")
                    }
                    _ => Ok(()),
                }
            }
            Caller::Session { key, peer: None } => write!(f, "session {key}"),
            Caller::Session {
                key,
                peer: Some(peer),
            } => write!(f, "session {key} from {peer}"),
            Caller::Stdio => f.write_str("stdio client"),
            Caller::Peer(peer) => write!(f, "{peer}"),
            Caller::CommandLine => f.write_str("airlock call"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_caller_has_a_name_and_a_kind() {
        let peer: SocketAddr = "127.0.0.1:4000".parse().expect("addr");
        for (caller, name, kind) in [
            (Caller::Token("agent-1".into()), "agent-1", "token"),
            (
                Caller::Session {
                    key: 3,
                    peer: Some(peer),
                },
                "session 3 from 127.0.0.1:4000",
                "session",
            ),
            (
                Caller::Session { key: 3, peer: None },
                "session 3",
                "session",
            ),
            (Caller::Stdio, "stdio client", "stdio"),
            (Caller::Peer(peer), "127.0.0.1:4000", "http"),
            (Caller::CommandLine, "airlock call", "cli"),
        ] {
            assert_eq!(caller.to_string(), name);
            assert_eq!(caller.kind(), kind);
        }
        assert_eq!(Caller::Token("t".into()).token(), Some("t"));
        let identity = Identity {
            issuer: "https://idp.example.com".into(),
            subject: "alice".into(),
            client_id: Some("agent-7".into()),
        };
        let token = crate::policy::Token::issued(identity.clone(), None, false);
        let issued = Caller::of(Some(&token), Caller::Stdio);
        assert_eq!(
            issued.to_string(),
            "alice@https://idp.example.com (client agent-7)"
        );
        assert_eq!(issued.kind(), "oauth");
        assert_eq!(issued.token(), Some("alice@https://idp.example.com"));
        assert_eq!(issued.identity(), Some(&identity));
        assert_eq!(Caller::Stdio.token(), None);
    }
}
