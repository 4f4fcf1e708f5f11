/**
 * Hand-written, `as const` ABI fragments of the EVM contracts the service calls, so viem infers
 * argument and return types. They cover our devnet contracts (`devnet/contracts/*.sol`) and the
 * subset of real USDC (FiatTokenV2_2) with the same signatures; the integration test
 * `test/integration/contracts.test.ts` checks every fragment here against the compiled ABIs.
 */

/** Custom errors both devnet contracts declare (same selectors). */
const sharedErrors = [
  { type: 'error', name: 'NotOwner', inputs: [{ name: 'caller', type: 'address' }] },
  { type: 'error', name: 'ZeroAddress', inputs: [] },
] as const;

/** Custom errors of the devnet TestUSDC only. Real USDC reverts with strings instead. */
const tokenErrors = [
  { type: 'error', name: 'NotMinter', inputs: [{ name: 'caller', type: 'address' }] },
  {
    type: 'error',
    name: 'InsufficientBalance',
    inputs: [
      { name: 'account', type: 'address' },
      { name: 'balance', type: 'uint256' },
      { name: 'needed', type: 'uint256' },
    ],
  },
  {
    type: 'error',
    name: 'InsufficientAllowance',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
      { name: 'allowance', type: 'uint256' },
      { name: 'needed', type: 'uint256' },
    ],
  },
  {
    type: 'error',
    name: 'PermitExpired',
    inputs: [
      { name: 'deadline', type: 'uint256' },
      { name: 'timestamp', type: 'uint256' },
    ],
  },
  { type: 'error', name: 'InvalidSignature', inputs: [] },
  {
    type: 'error',
    name: 'AuthorizationNotYetValid',
    inputs: [
      { name: 'validAfter', type: 'uint256' },
      { name: 'timestamp', type: 'uint256' },
    ],
  },
  {
    type: 'error',
    name: 'AuthorizationExpired',
    inputs: [
      { name: 'validBefore', type: 'uint256' },
      { name: 'timestamp', type: 'uint256' },
    ],
  },
  {
    type: 'error',
    name: 'AuthorizationAlreadyUsed',
    inputs: [
      { name: 'authorizer', type: 'address' },
      { name: 'nonce', type: 'bytes32' },
    ],
  },
  {
    type: 'error',
    name: 'CallerMustBePayee',
    inputs: [
      { name: 'caller', type: 'address' },
      { name: 'payee', type: 'address' },
    ],
  },
] as const;

const authorizationInputs = [
  { name: 'from', type: 'address' },
  { name: 'to', type: 'address' },
  { name: 'value', type: 'uint256' },
  { name: 'validAfter', type: 'uint256' },
  { name: 'validBefore', type: 'uint256' },
  { name: 'nonce', type: 'bytes32' },
  { name: 'signature', type: 'bytes' },
] as const;

/** USDC-like token: ERC-20 views, EIP-2612, EIP-3009 (bytes-signature overloads). */
export const tokenAbi = [
  {
    type: 'function',
    name: 'name',
    stateMutability: 'view',
    inputs: [],
    outputs: [{ name: '', type: 'string' }],
  },
  {
    type: 'function',
    name: 'version',
    stateMutability: 'view',
    inputs: [],
    outputs: [{ name: '', type: 'string' }],
  },
  {
    type: 'function',
    name: 'symbol',
    stateMutability: 'view',
    inputs: [],
    outputs: [{ name: '', type: 'string' }],
  },
  {
    type: 'function',
    name: 'decimals',
    stateMutability: 'view',
    inputs: [],
    outputs: [{ name: '', type: 'uint8' }],
  },
  {
    type: 'function',
    name: 'balanceOf',
    stateMutability: 'view',
    inputs: [{ name: 'account', type: 'address' }],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'allowance',
    stateMutability: 'view',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
    ],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'nonces',
    stateMutability: 'view',
    inputs: [{ name: 'owner', type: 'address' }],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'DOMAIN_SEPARATOR',
    stateMutability: 'view',
    inputs: [],
    outputs: [{ name: '', type: 'bytes32' }],
  },
  {
    type: 'function',
    name: 'authorizationState',
    stateMutability: 'view',
    inputs: [
      { name: 'authorizer', type: 'address' },
      { name: 'nonce', type: 'bytes32' },
    ],
    outputs: [{ name: '', type: 'bool' }],
  },
  {
    type: 'function',
    name: 'transfer',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'to', type: 'address' },
      { name: 'value', type: 'uint256' },
    ],
    outputs: [{ name: '', type: 'bool' }],
  },
  {
    type: 'function',
    name: 'transferWithAuthorization',
    stateMutability: 'nonpayable',
    inputs: authorizationInputs,
    outputs: [],
  },
  {
    type: 'function',
    name: 'receiveWithAuthorization',
    stateMutability: 'nonpayable',
    inputs: authorizationInputs,
    outputs: [],
  },
  {
    type: 'function',
    name: 'permit',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'spender', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'deadline', type: 'uint256' },
      { name: 'v', type: 'uint8' },
      { name: 'r', type: 'bytes32' },
      { name: 's', type: 'bytes32' },
    ],
    outputs: [],
  },
  {
    type: 'event',
    name: 'Transfer',
    anonymous: false,
    inputs: [
      { name: 'from', type: 'address', indexed: true },
      { name: 'to', type: 'address', indexed: true },
      { name: 'value', type: 'uint256', indexed: false },
    ],
  },
  {
    type: 'event',
    name: 'AuthorizationUsed',
    anonymous: false,
    inputs: [
      { name: 'authorizer', type: 'address', indexed: true },
      { name: 'nonce', type: 'bytes32', indexed: true },
    ],
  },
  ...sharedErrors,
  ...tokenErrors,
] as const;

/**
 * The x402 facilitator contract. Includes the token's errors too: the facilitator bubbles up the
 * token's revert data, so a replayed or expired authorization decodes as the token's error.
 */
export const facilitatorAbi = [
  {
    type: 'function',
    name: 'settle',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'token', type: 'address' },
      { name: 'from', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'validAfter', type: 'uint256' },
      { name: 'validBefore', type: 'uint256' },
      { name: 'nonce', type: 'bytes32' },
      { name: 'signature', type: 'bytes' },
      { name: 'payout', type: 'address' },
      { name: 'fee', type: 'uint256' },
      { name: 'feeRecipient', type: 'address' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'transferWithPermit',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'token', type: 'address' },
      { name: 'owner', type: 'address' },
      { name: 'recipient', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'deadline', type: 'uint256' },
      { name: 'v', type: 'uint8' },
      { name: 'r', type: 'bytes32' },
      { name: 's', type: 'bytes32' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'isRelayer',
    stateMutability: 'view',
    inputs: [{ name: 'account', type: 'address' }],
    outputs: [{ name: '', type: 'bool' }],
  },
  {
    type: 'function',
    name: 'setRelayer',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'relayer', type: 'address' },
      { name: 'allowed', type: 'bool' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'owner',
    stateMutability: 'view',
    inputs: [],
    outputs: [{ name: '', type: 'address' }],
  },
  {
    type: 'event',
    name: 'Settled',
    anonymous: false,
    inputs: [
      { name: 'token', type: 'address', indexed: true },
      { name: 'from', type: 'address', indexed: true },
      { name: 'nonce', type: 'bytes32', indexed: true },
      { name: 'payout', type: 'address', indexed: false },
      { name: 'value', type: 'uint256', indexed: false },
      { name: 'fee', type: 'uint256', indexed: false },
    ],
  },
  {
    type: 'event',
    name: 'PermitTransfer',
    anonymous: false,
    inputs: [
      { name: 'token', type: 'address', indexed: true },
      { name: 'owner', type: 'address', indexed: true },
      { name: 'recipient', type: 'address', indexed: true },
      { name: 'value', type: 'uint256', indexed: false },
    ],
  },
  ...sharedErrors,
  { type: 'error', name: 'NotRelayer', inputs: [{ name: 'caller', type: 'address' }] },
  {
    type: 'error',
    name: 'FeeExceedsValue',
    inputs: [
      { name: 'fee', type: 'uint256' },
      { name: 'value', type: 'uint256' },
    ],
  },
  { type: 'error', name: 'TokenCallFailed', inputs: [{ name: 'token', type: 'address' }] },
  { type: 'error', name: 'Reentrancy', inputs: [] },
  // Bubbled up from the token.
  ...tokenErrors,
] as const;
