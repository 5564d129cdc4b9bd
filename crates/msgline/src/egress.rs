//! The one outbound HTTP client for everything a customer points msgline at (webhook URLs,
//! photo URLs). HTTPS only, no userinfo, no redirects; every address a host name resolves to is
//! checked against private, loopback, link-local and other non-public ranges (an IPv6 address
//! that carries an IPv4 one is judged by the IPv4 one too) inside the client's own resolver, so
//! the connection goes to an address that was checked; IP literals and `localhost` names are
//! checked before the call. Bodies are capped while they stream.
//! `MSGLINE_ALLOW_PRIVATE_TARGETS` lifts the address and scheme rules for tests and demos.

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use reqwest::{
    Url,
    dns::{Addrs, Name, Resolve, Resolving},
    header::HeaderMap,
};

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum EgressError {
    #[error("the URL is not valid")]
    InvalidUrl,
    #[error("the URL must use https")]
    NotHttps,
    #[error("the URL must not carry a user name or password")]
    Userinfo,
    #[error("the URL points at a private, loopback or otherwise non-public address")]
    PrivateAddress,
    #[error("the response is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the target answered with a redirect, which is not followed")]
    Redirect,
    #[error("the request timed out")]
    Timeout,
    #[error("the request failed: {0}")]
    Failed(String),
}

/// A response read up to a size cap.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

#[derive(Clone)]
pub struct Egress {
    client: reqwest::Client,
    allow_private: bool,
}

/// Resolves names and keeps only public addresses; a name with none left is an error.
struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_string();
            let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if resolved.is_empty() {
                return Err(format!("{host} does not resolve").into());
            }
            // One private address is enough to refuse: a name that mixes them is not trusted.
            if resolved.iter().any(|a| !is_public(a.ip())) {
                return Err(Box::new(Blocked) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(resolved.into_iter()) as Addrs)
        })
    }
}

#[derive(Debug)]
struct Blocked;

impl std::fmt::Display for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("resolved to a non-public address")
    }
}

impl std::error::Error for Blocked {}

impl Egress {
    pub fn new(allow_private: bool) -> Self {
        let mut builder = reqwest::Client::builder()
            // A proxy from HTTPS_PROXY/ALL_PROXY would resolve the target itself, past the
            // resolver below that refuses private addresses: this client never uses one.
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .pool_max_idle_per_host(32)
            .user_agent(concat!("msgline/", env!("CARGO_PKG_VERSION")));
        if !allow_private {
            builder = builder.dns_resolver(Arc::new(PublicOnly));
        }
        Self { client: builder.build().expect("HTTP client builds"), allow_private }
    }

    /// Checks a customer-supplied URL before it is stored or called.
    pub fn check_url(&self, text: &str) -> Result<Url, EgressError> {
        let url = Url::parse(text.trim()).map_err(|_| EgressError::InvalidUrl)?;
        match url.scheme() {
            "https" => {}
            "http" if self.allow_private => {}
            "http" => return Err(EgressError::NotHttps),
            _ => return Err(EgressError::InvalidUrl),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(EgressError::Userinfo);
        }
        let host = url.host().ok_or(EgressError::InvalidUrl)?;
        if !self.allow_private {
            let literal = match host {
                url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
                url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
                url::Host::Domain(name) => {
                    if is_local_name(name)? {
                        return Err(EgressError::PrivateAddress);
                    }
                    None
                }
            };
            if literal.is_some_and(|ip| !is_public(ip)) {
                return Err(EgressError::PrivateAddress);
            }
        }
        Ok(url)
    }

    /// GETs a URL, reading at most `max_bytes` of its body.
    pub async fn get(&self, url: &str, max_bytes: usize, timeout: Duration) -> Result<Fetched, EgressError> {
        let url = self.check_url(url)?;
        let response = self.client.get(url).timeout(timeout).send().await.map_err(classify)?;
        read_capped(response, max_bytes).await
    }

    /// POSTs a body with headers, reading at most `max_bytes` of the answer.
    pub async fn post(
        &self,
        url: &str,
        headers: HeaderMap,
        body: Vec<u8>,
        max_bytes: usize,
        timeout: Duration,
    ) -> Result<Fetched, EgressError> {
        let url = self.check_url(url)?;
        let response =
            self.client.post(url).headers(headers).body(body).timeout(timeout).send().await.map_err(classify)?;
        read_capped(response, max_bytes).await
    }

    /// POSTs like [`Egress::post`], but any answer keeps its status: at most `keep_bytes` of the
    /// body are read and the rest is dropped (for callers that only show the body, such as
    /// webhook delivery, where a long answer must not turn a 200 into a failure).
    pub async fn post_keeping_status(
        &self,
        url: &str,
        headers: HeaderMap,
        body: Vec<u8>,
        keep_bytes: usize,
        timeout: Duration,
    ) -> Result<Fetched, EgressError> {
        let url = self.check_url(url)?;
        let mut response =
            self.client.post(url).headers(headers).body(body).timeout(timeout).send().await.map_err(classify)?;
        let status = response.status();
        if status.is_redirection() {
            return Err(EgressError::Redirect);
        }
        let headers = response.headers().clone();
        let mut kept = Vec::new();
        // The status has been answered; a body that breaks off or runs long only shortens `kept`.
        while kept.len() < keep_bytes
            && let Ok(Some(chunk)) = response.chunk().await
        {
            let room = keep_bytes - kept.len();
            kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
        Ok(Fetched { status: status.as_u16(), headers, body: kept })
    }
}

/// Whether a host name names this machine (`localhost` and its subdomains, RFC 6761), however
/// it is spelt: a trailing dot (a fully qualified name, the same host) and case do not change the
/// host. A name with an empty last label (`localhost..`) names no host.
fn is_local_name(name: &str) -> Result<bool, EgressError> {
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    if name.is_empty() || name.ends_with('.') {
        return Err(EgressError::InvalidUrl);
    }
    Ok(name == "localhost" || name.ends_with(".localhost"))
}

async fn read_capped(mut response: reqwest::Response, max_bytes: usize) -> Result<Fetched, EgressError> {
    let status = response.status();
    if status.is_redirection() {
        return Err(EgressError::Redirect);
    }
    let headers = response.headers().clone();
    if response.content_length().is_some_and(|len| len as usize > max_bytes) {
        return Err(EgressError::TooLarge(max_bytes));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(classify)? {
        if body.len() + chunk.len() > max_bytes {
            return Err(EgressError::TooLarge(max_bytes));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Fetched { status: status.as_u16(), headers, body })
}

fn classify(error: reqwest::Error) -> EgressError {
    let mut source: Option<&dyn std::error::Error> = Some(&error);
    while let Some(cause) = source {
        // The resolver's error reaches here wrapped in an io::Error, whose source() skips it.
        let wrapped =
            cause.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()).is_some_and(|e| e.is::<Blocked>());
        if wrapped || cause.is::<Blocked>() {
            return EgressError::PrivateAddress;
        }
        source = cause.source();
    }
    if error.is_timeout() {
        EgressError::Timeout
    } else {
        let kind = if error.is_connect() { "could not connect" } else { "the exchange failed" };
        EgressError::Failed(kind.to_string())
    }
}

/// Whether an address is on the public internet. An IPv6 address that is only a way of writing
/// an IPv4 address is judged by that address: the host that answers is the IPv4 one.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match written_v4(v6) {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

/// The IPv4 address an IPv6 address stands for, in its last 32 bits: IPv4-mapped
/// (`::ffff:0:0/96`), IPv4-translated (`::ffff:0:0:0/96`, RFC 2765 SIIT), IPv4-compatible
/// (`::/96`, which also covers `::` and `::1`) and NAT64's well-known prefix (`64:ff9b::/96`,
/// RFC 6052; a DNS64 resolver on an IPv6-only host answers public names with these).
fn written_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let prefix = matches!(
        s[..6],
        [0, 0, 0, 0, 0, 0] | [0, 0, 0, 0, 0, 0xffff] | [0, 0, 0, 0, 0xffff, 0] | [0x64, 0xff9b, 0, 0, 0, 0]
    );
    prefix.then(|| Ipv4Addr::from(((s[6] as u32) << 16) | s[7] as u32))
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240) // reserved
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (segments[0] & 0xfe00) == 0xfc00 // unique local
        || (segments[0] & 0xffc0) == 0xfe80 // link-local
        || (segments[0] & 0xffc0) == 0xfec0 // site-local (deprecated, still routed by some)
        // The rest of NAT64's 64:ff9b::/32, its local-use 64:ff9b:1::/48 included: where the IPv4
        // address sits depends on the operator's prefix length, which msgline cannot know, and a
        // local-use translator may reach private IPv4 (RFC 8215).
        || (segments[0] == 0x64 && segments[1] == 0xff9b)
        || (segments[0] == 0x100 && segments[1..4].iter().all(|s| *s == 0)) // discard-only
        || (segments[0] == 0x2001 && segments[1] == 0x0db8) // documentation
        || embedded_v4(ip).iter().any(|v4| !is_public_v4(*v4)))
}

/// The IPv4 addresses an IPv6 address carries for a tunnel to reach: 6to4 (`2002::/16`, the
/// 32 bits after the prefix), Teredo (`2001::/32`: the server, and the client with its bits
/// inverted) and ISATAP (an interface identifier of `0:5efe` or `200:5efe` followed by the
/// address).
fn embedded_v4(ip: Ipv6Addr) -> Vec<Ipv4Addr> {
    let s = ip.segments();
    let v4 = |high: u16, low: u16| Ipv4Addr::from(((high as u32) << 16) | low as u32);
    let mut embedded = Vec::new();
    if s[0] == 0x2002 {
        embedded.push(v4(s[1], s[2]));
    }
    if s[0] == 0x2001 && s[1] == 0 {
        embedded.push(v4(s[2], s[3]));
        embedded.push(v4(!s[6], !s[7]));
    }
    if (s[4] == 0 || s[4] == 0x200) && s[5] == 0x5efe {
        embedded.push(v4(s[6], s[7]));
    }
    embedded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_public_addresses_are_recognised() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "64:ff9b:1::a00:1",
            // IPv4-translated (SIIT) of 127.0.0.1, 10.0.0.1 and 169.254.169.254
            "::ffff:0:127.0.0.1",
            "::ffff:0:10.0.0.1",
            "::ffff:0:a9fe:a9fe",
            "::ffff:0:0",
            // IPv4-compatible and NAT64 of private addresses
            "::10.0.0.1",
            "64:ff9b::192.168.0.1",
            // NAT64's local-use /48 and the rest of its /32, whatever they carry
            "64:ff9b:1::808:808",
            "64:ff9b:1:808:8:800::",
            "64:ff9b:0:1::808:808",
            // 6to4 of 127.0.0.1 and 192.168.1.1
            "2002:7f00:1::",
            "2002:c0a8:101::1",
            // Teredo: a public server, the client 10.0.0.1 (inverted); a private server
            "2001:0:808:808::f5ff:fffe",
            "2001:0:a00:1::f7f7:fbfb",
            // ISATAP of 10.0.0.1 under a public prefix
            "2606:4700::5efe:a00:1",
            "2606:4700::200:5efe:a00:1",
            "fec0::1",
            "100::1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "::ffff:0:8.8.8.8",
            "::8.8.8.8",
            // What DNS64 answers for a public name on an IPv6-only host
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2001:0:808:808::f7f7:fbfb",
            "2606:4700::5efe:808:808",
        ] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn urls_must_be_https_without_userinfo_and_not_private_literals() {
        let egress = Egress::new(false);
        assert!(egress.check_url("https://example.com/hook").is_ok());
        assert_eq!(egress.check_url("http://example.com/hook"), Err(EgressError::NotHttps));
        assert_eq!(egress.check_url("https://user:pw@example.com/"), Err(EgressError::Userinfo));
        assert_eq!(egress.check_url("https://127.0.0.1/"), Err(EgressError::PrivateAddress));
        assert_eq!(egress.check_url("https://[::ffff:127.0.0.1]/"), Err(EgressError::PrivateAddress));
        assert_eq!(egress.check_url("https://localhost:8443/"), Err(EgressError::PrivateAddress));
        assert_eq!(egress.check_url("https://[::ffff:0:127.0.0.1]/"), Err(EgressError::PrivateAddress));
        assert_eq!(egress.check_url("https://[::ffff:0:10.0.0.1]:8443/"), Err(EgressError::PrivateAddress));
        assert_eq!(egress.check_url("ftp://example.com/"), Err(EgressError::InvalidUrl));
        for name in ["localhost.", "LOCALHOST.", "LocalHost.:8443", "api.localhost.", "localhost.."] {
            assert!(egress.check_url(&format!("https://{name}/x")).is_err(), "{name}");
        }
        assert!(egress.check_url("https://example.com./hook").is_ok());
        let open = Egress::new(true);
        assert!(open.check_url("http://127.0.0.1:9000/hook").is_ok());
    }

    #[tokio::test]
    async fn the_resolver_refuses_a_name_that_resolves_to_loopback() {
        let name: Name = "localhost".parse().unwrap();
        let error = PublicOnly.resolve(name).await.err().expect("refused");
        assert!(error.is::<Blocked>(), "{error}");
    }
}
