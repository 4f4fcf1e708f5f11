import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getContractAddress,
  http,
  isAddressEqual,
  numberToHex,
  TransactionReceiptNotFoundError,
  type Address,
  type Chain,
  type Hash,
  type PublicClient,
  type TransactionReceipt,
  type Transport,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { DEVNET_DEPLOYER_KEY } from '../src/chains/devnet-addresses';
import { facilitatorAbi } from '../src/chains/evm/abi';
import { getContract } from './contracts';

/**
 * Deploys the devnet contracts (TestUSDC at deployer nonce 0, X402Facilitator at nonce 1) to an
 * anvil chain, so every devnet chain has them at the same deterministic addresses.
 *
 * The deployer key is devnet-only: it is public in this repository and must never hold real funds.
 * It is defined once, in `src/chains/devnet-addresses.ts` (the network table reads the addresses
 * from there), and re-exported here.
 */
export { DEVNET_DEPLOYER_KEY };

const deployer = privateKeyToAccount(DEVNET_DEPLOYER_KEY);

/** Token identity of the devnet USDC; the EIP-712 domain is {name: 'USDC', version: '2'}. */
export const DEVNET_USDC_NAME = 'USDC';
export const DEVNET_USDC_SYMBOL = 'USDC';
export const DEVNET_USDC_VERSION = '2';

/** ETH given to the deployer, relayers and buyers (anvil_setBalance). */
const ETH_BALANCE = 10n ** 22n; // 10,000 ETH

export interface DevnetAddresses {
  usdc: Address;
  facilitator: Address;
}

export interface DeployDevnetOptions {
  rpcUrl: string;
  chainId: number;
  /** Accounts allowed to call the facilitator's `settle` / `transferWithPermit`; also given ETH. */
  relayers: Address[];
  /** Accounts minted USDC (in 6-decimal base units) on a fresh deploy; also given ETH. */
  buyers: { address: Address; amount: bigint }[];
  /**
   * Owner of the facilitator contract (the account that administers relayers). Defaults to the
   * deployer. When set, ownership is handed over after the relayers are configured; later calls
   * manage relayers through anvil's account impersonation.
   */
  feeOwner?: Address;
}

export interface DevnetDeployment extends DevnetAddresses {
  chainId: number;
}

/** The deterministic CREATE addresses: nonce 0 of the deployer is USDC, nonce 1 the facilitator. */
export function devnetAddresses(): DevnetAddresses {
  return {
    usdc: getContractAddress({ from: deployer.address, nonce: 0n }),
    facilitator: getContractAddress({ from: deployer.address, nonce: 1n }),
  };
}

type Client = PublicClient<Transport, Chain>;

/**
 * Waits for a receipt by polling with a back-off from 1 ms to 50 ms: anvil's automine returns the
 * hash from eth_sendRawTransaction before the block exists, and viem's default 1 s poll would add
 * most of a second to every step. Throws if the transaction reverted.
 */
async function waitForReceipt(client: Client, hash: Hash, what: string, timeoutMs = 30_000): Promise<TransactionReceipt> {
  const deadline = Date.now() + timeoutMs;
  let delay = 1;
  for (;;) {
    try {
      const receipt = await client.getTransactionReceipt({ hash });
      if (receipt.status !== 'success') throw new Error(`devnet deploy: ${what} reverted (tx ${hash})`);
      return receipt;
    } catch (err) {
      if (!(err instanceof TransactionReceiptNotFoundError)) throw err;
    }
    if (Date.now() > deadline) throw new Error(`devnet deploy: no receipt for ${what} (tx ${hash}) after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 50);
  }
}

async function setEthBalance(client: Client, address: Address, minimum = ETH_BALANCE): Promise<void> {
  const balance = await client.getBalance({ address });
  if (balance >= minimum) return;
  await rpc(client, 'anvil_setBalance', [address, numberToHex(ETH_BALANCE)]);
}

async function rpc(client: Client, method: string, params: unknown[]): Promise<unknown> {
  // anvil_* methods are not in viem's typed RPC schema.
  return (client.request as (args: { method: string; params: unknown[] }) => Promise<unknown>)({ method, params });
}

/**
 * Deploys (or finds) the devnet contracts on the anvil chain at `rpcUrl`.
 *
 * Idempotent: when both contracts already have code at their deterministic addresses it only makes
 * sure every relayer is allowed (and has ETH) and returns. Otherwise it funds the deployer, deploys
 * TestUSDC (nonce 0) and X402Facilitator (nonce 1), allows each relayer, mints to each buyer and
 * gives relayers and buyers ETH. Throws if the deployer's nonces were already used for something
 * else, because the contracts would then not be at `devnetAddresses()`.
 */
export async function deployDevnet(options: DeployDevnetOptions): Promise<DevnetDeployment> {
  const { rpcUrl, chainId, relayers, buyers, feeOwner } = options;
  const chain = defineChain({
    id: chainId,
    name: `devnet-${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const transport = http(rpcUrl, { retryCount: 0 });
  const client: Client = createPublicClient({ chain, transport });
  const wallet = createWalletClient({ chain, transport, account: deployer });

  const remoteChainId = await client.getChainId();
  if (remoteChainId !== chainId) {
    throw new Error(`devnet deploy: ${rpcUrl} reports chain id ${remoteChainId}, expected ${chainId}`);
  }

  const expected = devnetAddresses();
  const hasCode = async (address: Address): Promise<boolean> => {
    const code = await client.getCode({ address });
    return code !== undefined && code !== '0x';
  };

  if (!(await hasCode(expected.usdc)) || !(await hasCode(expected.facilitator))) {
    await setEthBalance(client, deployer.address);
    let nonce = await client.getTransactionCount({ address: deployer.address, blockTag: 'pending' });
    const usdcDeployed = await hasCode(expected.usdc);
    // A fresh chain has nonce 0; a deploy interrupted after USDC has nonce 1 and USDC in place.
    if (!(nonce === 0 && !usdcDeployed) && !(nonce === 1 && usdcDeployed)) {
      throw new Error(
        `devnet deploy: deployer ${deployer.address} already has nonce ${nonce} on chain ${chainId} ` +
          `but the contracts are not at ${expected.usdc} / ${expected.facilitator}; ` +
          'the deployer key was used for something else (use a fresh chain)',
      );
    }

    const usdcArtifact = getContract('TestUSDC');
    const facilitatorArtifact = getContract('X402Facilitator');

    if (!usdcDeployed) {
      const hash = await wallet.deployContract({
        abi: usdcArtifact.abi,
        bytecode: usdcArtifact.bytecode,
        args: [DEVNET_USDC_NAME, DEVNET_USDC_SYMBOL, DEVNET_USDC_VERSION],
        nonce: nonce++,
      });
      const receipt = await waitForReceipt(client, hash, 'TestUSDC deployment');
      checkAddress('TestUSDC', receipt.contractAddress, expected.usdc);
    }
    const hash = await wallet.deployContract({
      abi: facilitatorArtifact.abi,
      bytecode: facilitatorArtifact.bytecode,
      args: [deployer.address],
      nonce: nonce++,
    });
    const receipt = await waitForReceipt(client, hash, 'X402Facilitator deployment');
    checkAddress('X402Facilitator', receipt.contractAddress, expected.facilitator);

    // One sender, strictly in nonce order, each mined before the next (anvil can stall on gaps).
    for (const relayer of relayers) {
      const tx = await wallet.writeContract({
        address: expected.facilitator,
        abi: facilitatorAbi,
        functionName: 'setRelayer',
        args: [relayer, true],
        nonce: nonce++,
      });
      await waitForReceipt(client, tx, `setRelayer(${relayer})`);
    }
    for (const buyer of buyers) {
      if (buyer.amount <= 0n) continue;
      const tx = await wallet.writeContract({
        address: expected.usdc,
        abi: usdcArtifact.abi,
        functionName: 'mint',
        args: [buyer.address, buyer.amount],
        nonce: nonce++,
      });
      await waitForReceipt(client, tx, `mint(${buyer.address}, ${buyer.amount})`);
    }
    if (feeOwner && !isAddressEqual(feeOwner, deployer.address)) {
      const tx = await wallet.writeContract({
        address: expected.facilitator,
        abi: facilitatorArtifact.abi,
        functionName: 'transferOwnership',
        args: [feeOwner],
        nonce: nonce++,
      });
      await waitForReceipt(client, tx, `transferOwnership(${feeOwner})`);
    }
    for (const { address } of buyers) await setEthBalance(client, address);
  } else {
    await ensureRelayers(client, wallet, expected.facilitator, relayers);
  }

  for (const relayer of relayers) await setEthBalance(client, relayer);
  return { ...expected, chainId };
}

function checkAddress(what: string, actual: Address | null | undefined, expected: Address): void {
  if (!actual || !isAddressEqual(actual, expected)) {
    throw new Error(
      `devnet deploy: ${what} landed at ${actual ?? '(none)'} instead of ${expected}; ` +
        'the deployer key was used before on this chain (use a fresh chain)',
    );
  }
}

/** Allows every relayer not yet allowed, sending as the facilitator's current owner. */
async function ensureRelayers(
  client: Client,
  wallet: ReturnType<typeof createWalletClient<Transport, Chain, typeof deployer>>,
  facilitator: Address,
  relayers: Address[],
): Promise<void> {
  const missing: Address[] = [];
  for (const relayer of relayers) {
    const allowed = await client.readContract({ address: facilitator, abi: facilitatorAbi, functionName: 'isRelayer', args: [relayer] });
    if (!allowed) missing.push(relayer);
  }
  if (missing.length === 0) return;

  const owner = await client.readContract({ address: facilitator, abi: facilitatorAbi, functionName: 'owner' });
  const ownedByDeployer = isAddressEqual(owner, deployer.address);
  if (!ownedByDeployer) {
    // The owner's key is not ours: let anvil sign for it.
    await setEthBalance(client, owner);
    await rpc(client, 'anvil_impersonateAccount', [owner]);
  } else {
    await setEthBalance(client, deployer.address);
  }
  try {
    let nonce = await client.getTransactionCount({ address: owner, blockTag: 'pending' });
    for (const relayer of missing) {
      const tx = await wallet.writeContract({
        address: facilitator,
        abi: facilitatorAbi,
        functionName: 'setRelayer',
        args: [relayer, true],
        nonce: nonce++,
        // A JSON-RPC account makes viem send eth_sendTransaction, which anvil signs while impersonating.
        ...(ownedByDeployer ? {} : { account: owner }),
      });
      await waitForReceipt(client, tx, `setRelayer(${relayer})`);
    }
  } finally {
    if (!ownedByDeployer) await rpc(client, 'anvil_stopImpersonatingAccount', [owner]);
  }
}
