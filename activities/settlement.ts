import { ApplicationFailure } from '@temporalio/activity';
import { awaitRecordedReceipt, type ReceiptResult } from './receipts';
import { BaseError, ContractFunctionRevertedError, encodeFunctionData, type Address, type Hex } from 'viem';
import type { MikroORM } from '@mikro-orm/core';
import type { Config } from '../src/config';
import type { NetworkTable, EvmNetworkId } from '../src/chains/networks';
import { facilitatorAbi } from '../src/chains/evm/abi';
import { tokenReads } from '../src/chains/evm/token-reads';
import { verifyExactEvm, type Verification } from '../src/chains/evm/verify-exact';
import type { Relayer } from '../src/chains/evm/relayer';
import { Settlement } from '../src/db/entities';
import { relayerTxId } from '../src/temporal/workflow-ids';
import type { SettleInput } from '../src/settle/types';

export interface SettlementActivityDeps {
  config: Pick<Config, 'MIN_VALIDITY_SECONDS' | 'RECEIPT_WAIT_MS'>;
  db: MikroORM;
  networks: NetworkTable;
  relayerFor(network: EvmNetworkId): Relayer;
}

export type SubmitResult = { submitted: true; hash: Hex } | { submitted: false; reason: 'invalid_transaction_state'; detail: string };

/** Activities of the settlement workflow. Each is idempotent: safe to retry after any crash. */
export function createSettlementActivities(deps: SettlementActivityDeps) {
  const network = (id: EvmNetworkId) => {
    const n = deps.networks.get(id);
    if (!n) throw ApplicationFailure.nonRetryable(`unknown network ${id}`, 'invalid_network');
    return n;
  };

  return {
    /** Upserts the settlement record (keyed by workflow id). */
    async recordSettlement(rec: Partial<Settlement> & { id: string }): Promise<void> {
      const em = deps.db.em.fork();
      const now = new Date();
      await em.upsert(Settlement, { ...rec, createdAt: now, updatedAt: now } as Settlement, {
        onConflictExcludeFields: ['createdAt'],
      });
    },

    /** Every verification rule against the chain's current state; no transaction. */
    async verifyExactPayment(input: SettleInput): Promise<Verification> {
      const n = network(input.network);
      return verifyExactEvm(input.paymentPayload, input.paymentRequirements, n, {
        nowSeconds: Math.floor(Date.now() / 1000),
        minValiditySeconds: deps.config.MIN_VALIDITY_SECONDS,
        reads: tokenReads(n),
      });
    },

    /**
     * Calls the facilitator's `settle` once for this workflow. A retry returns the transaction that
     * was already recorded; a call that would revert is reported before anything is signed.
     */
    async submitSettlement(input: SettleInput): Promise<SubmitResult> {
      const n = network(input.network);
      const relayer = deps.relayerFor(input.network);
      const a = input.paymentPayload.payload.authorization;
      const data = encodeFunctionData({
        abi: facilitatorAbi,
        functionName: 'settle',
        args: [
          input.paymentRequirements.asset as Address,
          a.from as Address,
          BigInt(a.value),
          BigInt(a.validAfter),
          BigInt(a.validBefore),
          a.nonce as Hex,
          input.paymentPayload.payload.signature as Hex,
          input.payout as Address,
          BigInt(input.fee),
          input.feeRecipient as Address,
        ],
      });
      try {
        const { hash } = await relayer.send(relayerTxId(input.workflowId, 'settle'), { to: n.facilitator as Address, data });
        return { submitted: true, hash };
      } catch (err) {
        const revert = err instanceof BaseError ? err.walk((e) => e instanceof ContractFunctionRevertedError || /revert/i.test((e as Error).message)) : null;
        if (revert) return { submitted: false, reason: 'invalid_transaction_state', detail: (revert as Error).message.split('\n')[0] };
        throw err; // transient (RPC down, timeout): Temporal retries
      }
    },

    /** Waits for the receipt of the recorded settle transaction (see awaitRecordedReceipt). */
    async awaitSettlementReceipt(input: { network: EvmNetworkId; workflowId: string }): Promise<ReceiptResult> {
      return awaitRecordedReceipt(deps.relayerFor(input.network), relayerTxId(input.workflowId, 'settle'), deps.config.RECEIPT_WAIT_MS);
    },
  };
}

export type SettlementActivities = ReturnType<typeof createSettlementActivities>;
