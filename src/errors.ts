/** An error answered with the spec's generic envelope `{type: api_error, code, message}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Headers the answer carries (e.g. `Retry-After` on a 429). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const envelope = (status: number, message: string) => ({ type: 'api_error' as const, code: status, message });

/** Routes with their own error shape (settle, verify, permit) set this on ctx.state before parsing. */
export type ErrorShape = (status: number, message: string) => { status: number; body: unknown };
