import type { MediaConfig } from './config';
import { FsStore } from './fs-store';
import type { MediaStore } from './store';

/** The configured store of media artifacts: the local directory, or S3 (src/media/store.ts says what a store does). */
export function createMediaStore(c: MediaConfig): MediaStore {
  if (c.store !== 's3') return new FsStore(c.storeDir);
  // Loaded only when configured: the AWS SDK is large and the default store does not need it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy on purpose (see above)
  const { S3Store } = require('./s3-store') as typeof import('./s3-store');
  return new S3Store({ bucket: c.s3.bucket!, region: c.s3.region, endpoint: c.s3.endpoint });
}
