import { ApplicationFailure } from '@temporalio/activity';
import { heartbeat } from '../../temporal/heartbeat';
import { BaseError, ContractFunctionRevertedError, type Address, type Hex, type TransactionReceipt } from 'viem';
import { RecordedCallMismatch, Relayer, type AlsoWrite } from './relayer';
import { relayerTxId } from '../../temporal/workflow-ids';
import { gasCeilingRefusal } from './gas-ceilings';

/**
 * Sending and confirming relayer calls through the write-ahead relayer, shared by the EVM
 * schemes (EIP-3009, Permit2) and the cross-chain burn. The relayer record id is
 * `<workflowId>:<purpose>`, so a retried activity re-sends the recorded bytes, never a second call.
 */

/** The caller's own record of a sent transaction, written in its write-ahead record's DB transaction. */
export type RecordSent = AlsoWrite<string>;

/** The caller's own record of a mined transaction, written in the DB transaction that marks it mined. */
export type RecordMined = AlsoWrite<TransactionReceipt>;

export type CallSent = { sent: true; hash: Hex } | { sent: false; revert: string };

/** A revert found while estimating, or a gas-ceiling refusal (nothing signed); undefined for a transient error. */
export const revertOf = (err: unknown): string | undefined => {
  const refused = gasCeilingRefusal(err); // refused for its gas: as final as a revert, nothing signed
  if (refused) return refused;
  const hit =
    err instanceof BaseError ? err.walk((e) => e instanceof ContractFunctionRevertedError || /revert/i.test((e as Error).message)) : null;
  return hit ? (hit as Error).message.split('\n')[0] : undefined;
};

/**
 * Whether this workflow's call for `purpose` was already signed (its write-ahead record exists), and,
 * given the call (asked only when a record exists), signed for this very call: a record of another caller's call under a reused workflow
 * id is not this caller's, who is judged afresh.
 */
export const callSent = async (relayer: Relayer, workflowId: string, purpose = 'settle', call?: () => { to: Address; data: Hex }) => {
  const tx = await relayer.find(relayerTxId(workflowId, purpose));
  return tx !== null && (call === undefined || Relayer.records(tx, call()));
};

/** Sends `call` once for this workflow; a call that would revert is reported before anything is signed. */
export async function sendCall(
  relayer: Relayer,
  workflowId: string,
  call: { to: Address; data: Hex },
  purpose = 'settle',
  record?: RecordSent,
): Promise<CallSent> {
  try {
    const { hash } = await relayer.send(relayerTxId(workflowId, purpose), call, { record });
    return { sent: true, hash };
  } catch (err) {
    if (err instanceof RecordedCallMismatch) return { sent: false, revert: err.message }; // nothing of this call was sent
    const revert = revertOf(err);
    if (revert === undefined) throw err; // transient (RPC down, timeout): Temporal retries
    return { sent: false, revert };
  }
}

export type ReceiptResult = { status: 'success' | 'reverted'; blockNumber: string };

/**
 * Waits, bounded, for the receipt of the relayer transaction recorded under `txId`; throws
 * (retryable) on timeout after re-broadcasting, so a dropped transaction is sent again with the same
 * bytes. The record is written before broadcast, so a miss is retried rather than failing a
 * workflow whose transaction may be out (an operator sees it waiting in `submitted`).
 */
export async function awaitRecordedReceipt(
  relayer: Relayer,
  txId: string,
  timeoutMs: number,
  onMined?: RecordMined,
): Promise<ReceiptResult & { hash: Hex }> {
  const tx = await relayer.find(txId);
  if (!tx) throw ApplicationFailure.retryable('no recorded transaction to wait for yet', 'RecordNotFound');
  const receipt = await relayer.waitForReceipt(tx, timeoutMs, heartbeat, onMined);
  if (!receipt) throw ApplicationFailure.retryable(`no receipt for ${tx.hash} yet`, 'ReceiptTimeout');
  return { status: receipt.status, blockNumber: receipt.blockNumber.toString(), hash: tx.hash as Hex };
}

/** Whether the transaction recorded under `txId` was signed and mined successfully (waits for it, bounded). */
export async function recordedSucceeded(relayer: Relayer, txId: string, timeoutMs: number): Promise<boolean> {
  if (!(await relayer.find(txId))) return false;
  return (await awaitRecordedReceipt(relayer, txId, timeoutMs)).status === 'success';
}

/** The receipt of the call this workflow sent for `purpose` (see awaitRecordedReceipt). */
export const awaitCall = (relayer: Relayer, workflowId: string, timeoutMs: number, purpose = 'settle', onMined?: RecordMined) =>
  awaitRecordedReceipt(relayer, relayerTxId(workflowId, purpose), timeoutMs, onMined);
