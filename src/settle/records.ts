import { ApplicationFailure } from '@temporalio/common';
import type { MikroORM } from '@mikro-orm/core';
import type { EvmNetwork, EvmNetworkId, NetworkTable } from '../chains/networks';
import { Settlement } from '../db/entities';
import type { SettleResponse } from '../x402/schemas';
import { rejectedResponse, type SettlementBase } from './types';

/**
 * The settlement record (one row per workflow id): the durable idempotency record that outlives
 * Temporal's retention. Every scheme's activities write it through here, so its fields mean one thing.
 */
export function settlementRecords(db: MikroORM) {
  /** Upserts one record by its id (the workflow id); repeating it is harmless. */
  const upsert = async (row: Partial<Settlement> & { id: string }) => {
    const now = new Date();
    await db.em.fork().upsert(Settlement, { ...row, createdAt: now, updatedAt: now } as Settlement, {
      onConflictExcludeFields: ['createdAt'],
    });
  };
  /** The record of `input` in `state`, with the fields every state carries. */
  const record = (input: SettlementBase & { route: string }, state: string, extra: Partial<Settlement> = {}) =>
    upsert({
      id: input.workflowId,
      organizationId: input.organizationId,
      apiKeyId: input.apiKeyId,
      route: input.route,
      network: input.network,
      // EVM addresses are stored lower-case; base58 (Solana) is case-sensitive and kept as is.
      payer: input.payer.startsWith('0x') ? input.payer.toLowerCase() : input.payer,
      recipient: input.payout.startsWith('0x') ? input.payout.toLowerCase() : input.payout,
      amount: input.amount,
      fee: input.fee,
      platform: input.platform?.toLowerCase() ?? null,
      platformFee: input.platformFee ?? null,
      requestId: input.requestId ?? null,
      state,
      ...extra,
    });
  return {
    upsert,
    record,
    /** A fresh attempt: clears what an earlier rejected run recorded. */
    verifying: (input: SettlementBase & { route: string }) =>
      record(input, 'verifying', { transaction: null, errorReason: null, response: null }),
    /** Refused before anything was sent; the response is what repeats of the request get. */
    rejected: async (input: SettlementBase & { route: string }, reason: string, transaction: string | null = null) => {
      const response = rejectedResponse(input, reason);
      await record(input, 'rejected', { transaction, errorReason: reason, response: JSON.stringify(response) });
      return response;
    },
    /** The final outcome once the transaction's result is known. */
    final: (input: SettlementBase & { route: string }, response: SettleResponse, transaction: string | null) =>
      record(input, response.success ? 'settled' : 'failed', {
        transaction,
        errorReason: response.errorReason ?? null,
        response: JSON.stringify(response),
      }),
  };
}
export type SettlementRecords = ReturnType<typeof settlementRecords>;

/** The network of a workflow input, or a non-retryable failure (a worker whose table lacks it cannot help). */
export function evmNetworkOf(networks: NetworkTable, id: EvmNetworkId): EvmNetwork {
  const n = networks.get(id);
  if (!n) throw ApplicationFailure.nonRetryable(`unknown network ${id}`, 'invalid_network');
  return n;
}
