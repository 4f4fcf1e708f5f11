import { getAddress } from 'viem';
import type { TopUp } from '../db/entities';

/** The spec's top-up record; `errorReason` is added when the top-up did not deposit. */
export function topupRecordJson(row: TopUp) {
  return {
    success: row.state === 'deposited',
    topupId: row.id,
    state: row.state,
    buyer: getAddress(row.buyer),
    payer: getAddress(row.payer),
    network: row.network,
    sourceNetwork: row.network,
    grossAmount: row.grossAmount,
    netAmount: row.netAmount,
    settlementTx: row.settlementTx ?? null,
    fillTx: row.fillTx ?? null,
    depositTx: row.depositTx ?? null,
    refundTx: row.refundTx ?? null,
    error: row.error ?? null,
    createdAt: new Date(row.createdAt).getTime(),
    updatedAt: new Date(row.updatedAt).getTime(),
    ...(row.errorReason ? { errorReason: row.errorReason } : {}),
  };
}
export type TopupRecordJson = ReturnType<typeof topupRecordJson>;

/**
 * What `GET /v1/{merchant}/topups/{id}` shows a caller who does not prove to be the top-up's payer
 * or buyer: what the spec requires of it (the settlement, fill and deposit transactions and the
 * credited amount) and the state to poll, never who paid whom or how much was paid.
 */
export function publicTopupRecordJson(row: TopUp) {
  const full = topupRecordJson(row);
  return {
    success: full.success,
    topupId: full.topupId,
    state: full.state,
    netAmount: full.netAmount,
    settlementTx: full.settlementTx,
    fillTx: full.fillTx,
    depositTx: full.depositTx,
  };
}
