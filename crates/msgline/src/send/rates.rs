//! The send rate policy (`MSGLINE_SEND_RATE_LIMIT_PER_MINUTE`): every text a caller sends
//! through `POST /messages`' path — the API, the console's compose box, a hosted agent's reply or
//! `messaging_send` tool — is counted here, once, whichever edge it came from. The global policy
//! stays with each edge, which counts its requests (the API's and the console's middleware, the
//! agent runner per tool call).

use crate::{
    caller::Principal,
    error::{ApiError, ApiResult},
    ratelimit::{Allowance, Policy},
    send::Sender,
};

/// Counts one send against the caller's send policy: what it leaves (the API shows it in the
/// `RateLimit` headers), or 429 `rate_limited` with the seconds to wait.
pub async fn charge_send(state: &Sender, caller: &Principal) -> ApiResult<Allowance> {
    match state.limits.check_all(&[Policy::Send], &caller.caller()).await {
        Ok(allowances) => allowances
            .into_iter()
            .next()
            .ok_or_else(|| ApiError::internal(anyhow::anyhow!("no allowance for the send policy"))),
        Err((policy, retry_after)) => {
            crate::metrics::rate_limited(policy.name());
            Err(ApiError::rate_limited(retry_after))
        }
    }
}
