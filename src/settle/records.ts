import { ApplicationFailure } from '@temporalio/common';
import type { EntityManager, MikroORM } from '@mikro-orm/core';
import type { EvmNetwork, EvmNetworkId, NetworkTable } from '../chains/networks';
import { Settlement } from '../db/entities';
import { upsertRow } from '../db/rows';
import type { SettleResponse } from '../x402/schemas';
import type { SettlementBase } from '../schemes/scheme';
import { rejectedResponse } from './types';
import type { Eip3009SettleInput } from '../schemes/eip3009/types';

/**
 * The EIP-3009 authorization a settlement input carries: its payer and value are what the row records,
 * whatever the input's own `payer` and `amount` say (a workflow started by hand may say anything).
 */
const signed = (input: SettlementBase & { route: string }) =>
  input.route === 'eip3009' ? (input as Partial<Eip3009SettleInput>).paymentPayload?.payload.authorization : undefined;

/**
 * The settlement record (one row per workflow id): the durable idempotency record that outlives
 * Temporal's retention. Every scheme's activities write it through here, so its fields mean one thing.
 */
export function settlementRecords(db: MikroORM) {
  /**
   * Upserts one record by its id (the workflow id); repeating it is harmless. `em` puts it in the
   * caller's transaction (the relayer's write-ahead record). A compiled statement (src/db/rows.ts):
   * this runs two or three times per settlement.
   */
  const upsert = async (row: Partial<Settlement> & { id: string }, em: EntityManager = db.em.fork()) => {
    const now = new Date();
    const fields = [...Object.keys(row).filter((k) => k !== 'id'), 'updatedAt'] as (keyof Settlement & string)[];
    await upsertRow(em, Settlement, { ...row, createdAt: now, updatedAt: now }, fields);
  };
  /** The record of `input` in `state`, with the fields every state carries. */
  const record = (input: SettlementBase & { route: string }, state: string, extra: Partial<Settlement> = {}, em?: EntityManager) =>
    upsert(
      {
        id: input.workflowId,
        organizationId: input.organizationId,
        apiKeyId: input.apiKeyId,
        route: input.route,
        network: input.network,
        // EVM addresses are stored lower-case; base58 (Solana) is case-sensitive and kept as is.
        payer: signed(input)?.from.toLowerCase() ?? (input.payer.startsWith('0x') ? input.payer.toLowerCase() : input.payer),
        recipient: input.payout.startsWith('0x') ? input.payout.toLowerCase() : input.payout,
        amount: signed(input) ? BigInt(signed(input)!.value).toString() : input.amount,
        fee: input.fee,
        platform: input.platform?.toLowerCase() ?? null,
        platformFee: input.platformFee ?? null,
        requestId: input.requestId ?? null,
        state,
        ...extra,
      },
      em,
    );
  return {
    upsert,
    record,
    /** A fresh attempt: clears what an earlier rejected run recorded. */
    verifying: (input: SettlementBase & { route: string }) =>
      record(input, 'verifying', { transaction: null, errorReason: null, response: null }),
    /**
     * Sent: written in the relayer's write-ahead transaction (`em`), so a record of the transaction
     * exists exactly when the transaction may be out; clears what an earlier rejected run recorded.
     */
    submitted: (input: SettlementBase & { route: string }, transaction: string, em?: EntityManager) =>
      record(input, 'submitted', { transaction, errorReason: null, response: null }, em),
    /** Refused before anything was sent; the response is what repeats of the request get. */
    rejected: async (input: SettlementBase & { route: string }, reason: string, transaction: string | null = null) => {
      const response = rejectedResponse(input, reason);
      await record(input, 'rejected', { transaction, errorReason: reason, response: JSON.stringify(response) });
      return response;
    },
    /** The final outcome once the transaction's result is known. */
    final: (input: SettlementBase & { route: string }, response: SettleResponse, transaction: string | null, em?: EntityManager) =>
      record(
        input,
        response.success ? 'settled' : 'failed',
        { transaction, errorReason: response.errorReason ?? null, response: JSON.stringify(response) },
        em,
      ),
  };
}
export type SettlementRecords = ReturnType<typeof settlementRecords>;

/** The network of a workflow input, or a non-retryable failure (a worker whose table lacks it cannot help). */
export function evmNetworkOf(networks: NetworkTable, id: EvmNetworkId): EvmNetwork {
  const n = networks.get(id);
  if (!n) throw ApplicationFailure.nonRetryable(`unknown network ${id}`, 'invalid_network');
  return n;
}
