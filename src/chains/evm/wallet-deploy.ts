import type { Address, Hex } from 'viem';
import type { EvmNetwork } from '../networks';
import { counterfactualOf, isListedFactory } from './buyer-signature';
import { awaitCall, sendCall } from './calls';
import type { Relayer } from './relayer';
import { relayerTxId } from '../../temporal/workflow-ids';

/** The write-ahead purpose of a counterfactual wallet's deployment: record `<workflowId>:deploy`. */
export const DEPLOY_PURPOSE = 'deploy';

export type WalletReady = { ready: true } | { ready: false; detail: string };

/**
 * Makes sure the buyer's wallet exists before its settlement is sent (docs/decisions/smart-wallet-buyers.md).
 * Nothing to do unless the signature is an EIP-6492 wrapper. Else, unless the wallet has
 * code already (deployed by anyone), the wrapper's factory call is sent through the relayer under the
 * write-ahead record `<workflowId>:deploy`, and its receipt is awaited (bounded; a timeout throws the
 * retryable `ReceiptTimeout`). A retry after a crash finds that record and re-sends its bytes, never a
 * second deployment. Only a factory the network lists is called, and the call is gas-capped like every
 * relayer call (`createAccount` in gas-ceilings.ts). Not ready: nothing of the payment was sent.
 */
export async function ensureWalletDeployed(
  relayer: Relayer,
  workflowId: string,
  network: EvmNetwork,
  wallet: Address,
  signature: Hex,
  waitMs: number,
): Promise<WalletReady> {
  const counterfactual = counterfactualOf(signature);
  if (!counterfactual) return { ready: true };
  const hasCode = async () => {
    const code = await relayer.client.getCode({ address: wallet });
    return code !== undefined && code !== '0x';
  };
  if (!(await relayer.find(relayerTxId(workflowId, DEPLOY_PURPOSE)))) {
    if (await hasCode()) return { ready: true };
    if (!isListedFactory(network, counterfactual.factory)) {
      return { ready: false, detail: `wallet factory ${counterfactual.factory} is not listed for ${network.id}` };
    }
    const sent = await sendCall(relayer, workflowId, { to: counterfactual.factory, data: counterfactual.factoryData }, DEPLOY_PURPOSE);
    if (!sent.sent) return { ready: false, detail: `wallet deployment refused: ${sent.revert}` };
  }
  await awaitCall(relayer, workflowId, waitMs, DEPLOY_PURPOSE);
  if (!(await hasCode())) return { ready: false, detail: `the factory call left no wallet at ${wallet}` };
  return { ready: true };
}
