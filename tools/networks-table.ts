import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  buildNetworkTable,
  EVM_NETWORK_IDS,
  envSuffix,
  SOLANA_NETWORK_IDS,
  type EvmNetwork,
  type EvmNetworkId,
  type NetworkTable,
} from '../src/chains/networks';
import { isGatewayEnabled } from '../src/schemes/batched/gateway-networks';
import { crossChainRouteOf } from '../src/schemes/eip3009-crosschain/route';
import { supportedKinds } from '../src/settle/supported';
import { loadTopupConfig, TOPUP_SOURCE_IDS, type TopupConfig } from '../src/topup/config';
import { sourceOf } from '../src/topup/quote';
import { TOPUP_DESTINATION_NETWORK } from '../src/topup/types';

/**
 * The README's network table (section "Networks"), generated from the code that decides each thing,
 * so no rule is written twice: `npm run docs:networks` rewrites it, and test/unit/networks-table.test.ts
 * fails when the README differs. Each network is judged as an operator would enable it: production
 * mode, its RPC URLs and the facilitator contracts, the CCTP V2 pair, mainnets on, nothing else; what
 * that turns on is "facts shipped, needs config". "Tested on the devnet" is the one hand-kept list
 * (DEVNET_TESTED), each claim naming the integration test that runs it (the unit test checks the file
 * names the network).
 */

type Capability = 'settle' | 'crossChain' | 'batched' | 'topup';
export type NetworkRowId = EvmNetworkId | (typeof SOLANA_NETWORK_IDS)[number];

/** Which capability of which network an integration test exercises on the devnet, and which test. */
export const DEVNET_TESTED: Partial<Record<NetworkRowId, Partial<Record<Capability, string>>>> = {
  'base-sepolia': {
    settle: 'settle-permit2.test.ts',
    crossChain: 'settle-crosschain.test.ts',
    batched: 'settle-batched.test.ts',
  },
  'optimism-sepolia': { crossChain: 'settle-crosschain.test.ts' },
  base: { batched: 'settle-batched.test.ts', crossChain: 'topup-crosschain.test.ts', topup: 'topup.test.ts' },
  optimism: { crossChain: 'topup-crosschain.test.ts', topup: 'topup-crosschain.test.ts' },
  ink: { crossChain: 'topup-sources.test.ts', topup: 'topup-sources.test.ts' },
  'solana-devnet': { settle: 'settle-solana.test.ts' },
};

const TESTED = 'tested on the devnet';
const SHIPPED = 'facts shipped, needs config';
const NO = 'not supported';

/** The environment of an operator who enabled every network: RPC URLs and facilitators, nothing else. */
function operatorEnv(): Record<string, string> {
  const env: Record<string, string> = {
    NODE_ENV: 'production',
    FACILITATOR_ADDRESS_TESTNET: '0x1000000000000000000000000000000000000001',
    FACILITATOR_ADDRESS_MAINNET: '0x1000000000000000000000000000000000000002',
    FACILITATOR_ADDRESS_FLUENT: '0x1000000000000000000000000000000000000003',
    BRIDGE_MESSENGER_ADDRESS: '0x1000000000000000000000000000000000000004',
    BRIDGE_TRANSMITTER_ADDRESS: '0x1000000000000000000000000000000000000005',
  };
  for (const id of EVM_NETWORK_IDS) env[`RPC_URLS_${envSuffix(id)}`] = `https://${id}.rpc.example`;
  return env;
}

export interface NetworkRow {
  id: NetworkRowId;
  settle: string;
  crossChain: string;
  batched: string;
  topup: string;
}

export function networkRows(): NetworkRow[] {
  const networks = buildNetworkTable(operatorEnv());
  const settleable = new Set(supportedKinds({ networks, config: { MAINNETS_ENABLED: true } as never }).map((k) => k.network));
  const topup = loadTopupConfig({ TOPUP_SOURCES: TOPUP_SOURCE_IDS.join(',') });
  const tested = (id: NetworkRowId, c: Capability) => {
    const file = DEVNET_TESTED[id]?.[c];
    return file === undefined ? undefined : `${TESTED} (\`${file}\`)`;
  };
  const evm = EVM_NETWORK_IDS.map((id): NetworkRow => {
    const n = networks.get(id)!;
    const schemes = n.permit2Only
      ? 'Permit2 `exact`, `upto`'
      : `EIP-3009 \`exact\`${n.stablecoin === 'USDC' ? '' : ` (${n.stablecoin})`}; Permit2 \`exact\`, \`upto\``;
    const settle = settleable.has(id)
      ? `${schemes}: ${tested(id, 'settle') ?? SHIPPED}`
      : n.permitOnly
        ? `${NO}: \`POST /v1/permit\` only (spec)`
        : `${NO}: ${whyNotEnabled(n)}`;

    // Cross-chain both ways, judged by the settle path's own route: to another chain of the same kind.
    const other = [...networks.values()].find(
      (d) => d.id !== id && d.testnet === n.testnet && settleable.has(d.id) && !d.sameChainOnly && d.cctpDomain !== undefined,
    );
    const route = settleable.has(id) && other ? crossChainRouteOf(n, other.chainId, networks, { mainnetsEnabled: true }) : undefined;
    const crossChain =
      route?.kind === 'cross-chain'
        ? (tested(id, 'crossChain') ?? `${SHIPPED} (Circle's CCTP V2 pair: \`BRIDGE_MESSENGER_ADDRESS\`, \`BRIDGE_TRANSMITTER_ADDRESS\`)`)
        : `${NO}: ${crossChainWhyNot(n, settleable.has(id))}`;

    const batched = !isGatewayEnabled(networks, id, true)
      ? `${NO}: not a batching-gateway network (spec)`
      : n.gatewayDomain === undefined
        ? `${NO}: forwarded, and refused upstream (no gateway domain, spec)`
        : (tested(id, 'batched') ?? SHIPPED);

    const isSource = (TOPUP_SOURCE_IDS as readonly string[]).includes(id);
    const source = isSource ? sourceRefusal(networks, topup, id) : 'not a top-up source';
    const topupCell =
      source === undefined
        ? (tested(id, 'topup') ?? SHIPPED) + (id === TOPUP_DESTINATION_NETWORK ? ', same-chain (the destination)' : ', cross-chain to Base')
        : `${NO}: ${source}`;
    return { id, settle, crossChain, batched, topup: topupCell };
  });
  const solana = SOLANA_NETWORK_IDS.map((id): NetworkRow => ({
    id,
    settle: `Solana \`exact\`: ${tested(id, 'settle') ?? `${SHIPPED} (USDC mint shipped; \`SOLANA_RPC_URL_${envSuffix(id)}\`, \`SOLANA_FEE_PAYER_KEY\`)`}`,
    crossChain: `${NO}: Solana is same-chain only (spec)`,
    batched: `${NO}: not a batching-gateway network (spec)`,
    topup: `${NO}: not a top-up source`,
  }));
  return [...evm, ...solana];
}

/** Why a network the operator configured still does not settle: the facilitator or a fact we do not ship. */
function whyNotEnabled(n: EvmNetwork): string {
  if (n.facilitator === undefined) return 'the spec names no facilitator contract for it';
  const sfx = envSuffix(n.id);
  const missing = [
    n.chainId === undefined && ['chain id', `CHAIN_ID_${sfx}`],
    n.usdc === undefined && ['token', `USDC_ADDRESS_${sfx}`],
  ].filter((m): m is string[] => Array.isArray(m));
  return `no ${missing.map(([what]) => what).join(' or ')} shipped (an operator may set ${missing.map(([, v]) => `\`${v}\``).join(', ')})`;
}

function crossChainWhyNot(n: EvmNetwork, settles: boolean): string {
  if (n.sameChainOnly) return 'same-chain only (spec)';
  if (n.stablecoin !== 'USDC') return `CCTP carries USDC only, this network pays in ${n.stablecoin}`;
  if (n.permit2Only) return 'Permit2-only network; cross-chain is EIP-3009';
  if (!settles) return 'no settlement here';
  if (n.cctpDomain === undefined) return 'no CCTP domain (CCTP does not serve it)';
  return 'no destination';
}

/** Why the top-up gateway refuses `id` as a source (its own rule, src/topup/quote.ts), or undefined. */
function sourceRefusal(networks: NetworkTable, topup: TopupConfig, id: string): string | undefined {
  const r = sourceOf({ networks, topup }, id);
  return 'refusal' in r ? r.refusal.replace(/^network \S+ /, '') : undefined;
}

/** The table as Markdown: networks whose four cells are the same share a row, in the spec's order. */
export function networksTableMarkdown(): string {
  const groups = new Map<string, { ids: NetworkRowId[]; row: NetworkRow }>();
  for (const row of networkRows()) {
    const key = JSON.stringify([row.settle, row.crossChain, row.batched, row.topup]);
    const g = groups.get(key);
    if (g) g.ids.push(row.id);
    else groups.set(key, { ids: [row.id], row });
  }
  const lines = ['| network | settle schemes | cross-chain (CCTP) | batched | top-up source |', '|---|---|---|---|---|'];
  for (const { ids, row } of groups.values()) {
    lines.push(`| ${ids.map((id) => `\`${id}\``).join(', ')} | ${row.settle} | ${row.crossChain} | ${row.batched} | ${row.topup} |`);
  }
  return lines.join('\n');
}

export const README_PATH = join(__dirname, '..', 'README.md');
const START = '<!-- networks-table: generated by `npm run docs:networks` from the code; do not edit by hand -->';
const END = '<!-- networks-table end -->';

/** The README with its network table replaced by the generated one. */
export function readmeWithTable(readme: string): string {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`README.md has no ${START} ... ${END} section`);
  return `${readme.slice(0, start + START.length)}\n${networksTableMarkdown()}\n${readme.slice(end)}`;
}

if (require.main === module) {
  writeFileSync(README_PATH, readmeWithTable(readFileSync(README_PATH, 'utf8')));
  console.log('README.md: network table written');
}
