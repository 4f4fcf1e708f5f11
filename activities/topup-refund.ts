import { ApplicationFailure } from '@temporalio/activity';
import type { MikroORM } from '@mikro-orm/core';
import { recordedSucceeded } from '../src/chains/evm/calls';
import type { Relayer } from '../src/chains/evm/relayer';
import { BridgeTransfer } from '../src/db/bridge-transfer';
import { Settlement, TopUp } from '../src/db/entities';
import { relayerTxId } from '../src/temporal/workflow-ids';
import type { TopUpInput } from '../src/topup/types';
import type { Address } from 'viem';
import type { EvmNetworkId, NetworkTable } from '../src/chains/networks';
import { publicClientFor } from '../src/chains/evm/clients';
import { nonceOfId, provenPayment, provenReceived } from '../src/chains/evm/payment-proof';

/**
 * What a failed top-up deposit gives back, from our own records only (issue 12): the payer of the
 * settled authorization, and what that settlement delivered to the top-up relayer (the settled amount
 * less the facilitator fee; cross-chain, the bridge payout, or for a leg an operator gives up on,
 * the quoted net the bridge owes the relayer). The workflow input only names which
 * top-up; a refund is owed only when that top-up's settlement paid this relayer and its deposit did
 * not succeed. Anything else is `RefundNotOwed` (not retried): nothing moves.
 */
export async function refundOwed(
  db: MikroORM,
  networks: NetworkTable,
  input: TopUpInput,
  relayer: Relayer,
): Promise<{ payee: string; amount: bigint }> {
  const em = db.em.fork();
  const notOwed = (why: string) => ApplicationFailure.nonRetryable(`no refund owed for ${input.workflowId}: ${why}`, 'RefundNotOwed');
  const settlement = await em.findOne(Settlement, { id: input.settle.workflowId });
  const crossChain = settlement?.route === 'eip3009-crosschain';
  // A cross-chain settlement whose bridge leg needs review is recorded `needs_review`, not `settled`.
  if (!settlement || !(settlement.state === 'settled' || (crossChain && settlement.state === 'needs_review')))
    throw notOwed('its settlement is not settled');
  // The top-up of this authorization is the one the gateway recorded; a run under another id is not it.
  const topUp = await em.findOne(TopUp, {
    network: settlement.network,
    payer: settlement.payer.toLowerCase(),
    nonce: input.nonce.toLowerCase(),
  });
  if (!topUp || topUp.id !== input.workflowId) throw notOwed('it is not the top-up of this authorization');
  const relayerAddress = relayer.address.toLowerCase();
  let delivered: bigint;
  /** The mint transaction that delivered a cross-chain leg to this relayer. */
  let deliveredByMint: string | undefined;
  if (crossChain) {
    const bridge = await em.findOne(BridgeTransfer, { settlementId: settlement.id });
    if (!bridge || bridge.recipient.toLowerCase() !== relayerAddress) throw notOwed('its bridge leg does not pay this relayer');
    if (bridge.state === 'delivered' && bridge.mintTx && bridge.payoutAmount) {
      delivered = BigInt(bridge.payoutAmount);
      deliveredByMint = bridge.mintTx;
    } else if (bridge.state === 'needs_review' && (topUp.state === 'needs_review' || topUp.state === 'refunding'))
      // An operator's refund of a leg that did not deliver: the relayer advances what the bridge
      // would pay it at the quote (gross - fee - quoted bridge fee); the burned message still pays
      // this relayer if it is ever delivered, so the advance comes back.
      delivered = BigInt(settlement.amount) - BigInt(settlement.fee) - BigInt(topUp.bridgeFee);
    else throw notOwed('the bridge paid it nothing');
  } else {
    if (settlement.recipient?.toLowerCase() !== relayerAddress) throw notOwed('its settlement did not pay this relayer');
    delivered = BigInt(settlement.amount) - BigInt(settlement.fee);
  }
  if (await recordedSucceeded(relayer, relayerTxId(input.workflowId, 'deposit'), 30_000)) throw notOwed('its deposit succeeded');
  // The chain, not our records, has the last word: the settlement transaction must show the payer's
  // authorization pulling the gross amount, and what reached this relayer (same chain: that
  // transaction; cross-chain: the mint) at least what is given back.
  const source = networks.get(settlement.network as EvmNetworkId);
  if (!source?.usdc || !settlement.transaction) throw notOwed('its settlement has no transaction');
  const proof = await provenPayment(publicClientFor(source), source.usdc as Address, settlement.transaction, {
    payer: settlement.payer,
    nonce: nonceOfId(settlement.id),
    wallet: relayerAddress,
  });
  if (!proof || proof.pulled < BigInt(settlement.amount) || proof.pulled < delivered)
    throw notOwed(`its settlement ${settlement.transaction} shows no payment of ${settlement.amount} by ${settlement.payer}`);
  if (!crossChain && proof.paid < delivered) throw notOwed(`its settlement paid this relayer ${proof.paid}, less than ${delivered}`);
  if (deliveredByMint !== undefined) {
    const received = await provenReceived(relayer.client, relayer.network.usdc as Address, deliveredByMint, relayerAddress);
    if (received < delivered) throw notOwed(`its mint paid this relayer ${received}, less than ${delivered}`);
  }
  return { payee: settlement.payer, amount: delivered };
}
