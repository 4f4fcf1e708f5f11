import { DeleteObjectCommand, GetObjectCommand, NoSuchKey, PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import { assertKey, type MediaStore } from './store';

/**
 * The production store: an S3-compatible bucket (AWS S3, R2, MinIO). `{media_url}` is then the
 * bucket's public origin or a CDN in front of it (MEDIA_URL). Credentials come from the SDK's
 * default chain (environment, instance role), never from our config or logs.
 */
export class S3Store implements MediaStore {
  readonly client: S3Client;
  constructor(
    readonly opts: { bucket: string; region: string; endpoint?: string },
    client?: S3Client,
  ) {
    const cfg: S3ClientConfig = { region: opts.region };
    // S3-compatible servers (MinIO, R2) are addressed by path, not by a bucket subdomain.
    if (opts.endpoint) Object.assign(cfg, { endpoint: opts.endpoint, forcePathStyle: true });
    this.client = client ?? new S3Client(cfg);
  }

  async put(key: string, body: Buffer | Readable, contentType: string, length?: number): Promise<void> {
    assertKey(key);
    // A single PUT needs the length up front: a stream of unknown length is read first, which its
    // byte cap bounds (src/media/artifact-download.ts).
    const sized = Buffer.isBuffer(body) || length !== undefined ? body : Buffer.concat(await body.toArray());
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.opts.bucket,
        Key: key,
        Body: sized,
        ...(Buffer.isBuffer(sized) ? {} : { ContentLength: length }),
        ContentType: contentType,
        CacheControl: 'public, max-age=31536000, immutable',
      }),
    );
  }

  async get(key: string) {
    assertKey(key);
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.opts.bucket, Key: key }));
      const bytes = await out.Body!.transformToByteArray();
      return { body: Buffer.from(bytes), contentType: out.ContentType ?? 'application/octet-stream' };
    } catch (err) {
      if (err instanceof NoSuchKey || (err as any)?.name === 'NoSuchKey') return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    assertKey(key);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.opts.bucket, Key: key }));
  }
}
