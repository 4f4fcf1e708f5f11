import { createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { assertKey, type MediaStore } from './store';

/**
 * The default store: files under one directory, served by the API at `GET /media/<key>` (so
 * `{media_url}` is `{publicUrl}/media`). The content type is kept beside the object. Writes stream to a
 * temporary file renamed into place, so a reader never sees half an object and a failed write leaves none.
 */
export class FsStore implements MediaStore {
  constructor(readonly dir: string) {}

  private path(key: string) {
    assertKey(key);
    return join(this.dir, key);
  }

  async put(key: string, body: Buffer | Readable, contentType: string): Promise<void> {
    const path = this.path(key);
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await pipeline(Buffer.isBuffer(body) ? Readable.from([body]) : body, createWriteStream(tmp));
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    await writeFile(`${path}.type`, contentType);
    await rename(tmp, path);
  }

  async get(key: string) {
    try {
      const path = this.path(key);
      const [body, type] = await Promise.all([readFile(path), readFile(`${path}.type`, 'utf8').catch(() => 'application/octet-stream')]);
      return { body, contentType: type };
    } catch (err: any) {
      if (err?.code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    const path = this.path(key);
    await rm(path, { force: true });
    await rm(`${path}.type`, { force: true });
  }
}
