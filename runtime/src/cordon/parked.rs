//! The reading of a worker's input, parked while the lane that read a
//! short call runs it.
//!
//! Handing the reading to another lane at every call costs a wake-up of
//! that lane; alone in the worker, a short call need not: its lane parks
//! the reading, runs the call and takes the reading back. Whatever would
//! wait on the parked reading moves it on first — a call that asks the
//! server something (its answer comes through the reading), and a keeper
//! that finds it parked for [`LONG`], since a call that turned out long
//! would otherwise hold every later message, its own cancellation too.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::lanes::LONG;

/// Ticks without anything parked after which the keeper sleeps until
/// something is (so an idle worker costs no wake-ups, and a busy one no
/// wake-up of the keeper per call).
const QUIET: u32 = 25;

/// A slot for one parked `T`, and its keeper.
pub(super) struct Parked<T: Send + 'static> {
    shared: Arc<Shared<T>>,
}

struct Shared<T> {
    slot: Mutex<Slot<T>>,
    keeper: Condvar,
    /// What moving a parked `T` on does.
    move_on: Box<dyn Fn(T) + Send + Sync>,
    long: Duration,
}

struct Slot<T> {
    parked: Option<(Instant, T)>,
    keeper_asleep: bool,
    closed: bool,
}

impl<T: Send + 'static> Parked<T> {
    /// An empty slot whose keeper moves on with `move_on` whatever stays
    /// parked for [`LONG`].
    pub(super) fn new(move_on: impl Fn(T) + Send + Sync + 'static) -> Self {
        Self::keeping(move_on, LONG)
    }

    fn keeping(move_on: impl Fn(T) + Send + Sync + 'static, long: Duration) -> Self {
        let shared = Arc::new(Shared {
            slot: Mutex::new(Slot {
                parked: None,
                keeper_asleep: true,
                closed: false,
            }),
            keeper: Condvar::new(),
            move_on: Box::new(move_on),
            long,
        });
        let kept = shared.clone();
        let started = std::thread::Builder::new()
            .name("airlock-cordon-keeper".into())
            .spawn(move || kept.keep());
        if let Err(err) = started {
            // Then nothing is parked: `park` hands it straight back.
            tracing::error!("cannot start the keeper of a worker's reading: {err}");
            shared.lock().closed = true;
        }
        Parked { shared }
    }

    /// Parks `item`; `Err` gives it back when there is no keeper.
    pub(super) fn park(&self, item: T) -> Result<(), T> {
        let mut slot = self.shared.lock();
        if slot.closed {
            return Err(item);
        }
        slot.parked = Some((Instant::now(), item));
        if slot.keeper_asleep {
            slot.keeper_asleep = false;
            drop(slot);
            self.shared.keeper.notify_one();
        }
        Ok(())
    }

    /// What was parked, unless it moved on meanwhile.
    pub(super) fn take_back(&self) -> Option<T> {
        self.shared.lock().parked.take().map(|(_, item)| item)
    }

    /// Moves on what is parked, now (the caller is about to wait on it).
    pub(super) fn move_on(&self) {
        let parked = self.shared.lock().parked.take();
        if let Some((_, item)) = parked {
            (self.shared.move_on)(item);
        }
    }
}

impl<T: Send + 'static> Drop for Parked<T> {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.keeper.notify_one();
    }
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, Slot<T>> {
        // Nothing runs under the lock that can panic half-way.
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The keeper's life: asleep until something is parked, then a look
    /// every `long` until [`QUIET`] looks found the slot empty.
    fn keep(&self) {
        let mut empty = 0;
        let mut slot = self.lock();
        while !slot.closed {
            if slot.keeper_asleep {
                slot = self
                    .keeper
                    .wait_while(slot, |s| s.keeper_asleep && !s.closed)
                    .unwrap_or_else(|p| p.into_inner());
                continue;
            }
            match &slot.parked {
                Some((since, _)) if since.elapsed() >= self.long => {
                    if let Some((_, item)) = slot.parked.take() {
                        drop(slot);
                        (self.move_on)(item);
                        slot = self.lock();
                    }
                    empty = 0;
                    continue;
                }
                Some(_) => empty = 0,
                None => empty += 1,
            }
            if empty >= QUIET {
                slot.keeper_asleep = true;
                empty = 0;
                continue;
            }
            slot = self
                .keeper
                .wait_timeout(slot, self.long)
                .map(|(slot, _)| slot)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn what_is_parked_comes_back_unless_it_moved_on() {
        let (tx, moved) = mpsc::channel();
        let tx = Mutex::new(tx);
        let parked = Parked::new(move |n: u32| drop(tx.lock().map(|tx| tx.send(n))));
        assert!(parked.park(1).is_ok());
        assert_eq!(parked.take_back(), Some(1));
        assert_eq!(parked.take_back(), None);
        // Moved on by whoever is about to wait on it: not there to take.
        assert!(parked.park(2).is_ok());
        parked.move_on();
        assert_eq!(moved.recv(), Ok(2));
        assert_eq!(parked.take_back(), None);
    }

    #[test]
    fn the_keeper_moves_on_what_stays_parked_too_long() {
        let (tx, moved) = mpsc::channel();
        let tx = Mutex::new(tx);
        let parked = Parked::keeping(
            move |n: u32| drop(tx.lock().map(|tx| tx.send(n))),
            Duration::from_millis(1),
        );
        // Parked again and again, after the keeper fell asleep too.
        for n in 0..3 {
            assert!(parked.park(n).is_ok());
            assert_eq!(moved.recv_timeout(Duration::from_secs(30)), Ok(n));
            assert_eq!(parked.take_back(), None);
            std::thread::sleep(Duration::from_millis(40));
        }
    }
}
