import type { Config } from '../../src/config';
import { getAddress } from 'viem';
import { buildNetworkTable } from '../../src/chains/networks';
import { supportedKinds } from '../../src/settle/supported';
import { permit2SettleWorkflowId, settleWorkflowId } from '../../src/temporal/workflow-ids';

const OWNER = '0x9965507d1a55bcc2695c58ba16fb37d819b0a4dc';

describe('permit2SettleWorkflowId', () => {
  test('settle:<network>:<owner>:<permit2 nonce>, lower case, the nonce in decimal as signed', () => {
    expect(
      permit2SettleWorkflowId(
        'base-sepolia',
        getAddress(OWNER),
        '115792089237316195423570985008687907853269984665640564039457584007913129639935',
      ),
    ).toBe(`settle:base-sepolia:${OWNER}:115792089237316195423570985008687907853269984665640564039457584007913129639935`);
    expect(permit2SettleWorkflowId('base-sepolia', OWNER, '0')).toBe(permit2SettleWorkflowId('base-sepolia', getAddress(OWNER), '0'));
  });

  test('never collides with an EIP-3009 id (decimal vs 0x-hex nonce)', () => {
    expect(permit2SettleWorkflowId('base-sepolia', OWNER, '1')).not.toBe(settleWorkflowId('base-sepolia', OWNER, `0x${'0'.repeat(63)}1`));
  });
});

const gate = (networks: ReturnType<typeof buildNetworkTable>, MAINNETS_ENABLED: boolean) => ({
  networks,
  config: { MAINNETS_ENABLED } as Config,
});

describe('supportedKinds', () => {
  test('devnet defaults: exact and upto on both enabled testnets', () => {
    expect(supportedKinds(gate(buildNetworkTable({}), true))).toEqual([
      { x402Version: 1, scheme: 'exact', network: 'base-sepolia' },
      { x402Version: 1, scheme: 'upto', network: 'base-sepolia' },
      { x402Version: 1, scheme: 'exact', network: 'optimism-sepolia' },
      { x402Version: 1, scheme: 'upto', network: 'optimism-sepolia' },
    ]);
  });

  test('a configured Permit2-only mainnet takes exact (Permit2) and upto, with MAINNETS_ENABLED only; permit-only networks never', () => {
    const table = buildNetworkTable({
      RPC_URLS_BASE_SEPOLIA: 'none',
      RPC_URLS_OPTIMISM_SEPOLIA: 'none',
      RPC_URLS_BSC: 'http://127.0.0.1:9999',
      USDC_ADDRESS_BSC: '0x7777777777777777777777777777777777777777',
      FACILITATOR_ADDRESS_MAINNET: '0x4444444444444444444444444444444444444444',
      RPC_URLS_FLUENT_TESTNET: 'http://127.0.0.1:9998',
      FACILITATOR_ADDRESS_FLUENT: '0x5555555555555555555555555555555555555555',
    });
    expect(table.get('bsc')).toMatchObject({ enabled: true, permit2Only: true });
    expect(supportedKinds(gate(table, true))).toEqual([
      { x402Version: 1, scheme: 'exact', network: 'bsc' },
      { x402Version: 1, scheme: 'upto', network: 'bsc' },
    ]);
    expect(supportedKinds(gate(table, false))).toEqual([]);
  });

  test('a network without a USDC address is not enabled, so no kind is ever listed that could not settle (issue 14)', () => {
    const table = buildNetworkTable({
      RPC_URLS_BASE_SEPOLIA: 'none',
      RPC_URLS_OPTIMISM_SEPOLIA: 'none',
      RPC_URLS_BSC: 'http://127.0.0.1:9999',
      RPC_URLS_TEMPO: 'http://127.0.0.1:9997',
      FACILITATOR_ADDRESS_MAINNET: '0x4444444444444444444444444444444444444444',
    });
    expect([table.get('bsc')!.enabled, table.get('tempo')!.enabled]).toEqual([false, false]);
    expect(supportedKinds(gate(table, true))).toEqual([]);
    // Every listed kind is on a network with everything its route needs.
    for (const n of buildNetworkTable({}).values())
      if (n.enabled && !n.permitOnly) expect([n.id, n.usdc]).toEqual([n.id, expect.stringMatching(/^0x/)]);
  });
});
