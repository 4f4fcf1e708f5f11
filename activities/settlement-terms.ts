import type { MikroORM } from '@mikro-orm/core';
import type { Config } from '../src/config';
import type { NetworkTable } from '../src/chains/networks';
import { Organization } from '../src/db/entities';
import { findRow } from '../src/db/rows';
import { INFERENCE_ORGANIZATION_ID } from '../src/inference/types';
import { settlementTerms, type SettlementTerms } from '../src/settle/evm-request';
import { ZERO_ADDRESS } from '../src/settle/payout';
import type { SettlementInput } from '../src/settle/types';
import { uptoSettleAmount } from '../src/schemes/permit2/verify';
import { loadTopupConfig } from '../src/topup/config';
import type { CrossChainSettleInput } from '../src/schemes/eip3009-crosschain/types';

/**
 * The worker's own view of who a settlement pays (docs/security.md "Forged workflows"): whoever can
 * start a workflow can name any payout, fee recipient or marketplace in its input, so before anything
 * is signed the worker derives the terms from our records and configuration and refuses an input
 * that says otherwise.
 */
export interface TermsDeps {
  config: Pick<Config, 'PLATFORM_FEE_RECIPIENT'> & Partial<Pick<Config, 'env'>>;
  db: MikroORM;
  networks: NetworkTable;
  /** The revenue wallet (the address of REVENUE_WALLET_PRIVATE_KEY): the payout of our own paid services. */
  revenueWallet?: string;
  /** The top-up relayer (the address of TOPUP_RELAYER_PRIVATE_KEY): the payout of a top-up's settlement. */
  topUpRelayer?: string;
}

/** The routes whose payout and fees our facilitator contract pays (Solana's buyer pays `payTo` in its own signed transaction). */
type PaidByUs = Exclude<SettlementInput, { route: 'solana' }> | CrossChainSettleInput;

const same = (a: string | undefined, b: string | undefined) => (a ?? '').toLowerCase() === (b ?? '').toLowerCase();
const amountOf = (v: string | undefined) => (v === undefined || v === '' ? '0' : BigInt(v).toString());

/** What moves from the payer, from the signed payload (Permit2 upto: the amount its requirements settle). */
function signedAmount(input: PaidByUs): bigint {
  if (input.route !== 'permit2') return BigInt(input.paymentPayload.payload.authorization.value);
  const p = input.paymentPayload;
  return p.scheme === 'upto' ? uptoSettleAmount(input.paymentRequirements) : BigInt(p.payload.permit.permitted.amount);
}

const payerOf = (input: PaidByUs) =>
  input.route === 'permit2' ? input.paymentPayload.payload.owner : input.paymentPayload.payload.authorization.from;

/**
 * The terms a settlement must carry: our own paid services (INFERENCE_ORGANIZATION_ID) pay the
 * revenue wallet with no fee, a top-up's settlement pays the top-up relayer and any fee to
 * TOPUP_FEE_RECIPIENT (all our own wallets), and any other organization is paid as its record and our
 * configuration say, exactly as the API built it (`settlementTerms`); refused when the organization
 * does not exist or has no wallet.
 */
async function termsOf(deps: TermsDeps, input: PaidByUs): Promise<SettlementTerms | { refused: string; message?: string }> {
  const ours = { fee: '0', feeRecipient: ZERO_ADDRESS };
  if (input.organizationId === INFERENCE_ORGANIZATION_ID) {
    if (!deps.revenueWallet) return { refused: 'payout_wallet_not_configured', message: 'this worker holds no revenue wallet' };
    return { payout: deps.revenueWallet, ...ours };
  }
  // A top-up's leg pays the top-up relayer, whose key this worker holds (src/chains/mainnet-gate.ts),
  // and the gateway's fee (its quote of the gross amount) to TOPUP_FEE_RECIPIENT, our own wallet.
  if (deps.topUpRelayer && same(input.payout, deps.topUpRelayer)) {
    const feeRecipient = loadTopupConfig(deps.config.env ?? {}).TOPUP_FEE_RECIPIENT;
    if (amountOf(input.fee) === '0' || !feeRecipient) return { payout: deps.topUpRelayer, ...ours };
    return { payout: deps.topUpRelayer, fee: input.fee, feeRecipient };
  }
  const network = deps.networks.get(input.network);
  if (!network) return { refused: 'invalid_network' };
  const org = await findRow(deps.db.em.fork(), Organization, { id: input.organizationId });
  return settlementTerms(deps, org, network, {
    payer: payerOf(input),
    amount: signedAmount(input),
    extra: input.paymentRequirements.extra,
    ...(input.route === 'eip3009-crosschain' ? { marketplaceFee: false as const } : {}),
  });
}

/**
 * Why the input's payout, fees or amount differ from what our records and configuration say (a
 * message), or undefined when they agree. A payout that changed between the request and this check
 * refuses the settlement too: nothing is signed, and the seller's retry gets the new terms.
 */
export async function termsRefusal(deps: TermsDeps, input: PaidByUs): Promise<string | undefined> {
  const terms = await termsOf(deps, input);
  const marketplace: { platform?: string; platformFee?: string } = input.route === 'eip3009-crosschain' ? {} : input;
  if ('refused' in terms) return `${terms.refused}${terms.message ? `: ${terms.message}` : ''}`;
  const differs = [
    !same(input.payout, terms.payout) && 'payout',
    amountOf(input.fee) !== amountOf(terms.fee) && 'fee',
    // A fee recipient matters only with a fee (the API sends the zero address when none).
    amountOf(terms.fee) !== '0' && !same(input.feeRecipient, terms.feeRecipient) && 'feeRecipient',
    amountOf(marketplace.platformFee) !== amountOf(terms.platformFee) && 'platformFee',
    amountOf(terms.platformFee) !== '0' && !same(marketplace.platform, terms.platform) && 'platform',
    input.route === 'permit2' && amountOf(input.amount) !== signedAmount(input).toString() && 'amount',
  ].filter(Boolean);
  return differs.length ? `the input's ${differs.join(', ')} differ from our records and configuration` : undefined;
}
