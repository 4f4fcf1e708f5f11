import { getAddress } from 'viem';
import { buildNetworkTable, type EvmNetworkId } from '../../src/chains/networks';

// Required, not imported: the bridge kit's subpath export has no types under this tsconfig's module
// resolution, and the types of viem/chains and @x402/evm pull in ox's browser-only sources.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const viemChains = require('viem/chains') as Record<string, { id: number } | undefined>;
interface CircleChain {
  chainId: number;
  usdcAddress: string;
  cctp?: { domain: number } | null;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const circleChains = require('@circle-fin/bridge-kit/chains') as Record<string, CircleChain | undefined>;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { DEFAULT_ASSETS } = require('@x402/evm') as { DEFAULT_ASSETS: Record<string, { asset: string; symbol: string }[] | undefined> };

/**
 * Issue 40: each public fact shipped in src/chains/networks.ts equals the value of every package that
 * ships it (the sources its comments cite): viem/chains for chain ids, Circle's chain definitions
 * (@circle-fin/bridge-kit/chains) for chain ids, USDC addresses and CCTP domains, and @x402/evm's
 * default USDC per chain. A fact that no package ships is listed below with the page it comes from.
 * Production mode: the devnet chains carry the devnet token otherwise.
 */
const table = buildNetworkTable({ NODE_ENV: 'production' });

/** Each network's chain in viem/chains and in Circle's definitions (undefined: the package has none). */
const CHAINS: Record<EvmNetworkId, { viem?: string; circle?: string }> = {
  base: { viem: 'base', circle: 'Base' },
  'base-sepolia': { viem: 'baseSepolia', circle: 'BaseSepolia' },
  optimism: { viem: 'optimism', circle: 'Optimism' },
  'optimism-sepolia': { viem: 'optimismSepolia', circle: 'OptimismSepolia' },
  arbitrum: { viem: 'arbitrum', circle: 'Arbitrum' },
  avalanche: { viem: 'avalanche', circle: 'Avalanche' },
  bsc: { viem: 'bsc' },
  'bot-chain': {},
  'bot-chain-testnet': {},
  'arc-testnet': { viem: 'arcTestnet', circle: 'ArcTestnet' },
  polygon: { viem: 'polygon', circle: 'Polygon' },
  unichain: { viem: 'unichain', circle: 'Unichain' },
  ink: { viem: 'ink', circle: 'Ink' },
  worldchain: { viem: 'worldchain', circle: 'WorldChain' },
  sei: { viem: 'sei', circle: 'Sei' },
  hyperevm: { viem: 'hyperEvm', circle: 'HyperEVM' },
  megaeth: { viem: 'megaeth' },
  tempo: { viem: 'tempo' },
  monad: { viem: 'monad', circle: 'Monad' },
  robinhood: { viem: 'robinhood' },
  'fluent-testnet': { viem: 'fluentTestnet' },
  ethereum: { viem: 'mainnet', circle: 'Ethereum' },
  sonic: { viem: 'sonic', circle: 'Sonic' },
};

/** Shipped facts no package holds, with where they come from. */
const FROM_PAGES: Partial<Record<EvmNetworkId, string>> = {
  robinhood: 'USDG: docs.robinhood.com/chain/contracts',
};

const circle = (id: EvmNetworkId) => {
  const name = CHAINS[id].circle;
  return name === undefined ? undefined : circleChains[name];
};

describe('shipped network facts against the packages that ship them', () => {
  test.each([...table.keys()])('%s', (id) => {
    const n = table.get(id)!;
    const viem = CHAINS[id].viem;
    const c = circle(id);
    if (viem !== undefined) expect(n.chainId).toBe(viemChains[viem]!.id);
    if (c !== undefined) {
      expect(n.chainId).toBe(c.chainId);
      expect(n.usdc).toBe(getAddress(c.usdcAddress));
      expect(n.cctpDomain).toBe(c.cctp?.domain);
    }
    const x402 = n.chainId === undefined ? undefined : DEFAULT_ASSETS[`eip155:${n.chainId}`]?.find((a) => a.symbol === 'USDC');
    if (x402 !== undefined) expect(n.usdc).toBe(getAddress(x402.asset));
    // Every fact shipped has a package behind it, or a page named above.
    const backed = { chainId: viem !== undefined || c !== undefined, usdc: c !== undefined || x402 !== undefined, cctp: c !== undefined };
    const unbacked = [
      n.chainId !== undefined && !backed.chainId && 'chain id',
      n.usdc !== undefined && !backed.usdc && 'token',
      n.cctpDomain !== undefined && !backed.cctp && 'CCTP domain',
    ].filter(Boolean);
    expect(unbacked.length === 0 || FROM_PAGES[id] !== undefined ? 'backed' : `${unbacked.join(', ')} with no source`).toBe('backed');
  });

  test("the spec's gateway domains are Circle's CCTP domains where both exist", () => {
    for (const n of table.values()) {
      if (n.gatewayDomain !== undefined && circle(n.id) !== undefined)
        expect([n.id, n.gatewayDomain]).toEqual([n.id, circle(n.id)!.cctp?.domain]);
    }
  });

  test('Circle lists no USDC for the networks we ship none for', () => {
    const withoutToken = [...table.values()].filter((n) => n.usdc === undefined).map((n) => n.id);
    expect(withoutToken).toEqual(['bsc', 'bot-chain', 'bot-chain-testnet', 'megaeth', 'tempo', 'fluent-testnet']);
    const circleChainIds = new Set(Object.values(circleChains).map((v) => v?.chainId));
    for (const id of withoutToken) {
      const chainId = table.get(id)!.chainId;
      if (chainId !== undefined) expect([id, circleChainIds.has(chainId)]).toEqual([id, false]);
    }
  });
});
