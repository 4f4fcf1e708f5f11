import type { Address, Hex } from 'viem';
import type { EvmNetwork, EvmNetworkId } from '../chains/networks';
import { awaitCall, callSent, revertOf, sendCall, type RecordSent } from '../chains/evm/calls';
import { evmNetworkOf } from '../settle/records';
import type { SettleResponse } from '../x402/schemas';
import type { Confirmed, RecordOutcome, SettlementBase, SubmitResult, WorkerDeps } from './scheme';
import { relayerTxId } from '../temporal/workflow-ids';
import { ensureWalletDeployed } from '../chains/evm/wallet-deploy';

/** The buyer's wallet and signature: a counterfactual wallet (EIP-6492) is deployed before the settlement. */
export type BuyerSignature = { wallet: Address; signature: Hex };

/**
 * The worker side of an EVM scheme whose settlement is one call to our facilitator contract
 * (EIP-3009, Permit2): send it once through the settlement's relayer lane (write-ahead), report a
 * call that would revert, confirm by the recorded hash. The scheme only says how the call is encoded
 * and whose signature it carries: a wallet not deployed yet is deployed first (wallet-deploy.ts).
 * Each scheme's `sent`, `simulate`, `submit` and `confirm` call the method of the same name here.
 */
export class FacilitatorCall<I extends SettlementBase & { network: EvmNetworkId }> {
  constructor(
    private readonly callData: (input: I, network: EvmNetwork) => Hex,
    private readonly buyer: (input: I) => BuyerSignature,
    private readonly responseExtra: (input: I) => Partial<SettleResponse> = () => ({}),
  ) {}

  private callOf(input: I, network: EvmNetwork) {
    return { to: network.facilitator as Address, data: this.callData(input, network) };
  }

  sent(input: I, deps: WorkerDeps): Promise<boolean> {
    return callSent(deps.relayerFor(input.network, input.workflowId), input.workflowId, 'settle', () =>
      this.callOf(input, evmNetworkOf(deps.networks, input.network)),
    );
  }

  async simulate(input: I, deps: WorkerDeps): Promise<boolean> {
    const call = this.callOf(input, evmNetworkOf(deps.networks, input.network));
    try {
      await deps.relayerFor(input.network, input.workflowId).simulate(relayerTxId(input.workflowId, 'settle'), call);
      return true;
    } catch (err) {
      if (revertOf(err) === undefined) throw err; // no answer: verification fails as a read would
      return false;
    }
  }

  async submit(input: I, deps: WorkerDeps, record: RecordSent): Promise<SubmitResult> {
    const network = evmNetworkOf(deps.networks, input.network);
    const relayer = deps.relayerFor(input.network, input.workflowId);
    const { wallet, signature } = this.buyer(input);
    const ready = await ensureWalletDeployed(relayer, input.workflowId, network, wallet, signature, deps.config.RECEIPT_WAIT_MS);
    if (!ready.ready) return { submitted: false, reason: 'invalid_transaction_state', detail: ready.detail };
    const sent = await sendCall(relayer, input.workflowId, this.callOf(input, network), 'settle', record);
    return sent.sent
      ? { submitted: true, transaction: sent.hash }
      : { submitted: false, reason: 'invalid_transaction_state', detail: sent.revert };
  }

  async confirm(input: I, deps: WorkerDeps, record: RecordOutcome, waitMs = deps.config.RECEIPT_WAIT_MS): Promise<Confirmed> {
    const response = (r: { status: 'success' | 'reverted'; hash: string }) => receiptResponse(input, r, this.responseExtra(input));
    const relayer = deps.relayerFor(input.network, input.workflowId);
    const receipt = await awaitCall(relayer, input.workflowId, waitMs, 'settle', (em, r) =>
      record(em, response({ status: r.status, hash: r.transactionHash }), r.transactionHash),
    );
    return { response: response(receipt), transaction: receipt.hash };
  }
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
