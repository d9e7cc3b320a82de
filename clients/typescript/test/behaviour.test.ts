// Errors, retries, timeouts, pagination, the consistency token and tenant isolation, against
// the live server (and, for retries, a real local HTTP server in front of it that refuses the
// first requests as an overloaded server would).
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import {
  Forbidden,
  InvalidInput,
  MemvaultClient,
  MemvaultError,
  NotFound,
  RateLimited,
  RequestDoneAnswerLost,
  ServerUnreachable,
  StoreUnavailable,
  Unauthorized,
} from "../src/index.js";
import { BASE_URL, OTHER_KEY, READ_KEY, client, user } from "./env.js";

type Answer = (req: IncomingMessage, res: ServerResponse) => boolean;

/** A server that answers with `answer` while it returns true, and passes the rest through. */
async function inFront(answer: Answer): Promise<{ url: string; seen: string[]; close: () => Promise<void> }> {
  const seen: string[] = [];
  const server: Server = createServer(async (req, res) => {
    seen.push(`${req.method} ${req.url}`);
    if (answer(req, res)) return;
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== "host" && k !== "content-length")) as Record<string, string>;
    const upstream = await fetch(`${BASE_URL}${req.url}`, {
      method: req.method ?? "GET",
      headers,
      body: chunks.length ? Buffer.concat(chunks) : null,
    });
    res.writeHead(upstream.status, Object.fromEntries(upstream.headers));
    res.end(Buffer.from(await upstream.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

function refuse(res: ServerResponse, status: number, code: string, retryAfter = "0"): true {
  res.writeHead(status, { "content-type": "application/json", "retry-after": retryAfter, "x-request-id": "req-test" });
  res.end(JSON.stringify({ error: { code, message: "try again", details: {} } }));
  return true;
}

test("a 503 with Retry-After is retried until the server answers", async () => {
  let refused = 0;
  const proxy = await inFront((_req, res) => refused++ < 2 && refuse(res, 503, "store_unavailable"));
  try {
    const memory = client({ baseUrl: proxy.url });
    const added = await memory.add({ user_id: user("retry"), content: "Retried writes are stored once", wait: true });
    assert.ok(added.id);
    assert.equal(proxy.seen.length, 3);
  } finally {
    await proxy.close();
  }
});

test("a 429 is retried; past maxRetries the error carries status, retryAfter and requestId", async () => {
  const proxy = await inFront((_req, res) => refuse(res, 429, "rate_limited", "0"));
  try {
    const memory = client({ baseUrl: proxy.url, maxRetries: 1 });
    const error = await memory.count({ user_id: "nobody" }).catch((e: unknown) => e);
    assert.ok(error instanceof RateLimited);
    assert.equal(error.status, 429);
    assert.equal(error.retryAfter, 0);
    assert.equal(error.requestId, "req-test");
    assert.equal(proxy.seen.length, 2);
  } finally {
    await proxy.close();
  }
});

test("a keyed write that timed out on the server is sent again and stored once", async () => {
  let refused = 0;
  const proxy = await inFront((_req, res) => refused++ < 1 && refuse(res, 503, "request_timeout"));
  try {
    const memory = client({ baseUrl: proxy.url });
    const owner = user("timed-out");
    const added = await memory.add({ user_id: owner, content: "Timed-out writes are stored once", wait: true });
    assert.equal(proxy.seen.length, 2);
    const listed = await memory.list({ user_id: owner });
    assert.deepEqual(listed.results.map((m) => m.id), [added.id]);
  } finally {
    await proxy.close();
  }
});

test("a hand-written route's POST that timed out on the server is not sent again", async () => {
  const proxy = await inFront((_req, res) => refuse(res, 503, "request_timeout"));
  try {
    const memory = client({ baseUrl: proxy.url });
    const error = await memory.lifecycle.eraseUser({ user_id: user("not-resent") }).catch((e: unknown) => e);
    assert.ok(error instanceof MemvaultError);
    assert.equal(error.code, "request_timeout");
    assert.equal(proxy.seen.length, 1);
  } finally {
    await proxy.close();
  }
});

test("a write that was done and whose answer was lost is thrown, not sent again", async () => {
  const proxy = await inFront((_req, res) => refuse(res, 409, "request_done_answer_lost"));
  try {
    const error = await client({ baseUrl: proxy.url }).add({ user_id: "nobody", content: "x" }).catch((e: unknown) => e);
    assert.ok(error instanceof RequestDoneAnswerLost);
    assert.equal(error.status, 409);
    assert.equal(proxy.seen.length, 1);
  } finally {
    await proxy.close();
  }
});

test("a read whose connection failed is retried", async () => {
  let failures = 0;
  const flaky: typeof fetch = async (input, init) => {
    if (failures++ < 2) throw new TypeError("fetch failed");
    return fetch(input, init);
  };
  const memory = client({ fetch: flaky });
  assert.equal(await memory.count({ user_id: user("flaky") }), 0);
  assert.equal(failures, 3);
});

test("a write whose answer was lost is sent again with its key and stored once", async () => {
  const keys: (string | null)[] = [];
  let lost = 0;
  // The first attempt reaches the server and stores; its answer never comes back (the
  // connection dropped on the way), as when an API host dies mid-answer.
  const losing: typeof fetch = async (input, init) => {
    const sent = new Headers(init?.headers);
    keys.push(sent.get("idempotency-key"));
    const response = await fetch(input, init);
    if (init?.method === "POST" && lost++ === 0) {
      await response.arrayBuffer();
      throw new TypeError("fetch failed");
    }
    return response;
  };
  const memory = client({ fetch: losing });
  const owner = user("lost-answer");
  const added = await memory.add({ user_id: owner, content: "Ada keeps bees on the roof", infer: false });
  assert.equal(keys.length, 2);
  assert.ok(keys[0]);
  assert.equal(keys[1], keys[0]);
  assert.equal(await memory.count({ user_id: owner }), 1);
  const listed = await memory.list({ user_id: owner });
  assert.deepEqual(
    listed.results.map((m) => m.id),
    [added.id],
  );
  await memory.add({ user_id: owner, content: "Ada keeps bees on the roof", infer: false });
  assert.notEqual(keys.at(-1), keys[0]);
  assert.equal(await memory.count({ user_id: owner }), 2);
});

test("errors are the envelope's classes", async () => {
  const memory = client();
  const invalid = await memory.add({ user_id: "", content: "x" }).catch((e: unknown) => e);
  assert.ok(invalid instanceof InvalidInput);
  assert.equal(invalid.status, 422);
  assert.deepEqual(invalid.details["errors"], [{ field: "body.user_id", problem: "String should have at least 1 character" }]);
  assert.ok(invalid.requestId);

  const missing = await memory.get({ memory_id: "00000000-0000-4000-8000-000000000000", user_id: "x" }).catch((e: unknown) => e);
  assert.ok(missing instanceof NotFound && missing.status === 404);

  const anonymous = new MemvaultClient({ baseUrl: BASE_URL });
  await assert.rejects(anonymous.count({ user_id: "x" }), Unauthorized);
  const reader = client({ apiKey: READ_KEY });
  assert.equal(await reader.count({ user_id: "x" }), 0);
  await assert.rejects(reader.add({ user_id: "x", content: "x" }), Forbidden);
});

test("no server, a slow server and an aborted call", async () => {
  const closed = await inFront(() => false);
  await closed.close();
  const gone = await client({ baseUrl: closed.url, maxRetries: 0 }).count({ user_id: "x" }).catch((e: unknown) => e);
  assert.ok(gone instanceof ServerUnreachable && gone instanceof StoreUnavailable);
  assert.match(gone.message, /Could not reach/);

  const slow = await inFront(() => true); // never answers
  try {
    const late = await client({ baseUrl: slow.url, timeoutMs: 200, maxRetries: 0 }).count({ user_id: "x" }).catch((e: unknown) => e);
    assert.ok(late instanceof ServerUnreachable);
    assert.equal(late.details["reason"], "timeout");

    const controller = new AbortController();
    const call = client({ baseUrl: slow.url }).count({ user_id: "x" }, { signal: controller.signal });
    controller.abort(new Error("user went away"));
    await assert.rejects(call, /user went away/);
  } finally {
    await slow.close();
  }
});

test("listAll follows the cursor through every page", async () => {
  const memory = client();
  const owner = user("pages");
  const items = Array.from({ length: 25 }, (_, i) => ({ user_id: owner, content: `Note number ${i}`, infer: false }));
  await memory.memories.addMany({ memories: items, wait: true });
  const seen: string[] = [];
  for await (const record of memory.memories.listAll({ user_id: owner, limit: 10 })) seen.push(record.content);
  assert.equal(seen.length, 25);
  assert.equal(new Set(seen).size, 25);
});

test("the highest consistency token any answer gave is sent on every later request", async () => {
  const tokens = ["0/16B3748", "1/0", "0/FFFFFFFF"]; // answers out of order: 1/0 is the highest
  const sent: Array<string | undefined> = [];
  let answered = 0;
  const proxy = await inFront((req, res) => {
    sent.push(req.headers["memvault-read-after"] as string | undefined);
    res.writeHead(200, { "content-type": "application/json", "memvault-written-lsn": tokens[answered++ % 3] ?? "" });
    res.end(JSON.stringify({ count: 0 }));
    return true;
  });
  try {
    const memory = client({ baseUrl: proxy.url });
    assert.equal(memory.consistencyToken, null);
    for (let i = 0; i < 4; i++) await memory.count({ user_id: "x" });
    assert.deepEqual(sent, [undefined, "0/16B3748", "1/0", "1/0"]);
    assert.equal(memory.consistencyToken, "1/0");
  } finally {
    await proxy.close();
  }
});

test("another tenant's key sees nothing of this tenant's user", async () => {
  const owner = user("shared-name");
  const mine = client();
  const added = await mine.add({ user_id: owner, content: "Acme's secret roadmap", wait: true });
  const theirs = client({ apiKey: OTHER_KEY });
  assert.equal(await theirs.count({ user_id: owner }), 0);
  assert.deepEqual((await theirs.search({ user_id: owner, query: "secret roadmap" })).results, []);
  await assert.rejects(theirs.get({ memory_id: added.id, user_id: owner }), NotFound);
  await assert.rejects(theirs.delete({ memory_id: added.id, user_id: owner }), NotFound);
  assert.equal(await mine.count({ user_id: owner }), 1);
});

test("any conversation id or key accepted at write is reachable by its path", async () => {
  const memory = client();
  const owner = user("paths");
  for (const id of ["slack/C042/1712.5", "...", "50% off?#yes", "café"]) {
    await memory.addMessages({ user_id: owner, conversation_id: id, messages: [{ role: "user", content: `Note in ${id}` }] });
    assert.equal((await memory.getConversation({ conversation_id: id, user_id: owner })).id, id);
    await memory.setContext({ conversation_id: id, key: "a/b", user_id: owner, value: id });
    assert.equal(await memory.getContextValue({ conversation_id: id, key: "a/b", user_id: owner }), id);
  }
  // fetch resolves "." and ".." in a path (even as %2E): refused before anything is sent.
  const refused = await memory.getConversation({ conversation_id: "..", user_id: owner }).catch((e: unknown) => e);
  assert.ok(refused instanceof InvalidInput && refused.status === 0);
});

test("a bad base URL is refused at once", () => {
  assert.throws(() => new MemvaultClient({ baseUrl: "ftp://example" }), /http:\/\/ or https:\/\//);
});
