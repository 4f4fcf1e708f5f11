import { createPublicClient, createWalletClient, defineChain, http, numberToHex, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import {
  DEVNET_BRIDGE_ATTESTER_ADDRESSES,
  DEVNET_BRIDGE_DEPLOYER_KEY,
  DEVNET_BRIDGE_FEE_COLLECTOR,
  DEVNET_BRIDGE_MESSENGER_ADDRESS,
  DEVNET_BRIDGE_SIGNATURE_THRESHOLD,
  DEVNET_BRIDGE_TRANSMITTER_ADDRESS,
  DEVNET_USDC_ADDRESS,
  DEVNET_USDC_ISSUER_KEY,
} from '../src/chains/devnet-addresses';
import { buildNetworkTable } from '../src/chains/networks';
import { getContract } from './contracts';
import { ensureUsdcMinter } from './usdc';
import { messageTransmitterV2Abi } from '../src/chains/evm/abi';

/**
 * Deploys the devnet's CCTP-style bridge pair on one anvil chain (after `deployDevnet` put USDC and
 * the facilitator there), idempotently:
 *   - BridgeTokenMessenger at the bridge deployer's nonce 0, BridgeMessageTransmitter at nonce 1
 *     (its own key, so the main deployer's nonces stay untouched), domain = the chain's CCTP domain
 *     from the network table; the transmitter enables the three devnet attesters and requires
 *     `signatureThreshold` of them per message (default DEVNET_BRIDGE_SIGNATURE_THRESHOLD, 2);
 *   - both made USDC minters by the USDC's master minter (the issuer, devnet/usdc.ts), as CCTP's token
 *     minter is on real chains: the transmitter mints without limit, the messenger only burns (which
 *     FiatToken allows minters alone);
 *   (a facilitator kept from an earlier `npm start` gets its current code from ensureFacilitatorCode).
 */
const bridgeDeployer = privateKeyToAccount(DEVNET_BRIDGE_DEPLOYER_KEY);
const issuer = privateKeyToAccount(DEVNET_USDC_ISSUER_KEY);
const ETH = 10n ** 21n;

export async function deployBridge(
  rpcUrl: string,
  chainId: number,
  { signatureThreshold = DEVNET_BRIDGE_SIGNATURE_THRESHOLD }: { signatureThreshold?: number } = {},
): Promise<{ messenger: Address; transmitter: Address }> {
  const network = [...buildNetworkTable({}).values()].find((n) => n.chainId === chainId);
  const domain = network?.cctpDomain;
  if (domain === undefined) throw new Error(`devnet bridge: chain ${chainId} has no CCTP domain in the network table`);
  const chain = defineChain({
    id: chainId,
    name: `devnet-${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const transport = http(rpcUrl, { retryCount: 0 });
  const client = createPublicClient({ chain, transport });
  const wallet = createWalletClient({ chain, transport, account: bridgeDeployer });
  const anvil = (method: string, params: unknown[]) =>
    (client.request as (a: { method: string; params: unknown[] }) => Promise<unknown>)({ method, params });
  const hasCode = async (a: Address) => ((await client.getCode({ address: a })) ?? '0x') !== '0x';
  const mined = async (hash: Hex, what: string) => {
    const r = await client.waitForTransactionReceipt({ hash, pollingInterval: 5 });
    if (r.status !== 'success') throw new Error(`devnet bridge: ${what} reverted (${hash})`);
    return r;
  };

  const contracts = [
    {
      name: 'BridgeTokenMessenger',
      nonce: 0,
      address: DEVNET_BRIDGE_MESSENGER_ADDRESS,
      args: [domain, DEVNET_USDC_ADDRESS, DEVNET_BRIDGE_TRANSMITTER_ADDRESS],
    },
    {
      name: 'BridgeMessageTransmitter',
      nonce: 1,
      address: DEVNET_BRIDGE_TRANSMITTER_ADDRESS,
      // The fee is the attestation's `feeExecuted` (the attester double: DEVNET_BRIDGE_FEE_BPS on fast burns, none on standard).
      args: [
        domain,
        DEVNET_USDC_ADDRESS,
        DEVNET_BRIDGE_MESSENGER_ADDRESS,
        DEVNET_BRIDGE_ATTESTER_ADDRESSES,
        BigInt(signatureThreshold),
        DEVNET_BRIDGE_FEE_COLLECTOR,
      ],
    },
  ] as const;
  for (const c of contracts) {
    if (await hasCode(c.address)) continue;
    if ((await client.getBalance({ address: bridgeDeployer.address })) < ETH)
      await anvil('anvil_setBalance', [bridgeDeployer.address, numberToHex(ETH)]);
    const nonce = await client.getTransactionCount({ address: bridgeDeployer.address, blockTag: 'pending' });
    if (nonce !== c.nonce)
      throw new Error(`devnet bridge: deployer nonce ${nonce} on chain ${chainId}, expected ${c.nonce} for ${c.name} (use a fresh chain)`);
    const artifact = getContract(c.name);
    const hash = await wallet.deployContract({
      abi: artifact.abi,
      bytecode: artifact.bytecode,
      args: c.args as unknown as unknown[],
      nonce,
    });
    const receipt = await mined(hash, `${c.name} deployment`);
    if (receipt.contractAddress?.toLowerCase() !== c.address.toLowerCase())
      throw new Error(`devnet bridge: ${c.name} landed at ${receipt.contractAddress}`);
  }

  // A chain resumed from `.data` whose transmitter predates m-of-n attestations cannot take them.
  const threshold = await client
    .readContract({ address: DEVNET_BRIDGE_TRANSMITTER_ADDRESS, abi: messageTransmitterV2Abi, functionName: 'signatureThreshold' })
    .catch(() => undefined);
  if (threshold === undefined)
    throw new Error(
      `devnet bridge: the transmitter on chain ${chainId} predates m-of-n attestations: remove .data/anvil-*.json to start fresh`,
    );

  if ((await client.getBalance({ address: issuer.address })) < ETH) await anvil('anvil_setBalance', [issuer.address, numberToHex(ETH)]);
  const issuerWallet = createWalletClient({ chain, transport, account: issuer });
  await ensureUsdcMinter(client, issuerWallet, DEVNET_BRIDGE_TRANSMITTER_ADDRESS, 2n ** 256n - 1n);
  await ensureUsdcMinter(client, issuerWallet, DEVNET_BRIDGE_MESSENGER_ADDRESS, 0n);

  return { messenger: DEVNET_BRIDGE_MESSENGER_ADDRESS, transmitter: DEVNET_BRIDGE_TRANSMITTER_ADDRESS };
}
