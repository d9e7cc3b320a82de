// Every operation of the generated client at least once, against a live server: a request
// built wrong (path, query string, body) or an answer typed wrong fails here.
import assert from "node:assert/strict";
import { after, test } from "node:test";

import { MemvaultClient, MemvaultError, NotFound, OPERATIONS } from "../src/index.js";
import { client, user } from "./env.js";
import { EXAMPLES } from "./generated/examples.js";

const called = new Set<string>();

/** The client, with each resource method noted when called. */
function recording(memory: MemvaultClient): MemvaultClient {
  for (const [name, resource] of Object.entries(memory)) {
    if (typeof resource !== "object" || resource === null || name === "transport") continue;
    const methods = resource as Record<string, unknown>;
    for (const method of Object.getOwnPropertyNames(Object.getPrototypeOf(resource))) {
      const original = methods[method];
      if (method === "constructor" || typeof original !== "function") continue;
      if (original.constructor.name === "AsyncGeneratorFunction") continue; // listAll: not an operation
      methods[method] = (...args: unknown[]): unknown => {
        called.add(`${name}.${method}`);
        return (original as (...a: unknown[]) => unknown).apply(resource, args);
      };
    }
  }
  return memory;
}

const memory = recording(client());
const alice = user("alice");

after(() => {
  assert.equal(called.size, Object.keys(OPERATIONS).length, `called: ${[...called].sort().join(", ")}`);
});

test("memories: add, get, update, history, count, list, search, delete", async () => {
  const added = await memory.memories.add({ user_id: alice, content: "Prefers aisle seats on long flights", tags: ["travel"], wait: true });
  assert.equal(added.dedup.action, "stored_new");
  const id = added.id;
  assert.ok(id);
  const record = await memory.memories.get({ memory_id: id, user_id: alice });
  assert.equal(record.content, "Prefers aisle seats on long flights");
  assert.deepEqual(record.tags, ["travel"]);

  const updated = await memory.memories.update({ memory_id: id, user_id: alice, content: "Prefers window seats on long flights" });
  assert.equal(updated.content, "Prefers window seats on long flights");
  const history = await memory.memories.history({ memory_id: id, user_id: alice });
  assert.ok(history.length >= 1);

  const batch = await memory.memories.addMany({ memories: [
    { user_id: alice, content: "Lives in Lyon", tags: ["home"] },
    { user_id: alice, content: "Allergic to peanuts" },
  ], wait: true });
  assert.equal(batch.length, 2);
  assert.equal(await memory.memories.count({ user_id: alice }), 3);
  assert.equal(await memory.memories.count({ user_id: alice, tags: ["home"] }), 1);

  const page = await memory.memories.list({ user_id: alice, limit: 2 });
  assert.equal(page.results.length, 2);
  assert.ok(page.next_cursor);

  const found = await memory.memories.search({ user_id: alice, query: "window seats", limit: 3 });
  assert.equal(found.results[0]?.id, id);
  assert.ok(found.results[0] && found.results[0].relevance > 0 && found.results[0].relevance <= 1);
  assert.equal(await memory.memories.feedback({ user_id: alice, memory_ids: [id] }), 1);

  await memory.memories.delete({ memory_id: id, user_id: alice });
  await assert.rejects(memory.memories.get({ memory_id: id, user_id: alice }), NotFound);
  assert.equal(await memory.memories.deleteAll({ user_id: alice }), 2);
});

test("conversations and working memory", async () => {
  const bob = user("bob");
  const started = await memory.conversations.startConversation({ user_id: bob, conversation_id: "trip-2025", title: "Trip" });
  assert.equal(started.id, "trip-2025");
  const added = await memory.conversations.addMessages({
    user_id: bob,
    conversation_id: "trip-2025",
    messages: [
      { role: "user", content: "I'm flying to Lisbon in May" },
      { role: "assistant", content: "Noted: Lisbon in May." },
    ],
    wait: true,
  });
  assert.equal(added.length, 2);
  const turns = await memory.conversations.addTurns({ conversation_id: "trip-2025", user_id: bob, turns: [{ role: "user", content: "And back in June" }], wait: true });
  assert.equal(turns.length, 1);
  const conversation = await memory.conversations.getConversation({ conversation_id: "trip-2025", user_id: bob });
  assert.equal(conversation.turn_count, 3);
  const listed = await memory.conversations.listConversations({ user_id: bob });
  assert.deepEqual(listed.map((c) => c.id), ["trip-2025"]);

  await memory.working.setContext({ conversation_id: "trip-2025", key: "destination", user_id: bob, value: { city: "Lisbon" } });
  assert.deepEqual(await memory.working.getContextValue({ conversation_id: "trip-2025", key: "destination", user_id: bob }), { city: "Lisbon" });
  const context = await memory.working.getContext({ conversation_id: "trip-2025", user_id: bob });
  assert.deepEqual(context.values, { destination: { city: "Lisbon" } });
  await memory.working.deleteContextValue({ conversation_id: "trip-2025", key: "destination", user_id: bob });
  await assert.rejects(memory.working.getContextValue({ conversation_id: "trip-2025", key: "destination", user_id: bob }), NotFound);
  assert.equal(typeof (await memory.working.clearSession({ conversation_id: "trip-2025", user_id: bob })), "number");

  const bundle = await memory.recall.remember({ user_id: bob, query: "Where is the user flying?" });
  assert.match(bundle.prompt, /Lisbon/);

  const receipt = await memory.lifecycle.eraseConversation({ conversation_id: "trip-2025", user_id: bob });
  assert.equal(receipt.scope, "conversation");
  await assert.rejects(memory.conversations.getConversation({ conversation_id: "trip-2025", user_id: bob }), NotFound);
});

test("procedural memory: tools, strategies, goals, profile", async () => {
  const carol = user("carol");
  const use = await memory.strategies.recordToolUse({ user_id: carol, tool_name: "search_flights", tool_input: { to: "LIS" }, success: true, latency_ms: 120 });
  assert.equal(use.tool_name, "search_flights");
  const stats = await memory.strategies.toolStats({ user_id: carol });
  assert.equal(stats[0]?.tool_name, "search_flights");

  const strategy = await memory.strategies.learnStrategy({ user_id: carol, description: "Search flights, then book the cheapest", tool_sequence: ["search_flights", "book"] });
  const reinforced = await memory.strategies.reinforceStrategy({ strategy_id: strategy.id, user_id: carol, success: true });
  assert.equal(reinforced.success_count, strategy.success_count + 1);
  assert.ok((await memory.strategies.findStrategies({ user_id: carol, task: "book flights" })).some((s) => s.id === strategy.id));

  const goal = await memory.goals.addGoal({ user_id: carol, description: "Book flights to Lisbon", deadline: new Date("2030-05-01T00:00:00Z") });
  assert.equal(goal.deadline?.slice(0, 10), "2030-05-01");
  assert.equal((await memory.goals.getGoal({ goal_id: goal.id, user_id: carol })).description, "Book flights to Lisbon");
  assert.equal((await memory.goals.listGoals({ user_id: carol })).length, 1);
  const done = await memory.goals.completeGoal({ goal_id: goal.id, user_id: carol, result: "Booked TP1234" });
  assert.equal(done.status, "completed");

  const profile = await memory.profile.updateProfile({ user_id: carol, preferences: { seat: "aisle" }, expertise: ["travel"] });
  assert.deepEqual(profile.preferences, { seat: "aisle" });
  assert.deepEqual((await memory.profile.getProfile({ user_id: carol })).expertise, ["travel"]);
});

test("the knowledge graph", async () => {
  const dave = user("dave");
  const fact = await memory.graph.addFact({ user_id: dave, channel: "work", subject: "Dave", predicate: "works_with", object: "Erin" });
  assert.equal(fact.predicate, "works_with");
  assert.ok((await memory.graph.facts({ user_id: dave })).some((f) => f.id === fact.id));
  const promoted = await memory.graph.promote({ fact_id: fact.id, user_id: dave, reason: "confirmed by the user" });
  assert.equal(promoted.channel, "_global");
  assert.equal(promoted.predicate, fact.predicate);

  const entities = await memory.graph.entities({ user_id: dave });
  const names = entities.map((e) => e.name).sort();
  assert.deepEqual(names, ["Dave", "Erin"]);
  const [first, second] = entities;
  assert.ok(first && second);
  assert.equal((await memory.graph.entity({ entity_id: first.id, user_id: dave })).id, first.id);
  const view = await memory.graph.entityGraph({ entity_id: first.id, user_id: dave, depth: 1 });
  assert.equal(view.nodes.length, 2);
  const whole = await memory.graph.userGraph({ user_id: dave, limit: 1 });
  assert.deepEqual([whole.nodes.length, whole.reached_nodes, whole.limit], [1, 2, 1]);
  const merged = await memory.graph.mergeEntities({ entity_id: second.id, user_id: dave, into: first.id });
  assert.equal(merged.id, first.id);
  await memory.graph.splitEntity({ entity_id: second.id, user_id: dave });
  assert.equal((await memory.graph.entities({ user_id: dave })).length, 2);

  assert.deepEqual(await memory.graph.factReviews({ user_id: dave }), []);
  await assert.rejects(
    memory.graph.resolveFactReview({ review_id: "00000000-0000-4000-8000-000000000000", user_id: dave, keep: "fact" }),
    NotFound,
  );
});

test("lifecycle: health, export, import, audit, deletion with receipts", async () => {
  const erin = user("erin");
  await memory.memories.addMany({ memories: [
    { user_id: erin, content: "Erin drinks oat milk lattes" },
    { user_id: erin, content: "Erin drinks oat milk lattes" },
  ], wait: true });
  const health = await memory.health.memoryHealth({ user_id: erin });
  assert.equal(health.user_id, erin);
  const acted = await memory.health.healthAction({ user_id: erin, action: "retry_jobs" });
  assert.equal(acted.action, "retry_jobs");

  const lines = await memory.lifecycle.exportMemories({ user_id: erin });
  assert.ok(lines.length >= 1);
  const frank = user("frank");
  const moved = lines.map((line) => ({ ...line, user_id: frank }));
  const counts = await memory.lifecycle.importMemories({ memories: moved });
  assert.ok((counts["imported"] ?? 0) >= 1);
  assert.ok((await memory.memories.count({ user_id: frank })) >= 1);

  const audit = await memory.lifecycle.auditLog({ user_id: erin, limit: 5 });
  assert.ok(audit.results.length >= 1);

  const one = await memory.memories.add({ user_id: frank, content: "Frank keeps bees", wait: true });
  const receipt = await memory.lifecycle.erase({ user_id: frank, memory_id: one.id });
  assert.equal(receipt.scope, "memory");
  const everything = await memory.lifecycle.eraseUser({ user_id: frank });
  assert.equal(everything.scope, "user");
  assert.equal(await memory.memories.count({ user_id: frank }), 0);
});

test("curation: bulk deletion with one receipt, receipts, users, facts retired and corrected", async () => {
  const gil = user("gil");
  const batch = await memory.memories.addMany({ memories: [
    { user_id: gil, content: "Gil keeps a sourdough starter" },
    { user_id: gil, content: "Gil cycles to work" },
  ], wait: true });
  const receipt = await memory.lifecycle.eraseMemories({ user_id: gil, memory_ids: batch.map((m) => m.id) });
  assert.equal(receipt.memories, 2);
  const receipts = await memory.lifecycle.deletionReceipts({ user_id: gil });
  assert.ok(receipts.some((r) => r.request_id === receipt.request_id));
  const again = await memory.lifecycle.deletionReceipt({ request_id: receipt.request_id });
  assert.equal(again.memories, 2);

  const lives = await memory.graph.addFact({ user_id: gil, subject: "Gil", predicate: "lives_in", object: "Porto" });
  const likes = await memory.graph.addFact({ user_id: gil, subject: "Gil", predicate: "likes", value: "jazz" });
  const fixed = await memory.graph.correctFact({ fact_id: lives.id, user_id: gil, object: "Braga" });
  assert.equal(fixed.object, "Braga");
  const retired = await memory.graph.retireFact({ fact_id: likes.id, user_id: gil });
  assert.notEqual(retired.superseded_at, null);
  const restored = await memory.graph.restoreFact({ fact_id: likes.id, user_id: gil });
  assert.equal(restored.superseded_at, null);
  const glance = await memory.lifecycle.userOverview({ user_id: gil, days: 7, weeks: 4 });
  assert.deepEqual([glance.memories, glance.facts, glance.per_day.length], [0, 2, 7]);
  const users = await memory.lifecycle.listUsers({ limit: 1000 });
  const listed = users.find((u) => u.user_id === gil);
  assert.ok(listed && listed.facts >= 1 && listed.memories === 0);
});

test("webhooks: subscribe, read, change, rotate, deliveries, replay, remove", async () => {
  // A public address: the server refuses private ones, and nothing here waits for delivery.
  const created = await memory.webhooks.createWebhook({ url: "https://93.184.216.34/hook", event_types: ["memory.created"] });
  assert.match(created.secret, /^whsec_/);
  const listed = await memory.webhooks.listWebhooks();
  assert.ok(listed.some((h) => h.id === created.id));
  assert.ok(!("secret" in (await memory.webhooks.getWebhook({ webhook_id: created.id }))));
  await memory.memories.add({ user_id: user("hal"), content: "Hal collects stamps", wait: true });
  const paused = await memory.webhooks.updateWebhook({ webhook_id: created.id, enabled: false });
  assert.equal(paused.enabled, false);
  const rotated = await memory.webhooks.rotateWebhookSecret({ webhook_id: created.id });
  assert.notEqual(rotated.secret, created.secret);
  const deliveries = await memory.webhooks.webhookDeliveries({ webhook_id: created.id });
  assert.ok(deliveries.length >= 1 && deliveries.every((d) => d.event_type === "memory.created"));
  const replayed = await memory.webhooks.replayWebhook({ webhook_id: created.id });
  assert.equal(replayed.replayed, 0); // nothing is dead-lettered yet
  await memory.webhooks.deleteWebhook({ webhook_id: created.id });
  await assert.rejects(memory.webhooks.getWebhook({ webhook_id: created.id }), NotFound);
});

// Last, so a new operation needs no line here to be called: each one the tests above did not
// call, with the example the operation table documents (its ids name nothing, so a 404 or a
// 409 is the server having read the request; a wrong path, query or body is a 422 or a 400).
test("every other operation, with its documented example", async () => {
  for (const key of Object.keys(OPERATIONS)) {
    const cut = key.indexOf("_");
    const resource = key.slice(0, cut);
    const method = key.slice(cut + 1).replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    if (called.has(`${resource}.${method}`)) continue;
    const target = (memory as unknown as Record<string, Record<string, (p: unknown) => Promise<unknown>>>)[resource];
    assert.ok(target && typeof target[method] === "function", `no method ${resource}.${method}`);
    try {
      await target[method]!({ ...EXAMPLES[key] });
    } catch (error) {
      assert.ok(error instanceof MemvaultError && [404, 409].includes(error.status), `${key}: ${String(error)}`);
    }
  }
});
