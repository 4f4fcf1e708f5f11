import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createCrossChainActivities, type CrossChainActivityDeps } from '../../activities/crosschain';
import { buildNetworkTable } from '../../src/chains/networks';
import { input } from '../support/crosschain-workflow-mocks';

/**
 * `readBridgeBurnTerms` against a fees endpoint served here: what each network setting, answer and
 * bound makes of the burn's terms. No burn is recorded (the relayer finds none).
 */
describe('readBridgeBurnTerms', () => {
  let server: Server;
  let url: string;
  let answer: { status: number; body: unknown };
  const asked: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      asked.push(req.url ?? '');
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    asked.length = 0;
    answer = { status: 200, body: tiers(10) };
  });

  const tiers = (fastBps: number | string) => [
    { finalityThreshold: 1000, minimumFee: fastBps },
    { finalityThreshold: 2000, minimumFee: 0 },
  ];
  const read = (finality: string, i = input(1)) => {
    const deps = {
      networks: buildNetworkTable({ BRIDGE_FINALITY_BASE_SEPOLIA: finality }),
      config: { BRIDGE_ATTESTATION_URL: url, BRIDGE_MAX_FEE_BPS: 100 },
      relayerFor: () => ({ find: async () => null }),
    } as unknown as CrossChainActivityDeps;
    return new MockActivityEnvironment().run(createCrossChainActivities(deps).readBridgeBurnTerms, i);
  };
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => 'answered',
      (err: ApplicationFailure) => ({ type: err.type, nonRetryable: err.nonRetryable, message: err.message }),
    );

  test('standard: the settlement maxBridgeFee at threshold 2000, nothing asked', async () => {
    expect(await read('standard')).toEqual({ finality: 'standard', minFinalityThreshold: 2000, maxFee: '20000' });
    expect(asked).toEqual([]);
  });

  test("fast: the route's fee asked once, burned with Circle's client's maxFee (2,000 + 10%) at threshold 1000", async () => {
    expect(await read('fast')).toEqual({ finality: 'fast', minFinalityThreshold: 1000, maxFee: '2200' });
    expect(asked).toEqual(['/v2/burn/USDC/fees/6/2']);
    answer = { status: 200, body: tiers('1.3') }; // Circle answers fractional bps as strings
    expect(await read('fast')).toEqual({ finality: 'fast', minFinalityThreshold: 1000, maxFee: '286' }); // 260 + 26
  });

  test("over the bound: standard; an input's larger maxBridgeFee does not raise the worker's BRIDGE_MAX_FEE_BPS", async () => {
    answer = { status: 200, body: tiers(150) };
    expect(await read('fast')).toEqual({
      finality: 'standard',
      minFinalityThreshold: 2000,
      maxFee: '20000',
      fellBack: "fast fee 33000 (150 bps, with Circle's 10% buffer) is over the bound 20000",
    });
    const forged = { ...input(1), maxBridgeFee: '1000000' };
    expect(await read('fast', forged)).toMatchObject({ finality: 'standard', fellBack: expect.stringContaining('over the bound 20000') });
  });

  test('a route without a fast tier burns at standard, and says so', async () => {
    answer = { status: 200, body: [{ finalityThreshold: 2000, minimumFee: 0 }] };
    expect(await read('fast')).toEqual({
      finality: 'standard',
      minFinalityThreshold: 2000,
      maxFee: '20000',
      fellBack: 'the attestation service offers no fast transfer on this route',
    });
  });

  test('no answer (an error status, a body that is not fee tiers, nobody listening) is retried, never a guess', async () => {
    answer = { status: 503, body: { error: 'down' } };
    expect(await refusal(read('fast'))).toEqual({ type: 'FeeUnavailable', nonRetryable: false, message: 'fee endpoint answered 503' });
    answer = { status: 200, body: { fees: 'soon' } };
    expect(await refusal(read('fast'))).toEqual({
      type: 'FeeUnavailable',
      nonRetryable: false,
      message: 'fee endpoint answered no fee tiers',
    });
    const listening = url;
    url = 'http://127.0.0.1:9'; // discard port: refused
    try {
      expect(await refusal(read('fast'))).toMatchObject({ type: 'FeeUnavailable', nonRetryable: false });
    } finally {
      url = listening;
    }
  });
});
