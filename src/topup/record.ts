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
