import { Context, ApplicationFailure } from '@temporalio/activity';
import type { Relayer } from '../src/chains/evm/relayer';

export type ReceiptResult = { status: 'success' | 'reverted'; blockNumber: string };

/**
 * Waits, bounded, for the receipt of the relayer transaction recorded under `txId`; throws
 * (retryable) on timeout after re-broadcasting, so a dropped transaction is sent again with the same
 * bytes. The record is written before broadcast, so a miss is retried rather than failing a
 * workflow whose transaction may be out (an operator sees it waiting in `submitted`).
 */
export async function awaitRecordedReceipt(relayer: Relayer, txId: string, timeoutMs: number): Promise<ReceiptResult> {
  const tx = await relayer.find(txId);
  if (!tx) throw ApplicationFailure.retryable('no recorded transaction to wait for yet', 'RecordNotFound');
  const receipt = await relayer.waitForReceipt(tx, timeoutMs, () => Context.current().heartbeat());
  if (!receipt) throw ApplicationFailure.retryable(`no receipt for ${tx.hash} yet`, 'ReceiptTimeout');
  return { status: receipt.status, blockNumber: receipt.blockNumber.toString() };
}
