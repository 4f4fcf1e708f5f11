import { isAddressEqual, parseEventLogs, type Address, type Hex, type PublicClient } from 'viem';
import { tokenAbi } from './abi';

/** What one of our settlement transactions did with a payer's EIP-3009 authorization, as the token logged it. */
export interface PaymentProof {
  /** The authorization's signer (`AuthorizationUsed.authorizer`). */
  payer: Address;
  /** Base units the token moved from the payer in that transaction. */
  pulled: bigint;
  /** Base units the token moved to `wallet` in that transaction. */
  paid: bigint;
}

type ReceiptReader = Pick<PublicClient, 'getTransactionReceipt'>;

/**
 * The token's logs of `tx` when it was mined and succeeded; null when it reverted. No receipt is not
 * proof of anything (a lagging replica answers so for a transaction it has not seen yet): like a call
 * without an answer, it throws, and the activity asks again.
 */
async function tokenLogs(client: ReceiptReader, token: Address, tx: string) {
  if (!/^0x[0-9a-fA-F]{64}$/.test(tx)) return null;
  const receipt = await client.getTransactionReceipt({ hash: tx as Hex });
  if (receipt.status !== 'success') return null;
  return parseEventLogs({ abi: tokenAbi, logs: receipt.logs.filter((l) => isAddressEqual(l.address, token)) });
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * Reads the receipt of `tx` and proves, from the token's own logs, that it used `payer`'s
 * authorization `nonce` and how much it moved from the payer and to `wallet`. A refund pays back
 * only what such a proof shows (docs/security.md "Forged workflows"): our records and the workflow
 * input only say where to look. Null when the chain shows no such payment (a reverted transaction,
 * another authorization); no receipt, or an RPC call without an answer, throws (the activity retries).
 */
export async function provenPayment(
  client: ReceiptReader,
  token: Address,
  tx: string,
  expected: { payer: string; nonce: string; wallet: string },
): Promise<PaymentProof | null> {
  const logs = await tokenLogs(client, token, tx);
  if (!logs) return null;
  const used = logs.some(
    (l) => l.eventName === 'AuthorizationUsed' && same(l.args.authorizer, expected.payer) && same(l.args.nonce, expected.nonce),
  );
  if (!used) return null;
  let pulled = 0n;
  let paid = 0n;
  for (const l of logs) {
    if (l.eventName !== 'Transfer') continue;
    if (same(l.args.from, expected.payer)) pulled += l.args.value;
    if (same(l.args.to, expected.wallet)) paid += l.args.value;
  }
  return { payer: expected.payer as Address, pulled, paid };
}

/** Base units the token moved to `wallet` in `tx` (a bridge's mint); 0 when the chain shows none. */
export async function provenReceived(client: ReceiptReader, token: Address, tx: string, wallet: string): Promise<bigint> {
  let received = 0n;
  for (const l of (await tokenLogs(client, token, tx)) ?? [])
    if (l.eventName === 'Transfer' && same(l.args.to, wallet)) received += l.args.value;
  return received;
}

/** The authorization nonce a settlement id (`settle:<network>:<payer>:<nonce>`) or charge id ends with. */
export const nonceOfId = (id: string): string => id.slice(id.lastIndexOf(':') + 1);
