import { createPublicClient, createWalletClient, defineChain, http, numberToHex, type Address, type Hash, type PublicClient } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import {
  DEVNET_DEPOSITOR_ADDRESS,
  DEVNET_DEPOSITOR_DEPLOYER_KEY,
  DEVNET_MERCHANT_ADDRESS,
  DEVNET_TOPUP_DEPLOYER_KEY,
  DEVNET_USDC_ADDRESS,
} from '../src/chains/devnet-addresses';
import { getContract } from './contracts';
import { depositorAbi, merchantAbi } from '../src/chains/evm/abi';

/**
 * Deploys the merchant contract (MerchantBalances) of the top-up gateway on the devnet `base` chain
 * from the top-up deployer key (nonce 0, so it lands at DEVNET_MERCHANT_ADDRESS), and the deposit key
 * (OnceDepositor, DEVNET_DEPOSITOR_ADDRESS) from a deployer of its own. The merchant allows only the
 * deposit key to call `deposit`; the deposit key allows the gateway relayers. Idempotent: an existing
 * deployment only gets missing permissions.
 * Devnet limits (base units): default credit limit 1,000 USDC, minimum first deposit 1 USDC.
 */
export const DEVNET_MERCHANT_DEFAULT_CREDIT_LIMIT = 1_000_000_000n;
export const DEVNET_MERCHANT_MIN_FIRST_DEPOSIT = 1_000_000n;

export async function deployTopupDevnet(opts: {
  rpcUrl: string;
  chainId: number;
  relayers: Address[];
  defaultCreditLimit?: bigint;
  minFirstDeposit?: bigint;
}): Promise<{ merchant: Address; depositor: Address }> {
  const chain = defineChain({
    id: opts.chainId,
    name: `devnet-${opts.chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [opts.rpcUrl] } },
  });
  const deployer = privateKeyToAccount(DEVNET_TOPUP_DEPLOYER_KEY);
  const transport = http(opts.rpcUrl, { retryCount: 0 });
  const client = createPublicClient({ chain, transport });
  const wallet = createWalletClient({ chain, transport, account: deployer });
  if ((await client.getBalance({ address: deployer.address })) < 10n ** 20n) {
    await client.request({ method: 'anvil_setBalance' as any, params: [deployer.address, numberToHex(10n ** 22n)] as any });
  }
  const code = await client.getCode({ address: DEVNET_MERCHANT_ADDRESS });
  if (!code || code === '0x') {
    const nonce = await client.getTransactionCount({ address: deployer.address, blockTag: 'pending' });
    if (nonce !== 0) throw new Error(`devnet top-up deploy: deployer nonce is ${nonce}, expected 0 (use a fresh chain)`);
    const artifact = getContract('MerchantBalances');
    const hash = await wallet.deployContract({
      abi: artifact.abi,
      bytecode: artifact.bytecode,
      args: [
        DEVNET_USDC_ADDRESS,
        deployer.address,
        opts.defaultCreditLimit ?? DEVNET_MERCHANT_DEFAULT_CREDIT_LIMIT,
        opts.minFirstDeposit ?? DEVNET_MERCHANT_MIN_FIRST_DEPOSIT,
      ],
      nonce,
    });
    const receipt = await waitForReceipt(client, hash);
    if (receipt.status !== 'success' || receipt.contractAddress?.toLowerCase() !== DEVNET_MERCHANT_ADDRESS.toLowerCase()) {
      throw new Error(`devnet top-up deploy: MerchantBalances did not land at ${DEVNET_MERCHANT_ADDRESS}`);
    }
  }
  await deployDepositor(client, createWalletClient({ chain, transport, account: privateKeyToAccount(DEVNET_DEPOSITOR_DEPLOYER_KEY) }));
  const allow = async (allowed: () => Promise<boolean>, write: () => Promise<Hash>, what: string) => {
    if (await allowed()) return;
    const receipt = await waitForReceipt(client, await write());
    if (receipt.status !== 'success') throw new Error(`devnet top-up deploy: ${what} reverted`);
  };
  await allow(
    () =>
      client.readContract({
        address: DEVNET_MERCHANT_ADDRESS,
        abi: merchantAbi,
        functionName: 'isRelayer',
        args: [DEVNET_DEPOSITOR_ADDRESS],
      }),
    () =>
      wallet.writeContract({
        address: DEVNET_MERCHANT_ADDRESS,
        abi: merchantAbi,
        functionName: 'setRelayer',
        args: [DEVNET_DEPOSITOR_ADDRESS, true],
      }),
    'MerchantBalances.setRelayer(depositor)',
  );
  const owner = createWalletClient({ chain, transport, account: privateKeyToAccount(DEVNET_DEPOSITOR_DEPLOYER_KEY) });
  for (const relayer of opts.relayers) {
    await allow(
      () => client.readContract({ address: DEVNET_DEPOSITOR_ADDRESS, abi: depositorAbi, functionName: 'isCaller', args: [relayer] }),
      () => owner.writeContract({ address: DEVNET_DEPOSITOR_ADDRESS, abi: depositorAbi, functionName: 'setCaller', args: [relayer, true] }),
      `OnceDepositor.setCaller(${relayer})`,
    );
  }
  return { merchant: DEVNET_MERCHANT_ADDRESS, depositor: DEVNET_DEPOSITOR_ADDRESS };
}

/** OnceDepositor at nonce 0 of its deployer, owned by that deployer, pulling devnet USDC. */
async function deployDepositor(client: PublicClient, wallet: ReturnType<typeof createWalletClient>): Promise<void> {
  const code = await client.getCode({ address: DEVNET_DEPOSITOR_ADDRESS });
  if (code && code !== '0x') return;
  const from = wallet.account!.address;
  if ((await client.getBalance({ address: from })) < 10n ** 20n) {
    await client.request({ method: 'anvil_setBalance' as any, params: [from, numberToHex(10n ** 22n)] as any });
  }
  const nonce = await client.getTransactionCount({ address: from, blockTag: 'pending' });
  if (nonce !== 0) throw new Error(`devnet top-up deploy: depositor deployer nonce is ${nonce}, expected 0 (use a fresh chain)`);
  const artifact = getContract('OnceDepositor');
  const hash = await wallet.deployContract({
    abi: artifact.abi,
    bytecode: artifact.bytecode,
    args: [DEVNET_USDC_ADDRESS, from],
    nonce,
    account: wallet.account!,
    chain: wallet.chain,
  });
  const receipt = await waitForReceipt(client, hash);
  if (receipt.status !== 'success' || receipt.contractAddress?.toLowerCase() !== DEVNET_DEPOSITOR_ADDRESS.toLowerCase()) {
    throw new Error(`devnet top-up deploy: OnceDepositor did not land at ${DEVNET_DEPOSITOR_ADDRESS}`);
  }
}

/** Polls from 1 ms (anvil's automine answers before it mines). */
async function waitForReceipt(client: Pick<PublicClient, 'getTransactionReceipt'>, hash: Hash) {
  const deadline = Date.now() + 30_000;
  for (let delay = 1; ; delay = Math.min(delay * 2, 50)) {
    const receipt = await client.getTransactionReceipt({ hash }).catch(() => null);
    if (receipt) return receipt;
    if (Date.now() > deadline) throw new Error(`devnet top-up deploy: no receipt for ${hash}`);
    await new Promise((r) => setTimeout(r, delay));
  }
}
