//! Staff sessions: sign-in (throttled, saying nothing of whether an email exists), the one-time
//! link where a new member sets a password, sign-out, and the check every signed-in page passes.
//!
//! The session cookie holds a random token; the server keeps only its SHA-256, and reads the
//! session on every request, so a sign-out, a removal or a new password ends it on every
//! instance at once. The cookie is HttpOnly and SameSite=Lax. Over plain http it is
//! `msgline_session` on `/console`; when `MSGLINE_PUBLIC_URL` is https it is
//! `__Host-msgline_session` on `/`, Secure, which no page of another origin can set. A request
//! that carries two session cookies (one planted on a deeper path by a page on another port of
//! the same host) is refused, and a sign-in expires the cookie on the console's deeper paths. A
//! session ends after 12 idle hours and at 7 days at the latest.
//!
//! State changes need the session's CSRF token (a form field derived from the session token) and
//! a same-origin request: a browser's `Sec-Fetch-Site: cross-site` or an `Origin` of another
//! scheme, host or port is refused before anything is read.

use axum::{
    Form,
    extract::{ConnectInfo, FromRequestParts, Query, Request, State},
    http::{HeaderMap, HeaderValue, StatusCode, header, request::Parts},
    middleware::Next,
    response::{IntoResponse, Redirect, Response},
};
use hmac::{Hmac, Mac};
use minijinja::context;
use serde::Deserialize;
use sha2::Sha256;

use super::pages::{notice, render};
use crate::{
    caller::Principal,
    clock,
    db::{self, staff::Staff},
    domain::{
        apikey::hash_secret,
        staff::{check_password, decoy_hash, hash_password, parse_email, verify_password},
    },
    ratelimit::Policy,
    services::Services,
    web::listener::ClientAddr,
};

/// A session ends after this long without a request.
pub const IDLE_MS: i64 = 12 * 3_600_000;
/// A session ends this long after sign-in, however busy.
pub const LIFETIME_MS: i64 = 7 * 24 * 3_600_000;
/// A sign-in link works this long.
pub const LINK_MS: i64 = 24 * 3_600_000;
/// A session's last use is written at most this often (what the idle limit counts from).
const TOUCH_MS: i64 = 60_000;

/// Failed sign-ins are counted over this window...
const FAILURE_WINDOW_MS: i64 = 15 * 60_000;
/// ... and this many for one email, or this many from one address, make the next wait.
const FAILURES_PER_EMAIL: i64 = 5;
const FAILURES_PER_ADDRESS: i64 = 20;

const COOKIE: &str = "msgline_session";
/// The cookie's name over https.
const HOST_COOKIE: &str = "__Host-msgline_session";

/// The console's first path segments below `/console`: a sign-in expires the session cookie on
/// each, where another page of the same host may have planted one.
const SECTIONS: [&str; 11] = [
    "conversations",
    "attachments",
    "contacts",
    "opt-outs",
    "keys",
    "groups",
    "agents",
    "webhooks",
    "settings",
    "staff",
    "sign-out",
];

/// The session cookie as this server sets it: its name, path and whether it is Secure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CookieSpec {
    name: &'static str,
    path: &'static str,
    secure: bool,
}

impl CookieSpec {
    fn of(state: &Services) -> Self {
        Self::for_https(https(state))
    }

    fn for_https(https: bool) -> Self {
        if https {
            CookieSpec { name: HOST_COOKIE, path: "/", secure: true }
        } else {
            CookieSpec { name: COOKIE, path: "/console", secure: false }
        }
    }

    fn header(&self, token: &str, path: &str, max_age_s: i64) -> HeaderValue {
        let secure = if self.secure { "; Secure" } else { "" };
        let value = format!("{}={token}; Path={path}; HttpOnly; SameSite=Lax; Max-Age={max_age_s}{secure}", self.name);
        HeaderValue::from_str(&value).expect("a cookie of token characters")
    }
}

/// Whether the console is reached over https (`MSGLINE_PUBLIC_URL`).
fn https(state: &Services) -> bool {
    state.sender.config.public_url.as_deref().is_some_and(|url| url.starts_with("https://"))
}

/// A request that carries more than one session cookie.
#[derive(Debug, PartialEq, Eq)]
struct TwoSessions;

/// Password hashes computed at once, at most. Each takes Argon2id's 19 MiB while it runs, so a
/// burst of sign-ins costs at most this many times that; the others wait their turn.
const HASHING_AT_ONCE: usize = 2;

/// Runs a password hash (or check) on a blocking thread, at most [`HASHING_AT_ONCE`] at a time.
async fn hashing<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    static PERMITS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(HASHING_AT_ONCE);
    let _permit = PERMITS.acquire().await.ok()?;
    tokio::task::spawn_blocking(work).await.ok()
}

/// The signed-in staff member of a console request, as the pages use them.
#[derive(Clone)]
pub struct SignedIn {
    pub staff: Staff,
    /// The caller the console acts as, with the role's scopes.
    pub principal: Principal,
    /// The token every form of this session carries.
    pub csrf: String,
}

impl<S: Send + Sync> FromRequestParts<S> for SignedIn {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<SignedIn>().cloned().ok_or_else(|| Redirect::to("/console/sign-in").into_response())
    }
}

/// The session token of a request's cookie named `name`; two such cookies are refused, as the
/// browser does not say which path set which.
fn cookie_token(headers: &HeaderMap, name: &str) -> Result<Option<String>, TwoSessions> {
    let mut found = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(cookie, _)| *cookie == name)
        .map(|(_, value)| value);
    let first = found.next();
    if found.next().is_some() {
        return Err(TwoSessions);
    }
    Ok(first.map(str::to_string).filter(|token| token.starts_with("mls_") && token.len() < 100))
}

/// The CSRF token of a session: an HMAC of a fixed label under the session's own token, so it
/// needs no storage and changes with every session.
fn csrf_token(session_token: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(session_token.as_bytes()).expect("any key length");
    mac.update(b"msgline console csrf");
    crate::ids::hex(&mac.finalize().into_bytes())
}

/// Whether a request comes from a page of this console: a cross-site fetch, or an `Origin`
/// naming another scheme, host or port, is not. The console's scheme is https when
/// `MSGLINE_PUBLIC_URL` is, else http.
fn same_origin(headers: &HeaderMap, https: bool) -> bool {
    if headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) == Some("cross-site") {
        return false;
    }
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else { return true };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let scheme = if https { "https" } else { "http" };
    origin.split_once("://").is_some_and(|(sent, rest)| sent.eq_ignore_ascii_case(scheme) && rest == host)
}

fn cookie(state: &Services, token: &str, max_age_s: i64) -> HeaderValue {
    let spec = CookieSpec::of(state);
    spec.header(token, spec.path, max_age_s)
}

/// Expiries of the session cookie on each path in `paths` other than its own (over http only:
/// a `__Host-` cookie has no other path).
fn expiries<'a>(state: &Services, paths: impl IntoIterator<Item = &'a str>) -> Vec<HeaderValue> {
    let spec = CookieSpec::of(state);
    if spec.secure {
        return Vec::new();
    }
    paths.into_iter().filter(|path| *path != spec.path).map(|path| spec.header("", path, 0)).collect()
}

/// The refusal of a request with two session cookies: every cookie of the name on the request's
/// path and above is expired, so that signing in again starts clean.
fn two_sessions(state: &Services, path: &str) -> Response {
    let mut prefixes: Vec<&str> = path.match_indices('/').skip(1).map(|(at, _)| &path[..at]).collect();
    prefixes.push(path.trim_end_matches('/'));
    let mut response = notice(
        StatusCode::BAD_REQUEST,
        "Two sessions",
        "This browser sent two console sessions, one of which a page of another site may have set. \
         Both are ended here: sign in again.",
    );
    let headers = response.headers_mut();
    headers.append(header::SET_COOKIE, cookie(state, "", 0));
    for expiry in expiries(state, prefixes) {
        headers.append(header::SET_COOKIE, expiry);
    }
    response
}

/// Every signed-in page: a live session, else the sign-in page; a state change also needs the
/// session's CSRF token (checked by the handler's form) and a same-origin request; the request
/// counts against the staff member's rate limit.
pub async fn require(State(state): State<Services>, mut req: Request, next: Next) -> Response {
    // First, so that a cross-site post is refused as such (its cookie stays home: SameSite=Lax).
    if req.method() != axum::http::Method::GET && !same_origin(req.headers(), https(&state)) {
        return notice(StatusCode::FORBIDDEN, "Refused", "This request did not come from a page of this console.");
    }
    let token = match cookie_token(req.headers(), CookieSpec::of(&state).name) {
        Ok(Some(token)) => token,
        Ok(None) => return Redirect::to("/console/sign-in").into_response(),
        Err(TwoSessions) => return two_sessions(&state, req.uri().path()),
    };
    let now = clock::now_ms();
    let session = match db::staff::session(&state.sender.db, &hash_secret(&token), now, IDLE_MS).await {
        Ok(Some(session)) => session,
        Ok(None) => return Redirect::to("/console/sign-in").into_response(),
        Err(error) => {
            tracing::error!(error = %error, "a console session could not be read");
            return notice(StatusCode::SERVICE_UNAVAILABLE, "Unavailable", "The console cannot reach its database.");
        }
    };
    let principal = Principal::staff(&session.staff.org_id, &session.staff.id, session.staff.role.scopes());
    if let Err((_, retry_after)) = state.limits.check_all(&[Policy::Global], &principal.caller()).await {
        return notice(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many requests",
            &format!("Wait {retry_after} seconds and try again."),
        );
    }
    if now - session.last_seen_at > TOUCH_MS
        && let Err(error) = db::staff::touch_session(&state.sender.db, &session.id, now).await
    {
        tracing::warn!(error = %error, "a console session's last use could not be written");
    }
    req.extensions_mut().insert(SignedIn { staff: session.staff, principal, csrf: csrf_token(&token) });
    next.run(req).await
}

/// A form's CSRF field, checked against the session's.
#[derive(Deserialize)]
pub struct CsrfForm {
    pub csrf: String,
}

/// Whether a form carries its session's CSRF token.
pub fn csrf_ok(signed_in: &SignedIn, sent: &str) -> bool {
    let expected = signed_in.csrf.as_bytes();
    expected.len() == sent.len() && expected.iter().zip(sent.as_bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// The refusal of a form without its session's CSRF token.
pub fn csrf_refused() -> Response {
    notice(
        StatusCode::FORBIDDEN,
        "Refused",
        "This form has expired or did not come from this console. Reload the page.",
    )
}

/// `GET /console/sign-in`.
pub async fn sign_in_page() -> Response {
    render(StatusCode::OK, "sign_in.html", context! {})
}

#[derive(Deserialize)]
pub struct SignInForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
}

/// `POST /console/sign-in`. A wrong password, an unknown email and an account without a
/// password all answer the same, in about the same time.
pub async fn sign_in(
    State(state): State<Services>,
    ConnectInfo(ClientAddr(address)): ConnectInfo<ClientAddr>,
    headers: HeaderMap,
    Form(form): Form<SignInForm>,
) -> Response {
    if !same_origin(&headers, https(&state)) {
        return notice(StatusCode::FORBIDDEN, "Refused", "This request did not come from a page of this console.");
    }
    let now = clock::now_ms();
    let email = parse_email(&form.email).unwrap_or_else(|_| form.email.trim().to_lowercase());
    let subjects = [format!("email:{email}"), format!("address:{}", address.ip())];
    match throttled(&state, &subjects, now).await {
        Ok(Some(wait_s)) => {
            let minutes = (wait_s + 59) / 60;
            return render(
                StatusCode::TOO_MANY_REQUESTS,
                "sign_in.html",
                context! { email, error => format!("Too many failed sign-ins. Try again in {minutes} minutes.") },
            );
        }
        Ok(None) => {}
        Err(error) => return unavailable(error),
    }
    let account = match db::staff::for_sign_in(&state.sender.db, &email).await {
        Ok(account) => account,
        Err(error) => return unavailable(error),
    };
    let stored = account.as_ref().and_then(|(_, hash)| hash.clone());
    let password = form.password;
    let stored_or_decoy = stored.clone().unwrap_or_else(|| decoy_hash().to_string());
    let matches = hashing(move || verify_password(&password, &stored_or_decoy)).await;
    let staff = match (account, stored.is_some(), matches) {
        (Some((staff, _)), true, Some(true)) => staff,
        _ => {
            if let Err(error) = db::staff::record_failure(&state.sender.db, &subjects, now).await {
                return unavailable(error);
            }
            return render(
                StatusCode::UNAUTHORIZED,
                "sign_in.html",
                context! { email, error => "The email or the password is not right." },
            );
        }
    };
    start(&state, &staff, now).await
}

/// How long a sign-in must wait, if one of its subjects failed too often lately.
async fn throttled(state: &Services, subjects: &[String], now: i64) -> sqlx::Result<Option<i64>> {
    let mut wait_ms = 0;
    for subject in subjects {
        let limit = if subject.starts_with("email:") { FAILURES_PER_EMAIL } else { FAILURES_PER_ADDRESS };
        let (count, oldest) = db::staff::failures_since(&state.sender.db, subject, now - FAILURE_WINDOW_MS).await?;
        if count >= limit {
            wait_ms = wait_ms.max(oldest.unwrap_or(now) + FAILURE_WINDOW_MS - now);
        }
    }
    Ok((wait_ms > 0).then_some((wait_ms + 999) / 1000))
}

/// Starts a session for `staff` and sends them to the overview. The session cookie is first;
/// then the same name is expired on each of the console's sections, where a page on another port
/// of this host may have planted its own session for the browser to send first.
async fn start(state: &Services, staff: &Staff, now: i64) -> Response {
    match db::staff::start_session(&state.sender.db, &staff.id, now, LIFETIME_MS).await {
        Ok(token) => {
            let mut response = Redirect::to("/console").into_response();
            let headers = response.headers_mut();
            headers.insert(header::SET_COOKIE, cookie(state, &token, LIFETIME_MS / 1000));
            let sections: Vec<String> = SECTIONS.iter().map(|section| format!("/console/{section}")).collect();
            for expiry in expiries(state, sections.iter().map(String::as_str)) {
                headers.append(header::SET_COOKIE, expiry);
            }
            response
        }
        Err(error) => unavailable(error),
    }
}

fn unavailable(error: impl std::fmt::Display) -> Response {
    tracing::error!(error = %error, "a console sign-in could not reach the database");
    notice(StatusCode::SERVICE_UNAVAILABLE, "Unavailable", "The console cannot reach its database. Try again.")
}

/// `POST /console/sign-out`: ends the session, wherever it is used.
pub async fn sign_out(
    State(state): State<Services>,
    signed_in: SignedIn,
    headers: HeaderMap,
    Form(form): Form<CsrfForm>,
) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    if let Ok(Some(token)) = cookie_token(&headers, CookieSpec::of(&state).name)
        && let Err(error) = db::staff::end_session(&state.sender.db, &hash_secret(&token)).await
    {
        return unavailable(error);
    }
    let mut response = Redirect::to("/console/sign-in").into_response();
    response.headers_mut().insert(header::SET_COOKIE, cookie(&state, "", 0));
    response
}

#[derive(Deserialize)]
pub struct LinkQuery {
    #[serde(default)]
    token: String,
}

/// `GET /console/welcome?token=…`: the page of a one-time sign-in link.
pub async fn welcome_page(State(state): State<Services>, Query(query): Query<LinkQuery>) -> Response {
    match db::staff::by_link(&state.sender.db, &hash_secret(&query.token), clock::now_ms()).await {
        Ok(Some(staff)) => {
            render(StatusCode::OK, "welcome.html", context! { email => staff.email, token => query.token })
        }
        Ok(None) => expired_link(),
        Err(error) => unavailable(error),
    }
}

fn expired_link() -> Response {
    notice(
        StatusCode::NOT_FOUND,
        "This link does not work",
        "It was used already, or it is more than a day old. Ask an owner of your organisation for a new one.",
    )
}

#[derive(Deserialize)]
pub struct WelcomeForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    confirm: String,
}

/// `POST /console/welcome`: sets the password, uses up the link, and signs in.
pub async fn welcome(State(state): State<Services>, headers: HeaderMap, Form(form): Form<WelcomeForm>) -> Response {
    if !same_origin(&headers, https(&state)) {
        return notice(StatusCode::FORBIDDEN, "Refused", "This request did not come from a page of this console.");
    }
    let now = clock::now_ms();
    let staff = match db::staff::by_link(&state.sender.db, &hash_secret(&form.token), now).await {
        Ok(Some(staff)) => staff,
        Ok(None) => return expired_link(),
        Err(error) => return unavailable(error),
    };
    let problem = match check_password(&form.password) {
        Err(problem) => Some(problem),
        Ok(()) if form.password != form.confirm => Some("the two passwords differ".to_string()),
        Ok(()) => None,
    };
    if let Some(problem) = problem {
        return render(
            StatusCode::BAD_REQUEST,
            "welcome.html",
            context! { email => staff.email, token => form.token, error => problem },
        );
    }
    let password = form.password;
    let Some(hash) = hashing(move || hash_password(&password)).await else {
        return unavailable("the password could not be hashed");
    };
    if let Err(error) = db::staff::set_password(&state.sender.db, &staff.id, &hash, now).await {
        return unavailable(error);
    }
    start(&state, &staff, now).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_read_and_origins_are_compared_with_the_scheme_host_and_port() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_static("a=1; msgline_session=mls_abc; b=2"));
        assert_eq!(cookie_token(&headers, COOKIE), Ok(Some("mls_abc".to_string())));
        assert_eq!(cookie_token(&headers, HOST_COOKIE), Ok(None), "over https only the __Host- cookie is read");
        headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        assert!(same_origin(&headers, false));
        headers.insert(header::ORIGIN, HeaderValue::from_static("http://127.0.0.1:8080"));
        assert!(same_origin(&headers, false));
        assert!(!same_origin(&headers, true), "an http page posting to an https console");
        headers.insert(header::ORIGIN, HeaderValue::from_static("https://127.0.0.1:8080"));
        assert!(same_origin(&headers, true));
        assert!(!same_origin(&headers, false), "an https page posting to an http console");
        headers.insert(header::ORIGIN, HeaderValue::from_static("http://127.0.0.1:8081"));
        assert!(!same_origin(&headers, false), "another port");
        headers.insert(header::ORIGIN, HeaderValue::from_static("https://evil.example"));
        assert!(!same_origin(&headers, true));
        headers.remove(header::ORIGIN);
        headers.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(!same_origin(&headers, false));
        assert_ne!(csrf_token("mls_a"), csrf_token("mls_b"));
    }

    #[test]
    fn two_session_cookies_are_refused_whichever_comes_first() {
        let mut headers = HeaderMap::new();
        headers
            .insert(header::COOKIE, HeaderValue::from_static("msgline_session=mls_attacker; msgline_session=mls_me"));
        assert_eq!(cookie_token(&headers, COOKIE), Err(TwoSessions));
        let mut split = HeaderMap::new();
        split.append(header::COOKIE, HeaderValue::from_static("msgline_session=mls_attacker"));
        split.append(header::COOKIE, HeaderValue::from_static("msgline_session=mls_me"));
        assert_eq!(cookie_token(&split, COOKIE), Err(TwoSessions));
    }

    #[test]
    fn over_https_the_cookie_is_a_host_cookie_on_the_root() {
        let spec = CookieSpec::for_https(true);
        let set = spec.header("mls_abc", spec.path, 60).to_str().unwrap().to_string();
        assert_eq!(set, "__Host-msgline_session=mls_abc; Path=/; HttpOnly; SameSite=Lax; Max-Age=60; Secure");
        let plain = CookieSpec::for_https(false);
        let set = plain.header("mls_abc", plain.path, 60).to_str().unwrap().to_string();
        assert_eq!(set, "msgline_session=mls_abc; Path=/console; HttpOnly; SameSite=Lax; Max-Age=60");
    }
}
