import { ConfigError, loadConfig, type Config } from './config';
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
 * `loadStartup`, then in production mode the code check: every configured contract must have code
 * (bounded by `codeCheckTimeoutMs` per call).
 */
export async function startUp(
  role: ProcessRole,
  env: Record<string, string | undefined> = process.env,
  codeCheckTimeoutMs = 10_000,
): Promise<Startup> {
  const s = loadStartup(role, env);
  if (s.config.production) await checkContractCode(startupContracts(s), codeCheckTimeoutMs);
  return s;
}
