// Times `search` through the TypeScript client, one question after another, for
// bench/ts_client.py: reads {"url", "user", "questions"} on stdin, prints each round trip in
// seconds as a JSON array.
import { MemvaultClient } from "../src/index.js";

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const job = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { url: string; user: string; questions: string[] };
const memory = new MemvaultClient({ baseUrl: job.url });
await memory.count({ user_id: job.user }); // the connection, opened before the clock starts
const seconds: number[] = [];
for (const query of job.questions) {
  const started = performance.now();
  await memory.search({ user_id: job.user, query, limit: 10 });
  seconds.push((performance.now() - started) / 1000);
}
console.log(JSON.stringify(seconds));
