//! What crosses between the serving process and a cordon's worker: one
//! message per frame of `tokio-util`'s length-delimited codec (a 4-byte
//! length, then the message as JSON), over the worker's stdin and stdout.
//!
//! The types here are the wire's own, converted to and from the domain's
//! in `convert`: the domain types serialise as MCP (a tool's content, the
//! asks' records), which is not what a worker hands back.

use std::io::Read;

use bytes::{Bytes, BytesMut};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

use crate::catalog::Listing;
use crate::offer::OfferRequest;
use crate::sandbox::OfferOutcome;
use crate::sandbox::{RawOutput, RunError};

/// The largest message (a tool's output is bounded far below this by its
/// `limits.output`; a frame above it is a broken peer).
const MAX_FRAME: usize = 256 << 20;

/// The serving process to a worker.
#[derive(Debug, Serialize, Deserialize)]
pub enum ToWorker {
    /// Load component `name` (read from `path`, fetched and checked by the
    /// server) from the bytes in the raw frame that follows, and list it;
    /// answered by [`FromWorker::Listed`]. A component loaded again
    /// replaces the one of its name.
    Load {
        id: u64,
        name: String,
        path: std::path::PathBuf,
    },
    /// Run `work` in a fresh instance of `component` (the version whose
    /// code has `digest`).
    Run {
        id: u64,
        component: String,
        digest: String,
        work: Work,
        /// The call's `traceparent` when the server traces it: the
        /// worker's spans of the run (and the host's `traceparent` on the
        /// guest's requests) continue it.
        #[serde(default)]
        trace: Option<String>,
    },
    /// The client's answer to request `seq` of call `id`.
    Answer {
        id: u64,
        seq: u64,
        answer: Result<Value, WireAskFailure>,
    },
    /// The answers to `wait_in_task` `seq` of call `id`.
    Waited {
        id: u64,
        seq: u64,
        answers: Option<Vec<Result<Value, WireAskFailure>>>,
    },
    /// Stop call `id` (`shutdown`: because the server is stopping).
    Cancel { id: u64, shutdown: bool },
}

/// What a call runs.
#[derive(Debug, Serialize, Deserialize)]
pub enum Work {
    /// A tool, with its checked arguments as JSON text.
    Tool { name: String, arguments: String },
    /// A read, prompt or completion.
    Offer(OfferRequest),
}

/// A worker to the serving process.
#[derive(Debug, Serialize, Deserialize)]
pub enum FromWorker {
    /// It is confined and takes components and calls.
    Ready,
    /// What loading [`ToWorker::Load`] `id` listed, or why it could not.
    Listed {
        id: u64,
        listing: Result<Listing, String>,
    },
    Log {
        id: u64,
        level: String,
        message: String,
    },
    Progress {
        id: u64,
        done: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    ResourceUpdated {
        id: u64,
        uri: String,
    },
    /// The guest asks the client; the worker waits for [`ToWorker::Answer`].
    Ask {
        id: u64,
        seq: u64,
        ask: WireAsk,
        /// How long the answer may take, in milliseconds.
        within_ms: u64,
    },
    /// Requests to wait for in a task; answered by [`ToWorker::Waited`].
    WaitInTask {
        id: u64,
        seq: u64,
        asks: Vec<WireAsk>,
        within_ms: u64,
    },
    /// Call `id` ended.
    Done {
        id: u64,
        outcome: Result<Ended, RunError>,
        reported: Reported,
    },
}

/// How a run ended that did not fail.
#[derive(Debug, Serialize, Deserialize)]
pub enum Ended {
    /// A tool's output.
    Answered(WireOutput),
    /// A read's, prompt's or completion's answer.
    Offered(WireOffered),
    /// The guest's own "no such resource".
    NotFound(String),
    Waits(Vec<WireAsk>),
}

/// What a run in a worker handed back, by kind of work.
#[derive(Debug)]
pub enum Done {
    Output(RawOutput),
    Offer(OfferOutcome),
}

impl Done {
    /// Its size as the output limit counts it.
    pub fn size(&self) -> u64 {
        match self {
            Done::Output(raw) => raw.size(),
            Done::Offer(Ok(offered)) => offered.size(),
            Done::Offer(Err(missing)) => missing.len() as u64,
        }
    }

    /// A tool's output; a worker that answered otherwise is broken.
    pub fn into_output(self) -> Result<RawOutput, RunError> {
        match self {
            Done::Output(raw) => Ok(raw),
            Done::Offer(_) => Err(RunError::Crashed(
                "the cordon's worker answered a tool call with a read's answer".into(),
            )),
        }
    }

    /// A read's, prompt's or completion's answer.
    pub fn into_offer(self) -> Result<OfferOutcome, RunError> {
        match self {
            Done::Offer(outcome) => Ok(outcome),
            Done::Output(_) => Err(RunError::Crashed(
                "the cordon's worker answered a read with a tool's output".into(),
            )),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub enum WireOffered {
    Contents(Vec<WireContents>),
    Messages {
        messages: Vec<(String, WireContent)>,
        description: Option<String>,
    },
    Completion {
        values: Vec<String>,
        has_more: bool,
        total: Option<u32>,
    },
}

#[derive(Debug, Serialize, Deserialize)]
pub struct WireContents {
    pub uri: String,
    pub mime_type: Option<String>,
    pub text: Option<String>,
    pub blob: Option<Vec<u8>>,
    pub meta: Option<serde_json::Map<String, Value>>,
}

/// What the call's teardown would have told the serving process.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Reported {
    pub guest_log: String,
    pub log_dropped: u64,
    pub credentials_used: Vec<String>,
    pub asks: Vec<WireAskRecord>,
    pub folder_refusals: Option<u64>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct WireOutput {
    pub content: Vec<WireContent>,
    pub structured: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
pub enum WireContent {
    Text(String),
    Image {
        data: Vec<u8>,
        mime_type: String,
    },
    Audio {
        data: Vec<u8>,
        mime_type: String,
    },
    EmbeddedText {
        uri: String,
        mime_type: Option<String>,
        text: String,
    },
    EmbeddedBlob {
        uri: String,
        mime_type: Option<String>,
        blob: Vec<u8>,
    },
    Link {
        uri: String,
        name: String,
        title: Option<String>,
        description: Option<String>,
        mime_type: Option<String>,
        size: Option<u64>,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireAsk {
    pub kind: String,
    pub params: Value,
    pub index: u32,
    pub key: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum WireAskFailure {
    Unavailable(String),
    Failed(String),
    NextRound,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct WireAskRecord {
    pub method: String,
    pub key: Option<String>,
    pub params: Value,
    pub outcome: String,
    pub answer: Option<Value>,
    pub refusal: Option<String>,
}

/// Writes one message as a frame (the tests' writer; the server and the
/// worker make their frames before they take their stream).
#[cfg(test)]
pub(super) fn send(out: &mut impl std::io::Write, message: &impl Serialize) -> std::io::Result<()> {
    out.write_all(&frame(message)?)?;
    out.flush()
}

/// One message as a frame, its length first as the codec reads it (4
/// bytes, big-endian): made before a writer takes the stream, so that
/// writers wait on one another only for the write.
pub fn frame(message: &impl Serialize) -> std::io::Result<Vec<u8>> {
    let mut frame = vec![0; 4];
    serde_json::to_writer(&mut frame, message).map_err(std::io::Error::other)?;
    let length = u32::try_from(frame.len() - 4)
        .ok()
        .filter(|&n| n as usize <= MAX_FRAME)
        .ok_or_else(|| std::io::Error::other("the message is over the frame limit"))?;
    frame[..4].copy_from_slice(&length.to_be_bytes());
    Ok(frame)
}

/// Bytes as a raw frame (a component's, after its `Load`).
pub fn raw_frame(bytes: &[u8]) -> std::io::Result<BytesMut> {
    let mut frame = BytesMut::with_capacity(bytes.len() + 4);
    codec()
        .encode(Bytes::copy_from_slice(bytes), &mut frame)
        .map_err(std::io::Error::other)?;
    Ok(frame)
}

/// Reads frames from a stream, one message at a time: a blocking one
/// (the worker's stdin) or an async one (a worker's stdout, read by the
/// server's runtime).
pub struct Frames<R> {
    from: R,
    codec: LengthDelimitedCodec,
    buffer: BytesMut,
    /// What one blocking read takes from the stream (zeroed once, not per
    /// read; an async read fills the buffer itself).
    chunk: Box<[u8]>,
}

impl<R> Frames<R> {
    pub fn new(from: R) -> Self {
        Frames {
            from,
            codec: codec(),
            buffer: BytesMut::with_capacity(64 << 10),
            chunk: Box::default(),
        }
    }

    /// A whole frame already read, if there is one.
    fn buffered(&mut self) -> std::io::Result<Option<BytesMut>> {
        self.codec.decode(&mut self.buffer)
    }

    /// What the stream's end means: the end of the messages if it came
    /// between frames, else a cut.
    fn ended(&self) -> std::io::Result<Option<BytesMut>> {
        match self.buffer.is_empty() {
            true => Ok(None),
            false => Err(std::io::ErrorKind::UnexpectedEof.into()),
        }
    }
}

impl<R: Read> Frames<R> {
    /// The next message; `None` when the stream ended between frames.
    pub fn read<T: serde::de::DeserializeOwned>(&mut self) -> std::io::Result<Option<T>> {
        self.read_raw()?.map(|frame| parse(&frame)).transpose()
    }

    /// The next frame's bytes; `None` when the stream ended between frames.
    pub fn read_raw(&mut self) -> std::io::Result<Option<BytesMut>> {
        if self.chunk.is_empty() {
            self.chunk = vec![0; 64 << 10].into_boxed_slice();
        }
        loop {
            if let Some(frame) = self.buffered()? {
                return Ok(Some(frame));
            }
            let read = self.from.read(&mut self.chunk)?;
            if read == 0 {
                return self.ended();
            }
            self.buffer.extend_from_slice(&self.chunk[..read]);
        }
    }
}

impl<R: std::os::fd::AsFd> Frames<R> {
    /// Whether more has come than was read: bytes in the buffer or in the
    /// stream (a pipe's count; if it cannot be had, it is taken as more).
    pub fn has_more(&self) -> bool {
        !self.buffer.is_empty() || rustix::io::ioctl_fionread(&self.from).map_or(true, |n| n > 0)
    }
}

impl<R: AsyncRead + Unpin> Frames<R> {
    /// The next message, waiting without a thread; `None` when the stream
    /// ended between frames.
    pub async fn next<T: serde::de::DeserializeOwned>(&mut self) -> std::io::Result<Option<T>> {
        loop {
            if let Some(frame) = self.buffered()? {
                return parse(&frame).map(Some);
            }
            self.buffer.reserve(64 << 10);
            if self.from.read_buf(&mut self.buffer).await? == 0 {
                return self.ended().map(|_| None);
            }
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(frame: &[u8]) -> std::io::Result<T> {
    serde_json::from_slice(frame).map_err(std::io::Error::other)
}

fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .max_frame_length(MAX_FRAME)
        .new_codec()
}

/// A call of tool `t` of component `c`, numbered `id` (for tests).
#[cfg(test)]
pub(super) fn test_run(id: u64) -> ToWorker {
    ToWorker::Run {
        id,
        component: "c".into(),
        digest: "d".into(),
        work: Work::Tool {
            name: "t".into(),
            arguments: "{}".into(),
        },
        trace: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_cross_in_frames_and_end_cleanly() {
        let mut pipe = Vec::new();
        let run = test_run(7);
        send(&mut pipe, &run).expect("send");
        send(
            &mut pipe,
            &ToWorker::Cancel {
                id: 7,
                shutdown: false,
            },
        )
        .expect("send");
        let mut frames = Frames::new(pipe.as_slice());
        assert!(matches!(
            frames.read::<ToWorker>().expect("read"),
            Some(ToWorker::Run { id: 7, .. })
        ));
        assert!(matches!(
            frames.read::<ToWorker>().expect("read"),
            Some(ToWorker::Cancel { id: 7, .. })
        ));
        assert!(frames.read::<ToWorker>().expect("end").is_none());
        // A stream cut inside a frame is an error, not an end.
        let mut cut = Vec::new();
        send(&mut cut, &run).expect("send");
        cut.truncate(cut.len() - 3);
        assert!(Frames::new(cut.as_slice()).read::<ToWorker>().is_err());
    }

    #[tokio::test]
    async fn the_server_reads_a_worker_s_frames_as_they_come_without_a_thread() {
        let mut stream = Vec::new();
        send(&mut stream, &FromWorker::Ready).expect("send");
        send(
            &mut stream,
            &FromWorker::ResourceUpdated {
                id: 3,
                uri: "mem://a".into(),
            },
        )
        .expect("send");
        let mut frames = Frames::new(stream.as_slice());
        assert!(matches!(
            frames.next::<FromWorker>().await.expect("read"),
            Some(FromWorker::Ready)
        ));
        assert!(matches!(
            frames.next::<FromWorker>().await.expect("read"),
            Some(FromWorker::ResourceUpdated { id: 3, .. })
        ));
        assert!(frames.next::<FromWorker>().await.expect("end").is_none());
        // Cut inside a frame, or in its length: an error, not an end.
        for keep in [stream.len() - 2, 2] {
            let cut = &stream[..keep];
            let mut frames = Frames::new(cut);
            let mut outcome = frames.next::<FromWorker>().await;
            while let Ok(Some(_)) = outcome {
                outcome = frames.next::<FromWorker>().await;
            }
            assert!(outcome.is_err(), "a stream cut at {keep} read as an end");
        }
    }
}
