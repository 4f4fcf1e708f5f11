import { ApplicationFailure } from '@temporalio/activity';
import { awaitRecordedReceipt } from './receipts';
import { BaseError, ContractFunctionRevertedError, encodeFunctionData, type Address, type Hex } from 'viem';
import type { MikroORM } from '@mikro-orm/core';
import type { Config } from '../src/config';
import type { NetworkTable, EvmNetworkId } from '../src/chains/networks';
import { facilitatorAbi } from '../src/chains/evm/abi';
import { tokenReads } from '../src/chains/evm/token-reads';
import { verifyExactEvm, type Verification } from '../src/chains/evm/verify-exact';
import type { Relayer } from '../src/chains/evm/relayer';
import { Settlement } from '../src/db/entities';
import { relayerTxId } from '../src/temporal/workflow-ids';
import { rejectedResponse, type SettleInput } from '../src/settle/types';
import type { SettleReason } from '../src/x402/error-reasons';
import type { SettleResponse } from '../src/x402/schemas';

export interface SettlementActivityDeps {
  config: Pick<Config, 'MIN_VALIDITY_SECONDS' | 'RECEIPT_WAIT_MS'>;
  db: MikroORM;
  networks: NetworkTable;
  /** With a write-ahead id: the relayer lane that id always uses (RELAYER_PRIVATE_KEYS). */
  relayerFor(network: EvmNetworkId, laneKey?: string): Relayer;
}

export type SubmitResult = { submitted: true; hash: Hex } | { submitted: false; reason: 'invalid_transaction_state'; detail: string };

/** Activities of the settlement workflow. Each is idempotent: safe to retry after any crash. */
export function createSettlementActivities(deps: SettlementActivityDeps) {
  const network = (id: EvmNetworkId) => {
    const n = deps.networks.get(id);
    if (!n) throw ApplicationFailure.nonRetryable(`unknown network ${id}`, 'invalid_network');
    return n;
  };

  /** Upserts the settlement record (keyed by workflow id); repeating it is harmless. */
  const record = async (rec: Partial<Settlement> & { id: string }) => {
    const now = new Date();
    await deps.db.em.fork().upsert(Settlement, { ...rec, createdAt: now, updatedAt: now } as Settlement, {
      onConflictExcludeFields: ['createdAt'],
    });
  };
  /** The record of one settlement in `state`, with the fields every state carries. */
  const recordState = (input: SettleInput, state: string, extra: Partial<Settlement> = {}) =>
    record({
      id: input.workflowId,
      organizationId: input.organizationId,
      apiKeyId: input.apiKeyId,
      route: input.route,
      network: input.network,
      payer: input.paymentPayload.payload.authorization.from.toLowerCase(),
      recipient: input.payout.toLowerCase(),
      amount: input.paymentPayload.payload.authorization.value,
      fee: input.fee,
      requestId: input.requestId ?? null,
      state,
      ...extra,
    });

  const recordRejection = (input: SettleInput, reason: SettleReason) =>
    recordState(input, 'rejected', { errorReason: reason, response: JSON.stringify(rejectedResponse(input, reason)) });

  return {
    recordSettlement: record,

    /** Every verification rule against the chain's current state; no transaction. */
    /**
     * Records the attempt, then checks every verification rule against the chain's current state
     * (no transaction); a rejection is recorded with its response.
     */
    async verifyExactPayment(input: SettleInput): Promise<Verification> {
      await recordState(input, 'verifying', { transaction: null, errorReason: null, response: null });
      const n = network(input.network);
      const v = await verifyExactEvm(input.paymentPayload, input.paymentRequirements, n, {
        nowSeconds: Math.floor(Date.now() / 1000),
        minValiditySeconds: deps.config.MIN_VALIDITY_SECONDS,
        reads: tokenReads(n),
      });
      if (!v.isValid) await recordRejection(input, v.invalidReason);
      return v;
    },

    /**
     * Calls the facilitator's `settle` once for this workflow. A retry returns the transaction that
     * was already recorded; a call that would revert is reported before anything is signed.
     */
    async submitSettlement(input: SettleInput): Promise<SubmitResult> {
      const n = network(input.network);
      const relayer = deps.relayerFor(input.network, relayerTxId(input.workflowId, 'settle'));
      const a = input.paymentPayload.payload.authorization;
      const data = encodeFunctionData({
        abi: facilitatorAbi,
        functionName: 'settle',
        args: [
          input.paymentRequirements.asset as Address,
          a.from as Address,
          BigInt(a.value),
          BigInt(a.validAfter),
          BigInt(a.validBefore),
          a.nonce as Hex,
          input.paymentPayload.payload.signature as Hex,
          input.payout as Address,
          BigInt(input.fee),
          input.feeRecipient as Address,
        ],
      });
      let hash: Hex;
      try {
        ({ hash } = await relayer.send(relayerTxId(input.workflowId, 'settle'), { to: n.facilitator as Address, data }));
      } catch (err) {
        const revert =
          err instanceof BaseError
            ? err.walk((e) => e instanceof ContractFunctionRevertedError || /revert/i.test((e as Error).message))
            : null;
        if (!revert) throw err; // transient (RPC down, timeout): Temporal retries
        await recordRejection(input, 'invalid_transaction_state');
        return { submitted: false, reason: 'invalid_transaction_state', detail: (revert as Error).message.split('\n')[0] };
      }
      await recordState(input, 'submitted', { transaction: hash });
      return { submitted: true, hash };
    },

    /**
     * Waits for the receipt of the recorded settle transaction (see awaitRecordedReceipt) and
     * records the final outcome with the response that repeats of the request get.
     */
    async awaitSettlementReceipt(input: SettleInput): Promise<SettleResponse> {
      const relayer = deps.relayerFor(input.network, relayerTxId(input.workflowId, 'settle'));
      const receipt = await awaitRecordedReceipt(relayer, relayerTxId(input.workflowId, 'settle'), deps.config.RECEIPT_WAIT_MS);
      const hash = (await relayer.find(relayerTxId(input.workflowId, 'settle')))!.hash;
      const payer = input.paymentPayload.payload.authorization.from;
      const response: SettleResponse =
        receipt.status === 'success'
          ? { success: true, transaction: hash, network: input.network, payer }
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

export type SettlementActivities = ReturnType<typeof createSettlementActivities>;
