//! The signals `airlock serve` stops on: SIGINT or SIGTERM begins the
//! drain, a second one stops the running calls at once.

use std::sync::Arc;
use std::time::Duration;

use crate::Runtime;

/// Resolves on SIGINT or SIGTERM, saying what shutting down waits for; a
/// second signal then stops the running calls at once instead of after
/// the grace period.
pub(super) fn shutdown_signal(
    runtime: Arc<Runtime>,
    grace: Duration,
) -> impl std::future::Future<Output = ()> {
    let mut signals = Signals::new();
    async move {
        signals.next().await;
        let running = runtime.running().count();
        if running == 0 {
            eprintln!("airlock: shutting down");
            return;
        }
        eprintln!(
            "airlock: shutting down; {running} running call(s) get {}s to finish (--grace), \
             then are stopped; Ctrl-C again stops them now",
            grace.as_secs()
        );
        tokio::spawn(async move {
            signals.next().await;
            eprintln!("airlock: stopping the running calls now");
            runtime.running().shut_down_all();
        });
    }
}

/// SIGINT and SIGTERM, registered when made, not when first awaited: a
/// SIGTERM that arrives right after "listening" is printed must stop the
/// server, not kill it.
struct Signals {
    #[cfg(unix)]
    watched: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            match (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) {
                (Ok(term), Ok(int)) => Signals {
                    watched: Some((term, int)),
                },
                (term, int) => {
                    if let Some(err) = term.err().or(int.err()) {
                        tracing::warn!("cannot watch SIGTERM/SIGINT: {err}");
                    }
                    Signals { watched: None }
                }
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// The next SIGINT or SIGTERM (Ctrl-C where they cannot be watched).
    async fn next(&mut self) {
        #[cfg(unix)]
        if let Some((term, int)) = &mut self.watched {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}
