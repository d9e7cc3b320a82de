// memvault's TypeScript client: the HTTP operations of a memvault server, typed, generated
// from the same operation table as the Python client (see README.md).

import { type ClientOptions, Transport } from "./core.js";
import { GeneratedClient } from "./generated/client.js";

export type { ClientOptions, OperationSpec, RequestOptions } from "./core.js";
export { READ_AFTER_HEADER, WRITTEN_HEADER } from "./core.js";
export type { ErrorInit } from "./error.js";
export * from "./generated/client.js";
export * from "./generated/errors.js";
export type * from "./generated/types.js";

/**
 * A memvault server's operations, grouped by resource as the Python library is
 * (`memory.memories.add`, `memory.conversations.addMessages`, `memory.recall.remember`), and by
 * their flat names too (`memory.add`, `memory.remember`).
 *
 * ```ts
 * const memory = new MemvaultClient({ baseUrl: "http://127.0.0.1:8765", apiKey: process.env.MEMVAULT_API_KEY });
 * await memory.add({ user_id: "alice", content: "Prefers aisle seats", wait: true });
 * const { results } = await memory.search({ user_id: "alice", query: "where does she sit?" });
 * ```
 */
export class MemvaultClient extends GeneratedClient {
  private readonly transport: Transport;

  constructor(options: ClientOptions) {
    const transport = new Transport(options);
    super(transport);
    this.transport = transport;
  }

  /**
   * The consistency token this client holds (the highest `Memvault-Written-Lsn` a server
   * gave it): sent on every request, so reads show this client's writes on any API process.
   */
  get consistencyToken(): string | null {
    return this.transport.consistencyToken;
  }
}
