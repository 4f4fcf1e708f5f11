/**
 * RPC and provider URLs often carry an API key in their path, query or user info
 * (`https://base-mainnet.g.alchemy.com/v2/<key>`). Anything we log, put into workflow history or
 * answer to a client keeps only a URL's origin: `https://base-mainnet.g.alchemy.com/…`.
 */
const URL_IN_TEXT = /\b([a-z][a-z0-9+.-]*:\/\/)(?:[^\s/?#@"'`]*@)?([^\s/?#"'`]+)([^\s"'`]*)/gi;

export function redactUrls(text: string): string {
  return text.replace(
    URL_IN_TEXT,
    (_url, scheme: string, host: string, rest: string) => `${scheme}${host}${rest && rest !== '/' ? '/…' : rest}`,
  );
}

/** Every string inside `value` redacted (objects and arrays copied; other values as they are). */
export function redactDeep<T>(value: T, depth = 0): T {
  if (typeof value === 'string') return redactUrls(value) as T;
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, depth + 1)) as T;
  if (!isPlain(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v, depth + 1)])) as T;
}

const isPlain = (v: object) => Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null;

/** Redacts an error's message and stack in place, down its cause chain (before Temporal records it). */
export function redactError<E>(err: E, depth = 0): E {
  if (!(err instanceof Error) || depth > 5) return err;
  try {
    err.message = redactUrls(err.message);
    if (err.stack) err.stack = redactUrls(err.stack);
  } catch {
    // a frozen or getter-only message: leave it
  }
  redactError((err as { cause?: unknown }).cause, depth + 1);
  return err;
}
