import { ApplicationFailure } from '@temporalio/common';
import { size, slice, toFunctionSelector, type Abi, type Hex } from 'viem';
import { depositorAbi, facilitatorAbi, facilitatorPermit2Abi, gatewayWalletAbi, merchantAbi, tokenAbi, walletFactoryAbi } from './abi';

/**
 * The most gas the relayer signs for each call type, by the function called. A call whose estimate
 * is above its type's ceiling is refused before anything is signed (`GasCeilingExceeded`), and a
 * call of no listed type is refused too: a token or contract whose code burns gas can never spend
 * more of ours than the call type needs. The gas signed is the estimate plus 20% and one storage
 * slot's write from zero (`gasToSign`), never above the ceiling.
 *
 * The ceilings were set to the largest estimate measured on the devnet over the integration tests of
 * each flow (fresh payees, fees, a `permit2612`) plus 50% and 50,000, rounded up to 10,000, when the
 * devnet ran a token of our own; the margin was for what that token lacked, mainnet USDC's proxy and
 * blacklist reads. The devnet now runs Circle's FiatToken V2.2 behind its proxy, and the largest
 * estimates measured with it leave every ceiling at least 38% above: settleSplit 209,536 (fresh payout,
 * fee and platform recipients); settlePermit2Exact 225,490 (with a `permit2612`); settlePermit2Upto
 * 169,636; transferWithPermit 145,499; settleAndBurn 207,721; receiveAndPayout 241,827 (a 2-of-3 attestation);
 * transferWithAuthorization 104,365 (a fresh payee); increaseAllowance 56,103; depositOnce 195,443;
 * initiateWithdrawal 76,714; withdraw 60,713 (deposit was 98,360 with the old token). What is left of
 * the margin covers Arbitrum, which counts its L1 data cost in gas units (docs/decisions/gas-ceilings.md).
 */
export const GAS_CEILINGS = {
  /** A call without a function selector: a bare transfer (21,000) and a few bytes of calldata. */
  plain: 30_000n,
  /** EIP-3009 settlement: `settleSplit` pulls the authorization, pays the fee and the payout. */
  settleSplit: 290_000n,
  /** Permit2 `exact` / `upto` settlement through the proxy, with an optional EIP-2612 permit for Permit2. */
  settlePermit2Exact: 350_000n,
  settlePermit2Upto: 350_000n,
  /** POST /v1/permit: `transferWithPermit` applies the EIP-2612 permit and moves the tokens. */
  transferWithPermit: 240_000n,
  /** Cross-chain EIP-3009: pull and burn on the source chain; receive, mint and pay out on the destination. */
  settleAndBurn: 320_000n,
  receiveAndPayout: 360_000n,
  /** Refunds and top-up refunds from our own wallet (activities/transfer-once.ts). */
  transferWithAuthorization: 150_000n,
  /**
   * Top-up: the deposit key's allowance, then `depositOnce` through it (the merchant's `deposit` plus
   * the key's used-id write, pull and approval); `deposit` straight on the merchant for a top-up
   * whose allowance was recorded for the merchant itself.
   */
  increaseAllowance: 120_000n,
  depositOnce: 330_000n,
  deposit: 200_000n,
  /** Gateway-wallet withdrawal: initiate, then withdraw after the delay. */
  initiateWithdrawal: 170_000n,
  withdraw: 160_000n,
  /**
   * A counterfactual buyer wallet's deployment through a listed factory (EIP-6492; wallet-deploy.ts),
   * before its settlement: the devnet factory's estimate is 364,075 (most of it the wallet's code
   * deposit); proxy-based factories (an ERC-1967 proxy per wallet) cost less.
   */
  createAccount: 450_000n,
} as const satisfies Record<string, bigint>;

export type CallType = keyof typeof GAS_CEILINGS;

/**
 * What writing a storage slot from zero costs over rewriting it (EIP-2200: 20,000 against 2,900).
 * An estimate is made against the state at that moment; a slot that held a value then may be empty
 * when the transaction runs, and 20% of a small call does not cover it. The top-up's
 * `increaseAllowance` is one: estimated (about 39,000) while another top-up's approval was still
 * outstanding, it needs about 56,000 once that top-up's deposit has spent the shared allowance back to
 * zero, and with the estimate plus 20% it ran out of gas and reverted.
 */
export const SLOT_FROM_ZERO_GAS = 17_100n;

/** The gas signed for a call estimated at `estimate`: plus 20% and SLOT_FROM_ZERO_GAS, never above its `ceiling`. */
export function gasToSign(estimate: bigint, ceiling: bigint): bigint {
  const gas = (estimate * 12n) / 10n + SLOT_FROM_ZERO_GAS;
  return gas < ceiling ? gas : ceiling;
}

const ABIS: Record<Exclude<CallType, 'plain'>, Abi> = {
  settleSplit: facilitatorAbi,
  settlePermit2Exact: facilitatorPermit2Abi,
  settlePermit2Upto: facilitatorPermit2Abi,
  transferWithPermit: facilitatorAbi,
  settleAndBurn: facilitatorAbi,
  receiveAndPayout: facilitatorAbi,
  transferWithAuthorization: tokenAbi,
  increaseAllowance: tokenAbi,
  depositOnce: depositorAbi,
  deposit: merchantAbi,
  initiateWithdrawal: gatewayWalletAbi,
  withdraw: gatewayWalletAbi,
  createAccount: walletFactoryAbi,
};

/**
 * The overload the relayer sends where a name has several: FiatToken's EIP-3009 takes the signature as
 * `bytes` (so EIP-1271 and EIP-6492 signatures fit) or as `v, r, s`; the service sends `bytes`.
 */
const OVERLOADS: Partial<Record<CallType, string>> = {
  transferWithAuthorization: 'transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)',
};

/** Call type by 4-byte selector. */
const BY_SELECTOR = new Map<string, CallType>(
  Object.entries(ABIS).map(([name, abi]) => {
    const items = abi.filter((item) => item.type === 'function' && item.name === name);
    const signature = OVERLOADS[name as CallType];
    const item = signature ? items.find((i) => toFunctionSelector(i as never) === toFunctionSelector(signature)) : items[0];
    if (!item) throw new Error(`gas-ceilings: ${signature ?? name} is not in its ABI`);
    if (!signature && items.length > 1) throw new Error(`gas-ceilings: ${name} is overloaded; list the one sent in OVERLOADS`);
    return [toFunctionSelector(item as never), name as CallType];
  }),
);

/** The call type of this calldata: `plain` without a selector, else the function's; undefined when unlisted. */
export function callTypeOf(data: Hex): CallType | undefined {
  if (size(data) < 4) return 'plain';
  return BY_SELECTOR.get(slice(data, 0, 4));
}

/** Failure type of a call refused for its gas (nothing was signed). */
export const GAS_CEILING_EXCEEDED = 'GasCeilingExceeded';

/**
 * The refusal of a call whose estimate is above its type's ceiling, or of a call of no listed type:
 * non-retryable (the same call would be refused again; nothing was signed). Callers that report a
 * call that would revert report this the same way (`gasCeilingRefusal`).
 */
export function checkGas(data: Hex, estimate: bigint): bigint {
  const type = callTypeOf(data);
  if (type === undefined) {
    throw ApplicationFailure.create({
      type: GAS_CEILING_EXCEEDED,
      nonRetryable: true,
      message: `refused: the relayer signs no call of selector ${slice(data, 0, 4)} (not a listed call type)`,
    });
  }
  const ceiling = GAS_CEILINGS[type];
  if (estimate > ceiling) {
    throw ApplicationFailure.create({
      type: GAS_CEILING_EXCEEDED,
      nonRetryable: true,
      message: `refused: ${type} is estimated at ${estimate} gas, above its ceiling of ${ceiling}`,
    });
  }
  return ceiling;
}

/** The message of a gas-ceiling refusal, or undefined when `err` is none. */
export const gasCeilingRefusal = (err: unknown): string | undefined =>
  err instanceof ApplicationFailure && err.type === GAS_CEILING_EXCEEDED ? err.message : undefined;

/**
 * A transfer we owe (a refund, a top-up's allowance) is never given up for its gas: the refusal is
 * thrown again as retryable, so the activity retries with back-off and its workflow stays running in
 * a state the stuck scan flags, until the ceiling or the chain lets it pass. Other errors pass through.
 */
export function owedDespiteGas(err: unknown): never {
  const refused = gasCeilingRefusal(err);
  if (refused) {
    throw ApplicationFailure.create({
      type: GAS_CEILING_EXCEEDED,
      nonRetryable: false,
      message: `${refused}; owed, so retried until it fits its ceiling (flagged by the stuck scan meanwhile)`,
    });
  }
  throw err;
}
