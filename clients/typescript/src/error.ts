import type { JsonValue } from "./generated/types.js";

/** What an error carries besides its message. */
export interface ErrorInit {
  status?: number;
  code?: string;
  details?: { [key: string]: JsonValue };
  requestId?: string | null;
  retryAfter?: number | null;
  cause?: unknown;
}

/**
 * The root of every error the client raises; the generated classes in `errors.ts` mirror
 * `memvault.errors` (one class per error code of the server's envelope).
 *
 * `status` is the HTTP status the server answered (0 when none came back), `code` the
 * envelope's machine code, `requestId` the server's `x-request-id` (quote it in a bug report),
 * `retryAfter` the seconds the server asked to wait, when it said.
 */
export class MemvaultError extends Error {
  static readonly code: string = "internal_error";
  static readonly status: number = 500;

  readonly status: number;
  readonly code: string;
  readonly details: { [key: string]: JsonValue };
  readonly requestId: string | null;
  readonly retryAfter: number | null;

  constructor(message: string, init: ErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    const kind = new.target as typeof MemvaultError;
    this.name = kind.name;
    this.status = init.status ?? kind.status;
    this.code = init.code ?? kind.code;
    this.details = init.details ?? {};
    this.requestId = init.requestId ?? null;
    this.retryAfter = init.retryAfter ?? null;
  }
}
