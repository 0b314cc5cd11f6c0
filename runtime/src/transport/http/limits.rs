//! Bounds on what clients hold at once, apart from the I/O that enforces
//! them: connections and long-lived streams are counted in total and per
//! bearer token (a token holds at most a quarter of either, so one token
//! cannot take what every other client needs), and a request body gets a
//! time allowance that grows with what it delivered (a minimum rate, so a
//! client trickling bytes is cut off while a large upload at a sane pace
//! is not).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::sync::lock;

/// The share of a bound one token may hold: a quarter, at least one.
fn per_token(total: usize) -> usize {
    (total / 4).max(1)
}

/// Slots of one kind (connections, streams), counted in total and per
/// token. Without tokens in the policy there is no owner and only the
/// total applies.
pub struct Slots {
    total: usize,
    per_token: usize,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    all: usize,
    by_token: HashMap<String, usize>,
}

/// One slot taken; given back when dropped.
pub struct Slot {
    slots: Arc<Slots>,
    token: Option<String>,
}

/// Why no slot was given.
#[derive(Debug, PartialEq, Eq)]
pub enum Full {
    /// Every slot is taken.
    Total(usize),
    /// The token holds its share.
    Token(usize),
}

impl Slots {
    pub fn new(total: usize) -> Arc<Slots> {
        Arc::new(Slots {
            total: total.max(1),
            per_token: per_token(total),
            held: Mutex::default(),
        })
    }

    /// A slot for a request with `token` (its name), if one is free.
    pub fn take(self: &Arc<Self>, token: Option<&str>) -> Result<Slot, Full> {
        let mut held = lock(&self.held);
        if held.all >= self.total {
            return Err(Full::Total(self.total));
        }
        if let Some(token) = token {
            let mine = held.by_token.entry(token.to_string()).or_default();
            if *mine >= self.per_token {
                return Err(Full::Token(self.per_token));
            }
            *mine += 1;
        }
        held.all += 1;
        Ok(Slot {
            slots: self.clone(),
            token: token.map(str::to_string),
        })
    }

    /// Slots held now.
    pub fn held(&self) -> usize {
        lock(&self.held).all
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut held = lock(&self.slots.held);
        held.all = held.all.saturating_sub(1);
        if let Some(token) = &self.token
            && let Some(mine) = held.by_token.get_mut(token)
        {
            *mine = mine.saturating_sub(1);
            if *mine == 0 {
                held.by_token.remove(token);
            }
        }
    }
}

/// The slowest a request body may arrive once its first allowance is
/// spent: 64 KiB/s, so the largest default body (4 MiB) has ~74 s.
pub const BODY_MIN_RATE: u64 = 64 * 1024;

/// How long a body that has delivered `received` bytes may have taken in
/// all: `base`, plus one second per [`BODY_MIN_RATE`] bytes delivered.
pub fn body_allowance(base: Duration, received: u64) -> Duration {
    base + Duration::from_secs_f64(received as f64 / BODY_MIN_RATE as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_holds_a_quarter_and_gives_back() {
        let slots = Slots::new(8);
        let a: Vec<Slot> = (0..2).map(|_| slots.take(Some("a")).unwrap()).collect();
        assert_eq!(slots.take(Some("a")).err(), Some(Full::Token(2)));
        // Another token, and requests without a token, still get theirs.
        let b = slots.take(Some("b")).unwrap();
        let open: Vec<Slot> = (0..5).map(|_| slots.take(None).unwrap()).collect();
        assert_eq!(slots.held(), 8);
        assert_eq!(slots.take(Some("c")).err(), Some(Full::Total(8)));
        drop(a);
        assert_eq!(slots.held(), 6);
        assert!(slots.take(Some("a")).is_ok());
        drop((b, open));
        assert_eq!(slots.held(), 0);
        assert!(lock(&slots.held).by_token.is_empty());
    }

    #[test]
    fn a_tiny_bound_still_gives_each_token_one() {
        let slots = Slots::new(1);
        let one = slots.take(Some("a")).unwrap();
        assert_eq!(slots.take(Some("b")).err(), Some(Full::Total(1)));
        drop(one);
        assert!(slots.take(Some("b")).is_ok());
    }

    #[test]
    fn a_body_earns_time_by_delivering() {
        let base = Duration::from_secs(10);
        assert_eq!(body_allowance(base, 0), base);
        assert_eq!(
            body_allowance(base, BODY_MIN_RATE * 4),
            base + Duration::from_secs(4)
        );
        // One byte a second never outruns the allowance: 10 s and a bit.
        assert!(body_allowance(base, 10) < Duration::from_secs(11));
        // The default largest body at the minimum rate: 74 s.
        let max = body_allowance(base, 4 * 1024 * 1024);
        assert_eq!(max, Duration::from_secs(74));
    }
}
