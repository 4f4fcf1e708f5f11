import { boundsFor, checkAmount, netOf, type FeeSchedule } from '../../src/topup/amounts';
import { buildNetworkTable } from '../../src/chains/networks';
import { loadTopupConfig } from '../../src/topup/config';
import { bridgeRouteOf, eligibleSources, feesFor, quoteSource, sourceOf } from '../../src/topup/quote';
import { mainnetDevnetEnv, topupDevnetEnv } from '../../devnet/start-topup';

const ADDR = '0x' + '12'.repeat(20);

describe('top-up sources (cross-chain)', () => {
  // base and optimism on local RPCs as the devnet runs them; ink fully configured too.
  const env = {
    ...mainnetDevnetEnv('http://127.0.0.1:1', 'http://127.0.0.1:2'),
    RPC_URLS_INK: 'http://127.0.0.1:3',
    USDC_ADDRESS_INK: ADDR,
  };
  const networks = buildNetworkTable(env);
  const topup = loadTopupConfig({
    TOPUP_SOURCES: 'base,optimism,ink,robinhood',
    TOPUP_FEE_FIXED: '10000',
    TOPUP_FEE_BPS: '30',
    TOPUP_FEE_RECIPIENT: ADDR,
  });

  test('optimism (CCTP domain 2) and ink (21) have a bridge route to base (6); robinhood (USDG) never has one', () => {
    expect(bridgeRouteOf({ networks }, networks.get('optimism')!)).toMatchObject({
      kind: 'cross-chain',
      sourceDomain: 2,
      destination: { id: 'base', cctpDomain: 6 },
    });
    expect(networks.get('ink')!).toMatchObject({ chainId: 57073, cctpDomain: 21, gatewayDomain: undefined, enabled: true });
    expect(bridgeRouteOf({ networks }, networks.get('ink')!)).toMatchObject({ kind: 'cross-chain', sourceDomain: 21 });
    expect(eligibleSources({ networks, topup }).map((n) => n.id)).toEqual(['base', 'optimism', 'ink']);
    // Even fully configured, USDG is not USDC: CCTP cannot carry it to base.
    const robinhood = buildNetworkTable({
      ...env,
      RPC_URLS_ROBINHOOD: 'http://127.0.0.1:4',
      CHAIN_ID_ROBINHOOD: '4663',
      USDC_ADDRESS_ROBINHOOD: ADDR,
    });
    expect(robinhood.get('robinhood')).toMatchObject({ stablecoin: 'USDG', enabled: true });
    expect(bridgeRouteOf({ networks: robinhood }, robinhood.get('robinhood')!)).toBeUndefined();
    expect(sourceOf({ networks: robinhood, topup }, 'robinhood')).toEqual({
      refusal: 'network robinhood pays in USDG, which the bridge to base (CCTP) cannot carry: it cannot be a top-up source',
    });
  });

  test('why a source is refused: not listed, not configured, not bridgeable', () => {
    expect(sourceOf({ networks, topup }, 'arbitrum')).toEqual({ refusal: 'network arbitrum is not a top-up source here' });
    expect(sourceOf({ networks, topup }, 'nowhere')).toEqual({ refusal: 'network nowhere is not a top-up source here' });
    const noInk = buildNetworkTable({ ...env, RPC_URLS_INK: 'none' });
    expect(sourceOf({ networks: noInk, topup }, 'ink')).toEqual({ refusal: 'network ink is not configured on this gateway' });
    const noBridge = buildNetworkTable({ ...env, NODE_ENV: 'production', SESSION_SECRET: 'x'.repeat(32) });
    expect(sourceOf({ networks: noBridge, topup }, 'ink')).toEqual({ refusal: 'network ink cannot be bridged to base here' });
  });

  test('a cross-chain source without an RPC is not eligible', () => {
    const without = buildNetworkTable({ ...env, RPC_URLS_OPTIMISM: 'none' });
    expect(eligibleSources({ networks: without, topup }).map((n) => n.id)).toEqual(['base', 'ink']);
  });

  test('cross-chain bounds: the minimum carries the buffered bridge fee, the maximum none (the bridge may keep less)', () => {
    const position = { balance: 0n, creditLimit: 1_000_000_000n, minBuyerDeposit: 1_000_000n };
    const base = quoteSource(networks.get('base')!, position, topup);
    const op = quoteSource(networks.get('optimism')!, position, topup);
    expect(feesFor('optimism', topup).bridgeFee).toBe(60_000n);
    expect(feesFor('base', topup).bridgeFee).toBe(0n);
    expect(op.bounds.minAmount).toBe(1_073_219n);
    expect(netOf(op.bounds.minAmount, op.fees)).toBe(1_000_000n);
    expect(op.bounds.maxAmount).toBe(base.bounds.maxAmount);
    // Even with no bridge fee at all, the maximum's credit fits the headroom.
    const noBridge: FeeSchedule = { ...op.fees, bridgeFee: 0n };
    expect(netOf(op.bounds.maxAmount, noBridge)).toBeLessThanOrEqual(1_000_000_000n);
    expect(checkAmount(op.bounds.maxAmount + 1n, op.bounds, op.limits, op.fees, noBridge)).toEqual({
      ok: false,
      reason: 'credit_limit_reached',
    });
    // Without the headroom schedule the maximum would be higher by the quoted fee.
    expect(boundsFor(position, op.limits, op.fees).maxAmount).toBeGreaterThan(op.bounds.maxAmount);
  });

  test('npm start: optimism (10) on 8548 next to base (8453) on 8547, served as a second source', () => {
    expect(topupDevnetEnv({})).toMatchObject({
      RPC_URLS_BASE: 'http://127.0.0.1:8547',
      RPC_URLS_OPTIMISM: 'http://127.0.0.1:8548',
      TOPUP_SOURCES: 'base,optimism',
    });
    expect(topupDevnetEnv({ TOPUP_SOURCES: 'base' }).TOPUP_SOURCES).toBeUndefined();
  });
});
