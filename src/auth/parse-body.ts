import type { z } from 'zod';
import { ApiError } from '../errors';

/**
 * Validates a parsed JSON body with zod; any mismatch is a 400 in the generic envelope naming each
 * bad field, so clients never see a 500 for bad input.
 */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError(400, 'request body must be a JSON object');
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const problems = result.error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message));
  throw new ApiError(400, `invalid request body: ${problems.join('; ')}`);
}
