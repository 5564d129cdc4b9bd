// The TypeScript client against a live msgline (scripts/clients test starts it and compiles this
// with tsc into build/). Needs MSGLINE_URL (the server's root) and MSGLINE_KEY (a key of every
// scope). Exits 1 on the first check that fails.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

import { createClient, verifyWebhook, WebhookVerificationError, type MsglineClient, type WebhookEvent } from "../src/index.js";

const TO = "+12015550124"; // this program's recipient; the Python test uses another
const RUN = randomBytes(4).toString("hex");

class Failed extends Error {}

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Failed(what);
  passed(what);
}

function passed(what: string): void {
  console.log(`  ok: ${what}`);
}

function send(client: MsglineClient, body: string, key: string) {
  return client.POST("/api/v1/messaging/messages", {
    params: { header: { "Idempotency-Key": key } },
    body: { to: TO, body },
  });
}

async function idempotentSend(client: MsglineClient) {
  const key = `ts-order-${RUN}`;
  const first = await send(client, "Your order has shipped", key);
  check(first.response.status === 202, `POST /messages with Idempotency-Key answers 202 (${first.response.status})`);
  check(first.data && !first.data.duplicate, "the first send is not a duplicate");
  const sent = first.data;
  const again = await send(client, "Your order has shipped", key);
  check(again.response.status === 200, `the same request with the same key answers 200 (${again.response.status})`);
  check(again.data?.duplicate === true, "the replay says duplicate: true");
  check(again.data.message.id === sent.message.id, `the replay is the same message (${sent.message.id})`);
  check(again.response.headers.get("Idempotent-Replayed") === "true", "the replay carries Idempotent-Replayed: true");
  const other = await send(client, "Another text", key);
  check(
    other.response.status === 409 && other.error?.error === "idempotency_key_reused",
    "the same key with another request is 409 idempotency_key_reused",
  );
  return sent;
}

async function readBack(client: MsglineClient, id: string) {
  const { data, response } = await client.GET("/api/v1/messaging/messages/{id}", { params: { path: { id } } });
  check(response.status === 200 && data, "GET /messages/{id} answers the message");
  check(
    data.id === id && data.body === "Your order has shipped" && data.to === TO,
    "it has the id, text and recipient that were sent",
  );
}

async function listWithCursor(client: MsglineClient, first: { id: string; contact_id?: string | null }) {
  const expected = new Set([first.id]);
  for (let n = 0; n < 4; n++) {
    const more = await send(client, `Update ${n + 1}`, `ts-update-${RUN}-${n}`);
    check(more.response.status === 202 && more.data, `send ${n + 2} of 5 accepted`);
    expected.add(more.data.message.id);
  }
  const contactId = first.contact_id;
  check(typeof contactId === "string", "the message names its contact");
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  for (;;) {
    const { data } = await client.GET("/api/v1/messaging/messages", {
      params: { query: { contact_id: contactId, limit: 2, cursor } },
    });
    pages += 1;
    check(data, `GET /messages?limit=2 page ${pages}`);
    check(data.data.length <= 2, `page ${pages} has at most 2 messages (${data.data.length})`);
    seen.push(...data.data.map((message) => message.id));
    if (typeof data.next_cursor !== "string") break;
    if (pages >= 10) throw new Failed("the cursor does not end");
    cursor = data.next_cursor;
  }
  check(new Set(seen).size === seen.length, `no message twice across ${pages} pages`);
  check(
    seen.length === expected.size && seen.every((id) => expected.has(id)),
    `all ${expected.size} messages seen, following next_cursor`,
  );
}

interface Delivery {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

async function webhook(client: MsglineClient) {
  const deliveries: Delivery[] = [];
  let arrived: () => void = () => {};
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      deliveries.push({ headers: req.headers, body: Buffer.concat(chunks) }); // the raw bytes
      res.writeHead(204).end();
      arrived();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const created = await client.POST("/api/v1/messaging/webhooks", {
      body: { url: `http://127.0.0.1:${port}/msgline`, events: ["messaging.message.*"] },
    });
    check(created.response.status === 201 && typeof created.data?.secret === "string", "POST /webhooks answers its secret");
    const secret = created.data.secret;
    const sent = await send(client, "Webhook, please", `ts-webhook-${RUN}`);
    check(sent.response.status === 202 && sent.data, "a send after registering");
    const messageId = sent.data.message.id;

    const deadline = Date.now() + 30_000;
    let found: { delivery: Delivery; event: WebhookEvent } | undefined;
    while (!found) {
      const delivery = deliveries.shift();
      if (!delivery) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw new Failed("no event about the send arrived within 30 s");
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, remaining);
          arrived = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        continue;
      }
      // Every delivery must verify, this send's or not.
      const event = verifyWebhook(secret, delivery.headers, delivery.body);
      const message = event.data["message"] as { id?: string } | undefined;
      if (message?.id === messageId) found = { delivery, event };
    }
    const { delivery, event } = found;
    passed(`${event.type} of ${messageId} arrived; verifyWebhook accepts its signature`);
    check(event.id === delivery.headers["webhook-id"], "the event's id is its webhook-id");

    const tampered = Buffer.from(delivery.body.toString("utf8").replace(messageId, "msg_forged"), "utf8");
    check(!tampered.equals(delivery.body), "a tampered copy of the body");
    rejected(() => verifyWebhook(secret, delivery.headers, tampered), "the tampered body");
    rejected(() => verifyWebhook(`whsec_${"A".repeat(32)}`, delivery.headers, delivery.body), "another secret");
    const timestamp = Number(delivery.headers["webhook-timestamp"]);
    rejected(
      () => verifyWebhook(secret, delivery.headers, delivery.body, { now: timestamp + 301 }),
      "a timestamp 301 s old",
    );
    const rotation = new Headers({
      "webhook-id": String(delivery.headers["webhook-id"]),
      "webhook-timestamp": String(delivery.headers["webhook-timestamp"]),
      "webhook-signature": `v1,${"A".repeat(43)}= ${String(delivery.headers["webhook-signature"])}`,
    });
    verifyWebhook(secret, rotation, delivery.body.toString("utf8"));
    passed("two signatures (a rotation), one of them right, in a fetch Headers with a string body: accepted");
  } finally {
    server.close();
  }
}

function rejected(verify: () => unknown, what: string): void {
  try {
    verify();
  } catch (error) {
    if (error instanceof WebhookVerificationError) {
      passed(`verifyWebhook refuses ${what} (${error.message})`);
      return;
    }
    throw error;
  }
  throw new Failed(`verifyWebhook accepted ${what}`);
}

async function main(): Promise<number> {
  const baseUrl = process.env["MSGLINE_URL"];
  const apiKey = process.env["MSGLINE_KEY"];
  if (!baseUrl || !apiKey) {
    console.error("MSGLINE_URL and MSGLINE_KEY are needed");
    return 2;
  }
  const client = createClient({ baseUrl, apiKey });
  try {
    const sent = await idempotentSend(client);
    await readBack(client, sent.message.id);
    await listWithCursor(client, sent.message);
    await webhook(client);
  } catch (error) {
    console.error(`FAILED: ${error instanceof Failed ? error.message : String(error)}`);
    return 1;
  }
  console.log(JSON.stringify({ typescript_client: "passed", run: RUN }));
  return 0;
}

process.exitCode = await main();
