//! A plain component with a function that takes a resource handle
//! (`peek: func(c: borrow<counter>)`): no JSON can carry one, so airlock
//! refuses the component at load, naming the function and the parameter.

wit_bindgen::generate!({ path: "wit", world: "counters-world" });

use std::cell::Cell;

use exports::airlock_test::counters::counters::{CounterBorrow, Guest, GuestCounter};

struct Counters;

struct Counter(Cell<u32>);

impl GuestCounter for Counter {
    fn new() -> Self {
        Counter(Cell::new(0))
    }
    fn bump(&self) -> u32 {
        self.0.set(self.0.get() + 1);
        self.0.get()
    }
}

impl Guest for Counters {
    type Counter = Counter;
    fn peek(c: CounterBorrow<'_>) -> u32 {
        c.get::<Counter>().0.get()
    }
}

export!(Counters);
