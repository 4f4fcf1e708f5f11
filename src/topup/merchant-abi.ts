/**
 * Hand-written ABI fragments of the merchant contract (devnet/contracts/MerchantBalances.sol); the
 * USDC calls use the shared token ABI (src/chains/evm/abi.ts).
 */
export const merchantAbi = [
  {
    type: 'function',
    name: 'deposit',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'buyer', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'balanceOf',
    stateMutability: 'view',
    inputs: [{ name: 'buyer', type: 'address' }],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'available',
    stateMutability: 'view',
    inputs: [{ name: 'buyer', type: 'address' }],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'reserved',
    stateMutability: 'view',
    inputs: [{ name: 'buyer', type: 'address' }],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'creditLimitOf',
    stateMutability: 'view',
    inputs: [{ name: 'buyer', type: 'address' }],
    outputs: [{ name: '', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'minDepositOf',
    stateMutability: 'view',
    inputs: [{ name: 'buyer', type: 'address' }],
    outputs: [{ name: '', type: 'uint256' }],
  },
  { type: 'function', name: 'minFirstDeposit', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'uint256' }] },
  { type: 'function', name: 'defaultCreditLimit', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'uint256' }] },
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
    name: 'setCreditLimit',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'buyer', type: 'address' },
      { name: 'limit', type: 'uint256' },
    ],
    outputs: [],
  },
  { type: 'function', name: 'owner', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'address' }] },
  {
    type: 'event',
    name: 'Deposited',
    inputs: [
      { name: 'buyer', type: 'address', indexed: true },
      { name: 'relayer', type: 'address', indexed: true },
      { name: 'amount', type: 'uint256', indexed: false },
      { name: 'available', type: 'uint256', indexed: false },
    ],
  },
  { type: 'error', name: 'NotRelayer', inputs: [{ name: 'caller', type: 'address' }] },
  {
    type: 'error',
    name: 'CreditLimitExceeded',
    inputs: [
      { name: 'buyer', type: 'address' },
      { name: 'balance', type: 'uint256' },
      { name: 'amount', type: 'uint256' },
      { name: 'creditLimit', type: 'uint256' },
    ],
  },
  {
    type: 'error',
    name: 'BelowMinimumDeposit',
    inputs: [
      { name: 'buyer', type: 'address' },
      { name: 'amount', type: 'uint256' },
      { name: 'minimum', type: 'uint256' },
    ],
  },
] as const;
