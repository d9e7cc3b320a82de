// The transport every generated method goes through: one request as the operation table
// describes it, retried where that cannot apply a write twice, with the consistency token that
// gives read-your-writes across API processes. Only `fetch`, `AbortController` and
// `URLSearchParams`: Node >= 18, browsers and edge runtimes alike.

import { MemvaultError } from "./error.js";
import { ERROR_BY_STATUS, ERROR_CLASSES, InvalidInput, ServerUnreachable } from "./generated/errors.js";
import type { JsonValue } from "./generated/types.js";

export interface ClientOptions {
  /** The server's root, e.g. `http://127.0.0.1:8765` (`/v1/...` is added). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …`; the key's tenant is the client's tenant. */
  apiKey?: string;
  /** How long one attempt may take, in milliseconds (default 60 000: `wait` may take 30 s). */
  timeoutMs?: number;
  /** Retries after a 429 or 503, or a connection error of a read (default 2; 0: none). */
  maxRetries?: number;
  /** The longest wait before a retry, whatever `Retry-After` asks (default 30 000 ms). */
  maxRetryDelayMs?: number;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof globalThis.fetch;
}

/** Per-call settings; each overrides the client's. */
export interface RequestOptions {
  /** Aborts the call (and any wait before a retry); the call rejects with the signal's reason. */
  signal?: AbortSignal;
  timeoutMs?: number;
  maxRetries?: number;
  headers?: Record<string, string>;
}

/** One operation's request, as `OPERATIONS` in the generated client declares it. */
export interface OperationSpec {
  readonly name: string;
  readonly method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  readonly path: string;
  readonly pathNames: readonly string[];
  readonly flags: readonly string[];
  /** With a body: the parameters that go in the query string; the rest go in the body. */
  readonly query: readonly string[] | null;
  readonly body: boolean;
  /** The field of the answer the method returns (`"root"`: the answer whole). */
  readonly returns: string | null;
  readonly noContent: boolean;
  /** Sending it twice does no more than once: a read (a search too, though a POST), PUT, DELETE. */
  readonly repeatable: boolean;
  /** A write whose route takes an `Idempotency-Key`: sent with one, and safe to send again. */
  readonly keyed: boolean;
}

export const WRITTEN_HEADER = "memvault-written-lsn";
export const READ_AFTER_HEADER = "memvault-read-after";
export const IDEMPOTENCY_HEADER = "idempotency-key";
const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_RETRIES = 2;
const DEFAULT_MAX_DELAY_MS = 30_000;
// A read or an idempotent method (`repeatable`) may be sent again whatever became of the attempt
// before. So may a keyed write (a POST or PATCH route made from the operation table): it carries
// an Idempotency-Key made for the call, the same on every attempt, and the server answers a
// repeat with the first answer. Any other POST is retried only on an answer that says nothing
// was done.
const NOTHING_DONE = new Set(["rate_limited", "store_unavailable", "write_conflict"]);

interface Built {
  path: string;
  query: URLSearchParams;
  body: { [key: string]: unknown } | null;
  idempotencyKey: string | null;
}

interface Attempt {
  response?: Response;
  failure?: MemvaultError;
}

export class Transport {
  private readonly root: string;
  private readonly headers: Record<string, string>;
  private readonly fetcher: typeof globalThis.fetch;
  // The highest consistency token a server gave: its WAL position, and as it was written.
  private written: { position: bigint; token: string } | null = null;

  constructor(private readonly options: ClientOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      url = new URL("invalid:");
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new MemvaultError("baseUrl must be an http:// or https:// URL, e.g. http://127.0.0.1:8765.", {
        code: "configuration_error",
        details: { field: "baseUrl" },
      });
    }
    this.root = url.origin + url.pathname.replace(/\/+$/, "");
    this.headers = { accept: "application/json", ...options.headers };
    if (options.apiKey !== undefined) this.headers["authorization"] = `Bearer ${options.apiKey}`;
    const fetcher = options.fetch ?? globalThis.fetch;
    this.fetcher = fetcher.bind(globalThis);
  }

  /** The consistency token this client sends (`Memvault-Read-After`), if it has one. */
  get consistencyToken(): string | null {
    return this.written?.token ?? null;
  }

  async call(spec: OperationSpec, params: object, options: RequestOptions = {}): Promise<unknown> {
    const built = build(spec, params);
    const retries = options.maxRetries ?? this.options.maxRetries ?? DEFAULT_RETRIES;
    for (let attempt = 0; ; attempt++) {
      const { response, failure } = await this.attempt(spec, built, options);
      if (response?.ok) return this.answer(spec, response);
      const error = failure ?? (await decodeError(response as Response));
      if (attempt >= retries || !retryable(spec, error)) throw error;
      await sleep(this.delay(error, attempt), options.signal);
    }
  }

  private async attempt(spec: OperationSpec, built: Built, options: RequestOptions): Promise<Attempt> {
    options.signal?.throwIfAborted();
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = (): void => controller.abort(options.signal?.reason);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const response = await this.fetcher(this.url(built), {
        method: spec.method,
        headers: this.requestHeaders(built, options),
        body: built.body === null ? null : JSON.stringify(built.body),
        signal: controller.signal,
      });
      this.noteWritten(response.headers.get(WRITTEN_HEADER));
      return { response };
    } catch (cause) {
      if (options.signal?.aborted) throw options.signal.reason;
      return { failure: unreachable(this.root, timedOut, cause) };
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  private url(built: Built): string {
    const query = built.query.toString();
    return `${this.root}${built.path}${query ? `?${query}` : ""}`;
  }

  private requestHeaders(built: Built, options: RequestOptions): Record<string, string> {
    const sent: Record<string, string> = { ...this.headers, ...options.headers };
    if (built.body !== null) sent["content-type"] = "application/json";
    if (this.written !== null) sent[READ_AFTER_HEADER] = this.written.token;
    if (built.idempotencyKey !== null) sent[IDEMPOTENCY_HEADER] = built.idempotencyKey;
    return sent;
  }

  private async answer(spec: OperationSpec, response: Response): Promise<unknown> {
    if (spec.noContent || response.status === 204) return undefined;
    let payload: unknown;
    try {
      payload = await response.json();
    } catch (cause) {
      throw unexpected(response, cause);
    }
    if (spec.returns === null || spec.returns === "root") return payload;
    if (typeof payload !== "object" || payload === null || !(spec.returns in payload)) {
      throw unexpected(response);
    }
    return (payload as Record<string, unknown>)[spec.returns];
  }

  /** Keep the highest token: answers from several processes may come back out of order. */
  private noteWritten(token: string | null): void {
    const position = token === null ? null : walPosition(token);
    if (token === null || position === null) return;
    if (this.written === null || position > this.written.position) {
      this.written = { position, token: token.trim() };
    }
  }

  private delay(error: MemvaultError, attempt: number): number {
    const cap = this.options.maxRetryDelayMs ?? DEFAULT_MAX_DELAY_MS;
    if (error.retryAfter !== null) return Math.min(cap, error.retryAfter * 1000);
    // Exponential backoff with jitter, so clients refused together do not return together.
    const base = Math.min(cap, 500 * 2 ** attempt);
    return base / 2 + Math.random() * (base / 2);
  }
}

function retryable(spec: OperationSpec, error: MemvaultError): boolean {
  if (error.status === 429) return true;
  // The same keyed write still running (another host took the first attempt).
  if (error.status === 409) return error.code === "request_in_progress";
  // A keyed write is resent after any of these, request_timeout too: one that committed as
  // the deadline struck marked its key in the same transaction, so its retry is told so
  // (409 request_done_answer_lost) and never runs twice.
  const repeatable = spec.repeatable || spec.keyed;
  if (error instanceof ServerUnreachable && error.status === 0) return repeatable;
  if (error.status !== 502 && error.status !== 503 && error.status !== 504) return false;
  return repeatable || NOTHING_DONE.has(error.code);
}

/** Split the caller's object into path, query string and body as the route reads them. */
export function build(spec: OperationSpec, params: object): Built {
  const values = Object.entries(params).filter(([, v]) => v !== undefined && v !== null);
  const given = new Map<string, unknown>(values);
  const path = spec.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = given.get(name);
    if (value === undefined || value === "") {
      throw new InvalidInput(`${name} is required.`, { status: 0, details: { field: name } });
    }
    const text = String(value);
    if (/^\.+$/.test(text) && text.length <= 2) {
      // A URL parser resolves "." and ".." (even as %2E) before the request leaves, so such a
      // request would reach another route: refuse it here (the Python client can send it).
      throw new InvalidInput(`${name} "${text}" cannot be sent in a URL path from fetch.`, {
        status: 0,
        details: { field: name },
      });
    }
    return pathSegment(text);
  });
  const query = new URLSearchParams();
  const body: { [key: string]: unknown } = {};
  for (const [name, value] of given) {
    if (spec.pathNames.includes(name)) continue;
    const inQuery = spec.flags.includes(name) || !spec.body || (spec.query ?? []).includes(name);
    if (inQuery) appendQuery(query, name, value);
    else body[name] = value;
  }
  const idempotencyKey = spec.keyed ? globalThis.crypto.randomUUID() : null;
  return { path, query, body: spec.body ? body : null, idempotencyKey };
}

/** One path segment, every character kept (`/` and `%` encoded; the server decodes each
 * segment on its own, as the Python client sends them). */
export function pathSegment(value: string): string {
  return encodeURIComponent(value);
}

function appendQuery(query: URLSearchParams, name: string, value: unknown): void {
  for (const item of Array.isArray(value) ? value : [value]) {
    if (item instanceof Date) query.append(name, item.toISOString());
    else if (typeof item === "object" && item !== null) query.append(name, JSON.stringify(item));
    else query.append(name, String(item));
  }
}

/** A WAL position `16/B374D848` as a number, or null for a token that is not one. */
export function walPosition(token: string): bigint | null {
  const match = /^\s*([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})\s*$/.exec(token);
  if (match === null) return null;
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}

/** Seconds from a Retry-After header: a number of seconds or an HTTP date. */
export function retryAfterSeconds(value: string | null): number | null {
  if (value === null || value.trim() === "") return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const when = Date.parse(value);
  return Number.isNaN(when) ? null : Math.max(0, (when - Date.now()) / 1000);
}

async function decodeError(response: Response): Promise<MemvaultError> {
  const init = {
    status: response.status,
    requestId: response.headers.get("x-request-id"),
    retryAfter: retryAfterSeconds(response.headers.get("retry-after")),
  };
  const envelope = await readEnvelope(response);
  if (envelope === null) {
    const message = `The server answered HTTP ${response.status} without a memvault error body.`;
    const known = ERROR_BY_STATUS[response.status];
    return known ? new known(message, init) : new MemvaultError(message, { ...init, code: "http_error" });
  }
  const known = ERROR_CLASSES[envelope.code] ?? MemvaultError;
  return new known(envelope.message, { ...init, code: envelope.code, details: envelope.details });
}

interface Envelope {
  code: string;
  message: string;
  details: { [key: string]: JsonValue };
}

async function readEnvelope(response: Response): Promise<Envelope | null> {
  try {
    const error: unknown = ((await response.json()) as { error?: unknown }).error;
    if (typeof error !== "object" || error === null) return null;
    const { code, message, details } = error as Record<string, unknown>;
    if (typeof code !== "string" || typeof message !== "string") return null;
    const known = typeof details === "object" && details !== null && !Array.isArray(details);
    return { code, message, details: known ? (details as Envelope["details"]) : {} };
  } catch {
    return null;
  }
}

function unreachable(root: string, timedOut: boolean, cause: unknown): ServerUnreachable {
  const where = new URL(root).origin;
  const message = timedOut
    ? `The memvault server at ${where} did not answer in time; a write may or may not have been applied.`
    : `Could not reach the memvault server at ${where}; is it running?`;
  const reason = timedOut ? "timeout" : cause instanceof Error ? cause.name : "network";
  return new ServerUnreachable(message, { status: 0, details: { reason }, cause });
}

function unexpected(response: Response, cause?: unknown): MemvaultError {
  return new MemvaultError(
    "The server's answer is not one this client understands; is the base URL a memvault server of a matching version?",
    { status: response.status, code: "unexpected_response", cause },
  );
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
