import { ApplicationFailure } from '@temporalio/activity';
import { awaitRecordedReceipt, type ReceiptResult as PermitReceiptResult } from '../src/chains/evm/calls';
import { encodeFunctionData, type Address, type Hex } from 'viem';
import type { MikroORM } from '@mikro-orm/core';
import type { Config } from '../src/config';
import type { NetworkTable, EvmNetworkId } from '../src/chains/networks';
import { publicClientFor } from '../src/chains/evm/clients';
import type { Relayer } from '../src/chains/evm/relayer';
import { relayerTxId } from '../src/temporal/workflow-ids';
import { revertReason } from '../src/permit/chain-errors';
import { verifyPermit, type PermitVerification } from '../src/permit/verify';
import type { PermitInput } from '../src/permit/types';
import { networkAllowed } from '../src/chains/mainnet-gate';
import { facilitatorAbi, tokenAbi } from '../src/chains/evm/abi';

export interface PermitActivityDeps {
  config: Pick<Config, 'MIN_VALIDITY_SECONDS' | 'RECEIPT_WAIT_MS' | 'MAINNETS_ENABLED' | 'env' | 'SOLANA_FEE_PAYER_KEY'>;
  db: MikroORM;
  networks: NetworkTable;
  relayerFor(network: EvmNetworkId): Relayer;
}

export type PermitSubmitResult = { submitted: true; hash: Hex } | { submitted: false; detail: string };
export type { ReceiptResult as PermitReceiptResult } from '../src/chains/evm/calls';

/** The relayer transaction of one permit workflow (its write-ahead record id). */
const permitTxId = (workflowId: string) => relayerTxId(workflowId, 'permit');

/**
 * Activities of the permit workflow. Each is idempotent: safe to retry after any crash. The record
 * is written with the settlement activities' `recordSettlement` (same table, route `permit`).
 */
export function createPermitActivities(deps: PermitActivityDeps) {
  const network = (id: EvmNetworkId) => {
    const n = deps.networks.get(id);
    if (!n) throw ApplicationFailure.nonRetryable(`unknown network ${id}`, 'unsupported_network');
    return n;
  };
  /** A view call; `undefined` when the contract refuses it, thrown (retried) when the RPC fails. */
  const view = async <T>(read: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await read();
    } catch (err) {
      if (revertReason(err, tokenAbi) !== undefined) return undefined;
      throw err;
    }
  };

  return {
    /** Deadline, token and EIP-2612 signature against the chain's current state; no transaction. */
    async verifyPermit(input: PermitInput): Promise<PermitVerification> {
      const n = network(input.network);
      const client = publicClientFor(n);
      return verifyPermit(input, n, {
        nowSeconds: Math.floor(Date.now() / 1000),
        minValiditySeconds: deps.config.MIN_VALIDITY_SECONDS,
        reads: {
          hasCode: async (token) => ((await client.getCode({ address: token })) ?? '0x') !== '0x',
          domainSeparator: (token) => view(() => client.readContract({ address: token, abi: tokenAbi, functionName: 'DOMAIN_SEPARATOR' })),
          nonces: (token, owner) =>
            view(() => client.readContract({ address: token, abi: tokenAbi, functionName: 'nonces', args: [owner] })),
        },
      });
    },

    /**
     * Calls the facilitator's `transferWithPermit` once for this workflow. A retry returns the
     * transaction already recorded; a call that would revert is reported before anything is signed.
     */
    async submitPermit(input: PermitInput): Promise<PermitSubmitResult> {
      const n = network(input.network);
      const data = encodeFunctionData({
        abi: facilitatorAbi,
        functionName: 'transferWithPermit',
        args: [
          input.token as Address,
          input.owner as Address,
          input.recipient as Address,
          BigInt(input.value),
          BigInt(input.deadline),
          input.v,
          input.r,
          input.s,
        ],
      });
      if (!networkAllowed(deps, input.network))
        return { submitted: false, detail: `${input.network} is a mainnet and MAINNETS_ENABLED is off` };
      try {
        const { hash } = await deps.relayerFor(input.network).send(permitTxId(input.workflowId), { to: n.facilitator as Address, data });
        return { submitted: true, hash };
      } catch (err) {
        const reason = revertReason(err, facilitatorAbi);
        if (reason !== undefined) return { submitted: false, detail: `transferWithPermit would revert: ${reason}` };
        throw err; // transient (RPC down, timeout): Temporal retries
      }
    },

    /**
     * Waits for the receipt of the recorded transaction, bounded; throws (retryable) on timeout
     * after re-broadcasting, so a dropped transaction is sent again with the same bytes.
     */
    async awaitPermitReceipt(input: { network: EvmNetworkId; workflowId: string }): Promise<PermitReceiptResult> {
      return awaitRecordedReceipt(deps.relayerFor(input.network), permitTxId(input.workflowId), deps.config.RECEIPT_WAIT_MS);
    },
  };
}

export type PermitActivities = ReturnType<typeof createPermitActivities>;
