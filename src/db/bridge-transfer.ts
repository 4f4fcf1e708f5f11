import { EntitySchema, OptionalProps } from '@mikro-orm/core';

/**
 * The bridge leg of one cross-chain settlement (one burn message): recorded by the bridge workflow as
 * it moves (burned -> attested -> minting -> delivered, or needs_review; an operator may then abandon
 * it: `abandoned`, never minted afterwards, its payer refunded on the source). The primary key is the
 * bridge workflow id; `settlementId` links the Settlement row (whose `transaction` is the source tx).
 */
/** State of a leg an operator gave up on (its payer refunded): final, never minted afterwards. */
export const BRIDGE_ABANDONED = 'abandoned';

export class BridgeTransfer {
  [OptionalProps]?: 'createdAt' | 'updatedAt';
  id!: string; // bridge:<sourceNetwork>:<sourceDomain>:<sourceTx>
  settlementId!: string;
  organizationId!: string;
  sourceNetwork!: string;
  destinationNetwork!: string;
  sourceDomain!: number;
  destinationDomain!: number;
  bridgeNonce?: string | null; // the CCTP V2 message nonce (bytes32 hex), known once attested
  sourceTx!: string;
  amount!: string; // burned on the source (the signed value: exact input)
  recipient!: string; // destination payout wallet
  state!: string;
  mintTx?: string | null; // destination transaction that minted and paid out
  received?: string | null; // arrived at the destination facilitator (amount - bridgeFee)
  bridgeFee?: string | null;
  fee?: string | null; // platform fee taken on the destination
  payoutAmount?: string | null;
  error?: string | null;
  /** Source-chain refund of an abandoned leg (from the revenue wallet). */
  refundTx?: string | null;
  /** Destination transaction that delivered an abandoned leg's message to the treasury. */
  treasuryTx?: string | null;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
}

export const BridgeTransferSchema = new EntitySchema<BridgeTransfer>({
  class: BridgeTransfer,
  tableName: 'bridge_transfers',
  indexes: [{ properties: ['settlementId'] }, { properties: ['state'] }],
  properties: {
    id: { type: 'string', primary: true, length: 200 },
    settlementId: { type: 'string', length: 200 },
    organizationId: { type: 'string', length: 36 },
    sourceNetwork: { type: 'string', length: 32 },
    destinationNetwork: { type: 'string', length: 32 },
    sourceDomain: { type: 'integer' },
    destinationDomain: { type: 'integer' },
    bridgeNonce: { type: 'string', length: 66, nullable: true },
    sourceTx: { type: 'string', length: 66 },
    amount: { type: 'string', length: 80 },
    recipient: { type: 'string', length: 64 },
    state: { type: 'string', length: 16 },
    mintTx: { type: 'string', length: 66, nullable: true },
    received: { type: 'string', length: 80, nullable: true },
    bridgeFee: { type: 'string', length: 80, nullable: true },
    fee: { type: 'string', length: 80, nullable: true },
    payoutAmount: { type: 'string', length: 80, nullable: true },
    error: { type: 'text', nullable: true },
    refundTx: { type: 'string', length: 66, nullable: true },
    treasuryTx: { type: 'string', length: 66, nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
