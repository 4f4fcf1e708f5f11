import type { Address, Hex } from 'viem';
import type { Relayer } from '../../src/chains/evm/relayer';

export interface FloorInput {
  /** The chain's relayer (the rows run on base-sepolia, `--warmup` on optimism-sepolia). */
  network: string;
  id: string;
  to: string;
  data: string;
}

/** The floor's one activity: send once per id (write-ahead record), wait for the receipt. */
export function createFloorActivities(relayers: Map<string, Relayer>, receiptWaitMs: number) {
  return {
    async transferWithAuthorization(input: FloorInput): Promise<string> {
      const relayer = relayers.get(input.network);
      if (!relayer) throw new Error(`no floor relayer on ${input.network}`);
      await relayer.send(input.id, { to: input.to as Address, data: input.data as Hex });
      const tx = (await relayer.find(input.id))!;
      const receipt = await relayer.waitForReceipt(tx, receiptWaitMs);
      if (!receipt) throw new Error(`no receipt for ${tx.hash} yet`); // retried: re-sends the same bytes
      if (receipt.status !== 'success') throw new Error(`${tx.hash} reverted`);
      return receipt.transactionHash;
    },
  };
}

export type FloorActivities = ReturnType<typeof createFloorActivities>;
