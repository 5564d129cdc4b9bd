// Verifies a webhook delivery from msgline (Standard Webhooks): written by hand, kept when the
// client is regenerated. Needs only node:crypto.
import { createHmac, timingSafeEqual } from "node:crypto";

/** Thrown when a delivery's headers, timestamp or signature do not check out. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

/** A delivery's body: the event, as msgline signed it. */
export interface WebhookEvent {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

/** Node's `req.headers`, a fetch `Headers`, or any object of header names (any case) to values. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** How far `webhook-timestamp` may be from the clock, in seconds (default 300). */
  toleranceSeconds?: number;
  /** The clock, in Unix seconds (default: now). */
  now?: number;
}

/**
 * Checks a delivery and returns its event.
 *
 * `secret` is the endpoint's `whsec_...` secret; `rawBody` the exact bytes received, before any
 * JSON parsing. The signature must match one `v1,` entry of `webhook-signature` (during a secret
 * rotation there are two, separated by a space), and `webhook-timestamp` must be within the
 * tolerance of the clock. Throws `WebhookVerificationError` otherwise.
 */
export function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  rawBody: string | Uint8Array,
  options: VerifyOptions = {},
): WebhookEvent {
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret, "base64");
  if (key.length === 0) throw new WebhookVerificationError("the secret is empty or not base64");

  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature");
  }
  if (!/^\d{1,15}$/.test(timestamp)) throw new WebhookVerificationError("webhook-timestamp is not a number");
  const now = options.now ?? Date.now() / 1000;
  const tolerance = options.toleranceSeconds ?? 300;
  if (Math.abs(now - Number(timestamp)) > tolerance) {
    throw new WebhookVerificationError("webhook-timestamp is outside the tolerance");
  }

  const body = typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : Buffer.from(rawBody);
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest();
  let matched = false;
  for (const entry of signatures.split(" ")) {
    const comma = entry.indexOf(",");
    if (comma < 0 || entry.slice(0, comma) !== "v1") continue;
    const given = Buffer.from(entry.slice(comma + 1), "base64");
    // Every entry is compared, so the time taken does not tell which one matched.
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError("no signature matches");

  const event: unknown = JSON.parse(body.toString("utf8"));
  if (typeof event !== "object" || event === null || (event as { id?: unknown }).id !== id) {
    throw new WebhookVerificationError("the body is not the event webhook-id names");
  }
  return event as WebhookEvent;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    return Array.isArray(value) ? value.join(" ") : value;
  }
  return undefined;
}
