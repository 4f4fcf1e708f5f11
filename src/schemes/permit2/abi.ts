import { exactPermit2ProxyAbi, facilitatorAbi, uptoPermit2ProxyAbi } from '../../chains/evm/abi';

/**
 * The Permit2 section of `devnet/contracts/X402Facilitator.sol` (`settlePermit2Exact` /
 * `settlePermit2Upto`), kept apart from `facilitatorAbi` so the routes that extend the facilitator
 * do not edit one list. The errors of the facilitator, the proxies, Permit2 and the token are
 * appended so a revert decodes by name whichever contract raised it.
 */
const permit2PaymentParam = {
  name: 'p',
  type: 'tuple',
  components: [
    { name: 'proxy', type: 'address' },
    { name: 'token', type: 'address' },
    { name: 'amount', type: 'uint256' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
    { name: 'owner', type: 'address' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'signature', type: 'bytes' },
  ],
} as const;

const permit2612Param = {
  name: 'permit2612',
  type: 'tuple',
  components: [
    { name: 'value', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
    { name: 'v', type: 'uint8' },
    { name: 'r', type: 'bytes32' },
    { name: 's', type: 'bytes32' },
  ],
} as const;

const payoutParam = {
  name: 'out',
  type: 'tuple',
  components: [
    { name: 'payout', type: 'address' },
    { name: 'fee', type: 'uint256' },
    { name: 'feeRecipient', type: 'address' },
    { name: 'platformFee', type: 'uint256' },
    { name: 'platform', type: 'address' },
  ],
} as const;

const fragments = [
  {
    type: 'function',
    name: 'settlePermit2Exact',
    stateMutability: 'nonpayable',
    inputs: [permit2PaymentParam, permit2612Param, payoutParam],
    outputs: [],
  },
  {
    type: 'function',
    name: 'settlePermit2Upto',
    stateMutability: 'nonpayable',
    inputs: [permit2PaymentParam, { name: 'settleAmount', type: 'uint256' }, permit2612Param, payoutParam],
    outputs: [],
  },
  {
    type: 'event',
    name: 'Permit2Settled',
    anonymous: false,
    inputs: [
      { name: 'token', type: 'address', indexed: true },
      { name: 'owner', type: 'address', indexed: true },
      { name: 'nonce', type: 'uint256', indexed: true },
      { name: 'proxy', type: 'address', indexed: false },
      { name: 'payout', type: 'address', indexed: false },
      { name: 'amount', type: 'uint256', indexed: false },
      { name: 'fee', type: 'uint256', indexed: false },
    ],
  },
  {
    type: 'error',
    name: 'Permit2AmountNotReceived',
    inputs: [
      { name: 'expected', type: 'uint256' },
      { name: 'received', type: 'uint256' },
    ],
  },
] as const;

const errorsOf = (abi: readonly { type: string; name?: string }[]) => abi.filter((f) => f.type === 'error');
const seen = new Set<string>();
const otherErrors = [...errorsOf(facilitatorAbi), ...errorsOf(exactPermit2ProxyAbi), ...errorsOf(uptoPermit2ProxyAbi)].filter((e) => {
  const key = JSON.stringify(e);
  if (seen.has(key)) return false;
  seen.add(key);
  return true;
}) as unknown as readonly never[];

export const facilitatorPermit2Abi = [...fragments, ...otherErrors] as const;
