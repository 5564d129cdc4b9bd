// msgline's TypeScript client: openapi-fetch typed by src/schema.ts (generated from the OpenAPI
// document by scripts/clients; do not edit that file), and the webhook verifier. Written by hand.
import createFetchClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { paths } from "./schema.js";

export type { components, operations, paths } from "./schema.js";
export type { Client, ClientOptions, FetchResponse, Middleware } from "openapi-fetch";
export {
  verifyWebhook,
  WebhookVerificationError,
  type VerifyOptions,
  type WebhookEvent,
  type WebhookHeaders,
} from "./webhooks.js";

/** A client of every operation of msgline's API. */
export type MsglineClient = Client<paths>;

export interface MsglineClientOptions extends ClientOptions {
  /** The server's root, e.g. `http://127.0.0.1:8080` (paths start with `/api/v1/messaging`). */
  baseUrl: string;
  /** An API key (`mlk_...`), sent as `Authorization: Bearer <key>` on every request. */
  apiKey?: string;
}

/**
 * A typed client: `client.POST("/api/v1/messaging/messages", { body, params })` answers
 * `{ data, error, response }`, with `data` and `error` typed from the document.
 */
export function createClient(options: MsglineClientOptions): MsglineClient {
  const { apiKey, ...rest } = options;
  const client = createFetchClient<paths>(rest);
  if (apiKey !== undefined) {
    client.use({
      onRequest({ request }) {
        if (!request.headers.has("Authorization")) request.headers.set("Authorization", `Bearer ${apiKey}`);
        return request;
      },
    });
  }
  return client;
}
