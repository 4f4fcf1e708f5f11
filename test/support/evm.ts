import {
  BaseError,
  ContractFunctionRevertedError,
  TransactionReceiptNotFoundError,
  createPublicClient,
  createWalletClient,
  http,
  type Address,
  type Hash,
  type PublicClient,
  type TransactionReceipt,
} from 'viem';
import { TEST_ACCOUNTS } from './accounts';
import { tokenAbi } from '../../src/chains/evm/abi';

/** EIP-2612 `Permit` typed-data types, as an owner signs them. */
export const EIP2612_PERMIT_TYPES = {
  Permit: [
    { name: 'owner', type: 'address' },
    { name: 'spender', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ],
} as const;

/** Polls for a receipt from ~1 ms with back-off (anvil automine answers before it mines). */
export async function waitForReceipt(
  client: Pick<PublicClient, 'getTransactionReceipt'>,
  hash: Hash,
  opts: { timeoutMs?: number; maxDelayMs?: number } = {},
): Promise<TransactionReceipt> {
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  let delay = 1;
  for (;;) {
    try {
      return await client.getTransactionReceipt({ hash });
    } catch (err) {
      if (!(err instanceof TransactionReceiptNotFoundError)) throw err;
    }
    if (Date.now() > deadline) throw new Error(`no receipt for ${hash}`);
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, opts.maxDelayMs ?? 50);
  }
}

/** The decoded custom error of a call that must revert (throws if it does not). */
export async function revertOf(run: () => Promise<unknown>): Promise<{ errorName?: string; args?: readonly unknown[] }> {
  try {
    await run();
  } catch (err) {
    const reverted = err instanceof BaseError ? err.walk((e) => e instanceof ContractFunctionRevertedError) : null;
    if (reverted instanceof ContractFunctionRevertedError) {
      return { errorName: reverted.data?.errorName, args: reverted.data?.args };
    }
    throw err;
  }
  throw new Error('expected the call to revert');
}

/** Sends `amount` of `usdc` to `to` from the first funded test buyer on the devnet chain at `chain`, and waits for it. */
export async function fundUsdc(
  chain: { rpcUrl: string; chainId: number },
  usdc: Address,
  to: Address,
  amount: bigint,
): Promise<TransactionReceipt> {
  const transport = http(chain.rpcUrl);
  const wallet = createWalletClient({
    account: TEST_ACCOUNTS.buyers[0],
    chain: {
      id: chain.chainId,
      name: `devnet-${chain.chainId}`,
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [chain.rpcUrl] } },
    },
    transport,
  });
  const hash = await wallet.writeContract({ address: usdc, abi: tokenAbi, functionName: 'transfer', args: [to, amount] });
  return waitForReceipt(createPublicClient({ transport }), hash);
}
