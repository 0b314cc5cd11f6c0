//! Access tokens verified already, remembered until they expire (and at
//! most [`KEEP_FOR`]): an agent sends the same token with every call, and
//! checking its signature each time would cost more than the call (an RS256
//! check is ~20 µs). Looked up by the token's SHA-256; at most [`CAPACITY`]
//! tokens, the expired ones dropped first and all of them when it is still
//! full. Only admitted tokens are remembered: a refused one is checked
//! again each time it comes.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::policy::Token;
use crate::sync::lock;

/// The longest a token is remembered, whatever its `exp`.
pub const KEEP_FOR: Duration = Duration::from_secs(300);
/// The most tokens remembered at once.
pub const CAPACITY: usize = 4096;

#[derive(Default)]
pub struct Remembered {
    tokens: Mutex<HashMap<[u8; 32], (Token, Instant)>>,
}

impl Remembered {
    /// The token `bearer` was admitted as, if it was and has not expired.
    pub fn get(&self, bearer: &str) -> Option<Token> {
        let key: [u8; 32] = Sha256::digest(bearer.as_bytes()).into();
        let tokens = lock(&self.tokens);
        let (token, until) = tokens.get(&key)?;
        (Instant::now() < *until).then(|| token.clone())
    }

    /// Remembers that `bearer` is `token` until `exp` (Unix seconds).
    pub fn keep(&self, bearer: &str, token: &Token, exp: u64) {
        let now_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let left = Duration::from_secs(exp.saturating_sub(now_unix)).min(KEEP_FOR);
        if left.is_zero() {
            return;
        }
        let key: [u8; 32] = Sha256::digest(bearer.as_bytes()).into();
        let now = Instant::now();
        let mut tokens = lock(&self.tokens);
        if tokens.len() >= CAPACITY {
            tokens.retain(|_, (_, until)| *until > now);
            if tokens.len() >= CAPACITY {
                tokens.clear();
            }
        }
        tokens.insert(key, (token.clone(), now + left));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Identity;

    fn token(subject: &str) -> Token {
        let identity = Identity {
            issuer: "https://idp".into(),
            subject: subject.into(),
            client_id: None,
        };
        Token::issued(identity, None, false)
    }

    fn unix_now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_secs()
    }

    #[test]
    fn a_token_is_remembered_until_it_expires_and_never_past_it() {
        let remembered = Remembered::default();
        remembered.keep("a.b.c", &token("alice"), unix_now() + 60);
        assert_eq!(remembered.get("a.b.c"), Some(token("alice")));
        assert_eq!(remembered.get("a.b.d"), None);
        // Already expired: not kept.
        remembered.keep("x.y.z", &token("bob"), unix_now().saturating_sub(1));
        assert_eq!(remembered.get("x.y.z"), None);
    }

    #[test]
    fn a_full_memory_forgets_rather_than_grows() {
        let remembered = Remembered::default();
        let exp = unix_now() + 60;
        for n in 0..=CAPACITY {
            remembered.keep(&format!("token-{n}"), &token("alice"), exp);
        }
        assert!(lock(&remembered.tokens).len() <= CAPACITY);
        assert_eq!(
            remembered.get(&format!("token-{CAPACITY}")),
            Some(token("alice"))
        );
    }
}
