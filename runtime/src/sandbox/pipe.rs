//! Guest stdout/stderr: captured into memory up to a cap, the rest dropped.
//!
//! A guest that writes past the cap must not fail (Rust's `println!` panics
//! when a write fails), so the stream keeps accepting bytes and only counts
//! what it drops. Nothing ever reaches the runtime's own stdout.

use std::sync::{Arc, Mutex};

use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    dropped: u64,
}

/// A capped, shared capture buffer; stdout and stderr of one call share one.
#[derive(Clone)]
pub struct CapturedOutput {
    inner: Arc<Mutex<Captured>>,
    cap: usize,
}

impl CapturedOutput {
    pub fn new(cap: u64) -> Self {
        CapturedOutput {
            inner: Arc::default(),
            cap: usize::try_from(cap).unwrap_or(usize::MAX),
        }
    }

    fn push(&self, data: &[u8]) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let room = self.cap.saturating_sub(inner.bytes.len());
        let kept = room.min(data.len());
        inner.bytes.extend_from_slice(&data[..kept]);
        inner.dropped += (data.len() - kept) as u64;
    }

    /// The text kept so far (lossy UTF-8) and the number of bytes dropped.
    pub fn take(&self) -> (String, u64) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let text = String::from_utf8_lossy(&inner.bytes).into_owned();
        let dropped = inner.dropped;
        inner.bytes.clear();
        inner.dropped = 0;
        (text, dropped)
    }

    /// Whether the captured text contains `needle` (used to recognise a
    /// guest panic message without copying the buffer).
    pub fn find_line(&self, needle: &str) -> Option<String> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let text = String::from_utf8_lossy(&inner.bytes);
        let at = text.find(needle)?;
        Some(text[at..].to_string())
    }
}

impl IsTerminal for CapturedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturedOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[async_trait::async_trait]
impl Pollable for CapturedOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for CapturedOutput {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Always ready: bytes past the cap are counted and dropped.
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for CapturedOutput {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.push(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}
