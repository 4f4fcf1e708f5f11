import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { assertKey, type MediaStore } from './store';

/**
 * The default store: files under one directory, served by the API at `GET /media/<key>` (so
 * `{media_url}` is `{publicUrl}/media`). The content type is kept beside the object. Writes go to a
 * temporary file renamed into place, so a reader never sees half an object.
 */
export class FsStore implements MediaStore {
  constructor(readonly dir: string) {}

  private path(key: string) {
    assertKey(key);
    return join(this.dir, key);
  }

  async put(key: string, body: Buffer, contentType: string): Promise<void> {
    const path = this.path(key);
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(tmp, body);
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
