import { createPublicClient, createWalletClient, defineChain, http, numberToHex, type Abi, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { rpc } from '../../devnet/anvil';
import { DEVNET_MERCHANT_ADDRESS, DEVNET_TOPUP_DEPLOYER_KEY } from '../../src/chains/devnet-addresses';
import { TEST_ACCOUNTS } from '../support/accounts';
import { revertOf, waitForReceipt } from '../support/evm';
import { readStackInfo } from '../support/stack-info';
import { merchantAbi, tokenAbi } from '../../src/chains/evm/abi';

/**
 * The merchant contract on the devnet `base` chain, as the global setup deployed it: deposits pull
 * from an allowed relayer, the credit limit and the minimum first deposit revert with named errors
 * and move nothing, reserve/release keep the balance.
 */
describe('MerchantBalances (devnet base chain)', () => {
  const stack = readStackInfo();
  const chain = defineChain({
    id: 8453,
    name: 'base (anvil)',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [stack.chains.base.rpcUrl] } },
  });
  const client = createPublicClient({ chain, transport: http() });
  const owner = privateKeyToAccount(DEVNET_TOPUP_DEPLOYER_KEY);
  // A relayer of its own: allowed by the owner below, funded by a test buyer.
  const relayer = privateKeyToAccount(generatePrivateKey());
  const as = (account: typeof owner) => createWalletClient({ account, chain, transport: http() });
  const read = <T>(functionName: string, args: unknown[] = []) =>
    client.readContract({
      address: DEVNET_MERCHANT_ADDRESS,
      abi: merchantAbi,
      functionName: functionName as any,
      args: args as any,
    }) as Promise<T>;
  const send = async (account: typeof owner, address: Address, abi: Abi, functionName: string, args: unknown[]) => {
    const hash = await as(account).writeContract({ address, abi, functionName, args } as any);
    const receipt = await waitForReceipt(client, hash);
    expect(receipt.status).toBe('success');
  };
  const simulate = (functionName: string, args: unknown[]) => () =>
    client.simulateContract({
      account: relayer,
      address: DEVNET_MERCHANT_ADDRESS,
      abi: merchantAbi,
      functionName: functionName as any,
      args: args as any,
    });

  beforeAll(async () => {
    await rpc(stack.chains.base.rpcUrl, 'anvil_setBalance', [relayer.address, numberToHex(10n ** 20n)]);
    await send(owner, DEVNET_MERCHANT_ADDRESS, merchantAbi as Abi, 'setRelayer', [relayer.address, true]);
    await send(TEST_ACCOUNTS.buyers[0], stack.usdc, tokenAbi as Abi, 'transfer', [relayer.address, 50_000_000n]);
    await send(relayer, stack.usdc, tokenAbi as Abi, 'approve', [DEVNET_MERCHANT_ADDRESS, 2n ** 256n - 1n]);
  });

  test('devnet defaults: 1,000 USDC credit limit, 1 USDC minimum first deposit', async () => {
    expect(await read<bigint>('defaultCreditLimit')).toBe(1_000_000_000n);
    expect(await read<bigint>('minFirstDeposit')).toBe(1_000_000n);
  });

  test('deposit: minimum first deposit, then credit limit, both named reverts; a good deposit pulls from the relayer', async () => {
    const buyer = privateKeyToAccount(generatePrivateKey()).address;
    expect(await read<bigint>('minDepositOf', [buyer])).toBe(1_000_000n);
    expect(await revertOf(simulate('deposit', [buyer, 999_999n]))).toEqual({
      errorName: 'BelowMinimumDeposit',
      args: [buyer, 999_999n, 1_000_000n],
    });

    await send(owner, DEVNET_MERCHANT_ADDRESS, merchantAbi as Abi, 'setCreditLimit', [buyer, 3_000_000n]);
    expect(await read<bigint>('creditLimitOf', [buyer])).toBe(3_000_000n);
    const relayerBefore = await client.readContract({
      address: stack.usdc,
      abi: tokenAbi,
      functionName: 'balanceOf',
      args: [relayer.address],
    });
    await send(relayer, DEVNET_MERCHANT_ADDRESS, merchantAbi as Abi, 'deposit', [buyer, 2_000_000n]);
    expect(await read<bigint>('balanceOf', [buyer])).toBe(2_000_000n);
    expect(await read<bigint>('available', [buyer])).toBe(2_000_000n);
    expect(await read<bigint>('minDepositOf', [buyer])).toBe(0n);
    expect(await client.readContract({ address: stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [relayer.address] })).toBe(
      relayerBefore - 2_000_000n,
    );

    expect(await revertOf(simulate('deposit', [buyer, 1_000_001n]))).toEqual({
      errorName: 'CreditLimitExceeded',
      args: [buyer, 2_000_000n, 1_000_001n, 3_000_000n],
    });
    await send(relayer, DEVNET_MERCHANT_ADDRESS, merchantAbi as Abi, 'deposit', [buyer, 1_000_000n]); // exactly up to the limit
    expect(await read<bigint>('balanceOf', [buyer])).toBe(3_000_000n);
  });

  test('reserved funds still count against the limit', async () => {
    const buyer = privateKeyToAccount(generatePrivateKey()).address;
    await send(relayer, DEVNET_MERCHANT_ADDRESS, merchantAbi as Abi, 'deposit', [buyer, 5_000_000n]);
    await send(relayer, DEVNET_MERCHANT_ADDRESS, merchantAbi as Abi, 'reserve', [buyer, 2_000_000n]);
    expect(await read<bigint>('available', [buyer])).toBe(3_000_000n);
    expect(await read<bigint>('reserved', [buyer])).toBe(2_000_000n);
    expect(await read<bigint>('balanceOf', [buyer])).toBe(5_000_000n);
    await send(relayer, DEVNET_MERCHANT_ADDRESS, merchantAbi as Abi, 'release', [buyer, 2_000_000n]);
    expect(await read<bigint>('available', [buyer])).toBe(5_000_000n);
  });

  test('only allowed relayers deposit', async () => {
    const stranger = privateKeyToAccount(generatePrivateKey());
    await expect(
      client.simulateContract({
        account: stranger,
        address: DEVNET_MERCHANT_ADDRESS,
        abi: merchantAbi,
        functionName: 'deposit',
        args: [stranger.address, 1_000_000n],
      }),
    ).rejects.toThrow(/NotRelayer/);
  });
});
