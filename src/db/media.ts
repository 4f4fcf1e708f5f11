import { EntitySchema, OptionalProps } from '@mikro-orm/core';

/**
 * Media generation records (docs/decisions/media-generation.md). The charge of a job lives in the
 * shared charge ledger (`inference_charges`, id `media:<network>:<payer>:<nonce>`); these tables hold
 * the job, its stored assets and the buyer-signature nonces.
 */

/** One paid media request (image, video or music): the durable idempotency record of its key. */
export class MediaJob {
  [OptionalProps]?: 'createdAt' | 'updatedAt' | 'progress';
  id!: string; // UUID: the public jobId
  workflowId!: string; // media:<buyer>:<idempotency-key>, unique
  buyer!: string; // lower-case payer address
  kind!: string; // image | video | music
  model!: string;
  prompt!: string;
  /** sha256 of the request (route and body): the same key with another request is refused. */
  fingerprint!: string;
  price!: string;
  network!: string;
  chargeId!: string;
  state!: string;
  progress: number = 0;
  providerJobId?: string | null;
  error?: string | null;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
}

/** A stored artifact. Its URL is `{media_url}/<key>`; deleting the asset deletes the object. */
export class MediaAsset {
  [OptionalProps]?: 'createdAt';
  id!: string; // UUID, derived from the job and the artifact index (a retried store is idempotent)
  buyer!: string;
  jobId!: string;
  kind!: string;
  model!: string;
  prompt!: string;
  contentType!: string;
  costUsdc!: string;
  key!: string;
  size!: number;
  createdAt: Date = new Date();
}

/** A buyer-signature nonce: the primary key makes each nonce single-use. */
export class MediaBuyerNonce {
  nonce!: string; // <buyer>:<nonce>
  buyer!: string;
  expiresAt!: Date;
  usedAt!: Date;
}

export const MediaJobSchema = new EntitySchema<MediaJob>({
  class: MediaJob,
  tableName: 'media_jobs',
  indexes: [{ properties: ['buyer'] }, { properties: ['state'] }],
  properties: {
    id: { type: 'string', primary: true, length: 36 },
    workflowId: { type: 'string', length: 200, unique: true },
    buyer: { type: 'string', length: 64 },
    kind: { type: 'string', length: 16 },
    model: { type: 'string', length: 200 },
    prompt: { type: 'text' },
    fingerprint: { type: 'string', length: 64 },
    price: { type: 'string', length: 80 },
    network: { type: 'string', length: 32 },
    chargeId: { type: 'string', length: 200 },
    state: { type: 'string', length: 24 },
    progress: { type: 'integer', default: 0 },
    providerJobId: { type: 'string', length: 200, nullable: true },
    error: { type: 'text', nullable: true },
    createdAt: { type: 'datetime' },
    updatedAt: { type: 'datetime' },
  },
});

export const MediaAssetSchema = new EntitySchema<MediaAsset>({
  class: MediaAsset,
  tableName: 'media_assets',
  // The library's page order (buyer, createdAt desc, id desc) is served by this index.
  indexes: [{ properties: ['buyer', 'createdAt', 'id'] }, { properties: ['jobId'] }],
  properties: {
    id: { type: 'string', primary: true, length: 36 },
    buyer: { type: 'string', length: 64 },
    jobId: { type: 'string', length: 36 },
    kind: { type: 'string', length: 16 },
    model: { type: 'string', length: 200 },
    prompt: { type: 'text' },
    contentType: { type: 'string', length: 100 },
    costUsdc: { type: 'string', length: 80 },
    key: { type: 'string', length: 300 },
    size: { type: 'integer' },
    createdAt: { type: 'datetime' },
  },
});

export const MediaBuyerNonceSchema = new EntitySchema<MediaBuyerNonce>({
  class: MediaBuyerNonce,
  tableName: 'media_buyer_nonces',
  indexes: [{ properties: ['expiresAt'] }],
  properties: {
    nonce: { type: 'string', primary: true, length: 200 },
    buyer: { type: 'string', length: 64 },
    expiresAt: { type: 'datetime' },
    usedAt: { type: 'datetime' },
  },
});

export const MEDIA_ENTITIES = [MediaJobSchema, MediaAssetSchema, MediaBuyerNonceSchema];
