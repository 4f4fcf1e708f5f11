import { createPublicClient, http } from 'viem';
import { buildNetworkTable, DEFAULT_RPC_RETRY_AFTER_MAX_MS } from '../../src/chains/networks';
import { cappedRetryAfter } from '../../src/chains/evm/rpc-fetch';

/**
 * A provider's Retry-After is honoured only up to RPC_RETRY_AFTER_MAX_MS (src/chains/evm/rpc-fetch.ts):
 * viem waits Retry-After seconds before each retry, so a receipt lookup made during a long 429 period
 * would otherwise sleep up to 30 s (twice) after the provider is back. On a controlled clock.
 */
describe('cappedRetryAfter', () => {
  const RECEIPT = { transactionHash: `0x${'11'.repeat(32)}` };
  /** A provider answering 429 (Retry-After: 30) to the first `limited` requests, then the answer. */
  const provider = (limited: number) => {
    let calls = 0;
    const fetchFn = (async (_url: unknown, init?: RequestInit) => {
      const { id } = JSON.parse(String(init?.body)) as { id: number };
      calls++;
      const body =
        calls <= limited
          ? { jsonrpc: '2.0', id, error: { code: 429, message: 'Too Many Requests' } }
          : { jsonrpc: '2.0', id, result: RECEIPT };
      return new Response(JSON.stringify(body), {
        status: calls <= limited ? 429 : 200,
        headers: calls <= limited ? { 'content-type': 'application/json', 'retry-after': '30' } : { 'content-type': 'application/json' },
      });
    }) as typeof fetch;
    return { fetchFn, calls: () => calls };
  };
  const lookup = (fetchFn: typeof fetch) =>
    createPublicClient({ transport: http('http://rpc.invalid', { fetchFn, retryCount: 2, retryDelay: 50 }) }).request({
      method: 'eth_getTransactionReceipt',
      params: [RECEIPT.transactionHash as `0x${string}`],
    });

  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  test('the receipt, available after two 429s asking for 30 s, is read after two pauses of the cap (2 s), not 60 s', async () => {
    const p = provider(2);
    const answer = lookup(cappedRetryAfter(p.fetchFn, 2_000));
    await jest.advanceTimersByTimeAsync(0);
    expect(p.calls()).toBe(1);
    await jest.advanceTimersByTimeAsync(1_999);
    expect(p.calls()).toBe(1); // the cap is honoured: no earlier retry
    await jest.advanceTimersByTimeAsync(1);
    expect(p.calls()).toBe(2);
    await jest.advanceTimersByTimeAsync(2_000);
    expect(p.calls()).toBe(3);
    await expect(answer).resolves.toEqual(RECEIPT);
  });

  test("uncapped, the same lookup still waits the provider's 30 s after 4 s (the behaviour the cap removes)", async () => {
    const p = provider(2);
    const answer = lookup(p.fetchFn);
    answer.catch(() => undefined);
    await jest.advanceTimersByTimeAsync(4_000);
    expect(p.calls()).toBe(1);
    await jest.advanceTimersByTimeAsync(56_000);
    expect(p.calls()).toBe(3);
    await expect(answer).resolves.toEqual(RECEIPT);
  });

  test('a cap under 1 s drops the header: viem backs off 50 then 100 ms', async () => {
    const p = provider(2);
    const answer = lookup(cappedRetryAfter(p.fetchFn, 500));
    await jest.advanceTimersByTimeAsync(50);
    expect(p.calls()).toBe(2);
    await jest.advanceTimersByTimeAsync(100);
    expect(p.calls()).toBe(3);
    await expect(answer).resolves.toEqual(RECEIPT);
  });

  test('RPC_RETRY_AFTER_MAX_MS sets every network (default DEFAULT_RPC_RETRY_AFTER_MAX_MS); a bad value is refused', () => {
    expect(buildNetworkTable({}).get('base-sepolia')!.rpcRetryAfterMaxMs).toBe(DEFAULT_RPC_RETRY_AFTER_MAX_MS);
    expect(buildNetworkTable({ RPC_RETRY_AFTER_MAX_MS: '5000' }).get('base')!.rpcRetryAfterMaxMs).toBe(5000);
    expect(() => buildNetworkTable({ RPC_RETRY_AFTER_MAX_MS: '-1' })).toThrow('RPC_RETRY_AFTER_MAX_MS');
  });
});
