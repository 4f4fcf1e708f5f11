import { createPublicClient, createWalletClient, defineChain, http, numberToHex, type Address, type Hash, type PublicClient } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { DEVNET_MERCHANT_ADDRESS, DEVNET_TOPUP_DEPLOYER_KEY, DEVNET_USDC_ADDRESS } from '../src/chains/devnet-addresses';
import { merchantAbi } from '../src/topup/merchant-abi';
import { getContract } from './contracts';

/**
 * Deploys the merchant contract (MerchantBalances) of the top-up gateway on the devnet `base` chain
 * from the top-up deployer key (nonce 0, so it lands at DEVNET_MERCHANT_ADDRESS) and allows the
 * gateway relayers to call `deposit`. Idempotent: an existing deployment only gets missing relayers.
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
}): Promise<{ merchant: Address }> {
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
  for (const relayer of opts.relayers) {
    const allowed = await client.readContract({
      address: DEVNET_MERCHANT_ADDRESS,
      abi: merchantAbi,
      functionName: 'isRelayer',
      args: [relayer],
    });
    if (allowed) continue;
    const hash = await wallet.writeContract({
      address: DEVNET_MERCHANT_ADDRESS,
      abi: merchantAbi,
      functionName: 'setRelayer',
      args: [relayer, true],
    });
    const receipt = await waitForReceipt(client, hash);
    if (receipt.status !== 'success') throw new Error(`devnet top-up deploy: setRelayer(${relayer}) reverted`);
  }
  return { merchant: DEVNET_MERCHANT_ADDRESS };
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
