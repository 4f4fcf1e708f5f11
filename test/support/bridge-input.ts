import { randomBytes } from 'node:crypto';
import type { BridgeTransferInput } from '../../src/schemes/eip3009-crosschain/types';

/** A bridge leg's input for workflow tests, base-sepolia → optimism-sepolia, keyed by a fresh burn transaction. */
export function bridgeTransferInput(extra: Partial<BridgeTransferInput> = {}): BridgeTransferInput {
  const sourceTx = `0x${randomBytes(32).toString('hex')}`;
  return {
    bridgeId: `bridge:base-sepolia:6:${sourceTx}`,
    settlementId: `settle:base-sepolia:0x${'11'.repeat(20)}:0x${'01'.repeat(32)}`,
    organizationId: 'org-1',
    payer: `0x${'11'.repeat(20)}`,
    sourceNetwork: 'base-sepolia',
    destinationNetwork: 'optimism-sepolia',
    sourceDomain: 6,
    destinationDomain: 2,
    sourceTx,
    message: '0x0e1177ed',
    amount: '2000000',
    payout: `0x${'22'.repeat(20)}`,
    fee: '20000',
    feeRecipient: `0x${'33'.repeat(20)}`,
    ...extra,
  };
}
