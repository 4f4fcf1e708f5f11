/**
 * Hand-written, `as const` ABI fragments of the EVM contracts the service calls, so viem infers
 * argument and return types. They cover our devnet contracts (`devnet/contracts/*.sol`) and the
 * subset of real USDC (FiatTokenV2_2) with the same signatures; the integration test
 * `test/integration/contracts.test.ts` checks every fragment here against the compiled ABIs.
 */

/** Custom errors of our facilitator contract's administration. */
const sharedErrors = [
  { type: 'error', name: 'NotOwner', inputs: [{ name: 'caller', type: 'address' }] },
  { type: 'error', name: 'ZeroAddress', inputs: [] },
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
    stateMutability: 'pure', // FiatToken V2.2: a constant "2"
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
    name: 'approve',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'spender', type: 'address' },
      { name: 'value', type: 'uint256' },
    ],
    outputs: [{ name: '', type: 'bool' }],
  },
  {
    type: 'function',
    name: 'increaseAllowance',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'spender', type: 'address' },
      { name: 'increment', type: 'uint256' },
    ],
    outputs: [{ name: '', type: 'bool' }],
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
    name: 'isBlacklisted', // FiatToken: a blacklisted account can neither send nor receive
    stateMutability: 'view',
    inputs: [{ name: '_account', type: 'address' }],
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
] as const;

/**
 * The x402 facilitator contract. It bubbles up the token's revert data; USDC (FiatToken) reverts with
 * strings (`Error(string)`, which viem decodes without an ABI entry), so a replayed or expired
 * authorization reads as the token's own message.
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
    name: 'settleSplit',
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
        name: 'out',
        type: 'tuple',
        components: [
          { name: 'payout', type: 'address' },
          { name: 'fee', type: 'uint256' },
          { name: 'feeRecipient', type: 'address' },
          { name: 'platformFee', type: 'uint256' },
          { name: 'platform', type: 'address' },
        ],
      },
    ],
    outputs: [],
  },
  {
    type: 'event',
    name: 'PlatformFeePaid',
    inputs: [
      { name: 'token', type: 'address', indexed: true },
      { name: 'platform', type: 'address', indexed: true },
      { name: 'amount', type: 'uint256', indexed: false },
    ],
    anonymous: false,
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
] as const;

/** `PermitTransferFrom` of Permit2's SignatureTransfer: `((token, amount), nonce, deadline)`. */
const permitTransferFromParam = {
  name: 'permit',
  type: 'tuple',
  components: [
    {
      name: 'permitted',
      type: 'tuple',
      components: [
        { name: 'token', type: 'address' },
        { name: 'amount', type: 'uint256' },
      ],
    },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ],
} as const;

/** Custom errors of our devnet Permit2 (same names and selectors as Uniswap's Permit2). */
const permit2Errors = [
  { type: 'error', name: 'SignatureExpired', inputs: [{ name: 'signatureDeadline', type: 'uint256' }] },
  { type: 'error', name: 'InvalidAmount', inputs: [{ name: 'maxAmount', type: 'uint256' }] },
  { type: 'error', name: 'InvalidNonce', inputs: [] },
  { type: 'error', name: 'InvalidSignatureLength', inputs: [] },
  { type: 'error', name: 'InvalidSignature', inputs: [] },
  { type: 'error', name: 'InvalidSigner', inputs: [] },
  { type: 'error', name: 'TransferFailed', inputs: [{ name: 'token', type: 'address' }] },
] as const;

/**
 * Permit2's SignatureTransfer (the canonical contract on real chains, our `devnet/contracts/Permit2.sol`
 * on the devnet): witness transfers, the unordered-nonce bitmap (`nonce >> 8` word, `nonce & 255`
 * bit) and nonce invalidation. Buyers sign with EIP-712 domain {name: 'Permit2', chainId,
 * verifyingContract: Permit2}.
 */
export const permit2Abi = [
  {
    type: 'function',
    name: 'permitWitnessTransferFrom',
    stateMutability: 'nonpayable',
    inputs: [
      permitTransferFromParam,
      {
        name: 'transferDetails',
        type: 'tuple',
        components: [
          { name: 'to', type: 'address' },
          { name: 'requestedAmount', type: 'uint256' },
        ],
      },
      { name: 'owner', type: 'address' },
      { name: 'witness', type: 'bytes32' },
      { name: 'witnessTypeString', type: 'string' },
      { name: 'signature', type: 'bytes' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'nonceBitmap',
    stateMutability: 'view',
    inputs: [
      { name: '', type: 'address' },
      { name: '', type: 'uint256' },
    ],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'invalidateUnorderedNonces',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'wordPos', type: 'uint256' },
      { name: 'mask', type: 'uint256' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'DOMAIN_SEPARATOR',
    stateMutability: 'view',
    inputs: [],
    outputs: [{ name: '', type: 'bytes32' }],
  },
  {
    type: 'event',
    name: 'UnorderedNonceInvalidation',
    anonymous: false,
    inputs: [
      { name: 'owner', type: 'address', indexed: true },
      { name: 'word', type: 'uint256', indexed: false },
      { name: 'mask', type: 'uint256', indexed: false },
    ],
  },
  ...permit2Errors,
] as const;

/** Read-only getters both Permit2 proxies expose. */
const permit2ProxyGetters = [
  { type: 'function', name: 'PERMIT2', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'address' }] },
  { type: 'function', name: 'FACILITATOR', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'address' }] },
] as const;

/**
 * The x402 `exact` Permit2 proxy: the spender buyers name; `settle` moves the full permitted amount
 * to `witness.to`, which must be the facilitator contract. Witness type
 * `Witness(address to,uint256 validAfter)`. Callable by anyone. Includes Permit2's errors, which bubble
 * up through it (as do the token's strings).
 */
export const exactPermit2ProxyAbi = [
  {
    type: 'function',
    name: 'settle',
    stateMutability: 'nonpayable',
    inputs: [
      permitTransferFromParam,
      { name: 'owner', type: 'address' },
      {
        name: 'witness',
        type: 'tuple',
        components: [
          { name: 'to', type: 'address' },
          { name: 'validAfter', type: 'uint256' },
        ],
      },
      { name: 'signature', type: 'bytes' },
    ],
    outputs: [],
  },
  ...permit2ProxyGetters,
  {
    type: 'event',
    name: 'Settled',
    anonymous: false,
    inputs: [
      { name: 'token', type: 'address', indexed: true },
      { name: 'owner', type: 'address', indexed: true },
      { name: 'to', type: 'address', indexed: true },
      { name: 'amount', type: 'uint256', indexed: false },
      { name: 'nonce', type: 'uint256', indexed: false },
    ],
  },
  {
    type: 'error',
    name: 'PaymentNotYetValid',
    inputs: [
      { name: 'validAfter', type: 'uint256' },
      { name: 'timestamp', type: 'uint256' },
    ],
  },
  {
    type: 'error',
    name: 'RecipientNotFacilitator',
    inputs: [
      { name: 'to', type: 'address' },
      { name: 'facilitator', type: 'address' },
    ],
  },
  // Bubbled up from Permit2 (the token's revert strings need no entry).
  ...permit2Errors,
] as const;

/**
 * The x402 `upto` Permit2 proxy: the spender buyers name for usage-based payments; `settle` moves
 * `amount` (0 < amount <= the signed maximum) to `witness.to`. Witness type
 * `Witness(address to,address facilitator,uint256 validAfter)`; `to` and `facilitator` must both be
 * the facilitator contract. Only the facilitator contract or its allow-listed relayers may call it
 * (the caller picks the amount). Includes Permit2's errors, which bubble up (as do the token's strings).
 */
export const uptoPermit2ProxyAbi = [
  {
    type: 'function',
    name: 'settle',
    stateMutability: 'nonpayable',
    inputs: [
      permitTransferFromParam,
      { name: 'amount', type: 'uint256' },
      { name: 'owner', type: 'address' },
      {
        name: 'witness',
        type: 'tuple',
        components: [
          { name: 'to', type: 'address' },
          { name: 'facilitator', type: 'address' },
          { name: 'validAfter', type: 'uint256' },
        ],
      },
      { name: 'signature', type: 'bytes' },
    ],
    outputs: [],
  },
  ...permit2ProxyGetters,
  {
    type: 'event',
    name: 'Settled',
    anonymous: false,
    inputs: [
      { name: 'token', type: 'address', indexed: true },
      { name: 'owner', type: 'address', indexed: true },
      { name: 'to', type: 'address', indexed: true },
      { name: 'amount', type: 'uint256', indexed: false },
      { name: 'maxAmount', type: 'uint256', indexed: false },
      { name: 'nonce', type: 'uint256', indexed: false },
    ],
  },
  { type: 'error', name: 'UnauthorizedCaller', inputs: [{ name: 'caller', type: 'address' }] },
  {
    type: 'error',
    name: 'InvalidSettleAmount',
    inputs: [
      { name: 'amount', type: 'uint256' },
      { name: 'maxAmount', type: 'uint256' },
    ],
  },
  {
    type: 'error',
    name: 'PaymentNotYetValid',
    inputs: [
      { name: 'validAfter', type: 'uint256' },
      { name: 'timestamp', type: 'uint256' },
    ],
  },
  {
    type: 'error',
    name: 'RecipientNotFacilitator',
    inputs: [
      { name: 'to', type: 'address' },
      { name: 'facilitator', type: 'address' },
    ],
  },
  {
    type: 'error',
    name: 'FacilitatorMismatch',
    inputs: [
      { name: 'witnessFacilitator', type: 'address' },
      { name: 'facilitator', type: 'address' },
    ],
  },
  // Bubbled up from Permit2 (the token's revert strings need no entry).
  ...permit2Errors,
] as const;

/**
 * The smart-wallet factory call a counterfactual buyer's EIP-6492 signature carries, as the devnet's
 * factory (devnet/contracts/DevnetSmartWallet.sol) takes it: the relayer's `createAccount` call type
 * (gas-ceilings.ts). A factory of another signature is refused by its selector.
 */
export const walletFactoryAbi = [
  {
    type: 'function',
    name: 'createAccount',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'salt', type: 'uint256' },
    ],
    outputs: [{ name: 'account', type: 'address' }],
  },
  {
    type: 'function',
    name: 'getAddress',
    stateMutability: 'view',
    inputs: [
      { name: 'owner', type: 'address' },
      { name: 'salt', type: 'uint256' },
    ],
    outputs: [{ type: 'address' }],
  },
] as const;
