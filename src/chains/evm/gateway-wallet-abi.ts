import { parseAbi } from 'viem';

/** ABI of our gateway wallet contract (devnet/contracts/GatewayWallet.sol). */
export const gatewayWalletAbi = parseAbi([
  'struct Payment { address from; address to; uint256 value; uint256 validAfter; uint256 validBefore; bytes32 nonce; bytes signature; }',
  'function owner() view returns (address)',
  'function withdrawalDelay() view returns (uint256)',
  'function isOperator(address) view returns (bool)',
  'function setOperator(address operator, bool allowed)',
  'function setTokenSupported(address token, bool allowed)',
  'function setWithdrawalDelay(uint256 blocks)',
  'function deposit(address token, uint256 value)',
  'function depositFor(address token, address depositor, uint256 value)',
  'function initiateWithdrawal(address token, uint256 value)',
  'function withdraw(address token)',
  'function isTokenSupported(address token) view returns (bool)',
  'function availableBalance(address token, address depositor) view returns (uint256)',
  'function withdrawingBalance(address token, address depositor) view returns (uint256)',
  'function withdrawableBalance(address token, address depositor) view returns (uint256)',
  'function totalBalance(address token, address depositor) view returns (uint256)',
  'function withdrawalBlock(address token, address depositor) view returns (uint256)',
  'function authorizationState(address payer, bytes32 nonce) view returns (bool)',
  'function DOMAIN_SEPARATOR() view returns (bytes32)',
  'function settleBatch(address token, Payment[] payments) returns (uint256 settled)',
  'event Deposited(address indexed token, address indexed depositor, address indexed sender, uint256 value)',
  'event WithdrawalInitiated(address indexed token, address indexed depositor, uint256 value, uint256 totalWithdrawing, uint256 withdrawalBlock)',
  'event Withdrawn(address indexed token, address indexed depositor, uint256 value)',
  'event PaymentSettled(address indexed token, address indexed from, address indexed to, uint256 value, bytes32 nonce)',
  'event PaymentRejected(address indexed token, address indexed from, bytes32 indexed nonce, uint8 reason)',
  'error NotOwner(address caller)',
  'error NotOperator(address caller)',
  'error UnsupportedToken(address token)',
  'error ZeroAmount()',
  'error InsufficientAvailable(uint256 available, uint256 needed)',
  'error NothingToWithdraw()',
  'error WithdrawalNotReady(uint256 withdrawalBlock, uint256 blockNumber)',
  'error TokenTransferFailed()',
]);

/** EIP-712 domain name and version of batched payments (x402 `extra.name` / `extra.version`). */
export const GATEWAY_BATCHED_DOMAIN = { name: 'GatewayWalletBatched', version: '1' } as const;
