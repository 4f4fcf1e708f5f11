import { concat, hexToBigInt, hexToNumber, isAddressEqual, pad, size, slice, sliceHex, toHex, type Address, type Hex } from 'viem';

/**
 * Circle's CCTP V2 as the service sees it: the message format (CCTP V2 technical guide: a packed
 * 148-byte header and a 228-byte burn body) and fee arithmetic (the ABIs are generated: ./abi).
 * Pure code: workflows, activities, the attester double and tests share it.
 */

/** CCTP V2 message and burn-body version. */
export const CCTP_V2_VERSION = 1;
/** `minFinalityThreshold` of a standard (finalized) transfer. */
export const CCTP_FINALITY_FINALIZED = 2000;
/** `minFinalityThreshold` of a fast transfer (attested before finality, for a fee). */
export const CCTP_FINALITY_FAST = 1000;
const HEADER_BYTES = 148;
const BODY_BYTES = 228;

export interface BurnMessage {
  version: number;
  sourceDomain: number;
  destinationDomain: number;
  /** bytes32; zero as emitted on the source chain, assigned by the attestation service. */
  nonce: Hex;
  sender: Address;
  recipient: Address;
  destinationCaller: Address;
  minFinalityThreshold: number;
  /** Set by the attestation service (0 as emitted). */
  finalityThresholdExecuted: number;
  body: {
    version: number;
    burnToken: Address;
    mintRecipient: Address;
    amount: bigint;
    messageSender: Address;
    maxFee: bigint;
    /** Set by the attestation service (0 as emitted). */
    feeExecuted: bigint;
    expirationBlock: bigint;
    hookData: Hex;
  };
}

const word = (a: Address) => pad(a.toLowerCase() as Hex, { size: 32 });
const u32 = (n: number) => toHex(n, { size: 4 });
const u256 = (n: bigint) => toHex(n, { size: 32 });
const addressOf = (h: Hex): Address => `0x${h.slice(-40)}` as Address;

export function encodeBurnMessage(m: BurnMessage): Hex {
  const b = m.body;
  return concat([
    u32(m.version),
    u32(m.sourceDomain),
    u32(m.destinationDomain),
    pad(m.nonce, { size: 32 }),
    word(m.sender),
    word(m.recipient),
    word(m.destinationCaller),
    u32(m.minFinalityThreshold),
    u32(m.finalityThresholdExecuted),
    u32(b.version),
    word(b.burnToken),
    word(b.mintRecipient),
    u256(b.amount),
    word(b.messageSender),
    u256(b.maxFee),
    u256(b.feeExecuted),
    u256(b.expirationBlock),
    b.hookData,
  ]);
}

/** Decodes a CCTP V2 burn message; throws on anything shorter than a header and a burn body. */
export function decodeBurnMessage(message: Hex): BurnMessage {
  if (size(message) < HEADER_BYTES + BODY_BYTES) throw new Error('not a CCTP V2 burn message (too short)');
  const at = (start: number, bytes: number) => sliceHex(message, start, start + bytes);
  const n32 = (start: number) => hexToNumber(at(start, 4));
  const b = HEADER_BYTES;
  return {
    version: n32(0),
    sourceDomain: n32(4),
    destinationDomain: n32(8),
    nonce: at(12, 32),
    sender: addressOf(at(44, 32)),
    recipient: addressOf(at(76, 32)),
    destinationCaller: addressOf(at(108, 32)),
    minFinalityThreshold: n32(140),
    finalityThresholdExecuted: n32(144),
    body: {
      version: n32(b),
      burnToken: addressOf(at(b + 4, 32)),
      mintRecipient: addressOf(at(b + 36, 32)),
      amount: hexToBigInt(at(b + 68, 32)),
      messageSender: addressOf(at(b + 100, 32)),
      maxFee: hexToBigInt(at(b + 132, 32)),
      feeExecuted: hexToBigInt(at(b + 164, 32)),
      expirationBlock: hexToBigInt(at(b + 196, 32)),
      hookData: size(message) > b + BODY_BYTES ? slice(message, b + BODY_BYTES) : '0x',
    },
  };
}

/**
 * Whether `attested` (from the attestation service) is the message our burn emitted: equal in every
 * field but those the service fills in (nonce, executed finality, executed fee, expiration block).
 */
export function isAttestedFormOf(emitted: Hex, attested: Hex): boolean {
  let a: BurnMessage, b: BurnMessage;
  try {
    [a, b] = [decodeBurnMessage(emitted), decodeBurnMessage(attested)];
  } catch {
    return false;
  }
  const addresses = ['sender', 'recipient', 'destinationCaller'] as const;
  const bodyAddresses = ['burnToken', 'mintRecipient', 'messageSender'] as const;
  return (
    addresses.every((k) => isAddressEqual(a[k], b[k])) &&
    bodyAddresses.every((k) => isAddressEqual(a.body[k], b.body[k])) &&
    a.version === b.version &&
    a.sourceDomain === b.sourceDomain &&
    a.destinationDomain === b.destinationDomain &&
    a.minFinalityThreshold === b.minFinalityThreshold &&
    a.body.version === b.body.version &&
    a.body.amount === b.body.amount &&
    a.body.maxFee === b.body.maxFee &&
    a.body.hookData.toLowerCase() === b.body.hookData.toLowerCase() &&
    BigInt(b.nonce) !== 0n
  );
}

/** Finality of a network's burns (`BRIDGE_FINALITY_<NET>`): standard waits for finality, fast is attested sooner for a fee. */
export type BridgeFinality = 'standard' | 'fast';
export const BRIDGE_FINALITIES = ['standard', 'fast'] as const satisfies readonly BridgeFinality[];

/**
 * What a burn is sent with: its `minFinalityThreshold` and `maxFee`. Decided once per settlement
 * before its burn (activity `readBridgeBurnTerms`, recorded in the workflow's history).
 */
export interface BurnTerms {
  finality: BridgeFinality;
  minFinalityThreshold: number;
  /** Base units: the read fast fee with Circle's buffer, or (standard) the settlement's `maxBridgeFee`. */
  maxFee: string;
  /** Why a network set to fast burns at standard (its fast fee over the bound, or no fast tier on the route). */
  fellBack?: string;
}

/**
 * The fast tier of the attestation service's `GET /v2/burn/USDC/fees/{src}/{dst}` answer
 * (`[{finalityThreshold, minimumFee}]`, the fee in basis points, possibly fractional, e.g. "1.3"), in
 * hundredths of a basis point as Circle's client (`@circle-fin/provider-cctp-v2`) scales it;
 * `'none'` for a well-formed answer without a fast tier; undefined for anything else (not an answer).
 */
export function fastFeeOf(body: unknown): bigint | 'none' | undefined {
  if (!Array.isArray(body)) return undefined;
  const tiers = body as { finalityThreshold?: unknown; minimumFee?: unknown }[];
  const wellFormed = tiers.every(
    (t) =>
      typeof t === 'object' &&
      t !== null &&
      typeof t.finalityThreshold === 'number' &&
      (typeof t.minimumFee === 'number' || (typeof t.minimumFee === 'string' && /^\d+(\.\d+)?$/.test(t.minimumFee))),
  );
  if (!wellFormed) return undefined;
  const fast = tiers.find((t) => t.finalityThreshold === CCTP_FINALITY_FAST);
  if (!fast) return 'none';
  const bps = Number(fast.minimumFee);
  if (!Number.isFinite(bps) || bps < 0) return undefined;
  return BigInt(Math.round(bps * 100));
}

/**
 * A fast burn's `maxFee` as Circle's client computes it (`getMaxFee`, transfer speed FAST): the fee
 * at `scaledBps` (hundredths of a bp) of `amount` rounded up, plus a 10% buffer for the fee moving
 * between the read and the attestation.
 */
export function fastMaxFee(amount: bigint, scaledBps: bigint): bigint {
  const fee = (scaledBps * amount + 999_999n) / 1_000_000n;
  return fee + fee / 10n;
}

/** One signature of an attestation: (r, s, v). */
export const ATTESTATION_SIGNATURE_BYTES = 65;

/**
 * Whether `value` has the form of a CCTP attestation: one or more 65-byte signatures, concatenated
 * (as many as the destination transmitter's `signatureThreshold`, which only it knows and checks).
 */
export const isAttestationForm = (value: string): value is Hex => /^0x(?:[0-9a-fA-F]{130})+$/.test(value);

/** One basis point is 1/10,000; amounts round down (the payer never pays more than the rate). */
export const bpsOf = (amount: bigint, bps: number | bigint): bigint => (amount * BigInt(bps)) / 10_000n;

/** The fee charged at `feeBps` of `amount`, capped at the message's `maxFee` (the attestation's `feeExecuted`). */
export const bridgeFeeFor = (amount: bigint, maxFee: bigint, feeBps: number | bigint): bigint => {
  const fee = bpsOf(amount, feeBps);
  return fee > maxFee ? maxFee : fee;
};

/**
 * Exact input (spec routing step 4): the whole signed value is burned; the destination payout is
 * what arrives after the bridge fee, minus the platform fee (capped at what arrived).
 */
export function destinationSplit(value: bigint, bridgeFee: bigint, platformFee: bigint): { received: bigint; fee: bigint; payout: bigint } {
  const received = value - bridgeFee;
  const fee = platformFee > received ? received : platformFee;
  return { received, fee, payout: received - fee };
}
