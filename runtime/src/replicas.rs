//! What the replicas of one deployment share, in Redis (or Valkey):
//! `serve --state redis://HOST:PORT/DB`.
//!
//! This module is the store and nothing else: the connection (which
//! reconnects by itself), this replica's lease, the shared key of signed
//! request states, one-time marks, and task records as opaque JSON with a
//! `final` flag that, once set, no write may undo. What a task record holds
//! is the business of `protocol::mcp::tasks`.
//!
//! The keys, all under one prefix (`airlock:`):
//! - `replica:ID` — a replica's lease, renewed every [`HEARTBEAT`]; gone
//!   [`LEASE`] after the replica stopped renewing it;
//! - `state-key` — the HMAC key of request states, made by the first
//!   replica and kept by every one (re-seeded if Redis lost it, and
//!   adopted by every replica when another seeded it first);
//! - `used:HASH` — a request state already answered, until it expires;
//! - `task:ID` — a hash: `record` (JSON), `final` (`0`/`1`), expiring with
//!   the task; `owner:OWNER` — the task ids of an owner, scored by expiry.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// How often a replica renews its lease.
pub const HEARTBEAT: Duration = Duration::from_millis(1000);
/// How long a lease outlives its last renewal: a replica that stopped
/// renewing (killed, cut off) is taken for dead this long after.
pub const LEASE: Duration = Duration::from_millis(3000);
/// Longest wait for one Redis answer before the operation fails.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);
const PREFIX: &str = "airlock:";

/// Sets a task record unless it is final already; 1 when written.
const REPLACE_UNLESS_FINAL: &str = r"
if redis.call('HGET', KEYS[1], 'final') == '0' then
  redis.call('HSET', KEYS[1], 'record', ARGV[1], 'final', ARGV[2])
  return 1
end
return 0";

/// What went wrong with the shared state.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("--state {url:?} is not a Redis URL (redis://HOST:PORT/DB): {source}")]
    Url {
        url: String,
        source: redis::RedisError,
    },
    #[error("cannot reach the shared state at {url}: {source}; start Redis there or fix --state")]
    Connect {
        url: String,
        source: redis::RedisError,
    },
    #[error("the shared state (Redis) failed: {0}")]
    Redis(#[from] redis::RedisError),
}

/// The connection to the shared state, and this replica's identity in it.
pub struct SharedState {
    conn: ConnectionManager,
    /// This replica's id (random at start), naming its lease.
    replica: String,
    /// Since when heartbeats fail (`None` while the last one reached
    /// Redis): what [`SharedState::is_ready`] weighs.
    failing_since: Mutex<Option<Instant>>,
    /// Where it is, for messages (without a password).
    shown: String,
}

/// The request-state key as Redis holds it: 64 hex digits.
fn parse_state_key(stored: &str) -> Result<[u8; 32], StateError> {
    let mut key = [0u8; 32];
    match hex::decode(stored.trim()) {
        Ok(bytes) if bytes.len() == 32 => key.copy_from_slice(&bytes),
        // Not ours to repair silently: someone else wrote the key.
        _ => {
            return Err(StateError::Redis(redis::RedisError::from((
                redis::ErrorKind::TypeError,
                "airlock:state-key is not 64 hex digits",
            ))));
        }
    }
    Ok(key)
}

/// What a heartbeat found under `state-key`, against this replica's key.
#[derive(Debug, PartialEq)]
enum KeySeen {
    /// This replica's key (or nothing: the SET NX just wrote it).
    Ours,
    /// Another replica's: adopt it, so that all agree.
    Other([u8; 32]),
    /// Not a key: someone else wrote it wrong, theirs to fix; keep ours
    /// and stay ready.
    Malformed,
}

impl KeySeen {
    fn of(stored: Option<&str>, ours: &[u8; 32]) -> KeySeen {
        match stored.map(parse_state_key) {
            None => KeySeen::Ours,
            Some(Ok(key)) if &key == ours => KeySeen::Ours,
            Some(Ok(key)) => KeySeen::Other(key),
            Some(Err(_)) => KeySeen::Malformed,
        }
    }
}

fn key(parts: &[&str]) -> String {
    let mut key = String::from(PREFIX);
    key.push_str(&parts.join(":"));
    key
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl SharedState {
    /// Connects to `url` and checks that Redis answers.
    pub async fn connect(url: &str) -> Result<Arc<SharedState>, StateError> {
        let client = redis::Client::open(url).map_err(|source| StateError::Url {
            url: url.to_string(),
            source,
        })?;
        let info = client.get_connection_info();
        let shown = format!("{}/{}", info.addr, info.redis.db);
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(ANSWER_TIMEOUT)
            .set_response_timeout(ANSWER_TIMEOUT)
            .set_number_of_retries(2)
            .set_max_delay(1000);
        let mut conn = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(|source| StateError::Connect {
                url: shown.clone(),
                source,
            })?;
        let _: String = redis::cmd("PING")
            .query_async(&mut conn)
            .await
            .map_err(|source| StateError::Connect {
                url: shown.clone(),
                source,
            })?;
        Ok(Arc::new(SharedState {
            conn,
            replica: hex::encode(rand::random::<[u8; 8]>()),
            failing_since: Mutex::new(None),
            shown,
        }))
    }

    /// Runs `cmd` (a command or a pipeline); once more when the connection
    /// had dropped (Redis restarted): the manager reconnects for the retry.
    async fn query<Q: Query, T: redis::FromRedisValue>(&self, cmd: &Q) -> Result<T, StateError> {
        match cmd.run(self.conn.clone()).await {
            Err(err) if err.is_connection_dropped() || err.is_io_error() => {
                Ok(cmd.run(self.conn.clone()).await?)
            }
            other => Ok(other?),
        }
    }

    /// This replica's id.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Where the state is (`HOST:PORT/DB`).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Whether this replica should get traffic as far as the shared state
    /// goes: Redis answered a heartbeat within the last [`LEASE`]. A
    /// restart of Redis (a second or two) leaves every replica ready, so
    /// the calls that need no shared state go on through the balancer
    /// (a task answers meanwhile that the store is unreachable); a longer
    /// outage, or a replica cut off from Redis, takes the replica out — by
    /// then the other replicas take it for dead too.
    pub fn is_ready(&self) -> bool {
        crate::sync::lock(&self.failing_since).is_none_or(|since| since.elapsed() < LEASE)
    }

    /// Whether the last heartbeat reached Redis.
    pub fn is_reachable(&self) -> bool {
        crate::sync::lock(&self.failing_since).is_none()
    }

    /// Renews this replica's lease now, re-seeds the request-state key if
    /// Redis lost it (a restart without persistence), and answers the key
    /// Redis holds after that, as stored.
    async fn heartbeat(&self, state_key: &[u8; 32]) -> Result<Option<String>, StateError> {
        let lease = LEASE.as_millis() as u64;
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(key(&["replica", &self.replica]))
            .arg("alive")
            .arg("PX")
            .arg(lease)
            .ignore()
            .cmd("SET")
            .arg(key(&["state-key"]))
            .arg(hex::encode(state_key))
            .arg("NX")
            .ignore()
            .cmd("GET")
            .arg(key(&["state-key"]));
        let (stored,): (Option<String>,) = self.query(&pipe).await?;
        Ok(stored)
    }

    /// Keeps this replica's lease alive until the process ends (the task
    /// runs on the async runtime; its errors only flip [`is_reachable`]).
    /// When the request-state key in Redis is not `state_key` any more —
    /// Redis lost its data and another replica seeded it first — every
    /// replica calls `adopt` with the stored one, so that they agree again
    /// within a heartbeat.
    pub fn keep_lease(
        self: &Arc<Self>,
        mut state_key: [u8; 32],
        adopt: impl Fn([u8; 32]) + Send + 'static,
    ) {
        let state = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(HEARTBEAT);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut told_bad_key = false;
            loop {
                tick.tick().await;
                let ok = match state.heartbeat(&state_key).await {
                    Ok(stored) => {
                        match KeySeen::of(stored.as_deref(), &state_key) {
                            KeySeen::Other(stored) => {
                                tracing::warn!(
                                    "the request-state key in {} changed (did Redis lose its \
                                     data?): adopting it; confirmations asked before must be \
                                     asked again",
                                    state.shown
                                );
                                state_key = stored;
                                adopt(stored);
                            }
                            KeySeen::Malformed if !told_bad_key => {
                                tracing::warn!(
                                    "airlock:state-key in {} is not 64 hex digits; keeping \
                                     this replica's key",
                                    state.shown
                                );
                                told_bad_key = true;
                            }
                            KeySeen::Ours | KeySeen::Malformed => {}
                        }
                        true
                    }
                    Err(err) => {
                        if state.is_reachable() {
                            tracing::warn!("shared state unreachable: {err}");
                        }
                        false
                    }
                };
                if ok && !state.is_reachable() {
                    tracing::info!("shared state at {} reachable again", state.shown);
                }
                let mut since = crate::sync::lock(&state.failing_since);
                *since = if ok {
                    None
                } else {
                    since.or(Some(Instant::now()))
                };
            }
        });
    }

    /// Whether the replica `id` still holds its lease.
    pub async fn is_alive(&self, id: &str) -> Result<bool, StateError> {
        self.query(redis::cmd("EXISTS").arg(key(&["replica", id])))
            .await
    }

    /// The key every replica signs request states with: the one in Redis,
    /// or `ours` when there is none yet.
    pub async fn request_state_key(&self, ours: [u8; 32]) -> Result<[u8; 32], StateError> {
        let name = key(&["state-key"]);
        let _: Option<String> = self
            .query(
                redis::cmd("SET")
                    .arg(&name)
                    .arg(hex::encode(ours))
                    .arg("NX"),
            )
            .await?;
        let stored: String = self.query(redis::cmd("GET").arg(&name)).await?;
        parse_state_key(&stored)
    }

    /// Marks `what` as used until `expires_unix` (seconds); false when it
    /// was marked before, by any replica.
    pub async fn first_use(&self, what: &str, expires_unix: u64) -> Result<bool, StateError> {
        let set: Option<String> = self
            .query(
                redis::cmd("SET")
                    .arg(key(&["used", what]))
                    .arg("1")
                    .arg("NX")
                    .arg("EXAT")
                    .arg(expires_unix.max(1)),
            )
            .await?;
        Ok(set.is_some())
    }

    /// Stores a new task record for `ttl`, under its owner's index.
    pub async fn create_task(
        &self,
        id: &str,
        owner: &str,
        record: &str,
        ttl: Duration,
    ) -> Result<(), StateError> {
        let task = key(&["task", id]);
        let index = key(&["owner", owner]);
        let ttl_ms = ttl.as_millis() as u64;
        let mut pipe = redis::pipe();
        pipe.atomic()
            .hset_multiple(&task, &[("record", record), ("final", "0")])
            .ignore()
            .cmd("PEXPIRE")
            .arg(&task)
            .arg(ttl_ms)
            .ignore()
            .zadd(&index, id, now_ms() + ttl_ms)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&index)
            .arg(ttl_ms.max(LEASE.as_millis() as u64))
            .arg("GT")
            .ignore();
        self.query::<_, ()>(&pipe).await
    }

    /// A pipeline that first drops the expired ids from `owner`'s index
    /// (its first answer, a count, is to be skipped); and the index's key.
    fn unexpired(owner: &str) -> (redis::Pipeline, String) {
        let index = key(&["owner", owner]);
        let mut pipe = redis::pipe();
        pipe.cmd("ZREMRANGEBYSCORE")
            .arg(&index)
            .arg("-inf")
            .arg(now_ms());
        (pipe, index)
    }

    /// How many unexpired tasks `owner` holds, over every replica.
    pub async fn count_tasks(&self, owner: &str) -> Result<usize, StateError> {
        let (mut pipe, index) = Self::unexpired(owner);
        pipe.zcard(&index);
        let (_, count): (i64, usize) = self.query(&pipe).await?;
        Ok(count)
    }

    /// Replaces a task record unless it is final (cancelled on another
    /// replica, say); `is_final` makes it final. False when not written.
    pub async fn update_task(
        &self,
        id: &str,
        record: &str,
        is_final: bool,
    ) -> Result<bool, StateError> {
        // EVAL rather than EVALSHA: a restarted Redis has no script cache.
        let written: i64 = self
            .query(
                redis::cmd("EVAL")
                    .arg(REPLACE_UNLESS_FINAL)
                    .arg(1)
                    .arg(key(&["task", id]))
                    .arg(record)
                    .arg(if is_final { "1" } else { "0" }),
            )
            .await?;
        Ok(written == 1)
    }

    /// A task's record and whether it is final; `None` when there is no
    /// such task (never made, expired, or Redis lost it).
    pub async fn task(&self, id: &str) -> Result<Option<(String, bool)>, StateError> {
        let (record, fin): (Option<String>, Option<String>) = self
            .query(
                redis::cmd("HMGET")
                    .arg(key(&["task", id]))
                    .arg("record")
                    .arg("final"),
            )
            .await?;
        Ok(record.map(|r| (r, fin.as_deref() == Some("1"))))
    }

    /// Which of `ids` are final now (a replica asks about the tasks it
    /// runs, to stop those cancelled elsewhere).
    pub async fn finals(&self, ids: &[String]) -> Result<Vec<bool>, StateError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.hget(key(&["task", id]), "final");
        }
        let finals: Vec<Option<String>> = self.query(&pipe).await?;
        Ok(finals
            .into_iter()
            .map(|f| f.as_deref() == Some("1"))
            .collect())
    }

    /// The records of `owner`'s unexpired tasks.
    pub async fn owned_tasks(&self, owner: &str) -> Result<Vec<String>, StateError> {
        let (mut pipe, index) = Self::unexpired(owner);
        pipe.zrange(&index, 0, -1);
        let (_, ids): (i64, Vec<String>) = self.query(&pipe).await?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in &ids {
            pipe.hget(key(&["task", id]), "record");
        }
        let records: Vec<Option<String>> = self.query(&pipe).await?;
        Ok(records.into_iter().flatten().collect())
    }
}

/// A command or a pipeline, run on a connection of its own (a clone of the
/// manager's).
trait Query {
    async fn run<T: redis::FromRedisValue>(&self, conn: ConnectionManager)
    -> redis::RedisResult<T>;
}

impl Query for redis::Cmd {
    async fn run<T: redis::FromRedisValue>(
        &self,
        mut conn: ConnectionManager,
    ) -> redis::RedisResult<T> {
        self.query_async(&mut conn).await
    }
}

impl Query for redis::Pipeline {
    async fn run<T: redis::FromRedisValue>(
        &self,
        mut conn: ConnectionManager,
    ) -> redis::RedisResult<T> {
        self.query_async(&mut conn).await
    }
}

#[cfg(test)]
mod tests {
    use super::KeySeen;

    #[test]
    fn a_heartbeat_adopts_another_key_and_keeps_its_own_over_a_malformed_one() {
        let ours = [7u8; 32];
        let other = [9u8; 32];
        assert_eq!(KeySeen::of(Some(&hex::encode(ours)), &ours), KeySeen::Ours);
        assert_eq!(KeySeen::of(None, &ours), KeySeen::Ours);
        assert_eq!(
            KeySeen::of(Some(&hex::encode(other)), &ours),
            KeySeen::Other(other)
        );
        for junk in ["junk", "", &hex::encode([1u8; 31]), &"z".repeat(64)] {
            assert_eq!(
                KeySeen::of(Some(junk), &ours),
                KeySeen::Malformed,
                "{junk:?}"
            );
        }
    }
}
