//! MCP over stdio: newline-delimited JSON-RPC, one session per process.
//!
//! stdout carries protocol messages only; everything else (the server's
//! log, guest output) goes to stderr. Calls run concurrently, so a
//! `notifications/cancelled` or an elicitation reply can arrive while a call
//! runs; the other messages are handled in order. EOF on stdin ends the
//! server once in-flight calls have answered; a last line without a newline
//! still counts. Messages not tied to a request (`notifications/tools/
//! list_changed`, `notifications/tasks/status`, a task's elicitation) go
//! to stdout as well. stdout is a bounded outbox: a client that stops
//! reading gets its notifications dropped (counted) and, once answers
//! wait, the server stops reading its requests.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use super::calls::{Calls, Holds};
use super::listing;
use crate::call::Caller;
use crate::protocol::jsonrpc::{self, ErrorObject, Id};
use crate::protocol::mcp::{self, Server};
use crate::protocol::outbox::{Inbox, Outbox};

/// Longest line accepted; a longer one is answered with a parse error and
/// skipped without being held in memory.
pub const MAX_LINE: usize = 8 * 1024 * 1024;

/// Serves one MCP session on `input`/`output` until EOF or `shutdown`.
/// After either, in-flight calls get `grace` to finish, then are cancelled.
pub async fn serve<R, W>(
    server: Arc<Server>,
    input: R,
    output: W,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, rx) = Outbox::channel();
    let writer = tokio::spawn(write_all(output, rx));
    let session = server.open_session(None, Caller::Stdio);
    // stdout is always open: list_changed and task status go there too.
    session.set_standing(Some(out.clone()));
    let mut reader = BufReader::new(input);
    let calls = Calls::unlimited();
    let mut line = Vec::new();
    tokio::pin!(shutdown);
    loop {
        line.clear();
        let read = tokio::select! {
            read = read_line(&mut reader, &mut line, MAX_LINE) => read,
            () = &mut shutdown => break,
        };
        match read {
            Err(err) => {
                tracing::warn!("stdin: {err}");
                break;
            }
            Ok(Line::Eof) => break,
            Ok(Line::TooLong) => {
                let error = ErrorObject::invalid_request(&format!(
                    "a message is limited to {MAX_LINE} bytes"
                ));
                let _ = out.send(jsonrpc::error_response(&Id::null(), &error)).await;
            }
            Ok(Line::Complete) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let incoming = jsonrpc::parse(&line);
                // One client: nothing to refuse while it is read, so no
                // admission; a long request runs beside the next lines, as
                // does a list that waits for the components still loading.
                let waits = listing::waits(&incoming, &server.runtime);
                if waits || Holds::of(&incoming).runs_long() {
                    let (server, session, out) = (server.clone(), session.clone(), out.clone());
                    calls.spawn(async move {
                        if waits {
                            listing::settled(&server.runtime).await;
                        }
                        let answered = mcp::handle(&server, &session, incoming, None, &out).await;
                        if let Some(response) = answered.body {
                            let _ = out.send(response).await;
                        }
                    });
                } else if let Some(response) = mcp::handle(&server, &session, incoming, None, &out)
                    .await
                    .body
                {
                    let _ = out.send(response).await;
                }
            }
        }
    }
    // Open subscriptions/listen requests end with their final result.
    server.end_subscriptions(&session);
    // Let running calls answer, within the grace period.
    calls
        .drain(grace, || server.shut_down_session(&session))
        .await;
    // Background tasks nobody can fetch any more stop here.
    server.cancel_session(&session);
    session.set_standing(None);
    drop(out);
    drop(session);
    match writer.await {
        Ok(result) => result,
        Err(err) => Err(std::io::Error::other(err)),
    }
}

async fn write_all<W: AsyncWrite + Unpin>(mut output: W, mut rx: Inbox) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    while let Some(message) = rx.recv().await {
        bytes.clear();
        push_line(&mut bytes, &message);
        // Answers that are already waiting go out in the same write: each
        // write to stdout is a hand-off to tokio's blocking pool.
        while bytes.len() < WRITE_BATCH
            && let Ok(message) = rx.try_recv()
        {
            push_line(&mut bytes, &message);
        }
        output.write_all(&bytes).await?;
        output.flush().await?;
    }
    Ok(())
}

/// Messages waiting to be written are joined into writes of about this size.
const WRITE_BATCH: usize = 64 * 1024;

fn push_line(bytes: &mut Vec<u8>, message: &Value) {
    crate::json::write(bytes, message);
    bytes.push(b'\n');
}

/// How reading one line ended.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A line (its newline removed), or the last bytes before EOF.
    Complete,
    /// Longer than the limit; the rest of it was skipped.
    TooLong,
    Eof,
}

/// Reads up to a newline into `buf`, holding at most `max` bytes.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if buf.is_empty() {
                Line::Eof
            } else {
                Line::Complete
            });
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (&available[..at], at + 1),
            None => (available, available.len()),
        };
        if !too_long {
            if buf.len() + chunk.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let found = done > chunk.len();
        reader.consume(done);
        if found {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages waiting together are written together, each on its line.
    #[tokio::test]
    async fn waiting_messages_are_written_as_lines() {
        let (tx, rx) = Outbox::channel();
        for i in 0..3 {
            tx.send(serde_json::json!({"id": i, "text": "a\nb"}))
                .await
                .expect("send");
        }
        drop(tx);
        let mut written = Vec::new();
        write_all(&mut written, rx).await.expect("write");
        let text = String::from_utf8(written).expect("utf-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                r#"{"id":0,"text":"a\nb"}"#,
                r#"{"id":1,"text":"a\nb"}"#,
                r#"{"id":2,"text":"a\nb"}"#
            ]
        );
        assert!(text.ends_with('\n'));
    }

    #[tokio::test]
    async fn lines() {
        let data: &[u8] = b"one\r\ntwo\n\nlast-without-newline";
        let mut reader = BufReader::with_capacity(3, data);
        let mut buf = Vec::new();
        let mut seen = Vec::new();
        loop {
            buf.clear();
            match read_line(&mut reader, &mut buf, 100).await.unwrap() {
                Line::Eof => break,
                line => seen.push((line, String::from_utf8(buf.clone()).unwrap())),
            }
        }
        let texts: Vec<_> = seen.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, ["one", "two", "", "last-without-newline"]);
    }

    #[tokio::test]
    async fn long_lines_are_skipped() {
        let data = format!("{}\nok\n", "x".repeat(50));
        let mut reader = BufReader::with_capacity(8, data.as_bytes());
        let mut buf = Vec::new();
        assert_eq!(
            read_line(&mut reader, &mut buf, 10).await.unwrap(),
            Line::TooLong
        );
        buf.clear();
        assert_eq!(
            read_line(&mut reader, &mut buf, 10).await.unwrap(),
            Line::Complete
        );
        assert_eq!(buf, b"ok");
    }
}
