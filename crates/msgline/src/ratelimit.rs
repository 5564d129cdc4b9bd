//! GCRA rate limits per organisation and caller: a global policy on every authenticated route
//! and a send policy on `POST /messages`, reported with the IETF RateLimit headers. Kept in this
//! instance's memory, or with `MSGLINE_REDIS_URL` in Redis for every instance at once; when Redis
//! does not answer, each instance counts on its own until it does again (limits fail open).

use std::{
    num::NonZeroU32,
    sync::{
        Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use governor::{
    DefaultKeyedRateLimiter, Quota, RateLimiter,
    clock::{Clock, DefaultClock},
    middleware::StateInformationMiddleware,
    state::keyed::DefaultKeyedStateStore,
};

type Limiter = RateLimiter<String, DefaultKeyedStateStore<String>, DefaultClock, StateInformationMiddleware>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Global,
    Send,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Global => "global",
            Policy::Send => "send",
        }
    }
}

/// What a passed check leaves: the numbers for the `RateLimit` header.
#[derive(Debug, Clone, Copy)]
pub struct Allowance {
    pub policy: Policy,
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until the full quota is available again.
    pub reset: u64,
}

impl Allowance {
    pub fn policy_item(&self) -> String {
        format!("\"{}\";q={};w=60", self.policy.name(), self.limit)
    }

    pub fn state_item(&self) -> String {
        format!("\"{}\";r={};t={}", self.policy.name(), self.remaining, self.reset)
    }
}

pub struct RateLimits {
    global: (Limiter, u32),
    send: (Limiter, u32),
    clock: DefaultClock,
    /// With `MSGLINE_REDIS_URL`: the buckets every instance shares.
    shared: Option<Shared>,
}

fn limiter(per_minute: u32) -> Limiter {
    let per_minute = NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN);
    DefaultKeyedRateLimiter::keyed(Quota::per_minute(per_minute)).with_middleware::<StateInformationMiddleware>()
}

impl RateLimits {
    pub fn new(global_per_minute: u32, send_per_minute: u32) -> Self {
        Self {
            global: (limiter(global_per_minute), global_per_minute.max(1)),
            send: (limiter(send_per_minute), send_per_minute.max(1)),
            clock: DefaultClock::default(),
            shared: None,
        }
    }

    /// The same limits, kept in Redis at `url` for every instance that uses it. Connects in the
    /// background: until Redis answers, each instance counts in its own memory.
    pub fn shared(global_per_minute: u32, send_per_minute: u32, url: &str) -> anyhow::Result<Self> {
        let client = redis::Client::open(url).map_err(|e| anyhow::anyhow!("MSGLINE_REDIS_URL: {e}"))?;
        Ok(Self { shared: Some(Shared::new(client)), ..Self::new(global_per_minute, send_per_minute) })
    }

    /// A policy's in-memory limiter and its limit per minute.
    fn bucket(&self, policy: Policy) -> &(Limiter, u32) {
        match policy {
            Policy::Global => &self.global,
            Policy::Send => &self.send,
        }
    }

    fn limit(&self, policy: Policy) -> u32 {
        self.bucket(policy).1
    }

    /// Counts one request of `caller` against each of `policies` in turn: the allowances left,
    /// or the policy that refused and the whole seconds (at least 1) to wait. A policy passed
    /// before the one that refused keeps the request counted, in Redis as in memory.
    pub async fn check_all(&self, policies: &[Policy], caller: &str) -> Result<Vec<Allowance>, (Policy, u64)> {
        if let Some(shared) = &self.shared
            && let Some(answer) = shared.check(policies, caller, |p| self.limit(p)).await
        {
            return answer;
        }
        policies.iter().map(|policy| self.check_local(*policy, caller).map_err(|wait| (*policy, wait))).collect()
    }

    /// One policy, in this instance's memory.
    fn check_local(&self, policy: Policy, caller: &str) -> Result<Allowance, u64> {
        let (limiter, limit) = self.bucket(policy);
        let key = caller.to_string();
        match limiter.check_key(&key) {
            Ok(snapshot) => Ok(allowance(policy, *limit, snapshot.remaining_burst_capacity())),
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.clock.now());
                Err(wait.as_millis().div_ceil(1000).max(1) as u64)
            }
        }
    }

    /// Forgets callers whose buckets are full again, so memory follows active callers.
    pub fn prune(&self) {
        self.global.0.retain_recent();
        self.send.0.retain_recent();
    }
}

fn allowance(policy: Policy, limit: u32, remaining: u32) -> Allowance {
    let reset = ((limit - remaining.min(limit)) as u64 * 60).div_ceil(limit as u64);
    Allowance { policy, limit, remaining, reset }
}

/// GCRA over a minute, as the in-memory limiter counts, for each bucket in `KEYS` with its
/// limit in the matching `ARGV`, in order, on Redis's own clock (one clock for every instance).
/// A bucket holds its theoretical arrival time in microseconds and expires when it is full again.
/// Answers, per bucket passed, its remaining capacity; for the bucket that refused, -1 and the
/// microseconds to wait, and stops there.
const GCRA: &str = r"
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local period = 60000000
local answer = {}
for i, key in ipairs(KEYS) do
  local limit = tonumber(ARGV[i])
  local interval = math.floor(period / limit)
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local next_tat = tat + interval
  if next_tat - now > interval * limit then
    table.insert(answer, -1)
    table.insert(answer, next_tat - now - interval * limit)
    return answer
  end
  redis.call('SET', key, string.format('%d', next_tat), 'PX', math.ceil((next_tat - now) / 1000) + 1)
  table.insert(answer, math.floor((now + interval * limit - next_tat) / interval))
  table.insert(answer, 0)
end
return answer
";

/// How long a check waits for Redis before this instance counts on its own.
const REDIS_TIMEOUT: Duration = Duration::from_millis(250);
/// After Redis failed, how long checks count in memory before asking it again.
const REDIS_RETRY: Duration = Duration::from_secs(1);

/// The Redis side of the limits, and whether it currently answers.
struct Shared {
    client: redis::Client,
    script: redis::Script,
    connection: tokio::sync::OnceCell<redis::aio::ConnectionManager>,
    /// While set and in the future, checks skip Redis: it failed a moment ago.
    resting_until: Mutex<Option<Instant>>,
    /// Whether the last check that asked Redis failed (logged once per outage).
    degraded: AtomicBool,
}

impl Shared {
    fn new(client: redis::Client) -> Self {
        Self {
            client,
            script: redis::Script::new(GCRA),
            connection: tokio::sync::OnceCell::new(),
            resting_until: Mutex::new(None),
            degraded: AtomicBool::new(false),
        }
    }

    /// The answer from Redis, or `None` when Redis cannot give one now (the caller then counts
    /// in memory: limits fail open, sends never fail closed).
    async fn check(
        &self,
        policies: &[Policy],
        caller: &str,
        limit: impl Fn(Policy) -> u32,
    ) -> Option<Result<Vec<Allowance>, (Policy, u64)>> {
        if self.resting_until.lock().expect("rate limit lock").is_some_and(|until| Instant::now() < until) {
            return None;
        }
        let asked = tokio::time::timeout(REDIS_TIMEOUT, self.ask(policies, caller, &limit)).await;
        let answer = match asked {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => return self.failed(&error.to_string()),
            Err(_) => return self.failed("no answer in time"),
        };
        if self.degraded.swap(false, Ordering::Relaxed) {
            tracing::info!("Redis answers again: rate limits are shared across instances again");
        }
        let mut allowances = Vec::with_capacity(policies.len());
        for (policy, pair) in policies.iter().zip(answer.chunks(2)) {
            match pair {
                [-1, wait_us] => return Some(Err((*policy, (*wait_us as u64).div_ceil(1_000_000).max(1)))),
                [remaining, _] => allowances.push(allowance(*policy, limit(*policy), (*remaining).max(0) as u32)),
                _ => return self.failed("an answer of the wrong shape"),
            }
        }
        Some(Ok(allowances))
    }

    async fn ask(
        &self,
        policies: &[Policy],
        caller: &str,
        limit: &impl Fn(Policy) -> u32,
    ) -> redis::RedisResult<Vec<i64>> {
        let connection = self
            .connection
            .get_or_try_init(|| async {
                let config = redis::aio::ConnectionManagerConfig::new()
                    .set_connection_timeout(REDIS_TIMEOUT)
                    .set_response_timeout(REDIS_TIMEOUT)
                    .set_number_of_retries(1);
                redis::aio::ConnectionManager::new_with_config(self.client.clone(), config).await
            })
            .await?;
        let mut invocation = self.script.prepare_invoke();
        for policy in policies {
            invocation.key(format!("msgline:ratelimit:{}:{caller}", policy.name())).arg(limit(*policy));
        }
        invocation.invoke_async(&mut connection.clone()).await
    }

    fn failed<T>(&self, why: &str) -> Option<T> {
        *self.resting_until.lock().expect("rate limit lock") = Some(Instant::now() + REDIS_RETRY);
        if !self.degraded.swap(true, Ordering::Relaxed) {
            tracing::warn!(why, "Redis does not answer: each instance counts rate limits on its own until it does");
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_past_the_quota_waits_and_another_caller_does_not() {
        let limits = RateLimits::new(3, 2);
        for _ in 0..3 {
            assert!(limits.check_local(Policy::Global, "org/a").is_ok());
        }
        let wait = limits.check_local(Policy::Global, "org/a").unwrap_err();
        assert!((1..=20).contains(&wait), "{wait}");
        assert!(limits.check_local(Policy::Global, "org/b").is_ok());
        assert!(limits.check_local(Policy::Send, "org/a").is_ok());
    }
}
