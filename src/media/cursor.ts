/**
 * Library cursors: the last asset of a page as (createdAt, id), base64url. Pages are ordered by
 * createdAt then id, both descending, and the next page starts strictly after the cursor, so new
 * assets never shift or repeat entries of later pages (stable pagination).
 */
export const encodeCursor = (a: { createdAt: Date; id: string }) => Buffer.from(`${a.createdAt.getTime()}:${a.id}`).toString('base64url');

export function decodeCursor(cursor: string): { createdAt: Date; id: string } | undefined {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) return undefined;
  const m = /^(\d{1,15}):([0-9a-f-]{36})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  return m ? { createdAt: new Date(Number(m[1])), id: m[2]! } : undefined;
}
