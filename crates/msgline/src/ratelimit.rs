//! GCRA rate limits per organisation and caller: a global policy on every authenticated route
//! and a send policy on `POST /messages`, reported with the IETF RateLimit headers.

use std::num::NonZeroU32;

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
        }
    }

    /// Counts one request of `caller` against `policy`: the allowance left, or the whole
    /// seconds (at least 1) to wait.
    pub fn check(&self, policy: Policy, caller: &str) -> Result<Allowance, u64> {
        let (limiter, limit) = match policy {
            Policy::Global => &self.global,
            Policy::Send => &self.send,
        };
        let key = caller.to_string();
        match limiter.check_key(&key) {
            Ok(snapshot) => {
                let remaining = snapshot.remaining_burst_capacity();
                let reset = ((*limit - remaining.min(*limit)) as u64 * 60).div_ceil(*limit as u64);
                Ok(Allowance { policy, limit: *limit, remaining, reset })
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_past_the_quota_waits_and_another_caller_does_not() {
        let limits = RateLimits::new(3, 2);
        for _ in 0..3 {
            assert!(limits.check(Policy::Global, "org/a").is_ok());
        }
        let wait = limits.check(Policy::Global, "org/a").unwrap_err();
        assert!((1..=20).contains(&wait), "{wait}");
        assert!(limits.check(Policy::Global, "org/b").is_ok());
        assert!(limits.check(Policy::Send, "org/a").is_ok());
    }
}
