import { l1GasVerdict } from '../../src/topup/gas-protection';

describe('ethereum gas protection', () => {
  const base = { gasUnits: 80_000n, maxFeePerGas: 20_000_000_000n /* 20 gwei */, ethPriceUsdc: 3_000_000_000n /* 3000 USDC */ };
  // 80k gas * 20 gwei = 0.0016 ETH = 4.80 USDC = 4_800_000 base units.

  test('broadcasts when the estimated cost is at most the fee', () => {
    expect(l1GasVerdict({ ...base, fee: 4_800_000n })).toEqual({ broadcast: true, costUsdc: 4_800_000n });
    expect(l1GasVerdict({ ...base, fee: 10_000_000n })).toEqual({ broadcast: true, costUsdc: 4_800_000n });
  });

  test('refuses when the cost exceeds the fee (one base unit is enough)', () => {
    expect(l1GasVerdict({ ...base, fee: 4_799_999n })).toEqual({ broadcast: false, reason: 'gas_cost_exceeds_fee', costUsdc: 4_800_000n });
  });

  test('rounds the cost up, never down', () => {
    expect(l1GasVerdict({ gasUnits: 1n, maxFeePerGas: 1n, ethPriceUsdc: 1n, fee: 0n })).toEqual({
      broadcast: false,
      reason: 'gas_cost_exceeds_fee',
      costUsdc: 1n,
    });
  });

  test('refuses when any input is unavailable', () => {
    for (const missing of ['gasUnits', 'maxFeePerGas', 'ethPriceUsdc'] as const) {
      expect(l1GasVerdict({ ...base, [missing]: undefined, fee: 10n ** 12n })).toEqual({
        broadcast: false,
        reason: 'gas_price_unavailable',
      });
    }
  });
});
