//! `[[tokens]]`: the HTTP bearer tokens the server accepts. The policy holds
//! a token's SHA-256 only, never the token.

use std::fmt;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use toml::Spanned;

use super::file::{Parser, PolicyError};

/// An HTTP bearer token the server accepts.
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    pub name: String,
    /// SHA-256 of the token; the token itself is never stored.
    pub sha256: [u8; 32],
    /// Tools this token may list and call; `None` = all.
    pub tools: Option<Vec<String>>,
}

impl Token {
    /// Whether `bearer` is this token. Compares digests in constant time so
    /// response timing says nothing about how close a guess was.
    pub fn accepts(&self, bearer: &str) -> bool {
        let digest = Sha256::digest(bearer.as_bytes());
        digest
            .iter()
            .zip(self.sha256.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }

    /// Whether this token may see and call `tool`.
    pub fn allows_tool(&self, tool: &str) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == tool))
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("name", &self.name)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawToken {
    name: Spanned<String>,
    sha256: Spanned<String>,
    tools: Option<Vec<String>>,
}

impl Parser<'_> {
    /// Checks the tokens: names unique, digests of 64 hex digits.
    pub(super) fn tokens(&self, raw: Vec<RawToken>) -> Result<Vec<Token>, PolicyError> {
        let mut tokens: Vec<Token> = Vec::new();
        for t in raw {
            if tokens.iter().any(|known| known.name == *t.name.get_ref()) {
                return Err(self.error(
                    t.name.span().start,
                    format!("token name {:?} is used twice", t.name.get_ref()),
                ));
            }
            let digest = self.sha256(&t.sha256)?;
            let mut sha256 = [0u8; 32];
            // `sha256()` checked 64 hex digits, so this cannot fail.
            hex::decode_to_slice(&digest, &mut sha256)
                .map_err(|e| self.error(t.sha256.span().start, e.to_string()))?;
            tokens.push(Token {
                name: t.name.into_inner(),
                sha256,
                tools: t.tools,
            });
        }
        Ok(tokens)
    }
}
