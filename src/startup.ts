import { createPublicClient, http } from 'viem';
import { ConfigError, loadConfig, type Config } from './config';
import { redactUrls } from './observability/redact';
import { mainnetAllowed } from './chains/mainnet-gate';
import { temporalConnectionOptions } from './temporal/connection';
import { buildNetworkTable, missingFacts, type EvmNetworkId, type NetworkTable } from './chains/networks';
import { solanaNetworks } from './chains/solana/context';
import { inferenceConfig, type InferenceConfig } from './inference/config';
import { mediaConfig, type MediaConfig } from './media/config';
import { loadTopupConfig, type TopupConfig } from './topup/config';
import {
  checkContractCode,
  contractTargets,
  refuseDevnetValues,
  workerKeys,
  type ContractTarget,
  type ProcessRole,
  type WorkerKeys,
} from './production';

/**
 * Everything a process reads from its environment, parsed once at start-up, so a bad value (a
 * MEDIA_*, INFERENCE_*, TOPUP_* one included) stops the process with the variable's name instead
 * of failing a request later. Entry points pass these objects down.
 */
export interface Startup {
  role: ProcessRole;
  config: Config;
  networks: NetworkTable;
  /** Networks given RPC URLs that still lack a fact (chain id, token, facilitator), by name: logged as warnings. */
  notices: string[];
  /** API and worker: paid chat and media generation. */
  inference?: InferenceConfig;
  media?: MediaConfig;
  /** The top-up gateway. */
  topup?: TopupConfig;
  /** The worker: its keys by role. */
  keys?: WorkerKeys;
}

/** Parses the whole configuration of `role`; throws ConfigError naming the bad variable(s). */
export function loadStartup(role: ProcessRole, env: Record<string, string | undefined> = process.env): Startup {
  const config = loadConfig(env);
  const networks = buildNetworkTable(config.env);
  const notices = [...networks.values()].map(missingFacts).filter((m): m is string => m !== undefined);
  const s: Startup = { role, config, networks, notices };
  temporalConnectionOptions(config); // unreadable TLS files stop start-up here, by variable name
  if (role === 'api' || role === 'worker') {
    solanaNetworks(config); // a bad SOLANA_FEE_PAYER_KEY stops start-up here
    // inferenceConfig/mediaConfig memoize per config object: later calls return these same objects.
    s.inference = inferenceConfig(config);
    s.media = mediaConfig(config);
    refuseSwitchedOffMainnets(s, { INFERENCE_CHAT_NETWORK: s.inference.network, MEDIA_NETWORK: s.media.network });
  }
  if (role === 'topup') s.topup = loadTopupConfig(config.env);
  refuseDevnetValues(role, s);
  if (role === 'worker') s.keys = workerKeys(config);
  return s;
}

/** Chat and media take payments on one network each: a mainnet only with MAINNETS_ENABLED. */
function refuseSwitchedOffMainnets(s: Startup, networkVariables: Record<string, EvmNetworkId>): void {
  const off = Object.entries(networkVariables).filter(([, id]) => !mainnetAllowed(s.config, s.networks.get(id)!));
  if (off.length === 0) return;
  const lines = off.map(([variable, id]) => `  ${variable}: ${id} is a mainnet and MAINNETS_ENABLED is off`);
  throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
}

/** The contracts `s` uses: every enabled network's, and the merchant contract and its deposit key for the top-up gateway. */
export function startupContracts(s: Startup): ContractTarget[] {
  const base = s.networks.get('base');
  const merchant: ContractTarget[] =
    s.topup && base?.rpcUrls[0]
      ? [
          {
            variable: 'TOPUP_MERCHANT_CONTRACT',
            network: 'base',
            rpcUrl: base.rpcUrls[0],
            address: s.topup.TOPUP_MERCHANT_CONTRACT as `0x${string}`,
          },
          {
            variable: 'TOPUP_DEPOSITOR_CONTRACT',
            network: 'base',
            rpcUrl: base.rpcUrls[0],
            address: s.config.TOPUP_DEPOSITOR_CONTRACT as `0x${string}`,
          },
        ]
      : [];
  return contractTargets(s.networks, merchant);
}

/**
 * `loadStartup`, then production mode inferred from the chains: outside it, every enabled network
 * whose chain id is a mainnet's (the top-up gateway's `base` among them) must prove it is a devnet
 * chain, else the process starts in production mode, where no devnet default applies (and a devnet
 * key or address stops it, by name). Then in production mode the code check: every configured
 * contract must have code. Each call is bounded by `timeoutMs`.
 */
export async function startUp(
  role: ProcessRole,
  env: Record<string, string | undefined> = process.env,
  timeoutMs = 10_000,
): Promise<Startup> {
  let s = loadStartup(role, env);
  if (!s.config.production) {
    const live = await liveChains(s.networks, timeoutMs);
    if (live.length > 0) {
      const why = `production mode: ${live.join('; ')}`;
      try {
        s = loadStartup(role, { ...env, NODE_ENV: 'production' });
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        const [, ...lines] = err.message.split('\n');
        throw new ConfigError(`Invalid configuration (${why}):\n${lines.join('\n')}`);
      }
      s.notices.push(why);
    }
  }
  if (s.config.production) await checkContractCode(startupContracts(s), timeoutMs);
  return s;
}

/** Chain ids of the mainnets in the network table (an enabled network may be given one by CHAIN_ID_<NET>). */
const MAINNET_CHAIN_IDS = new Set(
  [...buildNetworkTable({}).values()].filter((n) => !n.testnet && n.chainId !== undefined).map((n) => n.chainId),
);

/**
 * The enabled networks that may move real money: a mainnet, or any network whose chain id is a
 * mainnet's, whose RPC does not prove it is a devnet chain. A devnet chain is anvil (`npm start`, the
 * tests, a local fork), which names itself in `web3_clientVersion`; an RPC that names another client,
 * or does not answer, is taken as live. One line per such network, naming it and why.
 */
export async function liveChains(networks: NetworkTable, timeoutMs: number): Promise<string[]> {
  const candidates = [...networks.values()].filter(
    (n) => n.enabled && (!n.testnet || (n.chainId !== undefined && MAINNET_CHAIN_IDS.has(n.chainId))),
  );
  const verdicts = await Promise.all(
    candidates.map(async (n) => {
      try {
        const client = createPublicClient({ transport: http(n.rpcUrls[0], { timeout: timeoutMs, retryCount: 0 }) });
        const version = await client.request({ method: 'web3_clientVersion' });
        if (/^anvil\//i.test(version)) return undefined;
        return `${n.id} (chain ${n.chainId}) is not a devnet chain: its RPC runs ${JSON.stringify(version.slice(0, 40))}`;
      } catch (err) {
        const detail = (err as { shortMessage?: string }).shortMessage ?? String(err);
        return `${n.id} (chain ${n.chainId}) is not proven a devnet chain: its RPC did not answer (${redactUrls(detail.split('\n')[0]!)})`;
      }
    }),
  );
  return verdicts.filter((v): v is string => v !== undefined);
}
