import { ApplicationFailure } from '@temporalio/activity';
import { BaseError, ContractFunctionRevertedError, encodeFunctionData, type Address, type Hex } from 'viem';
import { awaitRecordedReceipt } from './receipts';
import type { SettlementActivityDeps } from './settlement';
import type { EvmNetworkId } from '../src/chains/networks';
import { facilitatorPermit2Abi } from '../src/schemes/permit2/abi';
import { permit2Reads } from '../src/schemes/permit2/reads';
import { verifyPermit2, type Permit2Verification } from '../src/schemes/permit2/verify';
import { Settlement } from '../src/db/entities';
import { relayerTxId } from '../src/temporal/workflow-ids';
import { permit2RejectedResponse, type Permit2SettleInput } from '../src/schemes/permit2/types';
import type { SettleReason } from '../src/x402/error-reasons';
import type { SettleResponse } from '../src/x402/schemas';

export type Permit2SubmitResult =
  { submitted: true; hash: Hex } | { submitted: false; reason: 'invalid_transaction_state'; detail: string };

const ZERO32 = `0x${'0'.repeat(64)}` as Hex;

/** Activities of the Permit2 settlement workflow. Each is idempotent: safe to retry after any crash. */
export function createPermit2SettlementActivities(deps: SettlementActivityDeps) {
  const network = (id: EvmNetworkId) => {
    const n = deps.networks.get(id);
    if (!n) throw ApplicationFailure.nonRetryable(`unknown network ${id}`, 'invalid_network');
    return n;
  };
  const txId = (input: Permit2SettleInput) => relayerTxId(input.workflowId, 'settle');

  /** Upserts the settlement record (keyed by workflow id) of `state`; repeating it is harmless. */
  const recordState = async (input: Permit2SettleInput, state: string, extra: Partial<Settlement> = {}) => {
    const now = new Date();
    const row = {
      id: input.workflowId,
      organizationId: input.organizationId,
      apiKeyId: input.apiKeyId,
      route: input.route,
      network: input.network,
      payer: input.paymentPayload.payload.owner.toLowerCase(),
      recipient: input.payout.toLowerCase(),
      amount: input.amount,
      fee: input.fee,
      requestId: input.requestId ?? null,
      state,
      createdAt: now,
      updatedAt: now,
      ...extra,
    };
    await deps.db.em.fork().upsert(Settlement, row as Settlement, { onConflictExcludeFields: ['createdAt'] });
  };
  const recordRejection = (input: Permit2SettleInput, reason: SettleReason) =>
    recordState(input, 'rejected', { errorReason: reason, response: JSON.stringify(permit2RejectedResponse(input, reason)) });

  return {
    /**
     * Records the attempt, then checks every verification rule against the chain's current state
     * (no transaction); a rejection is recorded with its response.
     */
    async verifyPermit2Payment(input: Permit2SettleInput): Promise<Permit2Verification> {
      await recordState(input, 'verifying', { transaction: null, errorReason: null, response: null });
      const n = network(input.network);
      const v = await verifyPermit2(input.paymentPayload, input.paymentRequirements, n, {
        nowSeconds: Math.floor(Date.now() / 1000),
        minValiditySeconds: deps.config.MIN_VALIDITY_SECONDS,
        reads: permit2Reads(n),
      });
      if (!v.isValid) await recordRejection(input, v.invalidReason);
      return v;
    },

    /**
     * Calls the facilitator's `settlePermit2Exact` / `settlePermit2Upto` once for this workflow
     * (write-ahead record `<workflowId>:settle`): a retry re-sends the recorded transaction, a call
     * that would revert is reported before anything is signed. The `permit2612`, when present, rides
     * in the same call; the contract applies it only while Permit2's allowance is short.
     */
    async submitPermit2Settlement(input: Permit2SettleInput): Promise<Permit2SubmitResult> {
      const n = network(input.network);
      const relayer = deps.relayerFor(input.network);
      const p = input.paymentPayload.payload;
      const payment = {
        proxy: input.paymentPayload.scheme === 'exact' ? n.exactPermit2Proxy : n.uptoPermit2Proxy,
        token: p.permit.permitted.token as Address,
        amount: BigInt(p.permit.permitted.amount),
        nonce: BigInt(p.permit.nonce),
        deadline: BigInt(p.permit.deadline),
        owner: p.owner as Address,
        validAfter: BigInt(p.witness.validAfter),
        signature: p.signature as Hex,
      };
      const e = p.permit2612;
      const permit2612 = e
        ? { value: BigInt(e.value), deadline: BigInt(e.deadline), v: e.v < 27 ? e.v + 27 : e.v, r: e.r as Hex, s: e.s as Hex }
        : { value: 0n, deadline: 0n, v: 0, r: ZERO32, s: ZERO32 };
      const out = { payout: input.payout as Address, fee: BigInt(input.fee), feeRecipient: input.feeRecipient as Address };
      const data =
        input.paymentPayload.scheme === 'exact'
          ? encodeFunctionData({ abi: facilitatorPermit2Abi, functionName: 'settlePermit2Exact', args: [payment, permit2612, out] })
          : encodeFunctionData({
              abi: facilitatorPermit2Abi,
              functionName: 'settlePermit2Upto',
              args: [payment, BigInt(input.amount), permit2612, out],
            });
      let hash: Hex;
      try {
        ({ hash } = await relayer.send(txId(input), { to: n.facilitator as Address, data }));
      } catch (err) {
        const revert =
          err instanceof BaseError
            ? err.walk((x) => x instanceof ContractFunctionRevertedError || /revert/i.test((x as Error).message))
            : null;
        if (!revert) throw err; // transient (RPC down, timeout): Temporal retries
        await recordRejection(input, 'invalid_transaction_state');
        return { submitted: false, reason: 'invalid_transaction_state', detail: (revert as Error).message.split('\n')[0] };
      }
      await recordState(input, 'submitted', { transaction: hash });
      return { submitted: true, hash };
    },

    /** Waits for the recorded transaction's receipt and records the final response (upto: with `amount`). */
    async awaitPermit2SettlementReceipt(input: Permit2SettleInput): Promise<SettleResponse> {
      const relayer = deps.relayerFor(input.network);
      const receipt = await awaitRecordedReceipt(relayer, txId(input), deps.config.RECEIPT_WAIT_MS);
      const hash = (await relayer.find(txId(input)))!.hash;
      const payer = input.paymentPayload.payload.owner;
      const response: SettleResponse =
        receipt.status === 'success'
          ? {
              success: true,
              transaction: hash,
              network: input.network,
              payer,
              ...(input.paymentPayload.scheme === 'upto' ? { amount: input.amount } : {}),
            }
          : { success: false, errorReason: 'invalid_transaction_state', transaction: '', network: input.network, payer };
      await recordState(input, receipt.status === 'success' ? 'settled' : 'failed', {
        transaction: hash,
        errorReason: response.errorReason ?? null,
        response: JSON.stringify(response),
      });
      return response;
    },
  };
}

export type Permit2SettlementActivities = ReturnType<typeof createPermit2SettlementActivities>;
