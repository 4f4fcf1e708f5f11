import type { MikroORM } from '@mikro-orm/core';
import type { AuthContext } from '../auth/key-mode';
import type { Config } from '../config';
import type { NetworkTable, EvmNetworkId } from '../chains/networks';
import type { Relayer } from '../chains/evm/relayer';
import type { ServiceDeps } from '../deps';
import type { SettleReason } from './reasons';
import type { SettleResponse } from '../x402/schemas';
import type { RecordSent } from '../chains/evm/calls';
import type { EntityManager } from '@mikro-orm/core';

/**
 * What every settlement workflow input carries, whatever its scheme. Resolved by the API from our own
 * records at request time (payout and fee from the organization), so the worker never decides who is
 * paid. Visible in the Temporal UI: no secret.
 */
export interface SettlementBase {
  workflowId: string;
  requestId?: string;
  organizationId: string;
  apiKeyId: string;
  network: string;
  payer: string;
  /** Base units that move from the payer. */
  amount: string;
  /** Wallet paid `amount - fee - platformFee`: the organization's payout wallet, `extra.creditedRecipient`, or Solana's `payTo`. */
  payout: string;
  fee: string;
  feeRecipient: string;
  /** A marketplace's cut (`extra.platform` / `extra.platformFeeBps`), also taken from `amount`; absent or '0' when none. */
  platformFee?: string;
  platform?: string;
  /**
   * How long a sent transaction may stay without a proven outcome before the settlement waits in
   * `needs_review` (ms; the API's SETTLE_PARK_AFTER_MS). Absent: PARK_AFTER_MS (workflows/park.ts).
   */
  parkAfterMs?: number;
}

/** Where the skeleton records a settlement's final response (see Scheme.confirm). */
export type RecordOutcome = (em: EntityManager, response: SettleResponse, transaction: string | null) => Promise<unknown>;

/**
 * The one interface every settlement scheme implements (docs/architecture.md). A scheme is pure
 * protocol knowledge: how its payload parses, which business key it has, what must be true on chain,
 * which transaction settles it and how its rejections read. It imports nothing from HTTP or workflows;
 * the single settlement skeleton (src/settle/run.ts, workflows/settlement.ts, activities/settlement.ts)
 * runs every scheme the same way.
 */
export interface Scheme<P = unknown, I extends SettlementBase & { route: string } & P = SettlementBase & { route: string } & P> {
  /** Recorded on settlements and metrics; also the discriminator of the workflow input. */
  readonly route: I['route'];
  /** Routing (spec "POST /v1/settle", steps 1-4): whether a request belongs to this scheme. */
  claims(body: RoutingView): boolean;
  /** The request checks that need no I/O, in the spec's order (403 ApiError for a key of the wrong mode). */
  parse(deps: ParseDeps, auth: AuthContext, body: unknown): Parsed<P>;
  /** Business key: the workflow id every duplicate of this payment lands on. */
  businessKey(p: P): string;
  /** The workflow input: the payment plus payout and fee resolved from our own records. */
  input(deps: ServiceDeps, req: SettleRequest, p: P): Promise<I | Refusal>;
  /**
   * Every rule the chain must confirm, before anything is sent (worker, or the API for /v1/verify).
   * `simulated`: whether the settling transaction would succeed now (see `simulate`); where it did,
   * a scheme may skip the reads it implies (a rejection is a chain that gave no answer).
   */
  verify(p: P, deps: VerifyDeps, simulated?: Promise<boolean>): Promise<Verification>;
  /** Whether this payment's transaction was already signed (write-ahead record): then it is never re-judged. */
  sent(input: I, deps: WorkerDeps): Promise<boolean>;
  /**
   * Simulates the settling transaction against the chain's latest state (EVM: the gas estimate, which
   * `submit` then reuses): true when it would succeed now, false when it reverts; rejects when the
   * chain gave no answer. Sends nothing. The worker's verification takes a success for the chain
   * reads it implies (balance, unused nonce): one simulation per payment.
   */
  simulate?(input: I, deps: WorkerDeps): Promise<boolean>;
  /**
   * Sends the settling transaction once (write-ahead), or reports that it would revert. `record` is
   * written in the same DB transaction as the write-ahead record (never again on a retry that finds it).
   */
  submit(input: I, deps: WorkerDeps, record: RecordSent): Promise<SubmitResult>;
  /**
   * Waits (bounded, retried by Temporal) for the sent transaction's outcome: the final settle
   * response, also given to `record` (in the DB transaction that marks the write-ahead record mined).
   * The wait lasts `waitMs` (default RECEIPT_WAIT_MS), then throws a retryable CONFIRMATION_PENDING type.
   */
  confirm(input: I, deps: WorkerDeps, record: RecordOutcome, waitMs?: number): Promise<Confirmed>;
}

/** The parts of a raw settle/verify body routing looks at (parsed leniently; see src/settle/routes.ts). */
export interface RoutingView {
  network: string;
  payload: Record<string, unknown>;
  extra?: Record<string, unknown>;
  /** Chain id of `network` from the table, when it is a known EVM network. */
  chainId?: number;
}

/** What parsing needs: the network table and the mainnet switch. */
export type ParseDeps = Pick<ServiceDeps, 'networks' | 'config'>;
export type VerifyDeps = {
  config: Pick<Config, 'MIN_VALIDITY_SECONDS' | 'env' | 'SOLANA_FEE_PAYER_KEY' | 'SOLANA_MAX_FEE_LAMPORTS' | 'MAINNETS_ENABLED'>;
  networks: NetworkTable;
};
export interface WorkerDeps extends VerifyDeps {
  config: VerifyDeps['config'] & Pick<Config, 'RECEIPT_WAIT_MS'>;
  db: MikroORM;
  /** With a lane key (a settlement's workflow id): the relayer lane that key always uses (RELAYER_PRIVATE_KEYS). */
  relayerFor(network: EvmNetworkId, laneKey?: string): Relayer;
}

/** A request refused before any workflow: the settle reason and what is known of it. */
export interface Refusal {
  refused: SettleReason | string;
  network: string;
  payer?: string;
  /** Which value was wrong, for the caller (the response's `errorMessage`, as x402's SettleResponse has it). */
  message?: string;
}
/** A parsed payment: the scheme's own part of the workflow input, with its network and payer. */
export type Parsed<P> = { ok: true; payment: P; network: string; payer: string } | ({ ok: false } & Refusal);

export type Verification = { isValid: true; payer: string } | { isValid: false; invalidReason: SettleReason | string; payer: string };
export type SubmitResult =
  { submitted: true; transaction: string } | { submitted: false; reason: string; detail?: string; transaction?: string };
/**
 * The retryable failure types `confirm` throws when its wait ends with the transaction still unmined
 * (EVM: src/chains/evm/calls.ts; Solana): the outcome is not known yet, nothing is wrong.
 */
export const CONFIRMATION_PENDING: readonly string[] = ['ReceiptTimeout', 'ConfirmationTimeout'];

/** The final response, and the transaction it is about (kept on the record even when it failed). */
export type Confirmed = { response: SettleResponse; transaction: string };

/** A registry entry: a skeleton scheme, or a route with its own flow (batched forwarding, cross-chain). */
export interface SettleRoute {
  readonly route: string;
  claims(body: RoutingView): boolean;
  settle(deps: ServiceDeps, req: SettleRequest): Promise<SettleReply>;
  verify(deps: ServiceDeps, auth: AuthContext, body: unknown): Promise<VerifyReply>;
}

export interface SettleReply {
  status: number;
  body: SettleResponse;
}

/** An authenticated POST /v1/settle request. */
export interface SettleRequest {
  em: EntityManager;
  auth: AuthContext;
  requestId: string;
  body: unknown;
  /** How long to wait for the outcome before answering 202 `settlement_pending`. */
  waitMs: number;
}

export interface VerifyReply {
  status: number;
  body: Record<string, unknown>;
}

/** A kind of GET /v1/supported (src/settle/supported.ts). */
export interface SupportedKind {
  x402Version: 1 | 2;
  scheme: 'exact' | 'upto';
  network: string;
  /** Solana kinds: the fee payer a buyer's transaction must name (as x402 advertises it). */
  extra?: { feePayer?: string; facilitatorAddress?: string };
}
