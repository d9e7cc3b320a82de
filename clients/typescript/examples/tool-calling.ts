// memvault as tools a model can call (OpenAI's function calling; the Vercel AI SDK's `tool()`
// takes the same JSON schemas). Run: MEMVAULT_URL=http://127.0.0.1:8765 node build/examples/tool-calling.js
import { MemvaultClient } from "../src/index.js";

const memory = new MemvaultClient({
  baseUrl: process.env["MEMVAULT_URL"] ?? "http://127.0.0.1:8765",
  ...(process.env["MEMVAULT_API_KEY"] ? { apiKey: process.env["MEMVAULT_API_KEY"] } : {}),
});
const userId = `tools-${Date.now()}`;

/** The tools, as `tools` of an OpenAI chat completion request. */
export const tools = [
  {
    type: "function",
    function: {
      name: "remember_fact",
      description: "Remember one fact about the user for future conversations.",
      parameters: {
        type: "object",
        properties: { fact: { type: "string", description: "one fact, in a sentence" } },
        required: ["fact"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "search_memories",
      description: "Find what is known about the user that is relevant to a query, best first.",
      parameters: {
        type: "object",
        properties: { query: { type: "string" } },
        required: ["query"],
      },
    },
  },
] as const;

/** Runs a tool call the model asked for; what it returns goes back as the tool's message. */
export async function callTool(name: string, argumentsJson: string): Promise<string> {
  const args = JSON.parse(argumentsJson) as { fact?: string; query?: string };
  if (name === "remember_fact" && args.fact) {
    const stored = await memory.add({ user_id: userId, content: args.fact, wait: true });
    return JSON.stringify({ stored: stored.id, action: stored.dedup.action });
  }
  if (name === "search_memories" && args.query) {
    const found = await memory.search({ user_id: userId, query: args.query, limit: 3 });
    return JSON.stringify(found.results.map((hit) => hit.content));
  }
  return JSON.stringify({ error: `unknown tool ${name}` });
}

// What a model's tool calls look like in a completion (`choices[0].message.tool_calls`):
const calls = [
  { function: { name: "remember_fact", arguments: JSON.stringify({ fact: "Prefers an aisle seat" }) } },
  { function: { name: "search_memories", arguments: JSON.stringify({ query: "seat preference" }) } },
];
for (const call of calls) console.log(call.function.name, "->", await callTool(call.function.name, call.function.arguments));
await memory.lifecycle.eraseUser({ user_id: userId });
