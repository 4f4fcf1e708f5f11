/**
 * Reading an upstream service's answer (inference and media providers, the gateway, the attestation
 * service) with a byte bound, so a broken or hostile upstream cannot make us buffer without limit.
 */

export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the upstream answer is larger than ${limit} bytes`);
  }
}

/** The whole body, or BodyTooLarge (the rest is cancelled) once it passes `limit` bytes. */
export async function readBounded(res: Response, limit: number): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length'));
  if (declared > limit) {
    await res.body?.cancel().catch(() => undefined);
    throw new BodyTooLarge(limit);
  }
  return collect(res, limit, true);
}

/** At most the first `limit` bytes as text (an error message's prefix); the rest is not read. */
export async function readPrefix(res: Response, limit: number): Promise<string> {
  return (await collect(res, limit, false)).toString('utf8');
}

export const readBoundedText = async (res: Response, limit: number) => (await readBounded(res, limit)).toString('utf8');

async function collect(res: Response, limit: number, strict: boolean): Promise<Buffer> {
  if (!res.body) return Buffer.alloc(0);
  const reader = res.body.getReader();
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return Buffer.concat(parts, size);
      if (size + value.byteLength > limit) {
        if (strict) throw new BodyTooLarge(limit);
        parts.push(Buffer.from(value.buffer, value.byteOffset, limit - size));
        return Buffer.concat(parts, limit);
      }
      parts.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
