import {
  boundsFor,
  bufferedBridgeFee,
  checkAmount,
  facilitatorFee,
  grossForNet,
  maxGrossForNet,
  netOf,
  type FeeSchedule,
} from '../../src/topup/amounts';

const fees: FeeSchedule = { feeFixed: 10_000n, feeBps: 30n, bridgeFee: 0n };
const limits = { minAmount: 1n, maxAmount: 10_000_000_000n };

describe('top-up amount math (base units, exact)', () => {
  test('fee and net: fixed plus floor(bps)', () => {
    expect(facilitatorFee(5_000_000n, fees)).toBe(25_000n);
    expect(netOf(5_000_000n, fees)).toBe(4_975_000n);
    expect(netOf(3_333_333n, fees)).toBe(3_333_333n - 10_000n - 9_999n);
    expect(netOf(5_000_000n, { ...fees, bridgeFee: 60_000n })).toBe(4_915_000n);
    expect(netOf(0n, fees)).toBe(-10_000n);
  });

  test('grossForNet / maxGrossForNet are the exact edges', () => {
    for (const target of [1n, 999_999n, 1_000_000n, 3_000_000n, 1_000_000_000n]) {
      const lo = grossForNet(target, fees);
      expect(netOf(lo, fees)).toBeGreaterThanOrEqual(target);
      expect(netOf(lo - 1n, fees)).toBeLessThan(target);
      const hi = maxGrossForNet(target, fees);
      expect(netOf(hi, fees)).toBeLessThanOrEqual(target);
      expect(netOf(hi + 1n, fees)).toBeGreaterThan(target);
    }
    expect(grossForNet(1_000_000n, fees)).toBe(1_013_039n);
    expect(maxGrossForNet(1_000_000_000n, fees)).toBe(1_003_019_057n);
  });

  test('bounds of a fresh buyer: the first-deposit minimum after fees, the headroom as maximum', () => {
    const b = boundsFor({ balance: 0n, creditLimit: 1_000_000_000n, minBuyerDeposit: 1_000_000n }, limits, fees);
    expect(b).toEqual({ minAmount: 1_013_039n, maxAmount: 1_003_019_057n, headroom: 1_000_000_000n, open: true });
  });

  test('bounds once the buyer has a balance: minimum from 1 unit credited; the gateway maximum caps', () => {
    const b = boundsFor({ balance: 4_975_000n, creditLimit: 100_000_000_000n, minBuyerDeposit: 0n }, limits, fees);
    expect(b.minAmount).toBe(grossForNet(1n, fees));
    expect(netOf(b.minAmount, fees)).toBe(1n);
    expect(b.maxAmount).toBe(10_000_000_000n);
    expect(boundsFor({ balance: 0n, creditLimit: 0n, minBuyerDeposit: 0n }, { minAmount: 2_000_000n, maxAmount: 5n }, fees).open).toBe(
      false,
    );
  });

  test('no headroom left: closed range, maxAmount 0, every amount is credit_limit_reached', () => {
    const b = boundsFor({ balance: 1_000_000_000n, creditLimit: 1_000_000_000n, minBuyerDeposit: 0n }, limits, fees);
    expect(b).toEqual({ minAmount: grossForNet(1n, fees), maxAmount: 0n, headroom: 0n, open: false });
    expect(checkAmount(5_000_000n, b, limits, fees)).toEqual({ ok: false, reason: 'credit_limit_reached' });
    // Less headroom than the first-deposit minimum is closed too.
    const tiny = boundsFor({ balance: 0n, creditLimit: 500_000n, minBuyerDeposit: 1_000_000n }, limits, fees);
    expect(tiny.open).toBe(false);
  });

  test('checkAmount: low, then high, then credit', () => {
    const b = boundsFor({ balance: 0n, creditLimit: 3_000_000n, minBuyerDeposit: 1_000_000n }, limits, fees);
    expect(checkAmount(1_013_038n, b, limits, fees)).toEqual({ ok: false, reason: 'amount_too_low' });
    expect(checkAmount(1_013_039n, b, limits, fees)).toEqual({ ok: true });
    expect(checkAmount(3_019_057n, b, limits, fees)).toEqual({ ok: true });
    expect(checkAmount(3_019_058n, b, limits, fees)).toEqual({ ok: false, reason: 'credit_limit_reached' });
    expect(checkAmount(10_000_000_001n, b, limits, fees)).toEqual({ ok: false, reason: 'amount_too_high' });
  });

  test('cross-chain: the buffered bridge fee raises the minimum by exactly what it deducts', () => {
    expect(bufferedBridgeFee(50_000n, 2_000n)).toBe(60_000n);
    expect(bufferedBridgeFee(1n, 2_000n)).toBe(2n); // rounded up, never under
    const cross = { ...fees, bridgeFee: 60_000n };
    const b = boundsFor({ balance: 0n, creditLimit: 1_000_000_000n, minBuyerDeposit: 1_000_000n }, limits, cross);
    expect(netOf(b.minAmount, cross)).toBe(1_000_000n);
    expect(b.minAmount).toBeGreaterThan(1_013_039n + 60_000n - 1n);
  });
});
