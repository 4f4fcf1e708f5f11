import type { Middleware } from 'koa';

/**
 * NUL bytes are refused at the door: PostgreSQL cannot store them in text, so a NUL reaching the
 * database became a 500. A path or query with one answers 400 here; JSON bodies are checked by
 * jsonBody after parsing. A plain 400 (not an ApiError), so an app with one error shape (the top-up
 * gateway) answers in it.
 */
export function refuseNulInUrl(): Middleware {
  return async (ctx, next) => {
    if (ctx.originalUrl.includes('%00') || ctx.originalUrl.includes('\u0000')) ctx.throw(400, 'the URL contains a NUL byte');
    await next();
  };
}

/** Deeper JSON than any request of ours needs; past it the body is refused (and never walked recursively). */
export const MAX_JSON_DEPTH = 32;

/**
 * What is wrong with a parsed JSON value, if anything: a NUL byte in a string or key, or nesting
 * deeper than MAX_JSON_DEPTH. Iterative, so a hostile 10 000-level body cannot overflow the stack.
 */
export function jsonProblem(value: unknown): 'nul' | 'depth' | undefined {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return 'nul';
    } else if (v && typeof v === 'object') {
      if (depth >= MAX_JSON_DEPTH) return 'depth';
      for (const [k, child] of Object.entries(v)) {
        if (k.includes('\u0000')) return 'nul';
        stack.push([child, depth + 1]);
      }
    }
  }
  return undefined;
}
