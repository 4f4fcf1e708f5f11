import { createPublicClient, getAddress, getContractAddress, http, toHex, type Address, type Hex } from 'viem';
import { mnemonicToAccount, privateKeyToAddress } from 'viem/accounts';
import { relayerLaneKeys } from './chains/evm/relayer-lanes';
import { ConfigError, DEVNET_RELAYER_KEY, type Config } from './config';
import { contractVariables, type NetworkTable } from './chains/networks';
import { buildSolanaNetworkTable } from './chains/networks';
import { DEVNET_SOLANA_FEE_PAYER, parseSolanaSecretKey } from './chains/solana/fee-payer';
import * as devnet from './chains/devnet-addresses';
import type { InferenceConfig } from './inference/config';
import type { MediaConfig } from './media/config';
import type { TopupConfig } from './topup/config';
import { payloadCodecProblem } from './temporal/payload-codec';

/**
 * Production never runs on a devnet value (docs/security.md "What production must configure").
 * Every devnet key is public (anvil's test mnemonic, the DEVNET_* keys of this repository), so any
 * address of such a key, and any contract such a key can deploy, may hold anyone's code on a real
 * chain. In production mode (Config.production) start-up refuses them, naming the variable.
 */

/** Anvil's public test mnemonic: the devnet's and the tests' accounts. */
const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk';
/** How many accounts of the mnemonic, and how many deployment nonces per devnet key, are refused. */
const ANVIL_ACCOUNTS = 20;
const DEPLOY_NONCES = 32;

let known: { keys: Set<string>; addresses: Set<string> } | undefined;

/** Every devnet private key and every address derived from one (lower-case), computed once. */
function devnetValues(): { keys: Set<string>; addresses: Set<string> } {
  if (known) return known;
  const keys = new Set<string>(
    [
      DEVNET_RELAYER_KEY,
      devnet.DEVNET_DEPLOYER_KEY,
      devnet.DEVNET_USDC_ISSUER_KEY,
      devnet.DEVNET_BRIDGE_DEPLOYER_KEY,
      ...devnet.DEVNET_BRIDGE_ATTESTER_KEYS,
      devnet.DEVNET_TOPUP_DEPLOYER_KEY,
      devnet.DEVNET_DEPOSITOR_DEPLOYER_KEY,
      devnet.DEVNET_GATEWAY_DEPLOYER_KEY,
      devnet.DEVNET_GATEWAY_OPERATOR_KEY,
      devnet.DEVNET_WALLET_FACTORY_DEPLOYER_KEY,
    ].map((k) => k.toLowerCase()),
  );
  for (let i = 0; i < ANVIL_ACCOUNTS; i++) {
    keys.add(toHex(mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: i }).getHdKey().privateKey!).toLowerCase());
  }
  const addresses = new Set<string>([devnet.DEVNET_BRIDGE_FEE_COLLECTOR.toLowerCase()]);
  for (const key of keys) {
    const from = privateKeyToAddress(key as Hex);
    addresses.add(from.toLowerCase());
    for (let nonce = 0; nonce < DEPLOY_NONCES; nonce++) {
      addresses.add(getContractAddress({ from, nonce: BigInt(nonce) }).toLowerCase());
    }
  }
  known = { keys, addresses };
  return known;
}

export const isDevnetKey = (key: string): boolean => devnetValues().keys.has(key.toLowerCase());
export const isDevnetAddress = (address: string): boolean => devnetValues().addresses.has(address.toLowerCase());

/**
 * The smallest top-up production accepts (base units of USDC): above the gas of the settlement,
 * allowance and deposit a top-up costs us on Base (about 300,000 gas: well under a cent at usual
 * fees, 0.10 USDC only past 0.08 gwei at 4,000 USDC per ETH). TOPUP_FEE_FIXED pays that gas.
 */
export const TOPUP_PRODUCTION_MIN_AMOUNT = 100_000n;

/** Which process is starting: each holds different keys and uses different contracts. */
export type ProcessRole = 'api' | 'worker' | 'topup';

/** The keys only the worker holds, by role (docs/security.md "Roles and keys"). */
export const WORKER_KEY_VARIABLES = ['RELAYER_PRIVATE_KEY', 'REVENUE_WALLET_PRIVATE_KEY', 'TOPUP_RELAYER_PRIVATE_KEY'] as const;

export interface WorkerKeys {
  relayer: Hex;
  /** Settlement lanes (RELAYER_PRIVATE_KEYS), else the relayer key alone. */
  lanes: Hex[];
  revenue: Hex;
  topupRelayer: Hex;
}

/**
 * The worker's keys by role. Devnet: the revenue and top-up roles fall back to the relayer key.
 * Production: all three explicit, none a devnet key, no two the same.
 */
export function workerKeys(
  config: Pick<Config, 'production' | 'RELAYER_PRIVATE_KEYS' | (typeof WORKER_KEY_VARIABLES)[number]>,
): WorkerKeys {
  const problems: string[] = [];
  const get = (name: (typeof WORKER_KEY_VARIABLES)[number]): Hex => {
    const key = config[name] as Hex | undefined;
    if (!config.production) return key ?? ((config.RELAYER_PRIVATE_KEY ?? DEVNET_RELAYER_KEY) as Hex);
    if (!key) problems.push(`${name}: required in production (the worker's ${name.replace('_PRIVATE_KEY', '').toLowerCase()} key)`);
    else if (isDevnetKey(key)) problems.push(`${name}: is a public devnet key; production needs its own key`);
    return key ?? '0x';
  };
  const relayer = get('RELAYER_PRIVATE_KEY');
  const lanes = (): Hex[] => {
    if (problems.length) return [];
    try {
      return relayerLaneKeys(relayer, config.RELAYER_PRIVATE_KEYS);
    } catch (err) {
      problems.push(`RELAYER_PRIVATE_KEYS: ${(err as Error).message}`);
      return [];
    }
  };
  const keys = {
    relayer,
    lanes: lanes(),
    revenue: get('REVENUE_WALLET_PRIVATE_KEY'),
    topupRelayer: get('TOPUP_RELAYER_PRIVATE_KEY'),
  };
  if (config.production && config.RELAYER_PRIVATE_KEYS) {
    for (const lane of keys.lanes) {
      if (isDevnetKey(lane)) problems.push('RELAYER_PRIVATE_KEYS: lists a public devnet key; production needs its own keys');
      const other = [keys.revenue, keys.topupRelayer].some((k) => k.toLowerCase() === lane.toLowerCase());
      if (other) problems.push('RELAYER_PRIVATE_KEYS: lists a key of another role (separate roles)');
    }
  }
  if (config.production && problems.length === 0) {
    const [a, b, c] = WORKER_KEY_VARIABLES;
    if (keys.relayer.toLowerCase() === keys.revenue.toLowerCase()) problems.push(`${b}: must differ from ${a} (separate roles)`);
    if (keys.relayer.toLowerCase() === keys.topupRelayer.toLowerCase()) problems.push(`${c}: must differ from ${a} (separate roles)`);
    if (keys.revenue.toLowerCase() === keys.topupRelayer.toLowerCase()) problems.push(`${c}: must differ from ${b} (separate roles)`);
  }
  if (problems.length) throw new ConfigError(`Invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  return keys;
}

export interface StartupParts {
  config: Config;
  networks: NetworkTable;
  inference?: InferenceConfig;
  media?: Pick<MediaConfig, 'artifacts'>;
  topup?: TopupConfig;
}

/**
 * Production mode only: refuses every devnet key and devnet-derived address this process would use,
 * and keys the process must not hold. Throws one ConfigError naming every variable at fault.
 */
export function refuseDevnetValues(role: ProcessRole, parts: StartupParts): void {
  const { config, networks } = parts;
  if (!config.production) return;
  const problems = new Map<string, string>();
  const refuse = (variable: string, reason: string) => problems.has(variable) || problems.set(variable, reason);
  const devnetAddress = (variable: string, address: string | undefined) => {
    if (address && isDevnetAddress(address)) refuse(variable, `${address} is a devnet address (its key is public); set the real one`);
  };

  for (const n of networks.values()) {
    if (!n.enabled) continue;
    for (const c of contractVariables(n)) devnetAddress(c.variable, c.address);
  }
  devnetAddress('PLATFORM_FEE_RECIPIENT', config.PLATFORM_FEE_RECIPIENT);
  // Every role talks to Temporal: without the codec key its payloads would be plain (forgeable).
  const codec = payloadCodecProblem(config);
  if (codec) refuse('PAYLOAD_CODEC_KEYS', codec);
  for (const s of buildSolanaNetworkTable(config.env).values()) {
    if (!s.enabled) continue;
    if (!config.SOLANA_FEE_PAYER_KEY) refuse('SOLANA_FEE_PAYER_KEY', `required in production while ${s.id} has an RPC URL`);
    else if (parseSolanaSecretKey(config.SOLANA_FEE_PAYER_KEY).publicKey.equals(DEVNET_SOLANA_FEE_PAYER.publicKey)) {
      refuse('SOLANA_FEE_PAYER_KEY', 'is the public devnet fee payer; production needs its own key');
    }
  }

  if (role === 'worker' && !config.BRIDGE_ATTESTATION_URL) {
    const bridged = [...networks.values()].find((n) => n.enabled && n.bridgeMessenger);
    if (bridged) refuse('BRIDGE_ATTESTATION_URL', `required in production while ${bridged.id} has a bridge (BRIDGE_MESSENGER_ADDRESS)`);
  }

  // The media download's exception for the devnet double: production fetches artifacts from public addresses only.
  if (parts.media?.artifacts.privateHosts.length)
    refuse('MEDIA_ARTIFACT_PRIVATE_HOSTS', 'devnet only: production downloads artifacts from public addresses only');

  if (role === 'worker') {
    try {
      const keys = workerKeys(config);
      const same = (variable: string, address: string | undefined, key: Hex) => {
        if (address && getAddress(address) !== privateKeyToAddress(key))
          refuse(variable, `${address} is not the address of the worker's key for this role`);
      };
      same('RELAYER_ADDRESS', config.RELAYER_ADDRESS, keys.relayer);
      same('INFERENCE_REVENUE_WALLET', config.env.INFERENCE_REVENUE_WALLET, keys.revenue);
      same('TOPUP_RELAYER_ADDRESS', config.env.TOPUP_RELAYER_ADDRESS, keys.topupRelayer);
      if (config.TOPUP_RELAYER_PRIVATE_KEY) devnetAddress('TOPUP_DEPOSITOR_CONTRACT', config.TOPUP_DEPOSITOR_CONTRACT);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      for (const line of err.message.split('\n').slice(1)) {
        const [variable, ...rest] = line.trim().split(':');
        refuse(variable!, rest.join(':').trim());
      }
    }
  } else {
    for (const name of WORKER_KEY_VARIABLES) {
      if (config[name]) refuse(name, `the ${role} process holds no private key: give it to the worker only`);
    }
  }

  if (role === 'api' || role === 'topup') {
    // Without a token /metrics answers loopback callers, and a reverse proxy on the same host is one.
    if (!config.METRICS_TOKEN)
      refuse('METRICS_TOKEN', 'required in production: without it /metrics is open to a reverse proxy on the same host');
  }

  if (role === 'api') {
    // Signs the siwe-session cookie: a per-process key would end sessions at every restart and differ between API processes.
    if (!config.SESSION_SECRET)
      refuse('SESSION_SECRET', 'required in production (signs the siwe-session cookie, the same in every API process)');
    if (!config.RELAYER_ADDRESS) refuse('RELAYER_ADDRESS', "required in production (the worker relayer's address)");
    devnetAddress('RELAYER_ADDRESS', config.RELAYER_ADDRESS);
    const revenue = parts.inference?.revenueWallet;
    devnetAddress('INFERENCE_REVENUE_WALLET', revenue);
    if (revenue && config.RELAYER_ADDRESS && revenue.toLowerCase() === config.RELAYER_ADDRESS.toLowerCase()) {
      refuse('INFERENCE_REVENUE_WALLET', 'must differ from RELAYER_ADDRESS (separate roles)');
    }
    for (const a of config.OPERATOR_ADDRESSES) devnetAddress('OPERATOR_ADDRESSES', a);
  }

  if (role === 'topup' && parts.topup) {
    devnetAddress('TOPUP_MERCHANT_CONTRACT', parts.topup.TOPUP_MERCHANT_CONTRACT);
    devnetAddress('TOPUP_DEPOSITOR_CONTRACT', config.TOPUP_DEPOSITOR_CONTRACT);
    devnetAddress('TOPUP_RELAYER_ADDRESS', parts.topup.TOPUP_RELAYER_ADDRESS);
    devnetAddress('TOPUP_FEE_RECIPIENT', parts.topup.TOPUP_FEE_RECIPIENT);
    // Each top-up costs us three or four transactions: a free one, or one of a few base units, is
    // gas anyone can make us spend.
    const { TOPUP_FEE_FIXED: fee, TOPUP_MIN_AMOUNT: min } = parts.topup;
    if (fee === 0n) refuse('TOPUP_FEE_FIXED', 'required in production, above 0: it pays for the gas of each top-up');
    if (min < TOPUP_PRODUCTION_MIN_AMOUNT || min <= fee) {
      refuse('TOPUP_MIN_AMOUNT', `must be at least ${TOPUP_PRODUCTION_MIN_AMOUNT} (0.10 USDC) and above TOPUP_FEE_FIXED in production`);
    }
  }

  if (problems.size) {
    const lines = [...problems].map(([v, reason]) => `  ${v}: ${reason}`);
    throw new ConfigError(`Invalid configuration (production):\n${lines.join('\n')}`);
  }
}

/** One configured contract to look for at start-up. */
export interface ContractTarget {
  variable: string;
  network: string;
  rpcUrl: string;
  address: Address;
}

/** Every contract of every enabled network, plus `extra` (e.g. the top-up merchant contract). */
export function contractTargets(networks: NetworkTable, extra: ContractTarget[] = []): ContractTarget[] {
  const out: ContractTarget[] = [];
  for (const n of networks.values()) {
    if (!n.enabled) continue;
    for (const c of contractVariables(n)) out.push({ ...c, network: n.id, rpcUrl: n.rpcUrls[0]! });
  }
  return [...out, ...extra];
}

/**
 * eth_getCode at every target, in parallel, each bounded by `timeoutMs`. An address without code
 * (or whose chain did not answer in time) stops start-up with the variable and network named.
 */
export async function checkContractCode(targets: ContractTarget[], timeoutMs = 10_000): Promise<void> {
  const clients = new Map<string, ReturnType<typeof createPublicClient>>();
  const clientFor = (url: string) => {
    let c = clients.get(url);
    if (!c) clients.set(url, (c = createPublicClient({ transport: http(url, { timeout: timeoutMs, retryCount: 0 }) })));
    return c;
  };
  const problems = await Promise.all(
    targets.map(async (t) => {
      const where = `${t.address} on ${t.network}`;
      try {
        const code = await clientFor(t.rpcUrl).getCode({ address: t.address });
        return code && code !== '0x' ? undefined : `  ${t.variable}: no contract code at ${where}`;
      } catch (err) {
        const detail = (err as { shortMessage?: string }).shortMessage ?? String(err);
        return `  ${t.variable}: could not read the code at ${where} within ${timeoutMs} ms (${detail.split('\n')[0]})`;
      }
    }),
  );
  const lines = [...new Set(problems.filter((p): p is string => p !== undefined))];
  if (lines.length) throw new ConfigError(`Invalid configuration (contracts):\n${lines.join('\n')}`);
}
