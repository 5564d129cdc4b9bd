//! Files on the simulated line: those a send carries, fetched from the service, and those it
//! serves for inbound messages.

use super::*;

/// Fetches a send's files from msgline with the callback secret (the line's bridge secret):
/// what the line got of each (its size and SHA-256), and whether any fetch failed.
pub(super) async fn fetch_attachments(sim: &Sim, request: &SendRequest) -> (Vec<Value>, bool) {
    use sha2::Digest;
    let mut fetched = Vec::new();
    for file in &request.attachments {
        let mut call = sim.http.get(&file.url);
        if let Some(secret) = &sim.config.callback_secret {
            call = call.bearer_auth(secret);
        }
        let bytes = match call.send().await {
            Ok(answer) if answer.status().is_success() => answer.bytes().await.ok(),
            _ => None,
        };
        let Some(bytes) = bytes else { return (fetched, true) };
        let digest: String = sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        fetched.push(json!({"id": file.id, "content_type": file.content_type, "size": bytes.len(), "sha256": digest}));
    }
    (fetched, false)
}

/// A file of an inbound message, for msgline to fetch (with the line's token).
pub(super) async fn serve_file(State(sim): State<Shared>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if !sim.authorized(&headers) {
        return unauthorized();
    }
    match sim.files.lock().expect("files lock").get(&id) {
        Some(bytes) => bytes.clone().into_response(),
        None => (StatusCode::NOT_FOUND, Json(json!({"error": "not_found"}))).into_response(),
    }
}
