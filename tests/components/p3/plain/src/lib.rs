//! Plain functions (no airlock contract) in a component for WASI 0.3:
//! `pause` is an `async func` that awaits the 0.3 clock's `wait-for` (a
//! synchronous export may not block on it: the component model traps it);
//! `sum` and `first-line` are synchronous.

wit_bindgen::generate!({ path: "wit", world: "p3-plain", generate_all });

struct P3Plain;

impl Guest for P3Plain {
    fn sum(a: i32, b: i32) -> i32 {
        a.wrapping_add(b)
    }

    async fn pause(ms: u32) -> String {
        let started = wasi::clocks::monotonic_clock::now();
        wasi::clocks::monotonic_clock::wait_for(u64::from(ms) * 1_000_000).await;
        let waited = wasi::clocks::monotonic_clock::now().saturating_sub(started);
        format!("paused {} ms", waited / 1_000_000)
    }

    fn first_line(path: String) -> Result<String, String> {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        Ok(text.lines().next().unwrap_or_default().to_string())
    }
}

export!(P3Plain);
