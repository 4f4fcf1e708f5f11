import { ApplicationFailure } from '@temporalio/activity';
import { heartbeat } from '../../temporal/heartbeat';
import { VersionedTransaction } from '@solana/web3.js';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { assertKeyModeAllows } from '../../auth/key-mode';
import { isSolanaNetworkId, type SolanaNetworkId } from '../../chains/networks';
import { base58Encode } from '../../chains/solana/base58';
import { solanaNetworks } from '../../chains/solana/context';
import { SolanaTransaction } from '../../db/entities';
import { callerOrganization } from '../../auth/organizations';
import { ZERO_ADDRESS } from '../../settle/payout';
import { relayerTxId, solanaSettleWorkflowId } from '../../temporal/workflow-ids';
import { paymentPayloadEnvelopeSchema, type SettleResponse } from '../../x402/schemas';
import type { Parsed, Scheme, VerifyDeps, WorkerDeps } from '../scheme';
import { exactSvmPayloadBodySchema, solanaPaymentRequirementsSchema } from './schemas';
import type { SolanaPayment, SolanaSettleInput } from './types';
import { inspectExactSvmTransaction, verifyExactSvmOnChain } from './verify';
import { mainnetAllowed } from '../../chains/mainnet-gate';

const EXPIRED = 'settle_exact_svm_block_height_exceeded';
/** A transaction not yet seen is broadcast again this often while waiting (nodes may drop it). */
const RESEND_EVERY_MS = 2_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const clusterOf = (deps: Pick<VerifyDeps, 'config'>, id: SolanaNetworkId) => {
  const c = solanaNetworks(deps.config).get(id);
  if (!c) throw ApplicationFailure.nonRetryable(`solana network ${id} is not configured`, 'invalid_network');
  return c;
};
const findRecorded = (deps: WorkerDeps, input: SolanaSettleInput) =>
  deps.db.em.fork().findOne(SolanaTransaction, { id: relayerTxId(input.workflowId, 'settle') });

/**
 * Solana `exact` (spec routing step 1): the buyer's partially signed transfer, which we co-sign as
 * fee payer. The co-signed bytes are stored before the first broadcast (write-ahead), so every
 * retry re-sends exactly those bytes, and the cluster's signature status is asked before anything
 * is sent. The buyer pays `payTo` directly, so organization payout and fee do not apply
 * (docs/decisions/solana-settlement.md).
 */
/** The most the fee payer pays for one settlement (SOLANA_MAX_FEE_LAMPORTS). */
const maxFee = (deps: Pick<VerifyDeps, 'config'>) => BigInt(deps.config.SOLANA_MAX_FEE_LAMPORTS);

export const solana: Scheme<SolanaPayment, SolanaSettleInput> = {
  route: 'solana',
  claims: (body) => isSolanaNetworkId(body.network),

  parse(deps, auth, raw): Parsed<SolanaPayment> {
    const body = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
    const rawNetwork = (body.paymentPayload as { network?: unknown } | undefined)?.network;
    const networkName = typeof rawNetwork === 'string' ? rawNetwork : '';
    const refuse = (refused: string, network = networkName, payer?: string) => ({ ok: false as const, refused, network, payer });

    const envelope = paymentPayloadEnvelopeSchema.safeParse(body.paymentPayload);
    if (!envelope.success) return refuse('invalid_payload');
    const parsedReq = solanaPaymentRequirementsSchema.safeParse(body.paymentRequirements);
    if (!parsedReq.success) return refuse('invalid_payment_requirements');
    const requirements = parsedReq.data;
    if (envelope.data.scheme !== 'exact' || requirements.scheme !== 'exact') return refuse('unsupported_scheme');
    const svmPayload = exactSvmPayloadBodySchema.safeParse(envelope.data.payload);
    if (!svmPayload.success) return refuse('invalid_payload');

    // Same-chain only: the requirement names the same network and no bridge destination.
    const id = envelope.data.network;
    if (!isSolanaNetworkId(id) || requirements.network !== id || requirements.extra?.destinationChainId !== undefined) {
      return refuse('invalid_network');
    }
    const ctx = solanaNetworks(deps.config).get(id);
    assertKeyModeAllows(auth, { testnet: id === 'solana-devnet' }); // 403 before anything else is said
    if (!ctx || !mainnetAllowed(deps.config, ctx.network)) return refuse('invalid_network', id);
    // We sponsor fees for USDC payments only (what /v1/supported advertises).
    if (requirements.asset !== ctx.network.usdc) return refuse('invalid_payment_requirements', id);
    const feePayer = ctx.feePayer.publicKey;
    if (requirements.extra?.feePayer !== undefined && requirements.extra.feePayer !== feePayer.toBase58()) {
      return refuse('invalid_exact_svm_payload_fee_payer_mismatch', id);
    }
    // The buyer's own transaction pays payTo the whole amount: no cut can be taken, no payout redirected.
    const extra = requirements.extra as { platform?: unknown; platformFeeBps?: unknown; creditedRecipient?: unknown } | null | undefined;
    if (extra?.platform !== undefined || extra?.platformFeeBps !== undefined) {
      return {
        ...refuse('invalid_payment_requirements', id),
        message: 'extra.platformFeeBps is not applied on Solana: the buyer pays payTo directly',
      };
    }
    if (extra?.creditedRecipient !== undefined && extra.creditedRecipient !== requirements.payTo) {
      return {
        ...refuse('invalid_payment_requirements', id),
        message: 'extra.creditedRecipient must equal payTo on Solana: the buyer pays payTo directly',
      };
    }
    const inspection = inspectExactSvmTransaction(svmPayload.data.transaction, requirements, feePayer, maxFee(deps));
    if (!inspection.ok) return refuse(inspection.reason, id, inspection.payer);
    const payment: SolanaPayment = {
      network: id,
      transaction: svmPayload.data.transaction,
      payTo: requirements.payTo,
      asset: requirements.asset,
      maxAmountRequired: requirements.maxAmountRequired,
      payer: inspection.payer,
      payerSignature: inspection.payerSignature,
    };
    return { ok: true, network: id, payer: inspection.payer, payment };
  },

  // The payer's signature over the message identifies the payment (ours as fee payer comes later).
  businessKey: (p) => solanaSettleWorkflowId(p.network, p.payer, p.payerSignature),

  /** payTo must be the organization's Solana payout wallet of the key's mode, when it has one. */
  async input(deps, req, p) {
    const org = await callerOrganization(req.em, req.auth);
    const wallet = p.network === 'solana-devnet' ? org?.payoutWalletSolanaTest : org?.payoutWalletSolanaLive;
    if (wallet && wallet !== p.payTo) {
      return {
        refused: 'invalid_payment_requirements',
        network: p.network,
        payer: p.payer,
        message: `payTo must be the organization's Solana payout wallet ${wallet}`,
      };
    }
    return {
      ...p,
      workflowId: solana.businessKey(p),
      requestId: req.requestId,
      organizationId: req.auth.organizationId,
      apiKeyId: req.auth.apiKeyId ?? '',
      parkAfterMs: deps.config.SETTLE_PARK_AFTER_MS,
      route: 'solana',
      amount: p.maxAmountRequired,
      payout: p.payTo,
      fee: '0',
      feeRecipient: ZERO_ADDRESS,
    };
  },

  async verify(p, deps) {
    const { feePayer, rpc } = clusterOf(deps, p.network);
    const inspection = inspectExactSvmTransaction(p.transaction, p, feePayer.publicKey, maxFee(deps));
    const v = inspection.ok
      ? await verifyExactSvmOnChain(inspection, rpc, feePayer.publicKey)
      : { isValid: false as const, invalidReason: inspection.reason };
    return v.isValid ? { isValid: true, payer: p.payer } : { isValid: false, invalidReason: v.invalidReason, payer: p.payer };
  },

  sent: async (input, deps) => (await findRecorded(deps, input)) !== null,

  async submit(input, deps, record) {
    const { feePayer, rpc } = clusterOf(deps, input.network);
    let rec = await findRecorded(deps, input);
    if (!rec) {
      const tx = VersionedTransaction.deserialize(Buffer.from(input.transaction, 'base64'));
      tx.sign([feePayer]);
      const now = new Date();
      const signature = base58Encode(tx.signatures[0]);
      // One commit with the caller's record; a concurrent or earlier attempt's row wins (same bytes
      // anyway: Ed25519 signatures are deterministic).
      await deps.db.em
        .fork()
        .transactional(async (em) => {
          await em.insert(SolanaTransaction, {
            id: relayerTxId(input.workflowId, 'settle'),
            network: input.network,
            signature,
            rawTx: Buffer.from(tx.serialize()).toString('base64'),
            blockhash: tx.message.recentBlockhash,
            createdAt: now,
            updatedAt: now,
          });
          await record(em, signature);
        })
        .catch((err) => {
          if (!(err instanceof UniqueConstraintViolationException)) throw err;
        });
      rec = await findRecorded(deps, input);
      if (!rec) throw ApplicationFailure.retryable('write-ahead record not readable yet', 'RecordNotFound');
    }
    if (!(await rpc.signatureStatus(rec.signature))) {
      // Blockhash first, then status: expired and still unseen means it can never land.
      if (!(await rpc.isBlockhashValid(rec.blockhash)) && !(await rpc.signatureStatus(rec.signature))) {
        return { submitted: false, reason: EXPIRED, transaction: rec.signature };
      }
      await rpc.sendRawTransaction(Buffer.from(rec.rawTx, 'base64')); // an RPC error is retried
    }
    return { submitted: true, transaction: rec.signature };
  },

  /**
   * Waits (bounded by `waitMs`, RECEIPT_WAIT_MS by default, then retried by Temporal) until the transaction
   * is confirmed or its blockhash expired without it landing, re-sending the stored bytes meanwhile.
   */
  async confirm(input, deps, record, waitMs = deps.config.RECEIPT_WAIT_MS) {
    const { rpc } = clusterOf(deps, input.network);
    const rec = await findRecorded(deps, input);
    if (!rec) throw ApplicationFailure.retryable('no recorded transaction to wait for yet', 'RecordNotFound');
    const fail = (errorReason: string): SettleResponse => ({
      success: false,
      errorReason,
      transaction: '',
      network: input.network,
      payer: input.payer,
    });
    const deadline = Date.now() + waitMs;
    let lastSend = Date.now();
    let pause = 5;
    for (;;) {
      heartbeat();
      const blockhashValid = await rpc.isBlockhashValid(rec.blockhash);
      const status = await rpc.signatureStatus(rec.signature);
      if (status?.confirmed) {
        const response: SettleResponse = status.err
          ? fail('invalid_transaction_state')
          : { success: true, transaction: rec.signature, network: input.network, payer: input.payer };
        await record(deps.db.em.fork(), response, rec.signature);
        return { response, transaction: rec.signature };
      }
      if (!status && !blockhashValid) {
        await record(deps.db.em.fork(), fail(EXPIRED), rec.signature);
        return { response: fail(EXPIRED), transaction: rec.signature };
      }
      if (Date.now() > deadline) throw ApplicationFailure.retryable(`${rec.signature} not confirmed yet`, 'ConfirmationTimeout');
      if (!status && Date.now() - lastSend > RESEND_EVERY_MS) {
        lastSend = Date.now();
        await rpc.sendRawTransaction(Buffer.from(rec.rawTx, 'base64')).catch(() => undefined);
      }
      await sleep(pause);
      pause = Math.min(pause * 2, 500);
    }
  },
};
