import { parseAbi } from 'viem';

/**
 * ABI of the top-up deposit key (devnet/contracts/OnceDepositor.sol): merchant deposits go through
 * it so that each top-up's deposit can succeed at most once on chain.
 */
export const depositorAbi = parseAbi([
  'function owner() view returns (address)',
  'function token() view returns (address)',
  'function isCaller(address) view returns (bool)',
  'function used(bytes32 id) view returns (bool)',
  'function setCaller(address caller, bool allowed)',
  'function depositOnce(bytes32 id, address merchant, address buyer, uint256 amount)',
  'event DepositedOnce(bytes32 indexed id, address indexed merchant, address indexed buyer, uint256 amount, address caller)',
  'error NotOwner(address caller)',
  'error NotCaller(address caller)',
  'error ZeroAddress()',
  'error DepositIdUsed(bytes32 id)',
  'error TokenCallFailed()',
]);
