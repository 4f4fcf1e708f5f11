import { ApplicationFailure, Context } from '@temporalio/activity';
import { VersionedTransaction } from '@solana/web3.js';
import { UniqueConstraintViolationException, type MikroORM } from '@mikro-orm/core';
import type { Config } from '../src/config';
import type { SolanaNetworkId } from '../src/chains/networks';
import { base58Encode } from '../src/chains/solana/base58';
import { solanaNetworks } from '../src/chains/solana/context';
import { inspectExactSvmTransaction, verifyExactSvmOnChain, type ExactSvmReason } from '../src/schemes/solana/verify';
import { Settlement, SolanaTransaction } from '../src/db/entities';
import { relayerTxId } from '../src/temporal/workflow-ids';
import { solanaRejectedResponse, type SolanaSettleInput } from '../src/schemes/solana/types';
import type { SettleResponse } from '../src/x402/schemas';

export interface SolanaSettlementActivityDeps {
  config: Pick<Config, 'RECEIPT_WAIT_MS' | 'env' | 'SOLANA_FEE_PAYER_KEY'>;
  db: MikroORM;
}

export type SolanaVerification = { isValid: true } | { isValid: false; invalidReason: ExactSvmReason };
export type SolanaSubmitResult =
  { submitted: true; signature: string } | { submitted: false; reason: 'settle_exact_svm_block_height_exceeded' };

const EXPIRED = 'settle_exact_svm_block_height_exceeded';
/** A transaction not yet seen is broadcast again this often while waiting (nodes may drop it). */
const RESEND_EVERY_MS = 2_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Activities of the Solana settlement workflow. Each is idempotent: the co-signed transaction is
 * stored (write-ahead) before its first broadcast, every retry re-sends exactly those bytes, and the
 * cluster's signature status is checked before anything is sent.
 */
export function createSolanaSettlementActivities(deps: SolanaSettlementActivityDeps) {
  const ctxFor = (id: SolanaNetworkId) => {
    const c = solanaNetworks(deps.config).get(id);
    if (!c) throw ApplicationFailure.nonRetryable(`solana network ${id} is not configured`, 'invalid_network');
    return c;
  };
  const txId = (input: SolanaSettleInput) => relayerTxId(input.workflowId, 'settle');

  const recordState = async (input: SolanaSettleInput, state: string, extra: Partial<Settlement> = {}) => {
    const now = new Date();
    const row = {
      id: input.workflowId,
      organizationId: input.organizationId,
      apiKeyId: input.apiKeyId,
      route: input.route,
      network: input.network,
      payer: input.payer,
      recipient: input.payTo,
      amount: input.maxAmountRequired,
      fee: '0',
      requestId: input.requestId ?? null,
      state,
      ...extra,
      createdAt: now,
      updatedAt: now,
    };
    await deps.db.em.fork().upsert(Settlement, row as Settlement, { onConflictExcludeFields: ['createdAt'] });
  };
  const recordFinal = (input: SolanaSettleInput, state: string, response: SettleResponse, signature: string | null) =>
    recordState(input, state, { transaction: signature, errorReason: response.errorReason ?? null, response: JSON.stringify(response) });
  const findRecorded = (input: SolanaSettleInput) => deps.db.em.fork().findOne(SolanaTransaction, { id: txId(input) });

  return {
    /** Records the attempt, then every rule of the exact-SVM scheme against the cluster (nothing is sent). */
    async verifySolanaPayment(input: SolanaSettleInput): Promise<SolanaVerification> {
      // Once co-signed bytes exist the payment was verified and may be out: never re-judge it.
      if (await findRecorded(input)) return { isValid: true };
      await recordState(input, 'verifying', { transaction: null, errorReason: null, response: null });
      const { feePayer, rpc } = ctxFor(input.network);
      const inspection = inspectExactSvmTransaction(input.transaction, input, feePayer.publicKey);
      const v = inspection.ok
        ? await verifyExactSvmOnChain(inspection, rpc, feePayer.publicKey)
        : { isValid: false as const, invalidReason: inspection.reason };
      if (!v.isValid) {
        await recordFinal(input, 'rejected', solanaRejectedResponse(input, v.invalidReason), null);
      }
      return v;
    },

    /**
     * Co-signs as fee payer once (stored before broadcast) and broadcasts. A retry finds the stored
     * bytes, asks the cluster first, and re-sends the same transaction if it has not landed.
     */
    async submitSolanaSettlement(input: SolanaSettleInput): Promise<SolanaSubmitResult> {
      const { feePayer, rpc } = ctxFor(input.network);
      let rec = await findRecorded(input);
      if (!rec) {
        const tx = VersionedTransaction.deserialize(Buffer.from(input.transaction, 'base64'));
        tx.sign([feePayer]);
        const now = new Date();
        const fresh = {
          id: txId(input),
          network: input.network,
          signature: base58Encode(tx.signatures[0]),
          rawTx: Buffer.from(tx.serialize()).toString('base64'),
          blockhash: tx.message.recentBlockhash,
          createdAt: now,
          updatedAt: now,
        };
        // One auto-committed insert; a concurrent or earlier attempt's row wins (same bytes anyway:
        // Ed25519 signatures are deterministic).
        await deps.db.em
          .fork()
          .insert(SolanaTransaction, fresh)
          .catch((err) => {
            if (!(err instanceof UniqueConstraintViolationException)) throw err;
          });
        rec = await findRecorded(input);
        if (!rec) throw ApplicationFailure.retryable('write-ahead record not readable yet', 'RecordNotFound');
      }
      if (!(await rpc.signatureStatus(rec.signature))) {
        // Blockhash first, then status: expired and still unseen means it can never land.
        if (!(await rpc.isBlockhashValid(rec.blockhash)) && !(await rpc.signatureStatus(rec.signature))) {
          await recordFinal(input, 'rejected', solanaRejectedResponse(input, EXPIRED), rec.signature);
          return { submitted: false, reason: EXPIRED };
        }
        await rpc.sendRawTransaction(Buffer.from(rec.rawTx, 'base64')); // an RPC error is retried
      }
      await recordState(input, 'submitted', { transaction: rec.signature });
      return { submitted: true, signature: rec.signature };
    },

    /**
     * Waits (bounded by RECEIPT_WAIT_MS, then retried by Temporal) until the transaction is confirmed
     * or its blockhash expired without it landing, re-sending the stored bytes meanwhile.
     */
    async awaitSolanaConfirmation(input: SolanaSettleInput): Promise<SettleResponse> {
      const { rpc } = ctxFor(input.network);
      const rec = await findRecorded(input);
      if (!rec) throw ApplicationFailure.retryable('no recorded transaction to wait for yet', 'RecordNotFound');
      const deadline = Date.now() + deps.config.RECEIPT_WAIT_MS;
      let lastSend = Date.now();
      let pause = 5;
      for (;;) {
        Context.current().heartbeat();
        const blockhashValid = await rpc.isBlockhashValid(rec.blockhash);
        const status = await rpc.signatureStatus(rec.signature);
        if (status?.confirmed) {
          const response: SettleResponse = status.err
            ? { success: false, errorReason: 'invalid_transaction_state', transaction: '', network: input.network, payer: input.payer }
            : { success: true, transaction: rec.signature, network: input.network, payer: input.payer };
          await recordFinal(input, status.err ? 'failed' : 'settled', response, rec.signature);
          return response;
        }
        if (!status && !blockhashValid) {
          const response: SettleResponse = {
            success: false,
            errorReason: EXPIRED,
            transaction: '',
            network: input.network,
            payer: input.payer,
          };
          await recordFinal(input, 'failed', response, rec.signature);
          return response;
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
}

export type SolanaSettlementActivities = ReturnType<typeof createSolanaSettlementActivities>;
