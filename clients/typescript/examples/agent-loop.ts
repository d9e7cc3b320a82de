// An agent loop with memory: recall what matters before the model answers, store the turn
// after. Run against a server: MEMVAULT_URL=http://127.0.0.1:8765 node build/examples/agent-loop.js
// With OPENAI_API_KEY set the model is OpenAI's; without it a stand-in echoes what it recalled.
import { MemvaultClient } from "../src/index.js";

const memory = new MemvaultClient({
  baseUrl: process.env["MEMVAULT_URL"] ?? "http://127.0.0.1:8765",
  ...(process.env["MEMVAULT_API_KEY"] ? { apiKey: process.env["MEMVAULT_API_KEY"] } : {}),
});
const userId = `traveller-${Date.now()}`;
const conversationId = "trip-planning";

async function model(recalled: string, question: string): Promise<string> {
  const key = process.env["OPENAI_API_KEY"];
  if (!key) return `(a stand-in for a model; set OPENAI_API_KEY for a real one) I recall:\n${recalled}`;
  const system = `You are a travel assistant. What you know about the user:\n${recalled}`;
  const response = await fetch("https://api.openai.com/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "gpt-4o-mini",
      messages: [
        { role: "system", content: system },
        { role: "user", content: question },
      ],
    }),
  });
  const answer = (await response.json()) as { choices: Array<{ message: { content: string } }> };
  return answer.choices[0]?.message.content ?? "";
}

async function turn(question: string): Promise<string> {
  // 1. What the agent should know before answering, within a token budget.
  const recalled = await memory.remember({ user_id: userId, query: question, budget_tokens: 400 });
  // 2. The model answers with it.
  const answer = await model(recalled.prompt, question);
  // 3. The exchange is stored: searchable, and facts are learned from it.
  await memory.addMessages({
    user_id: userId,
    conversation_id: conversationId,
    messages: [
      { role: "user", content: question },
      { role: "assistant", content: answer },
    ],
    wait: true,
  });
  return answer;
}

await turn("I'm flying to Lisbon in May and I always want an aisle seat.");
console.log(await turn("Where am I flying, and which seat should you book?"));
await memory.lifecycle.eraseUser({ user_id: userId });
