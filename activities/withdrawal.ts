import { encodeFunctionData, type Address, type Hex } from 'viem';
import type { Config } from '../src/config';
import type { NetworkTable, EvmNetworkId } from '../src/chains/networks';
import { publicClientFor } from '../src/chains/evm/clients';
import type { Relayer } from '../src/chains/evm/relayer';
import { revertReason } from '../src/permit/chain-errors';
import { relayerTxId } from '../src/temporal/workflow-ids';
import type { WithdrawalInput } from '../src/gateway/withdrawal-types';
import { awaitRecordedReceipt, type ReceiptResult } from '../src/chains/evm/calls';
import type { RoleSigners } from './signers';
import { networkAllowed } from '../src/chains/mainnet-gate';
import { gatewayWalletAbi } from '../src/chains/evm/abi';

export interface WithdrawalActivityDeps extends RoleSigners {
  config: Pick<Config, 'RECEIPT_WAIT_MS' | 'MAINNETS_ENABLED' | 'env' | 'SOLANA_FEE_PAYER_KEY'>;
  networks: NetworkTable;
  /** Any signer of the network: receipt waits re-broadcast recorded bytes, whoever signed them. */
  relayerFor(network: EvmNetworkId): Relayer;
}

export type WithdrawalSubmit = { submitted: true; hash: Hex } | { submitted: false; reason: 'not_ready' | 'refused'; detail: string };

export type { ReceiptResult as WithdrawalReceipt } from '../src/chains/evm/calls';

/** The two relayer transactions of one withdrawal (their write-ahead record ids). */
export const withdrawalTxId = (workflowId: string, step: 'initiate' | 'withdraw') => relayerTxId(workflowId, step);

/**
 * Activities of the withdrawal workflow. Each is idempotent: the two transactions go through the
 * write-ahead relayer keyed by (workflow, step), so a retry after any crash re-sends the recorded
 * bytes instead of signing again; reads are plain views.
 */
export function createWithdrawalActivities(deps: WithdrawalActivityDeps) {
  const client = (id: EvmNetworkId) => {
    const n = deps.networks.get(id);
    if (!n) throw new Error(`unknown network ${id}`);
    return publicClientFor(n);
  };
  /**
   * The depositor's signer and the gateway wallet of the network, from configuration; the input must
   * name the same ones (the API copies them from there), or nothing is signed: a workflow started by
   * hand cannot point the depositor's key at another contract or token.
   */
  const configured = (input: WithdrawalInput): { relayer: Relayer; gatewayWallet: Address } | { refused: string } => {
    const network = deps.networks.get(input.network);
    if (!network?.gatewayWallet || !network.usdc) return { refused: `${input.network} has no gateway wallet configured` };
    const relayer = deps.signerFor('depositor', input.network);
    if (!relayer) return { refused: `this worker holds no key for the depositor on ${input.network}` };
    const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
    if (!same(input.gatewayWallet, network.gatewayWallet) || !same(input.token, network.usdc) || !same(input.depositor, relayer.address))
      return { refused: 'the withdrawal names a gateway wallet, token or depositor other than the configured ones' };
    return { relayer, gatewayWallet: network.gatewayWallet as Address };
  };
  /** Sends once per (workflow, step); a call the contract refuses is reported, not signed. */
  const send = async (input: WithdrawalInput, step: 'initiate' | 'withdraw', data: Hex): Promise<WithdrawalSubmit> => {
    if (!networkAllowed(deps, input.network))
      return { submitted: false, reason: 'refused', detail: `${input.network} is a mainnet and MAINNETS_ENABLED is off` };
    const target = configured(input);
    if ('refused' in target) return { submitted: false, reason: 'refused', detail: target.refused };
    const { relayer } = target;
    try {
      const { hash } = await relayer.send(withdrawalTxId(input.workflowId, step), { to: target.gatewayWallet, data });
      return { submitted: true, hash };
    } catch (err) {
      const reason = revertReason(err, gatewayWalletAbi);
      if (reason === undefined) throw err; // transient: Temporal retries
      return {
        submitted: false,
        reason: reason.startsWith('WithdrawalNotReady') ? 'not_ready' : 'refused',
        detail: `${step} would revert: ${reason}`,
      };
    }
  };

  return {
    /** `initiateWithdrawal(token, amount)` from the facilitator's account. */
    async initiateGatewayWithdrawal(input: WithdrawalInput): Promise<WithdrawalSubmit> {
      const data = encodeFunctionData({
        abi: gatewayWalletAbi,
        functionName: 'initiateWithdrawal',
        args: [input.token as Address, BigInt(input.amount)],
      });
      return send(input, 'initiate', data);
    },

    /** `withdraw(token)`: sends the whole withdrawable balance to the facilitator's account. */
    async withdrawFromGateway(input: WithdrawalInput): Promise<WithdrawalSubmit> {
      return send(
        input,
        'withdraw',
        encodeFunctionData({ abi: gatewayWalletAbi, functionName: 'withdraw', args: [input.token as Address] }),
      );
    },

    /** Bounded wait for the receipt of a recorded step; retried (re-broadcast) past the bound. */
    async awaitWithdrawalReceipt(input: {
      network: EvmNetworkId;
      workflowId: string;
      step: 'initiate' | 'withdraw';
    }): Promise<ReceiptResult> {
      return awaitRecordedReceipt(
        deps.relayerFor(input.network),
        withdrawalTxId(input.workflowId, input.step),
        deps.config.RECEIPT_WAIT_MS,
      );
    },

    /**
     * The depositor's `withdrawalBlock`, the contract's `withdrawalDelay` (blocks) and the chain's
     * current block, as decimal strings.
     */
    async readWithdrawalBlock(input: Pick<WithdrawalInput, 'network' | 'gatewayWallet' | 'token' | 'depositor'>) {
      const c = client(input.network);
      const wallet = input.gatewayWallet as Address;
      const [withdrawalBlock, withdrawalDelay, blockNumber] = await Promise.all([
        c.readContract({
          address: wallet,
          abi: gatewayWalletAbi,
          functionName: 'withdrawalBlock',
          args: [input.token as Address, input.depositor as Address],
        }),
        c.readContract({ address: wallet, abi: gatewayWalletAbi, functionName: 'withdrawalDelay' }),
        c.getBlockNumber({ cacheTime: 0 }),
      ]);
      return {
        withdrawalBlock: withdrawalBlock.toString(),
        withdrawalDelay: withdrawalDelay.toString(),
        blockNumber: blockNumber.toString(),
      };
    },
  };
}

export type WithdrawalActivities = ReturnType<typeof createWithdrawalActivities>;
