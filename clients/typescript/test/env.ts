// What the suite is pointed at: a live `memvault serve` with keys required, started by
// tests/test_typescript_client.py (or by hand, see README.md).
import { MemvaultClient, type ClientOptions } from "../src/index.js";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the suite through tests/test_typescript_client.py`);
  return value;
}

export const BASE_URL = required("MEMVAULT_URL");
/** A key of tenant acme with read, write and admin scopes. */
export const ADMIN_KEY = required("MEMVAULT_ADMIN_KEY");
/** A key of tenant acme that may only read. */
export const READ_KEY = required("MEMVAULT_READ_KEY");
/** A key of another tenant, globex. */
export const OTHER_KEY = required("MEMVAULT_OTHER_KEY");

export function client(options: Partial<ClientOptions> = {}): MemvaultClient {
  return new MemvaultClient({ baseUrl: BASE_URL, apiKey: ADMIN_KEY, ...options });
}

/** A user id no other test uses. */
export function user(name: string): string {
  return `${name}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
}
