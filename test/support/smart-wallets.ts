import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  numberToHex,
  type Address,
  type LocalAccount,
  type PublicClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { SmartAccount } from 'viem/account-abstraction';
import { rpc } from '../../devnet/anvil';
import { devnetSmartAccount } from '../../devnet/smart-wallet';
import { DEVNET_WALLET_FACTORY_ADDRESS } from '../../src/chains/devnet-addresses';
import { walletFactoryAbi } from '../../src/chains/evm/abi';
import { fundUsdc, waitForReceipt } from './evm';
import type { SettleHarness } from './settle-harness';

/**
 * Smart-wallet buyers on the harness's base-sepolia chain: viem smart accounts over the devnet's
 * wallet (devnet/smart-wallet.ts), funded with devnet USDC, deployed by their owner or left
 * counterfactual (then their signatures are EIP-6492 wrappers until someone deploys them).
 */
export function smartWallets(h: SettleHarness) {
  const { rpcUrl, chainId } = h.stack.chains['base-sepolia'];
  const chain = defineChain({
    id: chainId,
    name: 'base-sepolia',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const client = (): PublicClient => createPublicClient({ chain, transport: http(rpcUrl) }) as PublicClient;
  return {
    chain,
    client,
    /** Whether `address` has code on base-sepolia (a deployed wallet). */
    hasCode: async (address: Address) => ((await h.chain.getCode({ address })) ?? '0x') !== '0x',
    /** A fresh owner key, its wallet's account, and that wallet funded with `usdc` (not deployed). */
    async fresh(usdc = 5_000_000n): Promise<{ owner: LocalAccount; account: SmartAccount }> {
      const owner = privateKeyToAccount(generatePrivateKey());
      const account = await devnetSmartAccount({ client: client(), owner });
      await fundUsdc(h.stack.chains['base-sepolia'], h.stack.usdc, account.address, usdc);
      return { owner, account };
    },
    /** Deploys the owner's wallet through the factory, as its owner would (not our relayer). */
    async deploy(owner: LocalAccount): Promise<void> {
      await rpc(rpcUrl, 'anvil_setBalance', [owner.address, numberToHex(10n ** 18n)]);
      const wallet = createWalletClient({ account: owner, chain, transport: http(rpcUrl) });
      const hash = await wallet.writeContract({
        address: DEVNET_WALLET_FACTORY_ADDRESS,
        abi: walletFactoryAbi,
        functionName: 'createAccount',
        args: [owner.address, 0n],
      });
      const receipt = await waitForReceipt(h.chain, hash);
      if (receipt.status !== 'success') throw new Error(`createAccount(${owner.address}) reverted: ${hash}`);
    },
  };
}
