import { decodeAbiParameters, encodeAbiParameters, type Address, type Hex } from 'viem';

/**
 * The CCTP-style bridge as the service sees it: the burn message format (devnet/contracts/
 * CctpStyleBridge.sol, `BridgeMessage`), fee arithmetic, and the ABI fragments the service calls.
 * Pure code: workflows, activities, the attester double and tests share it.
 */

const MESSAGE_PARAMS = [
  { name: 'version', type: 'uint32' },
  { name: 'sourceDomain', type: 'uint32' },
  { name: 'destinationDomain', type: 'uint32' },
  { name: 'nonce', type: 'uint64' },
  { name: 'sender', type: 'address' },
  { name: 'burnToken', type: 'address' },
  { name: 'mintRecipient', type: 'address' },
  { name: 'destinationCaller', type: 'address' },
  { name: 'amount', type: 'uint256' },
  { name: 'maxFee', type: 'uint256' },
  { name: 'depositor', type: 'address' },
] as const;

export const BRIDGE_MESSAGE_VERSION = 1;

export interface BurnMessage {
  version: number;
  sourceDomain: number;
  destinationDomain: number;
  nonce: bigint;
  sender: Address;
  burnToken: Address;
  mintRecipient: Address;
  destinationCaller: Address;
  amount: bigint;
  maxFee: bigint;
  depositor: Address;
}

export function encodeBurnMessage(m: BurnMessage): Hex {
  return encodeAbiParameters(MESSAGE_PARAMS, [
    m.version,
    m.sourceDomain,
    m.destinationDomain,
    m.nonce,
    m.sender,
    m.burnToken,
    m.mintRecipient,
    m.destinationCaller,
    m.amount,
    m.maxFee,
    m.depositor,
  ]);
}

/** Decodes a burn message; throws on anything that is not exactly one message of our format. */
export function decodeBurnMessage(message: Hex): BurnMessage {
  if ((message.length - 2) / 2 !== 32 * MESSAGE_PARAMS.length) throw new Error('not a bridge burn message (wrong length)');
  const [version, sourceDomain, destinationDomain, nonce, sender, burnToken, mintRecipient, destinationCaller, amount, maxFee, depositor] =
    decodeAbiParameters(MESSAGE_PARAMS, message);
  return {
    version,
    sourceDomain,
    destinationDomain,
    nonce,
    sender,
    burnToken,
    mintRecipient,
    destinationCaller,
    amount,
    maxFee,
    depositor,
  };
}

/** One basis point is 1/10,000; amounts round down (the payer never pays more than the rate). */
export const bpsOf = (amount: bigint, bps: number | bigint): bigint => (amount * BigInt(bps)) / 10_000n;

/** The fee a transmitter with `feeBps` keeps from `amount`, capped at the message's `maxFee`. */
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

export const bridgeMessengerAbi = [
  { type: 'event', name: 'MessageSent', inputs: [{ name: 'message', type: 'bytes', indexed: false }] },
  { type: 'function', name: 'localDomain', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint32' }] },
  { type: 'function', name: 'nextNonce', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint64' }] },
] as const;

export const bridgeTransmitterAbi = [
  {
    type: 'function',
    name: 'usedNonces',
    stateMutability: 'view',
    inputs: [
      { name: 'sourceDomain', type: 'uint32' },
      { name: 'nonce', type: 'uint64' },
    ],
    outputs: [{ type: 'bool' }],
  },
  { type: 'function', name: 'localDomain', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint32' }] },
  { type: 'function', name: 'attester', stateMutability: 'view', inputs: [], outputs: [{ type: 'address' }] },
  { type: 'function', name: 'feeBps', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint16' }] },
  {
    type: 'event',
    name: 'MintAndWithdraw',
    inputs: [
      { name: 'sourceDomain', type: 'uint32', indexed: true },
      { name: 'nonce', type: 'uint64', indexed: true },
      { name: 'mintRecipient', type: 'address', indexed: true },
      { name: 'amount', type: 'uint256', indexed: false },
      { name: 'feeCollected', type: 'uint256', indexed: false },
    ],
  },
] as const;

/** The facilitator's cross-chain section (X402Facilitator.sol, end of the contract). */
export const facilitatorBridgeAbi = [
  {
    type: 'function',
    name: 'settleAndBurn',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'token', type: 'address' },
      { name: 'from', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'validAfter', type: 'uint256' },
      { name: 'validBefore', type: 'uint256' },
      { name: 'nonce', type: 'bytes32' },
      { name: 'signature', type: 'bytes' },
      {
        name: 'route',
        type: 'tuple',
        components: [
          { name: 'messenger', type: 'address' },
          { name: 'destinationDomain', type: 'uint32' },
          { name: 'mintRecipient', type: 'address' },
          { name: 'destinationCaller', type: 'address' },
          { name: 'maxFee', type: 'uint256' },
        ],
      },
    ],
    outputs: [{ name: 'bridgeNonce', type: 'uint64' }],
  },
  {
    type: 'function',
    name: 'receiveAndPayout',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'transmitter', type: 'address' },
      { name: 'message', type: 'bytes' },
      { name: 'attestation', type: 'bytes' },
      { name: 'token', type: 'address' },
      { name: 'payout', type: 'address' },
      { name: 'fee', type: 'uint256' },
      { name: 'feeRecipient', type: 'address' },
    ],
    outputs: [],
  },
  {
    type: 'event',
    name: 'BridgeBurned',
    inputs: [
      { name: 'token', type: 'address', indexed: true },
      { name: 'from', type: 'address', indexed: true },
      { name: 'nonce', type: 'bytes32', indexed: true },
      { name: 'destinationDomain', type: 'uint32', indexed: false },
      { name: 'bridgeNonce', type: 'uint64', indexed: false },
      { name: 'value', type: 'uint256', indexed: false },
    ],
  },
  {
    type: 'event',
    name: 'BridgePayout',
    inputs: [
      { name: 'token', type: 'address', indexed: true },
      { name: 'sourceDomain', type: 'uint32', indexed: true },
      { name: 'bridgeNonce', type: 'uint64', indexed: true },
      { name: 'payout', type: 'address', indexed: false },
      { name: 'received', type: 'uint256', indexed: false },
      { name: 'fee', type: 'uint256', indexed: false },
    ],
  },
] as const;
