import { randomBytes } from 'node:crypto';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  erc20Abi,
  http,
  numberToHex,
  parseEventLogs,
  type Address,
  type Hex,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { rpc, startAnvil, type Anvil } from '../../devnet/anvil';
import { deployDevnet } from '../../devnet/deploy';
import { deployGatewayWallet } from '../../devnet/deploy-gateway-wallet';
import { DEVNET_GATEWAY_OPERATOR_KEY, DEVNET_GATEWAY_WALLET_ADDRESS } from '../../src/chains/devnet-addresses';
import { transferWithAuthorizationTypedData } from '../../src/schemes/eip3009/typed-data';
import { revertOf, waitForReceipt } from '../support/evm';
import { gatewayWalletAbi } from '../../src/chains/evm/abi';

/**
 * Our GatewayWallet on its own anvil chain: deposits, the balance views through a withdrawal, and
 * operator batches with buyer signatures made as an x402 client makes them (domain
 * GatewayWalletBatched / 1 / chain id / the wallet).
 */
const CHAIN_ID = 84532;
const chain = defineChain({
  id: CHAIN_ID,
  name: 'anvil',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: ['http://127.0.0.1'] } },
});

describe('GatewayWallet contract', () => {
  let anvil: Anvil;
  let client: ReturnType<typeof createPublicClient>;
  let usdc: Address;
  const wallet = DEVNET_GATEWAY_WALLET_ADDRESS;
  const alice = privateKeyToAccount(generatePrivateKey());
  const bob = privateKeyToAccount(generatePrivateKey());
  const seller = privateKeyToAccount(generatePrivateKey()).address;
  const operator = privateKeyToAccount(DEVNET_GATEWAY_OPERATOR_KEY);

  const walletOf = (account: PrivateKeyAccount) => createWalletClient({ chain, account, transport: http(anvil.rpcUrl, { retryCount: 0 }) });
  const view = (fn: 'availableBalance' | 'withdrawingBalance' | 'withdrawableBalance' | 'totalBalance' | 'withdrawalBlock', who: Address) =>
    client.readContract({ address: wallet, abi: gatewayWalletAbi, functionName: fn, args: [usdc, who] });
  const views = async (who: Address) => ({
    available: await view('availableBalance', who),
    withdrawing: await view('withdrawingBalance', who),
    withdrawable: await view('withdrawableBalance', who),
    total: await view('totalBalance', who),
  });
  const send = async (account: PrivateKeyAccount, functionName: string, args: readonly unknown[], address: Address = wallet) => {
    const abi = address === wallet ? gatewayWalletAbi : erc20Abi;
    const hash = await walletOf(account).writeContract({ address, abi, functionName, args } as never);
    return waitForReceipt(client as never, hash);
  };
  async function payment(
    from: PrivateKeyAccount,
    value: bigint,
    o: { signer?: PrivateKeyAccount; validBefore?: bigint; nonce?: Hex } = {},
  ) {
    const now = BigInt(Math.floor(Date.now() / 1000));
    const a = {
      from: from.address,
      to: seller,
      value: value.toString(),
      validAfter: (now - 600n).toString(),
      validBefore: (o.validBefore ?? now + 3600n).toString(),
      nonce: o.nonce ?? (`0x${randomBytes(32).toString('hex')}` as Hex),
    };
    const typed = transferWithAuthorizationTypedData(
      { name: 'GatewayWalletBatched', version: '1', chainId: CHAIN_ID, verifyingContract: wallet },
      a,
    );
    const signature = await (o.signer ?? from).signTypedData(typed);
    return {
      from: from.address,
      to: seller,
      value,
      validAfter: BigInt(a.validAfter),
      validBefore: BigInt(a.validBefore),
      nonce: a.nonce,
      signature,
    };
  }

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: CHAIN_ID, log: () => undefined });
    client = createPublicClient({ chain, transport: http(anvil.rpcUrl, { retryCount: 0 }) });
    const deployed = await deployDevnet({
      rpcUrl: anvil.rpcUrl,
      chainId: CHAIN_ID,
      relayers: [],
      buyers: [alice, bob].map((b) => ({ address: b.address, amount: 10_000_000n })),
    });
    usdc = deployed.usdc;
    expect(await deployGatewayWallet({ rpcUrl: anvil.rpcUrl, chainId: CHAIN_ID, usdc, withdrawalDelayBlocks: 3 })).toBe(wallet);
    // Idempotent: a second run changes nothing but the delay.
    expect(await deployGatewayWallet({ rpcUrl: anvil.rpcUrl, chainId: CHAIN_ID, usdc, withdrawalDelayBlocks: 3 })).toBe(wallet);
    for (const b of [alice, bob]) {
      await rpc(anvil.rpcUrl, 'anvil_setBalance', [b.address, numberToHex(10n ** 20n)]);
      await send(b, 'approve', [wallet, 10_000_000n], usdc);
    }
  });
  afterAll(async () => {
    await anvil?.stop();
  });

  test('deposit, and a withdrawal through available -> withdrawing -> withdrawable -> wallet; total is always the sum', async () => {
    expect(await client.readContract({ address: wallet, abi: gatewayWalletAbi, functionName: 'isTokenSupported', args: [usdc] })).toBe(
      true,
    );
    await send(alice, 'deposit', [usdc, 4_000_000n]);
    expect(await views(alice.address)).toEqual({ available: 4_000_000n, withdrawing: 0n, withdrawable: 0n, total: 4_000_000n });

    const init = await send(alice, 'initiateWithdrawal', [usdc, 1_500_000n]);
    expect(await view('withdrawalBlock', alice.address)).toBe(init.blockNumber + 3n);
    expect(await views(alice.address)).toEqual({ available: 2_500_000n, withdrawing: 1_500_000n, withdrawable: 0n, total: 4_000_000n });
    expect(
      await revertOf(() =>
        walletOf(alice).writeContract({ address: wallet, abi: gatewayWalletAbi, functionName: 'withdraw', args: [usdc] }),
      ),
    ).toMatchObject({
      errorName: 'WithdrawalNotReady',
    });

    await rpc(anvil.rpcUrl, 'anvil_mine', ['0x3']);
    expect(await views(alice.address)).toEqual({ available: 2_500_000n, withdrawing: 0n, withdrawable: 1_500_000n, total: 4_000_000n });
    const before = await client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [alice.address] });
    await send(alice, 'withdraw', [usdc]);
    expect(await client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [alice.address] })).toBe(
      before + 1_500_000n,
    );
    expect(await views(alice.address)).toEqual({ available: 2_500_000n, withdrawing: 0n, withdrawable: 0n, total: 2_500_000n });
    expect(
      await revertOf(() =>
        walletOf(alice).writeContract({ address: wallet, abi: gatewayWalletAbi, functionName: 'withdraw', args: [usdc] }),
      ),
    ).toMatchObject({
      errorName: 'NothingToWithdraw',
    });
    expect(
      await revertOf(() =>
        walletOf(alice).writeContract({
          address: wallet,
          abi: gatewayWalletAbi,
          functionName: 'initiateWithdrawal',
          args: [usdc, 2_500_001n],
        }),
      ),
    ).toMatchObject({ errorName: 'InsufficientAvailable' });
  });

  test('settleBatch: valid payments move, invalid ones are skipped with their reason, nonces are single-use', async () => {
    await send(bob, 'deposit', [usdc, 1_000n]);
    const aliceBefore = await view('availableBalance', alice.address);
    const good = await payment(alice, 300n);
    const forged = await payment(alice, 5n, { signer: bob });
    const tooMuch = await payment(bob, 1_001n);
    const expired = await payment(bob, 1n, { validBefore: BigInt(Math.floor(Date.now() / 1000)) - 1n });
    const good2 = await payment(bob, 400n);
    const replay = { ...good2 }; // same nonce again in the same batch

    const stranger = privateKeyToAccount(generatePrivateKey());
    await rpc(anvil.rpcUrl, 'anvil_setBalance', [stranger.address, numberToHex(10n ** 20n)]);
    expect(
      await revertOf(() =>
        walletOf(stranger).writeContract({ address: wallet, abi: gatewayWalletAbi, functionName: 'settleBatch', args: [usdc, [good]] }),
      ),
    ).toMatchObject({ errorName: 'NotOperator' });

    const receipt = await send(operator, 'settleBatch', [usdc, [good, forged, tooMuch, expired, good2, replay]]);
    const events = parseEventLogs({ abi: gatewayWalletAbi, logs: receipt.logs });
    expect(
      events.map((e) =>
        e.eventName === 'PaymentSettled'
          ? ['settled', e.args.value]
          : e.eventName === 'PaymentRejected'
            ? ['rejected', e.args.reason]
            : [e.eventName],
      ),
    ).toEqual([
      ['settled', 300n],
      ['rejected', 1], // bad signature
      ['rejected', 5], // insufficient balance
      ['rejected', 3], // expired
      ['settled', 400n],
      ['rejected', 4], // nonce used
    ]);
    expect(await view('availableBalance', alice.address)).toBe(aliceBefore - 300n);
    expect(await view('availableBalance', bob.address)).toBe(600n);
    expect(await view('availableBalance', seller)).toBe(700n);
    expect(
      await client.readContract({
        address: wallet,
        abi: gatewayWalletAbi,
        functionName: 'authorizationState',
        args: [alice.address, good.nonce],
      }),
    ).toBe(true);
  });

  test('an accepted payment still settles after the payer started a withdrawal: it draws on the pending amount', async () => {
    const accepted = await payment(bob, 500n); // bob has 600 available
    await send(bob, 'initiateWithdrawal', [usdc, 600n]);
    expect(await views(bob.address)).toMatchObject({ available: 0n, withdrawing: 600n, total: 600n });
    const receipt = await send(operator, 'settleBatch', [usdc, [accepted]]);
    expect(parseEventLogs({ abi: gatewayWalletAbi, logs: receipt.logs, eventName: 'PaymentSettled' })).toHaveLength(1);
    expect(await views(bob.address)).toMatchObject({ available: 0n, withdrawing: 100n, total: 100n });
    expect(await view('availableBalance', seller)).toBe(1_200n);
  });
});
