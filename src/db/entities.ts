import { EntitySchema, OptionalProps } from '@mikro-orm/core';
import { BridgeTransferSchema } from './bridge-transfer';
import { MEDIA_ENTITIES } from './media';
import { StuckPaymentCountSchema } from './stuck-payments';

/**
 * Persistent records. Plain classes described by EntitySchema (no decorators), so the same
 * definitions work under tsx, swc and tsc. Ids are UUIDs or business keys.
 */

/** An organization: created by its owner's first SIWE sign-in; owns API keys and payout settings. */
export class Organization {
  id!: string;
  ownerAddress!: string; // lower-case 0x address of the SIWE signer that created it
  name!: string;
  payoutWalletTest?: string | null;
  payoutWalletLive?: string | null;
  /** Solana payout wallets (base58): a Solana payment's payTo must be the one of its mode, when set. */
  payoutWalletSolanaTest?: string | null;
  payoutWalletSolanaLive?: string | null;
  platformFeeBps: number = 0;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
}

/**
 * One security-relevant change, kept for the organization's owner and operators: who (the signed-in
 * wallet), what (`action`, e.g. `payout_wallet_change`), on which organization, and the values
 * before and after (`detail`, JSON). Rows are only ever inserted.
 */
export class AuditLog {
  id!: string;
  organizationId!: string;
  actor!: string;
  action!: string;
  detail!: string;
  createdAt: Date = new Date();
}

/** API key pair. Only hashes are stored; `keyHint` is a short non-secret form for listings. */
export class ApiKey {
  id!: string;
  organizationId!: string;
  name!: string;
  testNet!: boolean;
  publicKeyHash!: string;
  secretKeyHash!: string;
  keyHint!: string;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
  lastUsedAt?: Date | null;
  revokedAt?: Date | null;
  /** Optional end of validity: after it the key answers 403 (spec "revoked or expired"). */
  expiresAt?: Date | null;
}

/** A SIWE nonce handed out by the server; single-use (usedAt set atomically on sign-in). */
export class SiweNonce {
  nonce!: string;
  expiresAt!: Date;
  usedAt?: Date | null;
}

/** A signed-in wallet session behind the `siwe-session` cookie; sign-out revokes it. */
export class Session {
  id!: string;
  organizationId!: string;
  address!: string;
  expiresAt!: Date;
  revokedAt?: Date | null;
  createdAt: Date = new Date();
}

/**
 * One settlement attempt per business key (the workflow id). The primary key is the durable
 * idempotency record that outlives Temporal's retention.
 */
export class Settlement {
  [OptionalProps]?: 'createdAt' | 'updatedAt' | 'fee';
  id!: string; // workflow id: settle:<network>:<payer>:<nonce>
  organizationId!: string;
  apiKeyId!: string;
  route!: string; // eip3009 | permit2-exact | permit2-upto | ...
  network!: string;
  payer!: string;
  recipient?: string | null; // payout wallet or creditedRecipient
  amount!: string;
  fee: string = '0';
  platform?: string | null; // extra.platform: the marketplace paid platformFee
  platformFee?: string | null;
  transaction?: string | null;
  state!: string; // verifying | submitted | settled | failed | rejected
  errorReason?: string | null;
  response?: string | null; // final settle response JSON, replayed to repeats
  /** The operator whose action (workflows/operator-actions.ts) last touched this settlement, and what and why. */
  operator?: string | null;
  operatorReason?: string | null;
  requestId?: string | null;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
}

/**
 * Write-ahead record of every relayer transaction: signed and stored before it is broadcast, so a
 * retried activity re-sends the same bytes (same hash, same nonce) instead of a second transaction.
 */
export class RelayerTransaction {
  [OptionalProps]?: 'createdAt' | 'updatedAt';
  id!: string; // business key of the effect, e.g. settle:...:submit
  chainId!: number;
  signer!: string;
  nonce!: number;
  rawTx!: string; // the latest signed bytes (a fee-bumped replacement replaces them)
  hash!: string; // the latest sent hash; once mined, the hash that was mined
  /** JSON array of every hash ever sent for this effect (replacements, re-nonced sends); null = [hash]. */
  hashes?: string | null;
  status!: string; // signed | mined | reverted
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
}

/**
 * The charge ledger of paid inference: one row per paid chat request, keyed by its authorization
 * (`chat:<network>:<payer>:<nonce>`), so a replayed X-PAYMENT is never charged or served twice.
 * States: settling -> charged -> delivered | client_closed | provider_failed -> refund_pending ->
 * refunded (or needs_review while a reverted refund waits for an operator, then refund_pending again);
 * settling -> unserved -> refund_pending (the settlement outlasted the wait); settling -> rejected
 * (nothing moved; the same authorization may be tried again). A media charge moves from charged to
 * refund_pending once its job failed or was cancelled.
 */
export class InferenceCharge {
  [OptionalProps]?: 'createdAt' | 'updatedAt';
  id!: string;
  settlementId!: string; // the settlement workflow id: settle:<network>:<payer>:<nonce>
  network!: string;
  payer!: string;
  amount!: string;
  model!: string;
  state!: string;
  settlementTx?: string | null;
  refundTx?: string | null;
  error?: string | null;
  requestId?: string | null;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
}

const timestamps = {
  createdAt: { type: 'datetime', onCreate: () => new Date() },
  updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
} as const;

export const OrganizationSchema = new EntitySchema<Organization>({
  class: Organization,
  tableName: 'organizations',
  properties: {
    id: { type: 'string', primary: true, length: 36 },
    ownerAddress: { type: 'string', length: 42, unique: true },
    name: { type: 'string' },
    payoutWalletTest: { type: 'string', length: 42, nullable: true },
    payoutWalletLive: { type: 'string', length: 42, nullable: true },
    payoutWalletSolanaTest: { type: 'string', length: 44, nullable: true },
    payoutWalletSolanaLive: { type: 'string', length: 44, nullable: true },
    platformFeeBps: { type: 'integer', default: 0 },
    ...timestamps,
  },
});

export const ApiKeySchema = new EntitySchema<ApiKey>({
  class: ApiKey,
  tableName: 'api_keys',
  indexes: [{ properties: ['organizationId'] }],
  properties: {
    id: { type: 'string', primary: true, length: 36 },
    organizationId: { type: 'string', length: 36 },
    name: { type: 'string' },
    testNet: { type: 'boolean' },
    publicKeyHash: { type: 'string', length: 64, unique: true },
    secretKeyHash: { type: 'string', length: 64 },
    keyHint: { type: 'string' },
    ...timestamps,
    lastUsedAt: { type: 'datetime', nullable: true },
    revokedAt: { type: 'datetime', nullable: true },
    expiresAt: { type: 'datetime', nullable: true },
  },
});

export const SiweNonceSchema = new EntitySchema<SiweNonce>({
  class: SiweNonce,
  tableName: 'siwe_nonces',
  indexes: [{ properties: ['expiresAt'] }],
  properties: {
    nonce: { type: 'string', primary: true, length: 64 },
    expiresAt: { type: 'datetime' },
    usedAt: { type: 'datetime', nullable: true },
  },
});

export const AuditLogSchema = new EntitySchema<AuditLog>({
  class: AuditLog,
  tableName: 'audit_log',
  indexes: [{ properties: ['organizationId', 'createdAt'] }],
  properties: {
    id: { type: 'string', primary: true, length: 36 },
    organizationId: { type: 'string', length: 36 },
    actor: { type: 'string', length: 42 },
    action: { type: 'string', length: 64 },
    detail: { type: 'text' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});

export const SessionSchema = new EntitySchema<Session>({
  class: Session,
  tableName: 'sessions',
  indexes: [{ properties: ['expiresAt'] }],
  properties: {
    id: { type: 'string', primary: true, length: 64 },
    organizationId: { type: 'string', length: 36 },
    address: { type: 'string', length: 42 },
    expiresAt: { type: 'datetime' },
    revokedAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});

export const SettlementSchema = new EntitySchema<Settlement>({
  class: Settlement,
  tableName: 'settlements',
  indexes: [{ properties: ['organizationId'] }, { properties: ['state'] }],
  properties: {
    id: { type: 'string', primary: true, length: 200 },
    organizationId: { type: 'string', length: 36 },
    apiKeyId: { type: 'string', length: 36 },
    route: { type: 'string', length: 32 },
    network: { type: 'string', length: 32 },
    payer: { type: 'string', length: 64 },
    recipient: { type: 'string', length: 64, nullable: true },
    amount: { type: 'string', length: 80 },
    fee: { type: 'string', length: 80, default: '0' },
    platform: { type: 'string', length: 42, nullable: true },
    platformFee: { type: 'string', length: 80, nullable: true },
    transaction: { type: 'string', length: 100, nullable: true },
    state: { type: 'string', length: 16 },
    errorReason: { type: 'string', nullable: true },
    response: { type: 'text', nullable: true },
    operator: { type: 'string', length: 500, nullable: true },
    operatorReason: { type: 'text', nullable: true },
    requestId: { type: 'string', length: 64, nullable: true },
    ...timestamps,
  },
});

export const RelayerTransactionSchema = new EntitySchema<RelayerTransaction>({
  class: RelayerTransaction,
  tableName: 'relayer_transactions',
  uniques: [{ properties: ['chainId', 'signer', 'nonce'] }],
  properties: {
    id: { type: 'string', primary: true, length: 220 },
    chainId: { type: 'integer' },
    signer: { type: 'string', length: 42 },
    nonce: { type: 'integer' },
    rawTx: { type: 'text' },
    hash: { type: 'string', length: 66 },
    hashes: { type: 'text', nullable: true },
    status: { type: 'string', length: 16 },
    ...timestamps,
  },
});

/**
 * Write-ahead record of a Solana settlement transaction: the fee-payer co-signed bytes, stored
 * before the first broadcast, so a retried or restarted activity re-sends the very same transaction
 * (same signature) instead of signing anything new.
 */
export class SolanaTransaction {
  [OptionalProps]?: 'createdAt' | 'updatedAt';
  id!: string; // business key of the effect: <workflow id>:settle
  network!: string;
  signature!: string; // base58, the transaction id
  rawTx!: string; // base64 wire bytes
  blockhash!: string;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
}

/**
 * One merchant top-up (src/topup), keyed by its workflow id `topup:<merchant>:<payer>:<nonce>`: the
 * durable idempotency record that answers a replayed X-PAYMENT after Temporal's retention.
 */
export class TopUp {
  [OptionalProps]?: 'createdAt' | 'updatedAt';
  id!: string;
  merchant!: string;
  buyer!: string;
  payer!: string;
  network!: string; // source network id
  nonce!: string;
  grossAmount!: string;
  fee!: string; // facilitator fee
  bridgeFee!: string;
  netAmount!: string;
  state!: string; // settling | depositing | deposited | refunding | refunded | failed | deferred | bridging | needs_review
  errorReason?: string | null;
  error?: string | null;
  settlementTx?: string | null;
  fillTx?: string | null;
  depositTx?: string | null;
  refundTx?: string | null;
  /** The operator whose action (workflows/operator-actions.ts) last moved this top-up, and what and why. */
  operator?: string | null;
  operatorReason?: string | null;
  requestId?: string | null;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
}

export const SolanaTransactionSchema = new EntitySchema<SolanaTransaction>({
  class: SolanaTransaction,
  tableName: 'solana_transactions',
  properties: {
    id: { type: 'string', primary: true, length: 220 },
    network: { type: 'string', length: 32 },
    signature: { type: 'string', length: 100, unique: true },
    rawTx: { type: 'text' },
    blockhash: { type: 'string', length: 64 },
    ...timestamps,
  },
});

export const InferenceChargeSchema = new EntitySchema<InferenceCharge>({
  class: InferenceCharge,
  tableName: 'inference_charges',
  indexes: [{ properties: ['payer'] }, { properties: ['state'] }],
  // One settlement backs at most one charge: a chat and a media job (or two of either) cannot both be
  // served, or refunded, for one payment (docs/security.md "One settlement, one charge").
  uniques: [{ properties: ['settlementId'] }],
  properties: {
    id: { type: 'string', primary: true, length: 200 },
    settlementId: { type: 'string', length: 200 },
    network: { type: 'string', length: 32 },
    payer: { type: 'string', length: 64 },
    amount: { type: 'string', length: 80 },
    model: { type: 'string', length: 200 },
    state: { type: 'string', length: 16 },
    settlementTx: { type: 'string', length: 100, nullable: true },
    refundTx: { type: 'string', length: 100, nullable: true },
    error: { type: 'text', nullable: true },
    requestId: { type: 'string', length: 64, nullable: true },
    ...timestamps,
  },
});

export const TopUpSchema = new EntitySchema<TopUp>({
  class: TopUp,
  tableName: 'topups',
  indexes: [{ properties: ['merchant', 'buyer'] }, { properties: ['state'] }],
  properties: {
    id: { type: 'string', primary: true, length: 220 },
    merchant: { type: 'string', length: 64 },
    buyer: { type: 'string', length: 42 },
    payer: { type: 'string', length: 42 },
    network: { type: 'string', length: 32 },
    nonce: { type: 'string', length: 66 },
    grossAmount: { type: 'string', length: 80 },
    fee: { type: 'string', length: 80 },
    bridgeFee: { type: 'string', length: 80 },
    netAmount: { type: 'string', length: 80 },
    state: { type: 'string', length: 16 },
    errorReason: { type: 'string', nullable: true },
    error: { type: 'text', nullable: true },
    settlementTx: { type: 'string', length: 100, nullable: true },
    fillTx: { type: 'string', length: 100, nullable: true },
    depositTx: { type: 'string', length: 100, nullable: true },
    refundTx: { type: 'string', length: 100, nullable: true },
    operator: { type: 'string', length: 500, nullable: true },
    operatorReason: { type: 'text', nullable: true },
    requestId: { type: 'string', length: 64, nullable: true },
    createdAt: { type: 'datetime' },
    updatedAt: { type: 'datetime' },
  },
});

export const ALL_ENTITIES = [
  OrganizationSchema,
  ApiKeySchema,
  SiweNonceSchema,
  SessionSchema,
  AuditLogSchema,
  SettlementSchema,
  RelayerTransactionSchema,
  BridgeTransferSchema,
  SolanaTransactionSchema,
  TopUpSchema,
  InferenceChargeSchema,
  ...MEDIA_ENTITIES,
  StuckPaymentCountSchema,
];
