import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  isAddressEqual,
  numberToHex,
  TransactionReceiptNotFoundError,
  type Address,
  type Chain,
  type Hex,
  type Hash,
  type PublicClient,
  type TransactionReceipt,
  type Transport,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import {
  DEVNET_DEPLOYER_KEY,
  X402_EXACT_PERMIT2_PROXY_ADDRESS,
  DEVNET_FACILITATOR_ADDRESS,
  PERMIT2_CANONICAL_ADDRESS,
  X402_UPTO_PERMIT2_PROXY_ADDRESS,
  DEVNET_USDC_ADDRESS,
  DEVNET_USDC_IMPLEMENTATION_ADDRESS,
  DEVNET_USDC_ISSUER_KEY,
  DEVNET_WALLET_FACTORY_ADDRESS,
  DEVNET_WALLET_FACTORY_DEPLOYER_KEY,
} from '../src/chains/devnet-addresses';
import { compileContracts, getContract } from './contracts';
import { ensureFacilitatorCode } from './upgrade-facilitator';
import { deployBridge } from './deploy-bridge';
import { deployUsdcImplementation, fiatTokenAbi, fiatTokenProxyArtifact, initializeUsdc, mintUsdc } from './usdc';
import { facilitatorAbi } from '../src/chains/evm/abi';

/**
 * Deploys the devnet contracts (USDC, Circle's FiatToken V2.2 behind its proxy, at deployer nonce 0
 * (devnet/usdc.ts); X402Facilitator at nonce 1; Permit2 and its two proxies at their canonical
 * addresses, see `ensurePermit2Contracts`) to an anvil chain, so every devnet chain has them at the
 * same deterministic addresses.
 *
 * The deployer key is devnet-only: it is public in this repository and must never hold real funds.
 * It is defined once, in `src/chains/devnet-addresses.ts` (the network table reads the addresses
 * from there), and re-exported here.
 */
export { DEVNET_DEPLOYER_KEY };

const deployer = privateKeyToAccount(DEVNET_DEPLOYER_KEY);
const issuer = privateKeyToAccount(DEVNET_USDC_ISSUER_KEY);

export { DEVNET_USDC_NAME, DEVNET_USDC_SYMBOL, DEVNET_USDC_VERSION } from './usdc';

/** ETH given to the deployer, relayers and buyers (anvil_setBalance). */
const ETH_BALANCE = 10n ** 22n; // 10,000 ETH

export interface DevnetAddresses {
  usdc: Address;
  facilitator: Address;
  permit2: Address;
  exactPermit2Proxy: Address;
  uptoPermit2Proxy: Address;
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

/**
 * The devnet addresses: the deployer's CREATE addresses (nonce 0 USDC, 1 the facilitator), and the
 * canonical Permit2 and x402 proxy addresses.
 */
export function devnetAddresses(): DevnetAddresses {
  return {
    usdc: DEVNET_USDC_ADDRESS,
    facilitator: DEVNET_FACILITATOR_ADDRESS,
    permit2: PERMIT2_CANONICAL_ADDRESS,
    exactPermit2Proxy: X402_EXACT_PERMIT2_PROXY_ADDRESS,
    uptoPermit2Proxy: X402_UPTO_PERMIT2_PROXY_ADDRESS,
  };
}

/** Permit2 and its proxies, at the canonical addresses x402 buyers sign for (src/chains/devnet-addresses.ts). */
function permit2Contracts(expected: DevnetAddresses): { name: string; address: Address; args: readonly unknown[] }[] {
  return [
    { name: 'Permit2', address: expected.permit2, args: [] },
    { name: 'X402ExactPermit2Proxy', address: expected.exactPermit2Proxy, args: [expected.permit2, expected.facilitator] },
    { name: 'X402UptoPermit2Proxy', address: expected.uptoPermit2Proxy, args: [expected.permit2, expected.facilitator] },
  ];
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
 * Idempotent: when USDC and the facilitator already have code at their deterministic addresses it
 * checks the token is Circle's, only adds the Permit2 contracts if missing (see
 * `ensurePermit2Contracts`), makes sure every relayer is allowed (and has ETH) and returns. Otherwise
 * it funds the deployer, deploys USDC (the issuer's SignatureChecker and implementation, then the
 * proxy at the deployer's nonce 0, initialized by the issuer), X402Facilitator (nonce 1), places
 * Permit2 and its two proxies, allows each relayer, mints to each buyer (the issuer is the devnet
 * minter) and gives relayers and buyers ETH. Throws if the deployer's nonces were already used for
 * something else, because the contracts would then not be at `devnetAddresses()`.
 */
export async function deployDevnet(options: DeployDevnetOptions): Promise<DevnetDeployment> {
  // Before any request: solc-js compiles synchronously (over 10 s on a slow machine without the cached
  // artifacts), and a deploy to another chain running beside this one would see its requests time out.
  compileContracts();
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
  const issuerWallet = createWalletClient({ chain, transport, account: issuer });

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

    const facilitatorArtifact = getContract('X402Facilitator');

    await setEthBalance(client, issuer.address);
    if (!usdcDeployed) {
      await deployUsdcImplementation(client, issuerWallet);
      const proxy = fiatTokenProxyArtifact();
      const hash = await wallet.deployContract({
        abi: proxy.abi,
        bytecode: proxy.bytecode,
        args: [DEVNET_USDC_IMPLEMENTATION_ADDRESS],
        nonce: nonce++,
      });
      const receipt = await waitForReceipt(client, hash, 'FiatTokenProxy deployment');
      checkAddress('FiatTokenProxy', receipt.contractAddress, expected.usdc);
    }
    await initializeUsdc(client, issuerWallet);
    const hash = await wallet.deployContract({
      abi: facilitatorArtifact.abi,
      bytecode: facilitatorArtifact.bytecode,
      args: [deployer.address],
      nonce: nonce++,
    });
    const receipt = await waitForReceipt(client, hash, 'X402Facilitator deployment');
    checkAddress('X402Facilitator', receipt.contractAddress, expected.facilitator);
    await ensurePermit2Contracts(client, wallet, expected);

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
      if (buyer.amount > 0n) await mintUsdc(client, issuerWallet, buyer.address, buyer.amount);
    }
    if (feeOwner && !isAddressEqual(feeOwner, deployer.address)) {
      const tx = await wallet.writeContract({
        address: expected.facilitator,
        abi: facilitatorArtifact.abi,
        functionName: 'transferOwnership',
        args: [feeOwner],
        nonce,
      });
      await waitForReceipt(client, tx, `transferOwnership(${feeOwner})`);
    }
    for (const { address } of buyers) await setEthBalance(client, address);
  } else {
    await checkFiatToken(client, expected.usdc);
    await ensureFacilitatorCode(client, expected.facilitator); // functions added since the chain's first deploy
    await ensurePermit2Contracts(client, wallet, expected);
    await ensureRelayers(client, wallet, expected.facilitator, relayers);
  }

  for (const relayer of relayers) await setEthBalance(client, relayer);
  await deployBridge(rpcUrl, chainId); // cross-chain settlement: bridge pair, own deployer key
  await deployWalletFactory(client, chain, transport);
  return { ...expected, chainId };
}

/**
 * The smart-wallet factory (DevnetSmartWallet.sol) from its own deployer key at nonce 0, so it sits at
 * DEVNET_WALLET_FACTORY_ADDRESS on every devnet chain. Idempotent: a chain that has it keeps it.
 */
async function deployWalletFactory(client: Client, chain: Chain, transport: Transport): Promise<void> {
  const code = await client.getCode({ address: DEVNET_WALLET_FACTORY_ADDRESS });
  if (code !== undefined && code !== '0x') return;
  const factoryDeployer = privateKeyToAccount(DEVNET_WALLET_FACTORY_DEPLOYER_KEY);
  await setEthBalance(client, factoryDeployer.address);
  const nonce = await client.getTransactionCount({ address: factoryDeployer.address, blockTag: 'pending' });
  if (nonce !== 0) throw new Error(`devnet deploy: wallet factory deployer has nonce ${nonce}, expected 0 (use a fresh chain)`);
  const artifact = getContract('DevnetSmartWalletFactory');
  const hash = await createWalletClient({ chain, transport, account: factoryDeployer }).deployContract({
    abi: artifact.abi,
    bytecode: artifact.bytecode,
    nonce,
  });
  const receipt = await waitForReceipt(client, hash, 'DevnetSmartWalletFactory deployment');
  checkAddress('DevnetSmartWalletFactory', receipt.contractAddress, DEVNET_WALLET_FACTORY_ADDRESS);
}

/** A chain kept in `.data` from before the devnet ran Circle's USDC has the old token: refuse it by name. */
async function checkFiatToken(client: Client, usdc: Address): Promise<void> {
  try {
    await client.readContract({ address: usdc, abi: fiatTokenAbi(), functionName: 'masterMinter' });
  } catch {
    throw new Error(
      `devnet deploy: the token at ${usdc} is not Circle's FiatToken (a chain from an earlier version): start afresh with rm -rf .data`,
    );
  }
}

function checkAddress(what: string, actual: Address | null | undefined, expected: Address): void {
  if (!actual || !isAddressEqual(actual, expected)) {
    throw new Error(
      `devnet deploy: ${what} landed at ${actual ?? '(none)'} instead of ${expected}; ` +
        'the deployer key was used before on this chain (use a fresh chain)',
    );
  }
}

type DeployerWallet = ReturnType<typeof createWalletClient<Transport, Chain, typeof deployer>>;

/**
 * Places Permit2 and its two proxies wherever they have no code yet. Their addresses are the
 * canonical ones (no key of ours can CREATE there), so each is deployed from a throwaway account and
 * its runtime code is copied to its address with `anvil_setCode` (DESIGN §3). That is equivalent
 * because these contracts keep no constructor-written storage and no address-dependent immutables
 * (Permit2 derives its domain separator from `address(this)` at call time; the proxies' immutables
 * are Permit2's and the facilitator's addresses, given at construction).
 */
async function ensurePermit2Contracts(client: Client, wallet: DeployerWallet, expected: DevnetAddresses): Promise<void> {
  for (const contract of permit2Contracts(expected)) {
    const code = await client.getCode({ address: contract.address });
    if (code !== undefined && code !== '0x') continue;
    const artifact = getContract(contract.name);
    const throwaway = privateKeyToAccount(generatePrivateKey());
    await setEthBalance(client, throwaway.address);
    const hash = await wallet.deployContract({
      account: throwaway,
      abi: artifact.abi,
      bytecode: artifact.bytecode,
      args: contract.args,
      nonce: 0,
    });
    const receipt = await waitForReceipt(client, hash, `${contract.name} deployment (for anvil_setCode)`);
    const runtime: Hex | undefined = receipt.contractAddress ? await client.getCode({ address: receipt.contractAddress }) : undefined;
    if (!runtime || runtime === '0x') throw new Error(`devnet deploy: ${contract.name} deployment left no code (tx ${hash})`);
    await rpc(client, 'anvil_setCode', [contract.address, runtime]);
  }
}

/** Allows every relayer not yet allowed, sending as the facilitator's current owner. */
async function ensureRelayers(client: Client, wallet: DeployerWallet, facilitator: Address, relayers: Address[]): Promise<void> {
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
