import type { AuthContext } from '../auth/key-mode';
import { assertKeyModeAllows } from '../auth/key-mode';
import { isEvmNetworkId, type EvmNetwork, type NetworkTable } from '../chains/networks';
import type { ServiceDeps } from '../deps';
import type { Refusal } from '../schemes/scheme';
import { feeOnAmount, organizationFeeBps, platformFee, ZERO_ADDRESS, type FeeDeps } from './payout';
import { callerOrganization } from '../auth/organizations';
import type { Organization } from '../db/entities';
import { marketplaceFeeOf } from './marketplace-fee';
import type { PaymentRequirements } from '../x402/schemas';
import type { SettleRequest } from '../schemes/scheme';
import type { SettlementBase } from '../schemes/scheme';
import { mainnetAllowed } from '../chains/mainnet-gate';
import { publicClientFor } from '../chains/evm/clients';
import { BaseError, ContractFunctionRevertedError, ContractFunctionZeroDataError, getAddress } from 'viem';
import { tokenAbi } from '../chains/evm/abi';

/**
 * What the EVM schemes share at request time, written once: which networks settle for this caller,
 * and the payout and fee of a payment from our own records.
 */

/**
 * The network a payment may settle on: known (else `invalid_network`), allowed for the key's mode
 * (403 ApiError, before anything else is said about the network), enabled for settlement, and a
 * mainnet only while mainnets are on.
 */
export function settlementNetwork(
  deps: Pick<ServiceDeps, 'networks' | 'config'>,
  auth: AuthContext,
  name: string,
): EvmNetwork | { refused: 'invalid_network' } {
  const network = isEvmNetworkId(name) ? deps.networks.get(name) : undefined;
  if (!network) return { refused: 'invalid_network' };
  assertKeyModeAllows(auth, network);
  if (!network.enabled || network.permitOnly) return { refused: 'invalid_network' };
  if (!mainnetAllowed(deps.config, network)) return { refused: 'invalid_network' };
  return network;
}

/**
 * The base of an EVM settlement input: the caller's organization and the terms of its records
 * (`settlementTerms`), refused as `settlementTerms` says.
 */
export async function evmSettlementBase(
  deps: ServiceDeps,
  req: SettleRequest,
  p: {
    workflowId: string;
    network: EvmNetwork['id'];
    payer: string;
    amount: bigint;
    extra: PaymentRequirements['extra'];
    marketplaceFee?: false;
  },
): Promise<Omit<SettlementBase, 'network'> | Refusal> {
  const org = await callerOrganization(req.em, req.auth);
  const terms = settlementTerms(deps, org, deps.networks.get(p.network)!, p);
  if ('refused' in terms) return { ...terms, network: p.network, payer: p.payer };
  return {
    workflowId: p.workflowId,
    requestId: req.requestId,
    organizationId: org!.id,
    apiKeyId: req.auth.apiKeyId ?? '',
    parkAfterMs: deps.config.SETTLE_PARK_AFTER_MS,
    payer: p.payer,
    amount: p.amount.toString(),
    ...terms,
  };
}

/** The zero address, or a contract of ours on any network (facilitator, USDC, Permit2 and its proxies, bridge, gateway wallet). */
export function undeliverable(networks: NetworkTable, address: string): boolean {
  const a = address.toLowerCase();
  if (a === ZERO_ADDRESS) return true;
  for (const n of networks.values()) {
    const ours = [
      n.facilitator,
      n.usdc,
      n.permit2,
      n.exactPermit2Proxy,
      n.uptoPermit2Proxy,
      n.bridgeMessenger,
      n.bridgeTransmitter,
      n.gatewayWallet,
    ];
    if (ours.some((c) => c?.toLowerCase() === a)) return true;
  }
  return false;
}

type PayoutRefusal = { refused: 'invalid_payment_requirements'; message: string };

/** A payout nobody could use (`undeliverable`), refused as such: the rule `settlementTerms` and a cross-chain leg's check share. */
function undeliverablePayout(networks: NetworkTable, payout: string): PayoutRefusal | undefined {
  if (!undeliverable(networks, payout)) return undefined;
  return {
    refused: 'invalid_payment_requirements',
    message: 'the payout is the zero address or one of our contracts: nobody could use it',
  };
}

/** Whether `err` is the chain's answer (the call reverted or returned nothing), not a read without an answer. */
const answered = (err: unknown) =>
  err instanceof BaseError &&
  err.walk((e) => e instanceof ContractFunctionRevertedError || e instanceof ContractFunctionZeroDataError) !== null;

/**
 * Why a cross-chain leg could not deliver to `payout` on `destination`, asked before the burn (by the
 * API and again by the worker): a payout nobody could use (`undeliverable`); one that the
 * destination's USDC blacklists (Circle's FiatToken); or one our destination facilitator could not
 * pay at all, found by simulating (eth_call) the payout's own transfer as the destination
 * facilitator makes it (`transfer(payout, 0)` from the facilitator: FiatToken checks the pause, the
 * sender's and the recipient's blacklist and the zero address before any balance). Each would
 * make the mint and payout after the burn revert and leave the burned USDC in the bridge. The
 * attestation does not exist yet, so the mint itself cannot be simulated. A read without an answer
 * throws (an unknown, retried by whoever asks), never a refusal; a token that keeps no blacklist
 * (the call reverts or returns nothing) credits anyone.
 */
export async function undeliverableLeg(
  networks: NetworkTable,
  destination: EvmNetwork,
  payout: string,
): Promise<PayoutRefusal | undefined> {
  const unusable = undeliverablePayout(networks, payout);
  if (unusable || !destination.usdc) return unusable;
  const client = publicClientFor(destination);
  const to = getAddress(payout.toLowerCase());
  const blacklisted = await client
    .readContract({ address: destination.usdc, abi: tokenAbi, functionName: 'isBlacklisted', args: [to] })
    .catch((err: unknown) => {
      if (answered(err)) return false;
      throw err;
    });
  if (blacklisted) {
    return {
      refused: 'invalid_payment_requirements',
      message: `the payout is blacklisted by USDC on ${destination.id}: the mint to it would revert after the burn`,
    };
  }
  if (!destination.facilitator) return undefined;
  const refusal = await client
    .simulateContract({
      address: destination.usdc,
      abi: tokenAbi,
      functionName: 'transfer',
      args: [to, 0n],
      account: destination.facilitator,
    })
    .then(
      () => undefined,
      (err: unknown) => {
        if (!(err instanceof BaseError)) throw err;
        if (err.walk((e) => e instanceof ContractFunctionZeroDataError)) return undefined; // a token whose transfer returns nothing
        const reverted = err.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
        if (!reverted) throw err;
        return reverted.reason ?? reverted.data?.errorName ?? reverted.shortMessage;
      },
    );
  if (refusal === undefined) return undefined;
  return {
    refused: 'invalid_payment_requirements',
    message: `USDC on ${destination.id} refuses a transfer to the payout (${refusal}): the mint and payout would revert after the burn`,
  };
}

/** Who a settlement pays and how much each gets of the amount (the settlement input's own fields). */
export type SettlementTerms = Pick<SettlementBase, 'payout' | 'fee' | 'feeRecipient' | 'platform' | 'platformFee'>;

/**
 * The terms of a payment of `amount` from `payer` for an organization, from its records and our
 * configuration: the payout (`creditedRecipient`, else the organization's wallet for the network's
 * mode; never the payer itself), the organization's fee to PLATFORM_FEE_RECIPIENT, and the
 * marketplace fee `extra` asks for (refused out of bounds, or where the route cannot pay it:
 * `marketplaceFee: false`). The API builds a settlement input with them and the worker refuses an
 * input that says otherwise (activities/settlement-terms.ts), so the payees never come from
 * workflow input alone.
 */
export function settlementTerms(
  deps: FeeDeps & Pick<ServiceDeps, 'networks'>,
  org: Organization | null | undefined,
  network: Pick<EvmNetwork, 'testnet' | 'facilitator'>,
  p: { payer: string; amount: bigint; extra: PaymentRequirements['extra']; marketplaceFee?: false },
): SettlementTerms | { refused: string; message?: string } {
  const payout = p.extra?.creditedRecipient ?? (network.testnet ? org?.payoutWalletTest : org?.payoutWalletLive);
  if (!org || !payout) return { refused: 'payout_wallet_not_configured' };
  const refuse = (message: string) => ({ refused: 'invalid_payment_requirements', message });
  // Nobody could take out what such a payout receives, and a cross-chain leg's mint to it reverts.
  const unusable = undeliverablePayout(deps.networks, payout);
  if (unusable) return unusable;
  // A payment to oneself moves nothing but our gas, at no cost to whoever repeats it (issue 39).
  if (payout.toLowerCase() === p.payer.toLowerCase()) return refuse('the payer is the payout wallet: a self-payment is refused');
  const { fee, feeRecipient } = platformFee(p.amount, org, deps);
  const marketplace = marketplaceFeeOf(p.extra, {
    facilitator: network.facilitator ?? ZERO_ADDRESS,
    organizationFeeBps: organizationFeeBps(org, deps),
  });
  if (marketplace && 'refused' in marketplace) return refuse(marketplace.refused);
  if (marketplace && p.marketplaceFee === false) return refuse('extra.platformFeeBps is not applied on this route; settle on one chain');
  return {
    payout,
    fee: fee.toString(),
    feeRecipient,
    ...(marketplace ? { platform: marketplace.platform, platformFee: feeOnAmount(p.amount, marketplace.bps).toString() } : {}),
  };
}
