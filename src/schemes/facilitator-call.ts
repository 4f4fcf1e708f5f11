import type { Address, Hex } from 'viem';
import type { EvmNetwork, EvmNetworkId } from '../chains/networks';
import { awaitCall, callSent, revertOf, sendCall } from '../chains/evm/calls';
import { evmNetworkOf } from '../settle/records';
import type { SettlementInput } from '../settle/types';
import type { SettleResponse } from '../x402/schemas';
import type { Scheme } from './scheme';
import { relayerTxId } from '../temporal/workflow-ids';
import { ensureWalletDeployed } from '../chains/evm/wallet-deploy';

/** The buyer's wallet and signature: a counterfactual wallet (EIP-6492) is deployed before the settlement. */
export type BuyerSignature = { wallet: Address; signature: Hex };

/**
 * The worker side of an EVM scheme whose settlement is one call to our facilitator contract
 * (EIP-3009, Permit2): send it once through the settlement's relayer lane (write-ahead), report a
 * call that would revert, confirm by the recorded hash. The scheme only says how the call is encoded
 * and whose signature it carries: a wallet not deployed yet is deployed first (wallet-deploy.ts).
 */
export function facilitatorCall<I extends SettlementInput & { network: EvmNetworkId }>(
  callData: (input: I, network: EvmNetwork) => Hex,
  buyer: (input: I) => BuyerSignature,
  responseExtra: (input: I) => Partial<SettleResponse> = () => ({}),
): Pick<Scheme<unknown, I>, 'sent' | 'simulate' | 'submit' | 'confirm'> {
  const callOf = (input: I, network: EvmNetwork) => ({ to: network.facilitator as Address, data: callData(input, network) });
  return {
    sent: (input, deps) =>
      callSent(deps.relayerFor(input.network, input.workflowId), input.workflowId, 'settle', () =>
        callOf(input, evmNetworkOf(deps.networks, input.network)),
      ),

    async simulate(input, deps) {
      const call = callOf(input, evmNetworkOf(deps.networks, input.network));
      try {
        await deps.relayerFor(input.network, input.workflowId).simulate(relayerTxId(input.workflowId, 'settle'), call);
        return true;
      } catch (err) {
        if (revertOf(err) === undefined) throw err; // no answer: verification fails as a read would
        return false;
      }
    },

    async submit(input, deps, record) {
      const network = evmNetworkOf(deps.networks, input.network);
      const relayer = deps.relayerFor(input.network, input.workflowId);
      const { wallet, signature } = buyer(input);
      const ready = await ensureWalletDeployed(relayer, input.workflowId, network, wallet, signature, deps.config.RECEIPT_WAIT_MS);
      if (!ready.ready) return { submitted: false, reason: 'invalid_transaction_state', detail: ready.detail };
      const sent = await sendCall(relayer, input.workflowId, callOf(input, network), 'settle', record);
      return sent.sent
        ? { submitted: true, transaction: sent.hash }
        : { submitted: false, reason: 'invalid_transaction_state', detail: sent.revert };
    },

    async confirm(input, deps, record, waitMs = deps.config.RECEIPT_WAIT_MS) {
      const response = (r: { status: 'success' | 'reverted'; hash: string }) => receiptResponse(input, r, responseExtra(input));
      const relayer = deps.relayerFor(input.network, input.workflowId);
      const receipt = await awaitCall(relayer, input.workflowId, waitMs, 'settle', (em, r) =>
        record(em, response({ status: r.status, hash: r.transactionHash }), r.transactionHash),
      );
      return { response: response(receipt), transaction: receipt.hash };
    },
  };
}

/** The settle response of an EVM call's receipt: the hash on success, `invalid_transaction_state` on revert. */
export function receiptResponse(
  input: { network: string; payer: string },
  receipt: { status: 'success' | 'reverted'; hash: string },
  extra: Partial<SettleResponse> = {},
): SettleResponse {
  return receipt.status === 'success'
    ? { success: true, transaction: receipt.hash, network: input.network, payer: input.payer, ...extra }
    : { success: false, errorReason: 'invalid_transaction_state', transaction: '', network: input.network, payer: input.payer };
}
