import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { startTemporalDevServer } from '../../temporal/dev-server';
import { startAnvil } from '../../devnet/anvil';
import { deployDevnet } from '../../devnet/deploy';
import { attesterChainsFrom, startBridgeAttester } from '../../devnet/bridge-attester';
import { deployTopupDevnet } from '../../devnet/deploy-topup';
import { startDevnetInferenceProviders } from '../../devnet/inference-provider';
import { startDevnetGateway } from '../../devnet/gateway-devnet';
import { mainnetDevnetEnv } from '../../devnet/start-topup';
import { startMediaProvider } from '../../devnet/media-provider';
import { TEST_ACCOUNTS } from './accounts';
import { startSolanaDevnet } from '../../devnet/solana-rpc';
import { DEVNET_SOLANA_FEE_PAYER } from '../../src/chains/solana/fee-payer';
import { buildSolanaNetworkTable } from '../../src/chains/networks';
import { STACK_INFO_ENV, stackInfoPath, type StackInfo } from './stack-info';
import { workflowBundleOptions } from '../../src/temporal/workflow-bundle';

/**
 * Test-sized server waits: a workflow task that a killed worker held is retried after 2 s instead of
 * the default 10 s (`npm start` and production keep 10 s). Kill tests wait for it, many times a run.
 */
const TEST_DYNAMIC_CONFIG = { 'history.defaultWorkflowTaskTimeout': '2s' };

/**
 * Starts the real stack once for the whole run: a Temporal dev server (in memory), four anvil chains
 * with the real chain ids of base-sepolia, optimism-sepolia, base and optimism, our contracts deployed, the
 * bridge attester double, the litesvm-backed Solana node, and the workflow bundle built once
 * (workers spawned by tests load it instead of re-bundling).
 */
export default async function globalSetup(): Promise<void> {
  const quiet = () => undefined;
  const [temporal, base, optimism, baseMainnet, optimismMainnet] = await Promise.all([
    startTemporalDevServer({ uiPort: false, log: quiet, dynamicConfig: TEST_DYNAMIC_CONFIG }),
    startAnvil({ chainId: 84532, log: quiet }),
    startAnvil({ chainId: 11155420, log: quiet }),
    startAnvil({ chainId: 8453, log: quiet }), // `base`: the top-up gateway's destination chain
    startAnvil({ chainId: 10, log: quiet }), // `optimism`: the top-up gateway's cross-chain source
  ]);
  // The litesvm-backed Solana devnet node (in this process; tests reach it over HTTP like the service).
  const solana = await startSolanaDevnet({
    usdcMint: buildSolanaNetworkTable({}).get('solana-devnet')!.usdc,
    feePayers: [DEVNET_SOLANA_FEE_PAYER.publicKey],
  });
  const inference = await startDevnetInferenceProviders();
  const media = await startMediaProvider();
  (globalThis as any).__X402_STACK__ = [temporal, base, optimism, baseMainnet, optimismMainnet, solana, inference, media];

  const buyers = TEST_ACCOUNTS.buyers.map((a) => ({ address: a.address, amount: 1_000_000_000_000n }));
  const relayers = TEST_ACCOUNTS.relayers.map((a) => a.address);
  const [deployed] = await Promise.all([
    deployDevnet({ rpcUrl: base.rpcUrl, chainId: base.chainId, relayers, buyers }),
    deployDevnet({ rpcUrl: optimism.rpcUrl, chainId: optimism.chainId, relayers, buyers }),
    deployDevnet({ rpcUrl: baseMainnet.rpcUrl, chainId: baseMainnet.chainId, relayers, buyers }).then(() =>
      deployTopupDevnet({ rpcUrl: baseMainnet.rpcUrl, chainId: baseMainnet.chainId, relayers }),
    ),
    deployDevnet({ rpcUrl: optimismMainnet.rpcUrl, chainId: optimismMainnet.chainId, relayers, buyers }),
  ]);

  // The bridge attestation double over both chains (cross-chain settlement); stopped by the teardown.
  const attester = await startBridgeAttester({
    chains: attesterChainsFrom({
      RPC_URLS_BASE_SEPOLIA: base.rpcUrl,
      RPC_URLS_OPTIMISM_SEPOLIA: optimism.rpcUrl,
      ...mainnetDevnetEnv(baseMainnet.rpcUrl, optimismMainnet.rpcUrl),
    }),
  });
  (globalThis as any).__X402_STACK__.push(attester);
  // Batched payments: GatewayWallet on both chains and the upstream gateway double (batches every 300 ms).
  const gateway = await startDevnetGateway({
    chains: [base, optimism].map((a, i) => ({ network: ['base-sepolia', 'optimism-sepolia'][i]!, chainId: a.chainId, rpcUrl: a.rpcUrl })),
    usdc: deployed.usdc,
    withdrawalDelayBlocks: 5,
    batchIntervalMs: 300,
  });
  (globalThis as any).__X402_STACK__.push(gateway);

  const infoPath = stackInfoPath();
  const workflowBundlePath = join(dirname(infoPath), `test-workflow-bundle-${process.pid}.js`);
  mkdirSync(dirname(infoPath), { recursive: true });
  const { code } = await bundleWorkflowCode({ ...workflowBundleOptions(), logger: new DefaultLogger('WARN') });
  writeFileSync(workflowBundlePath, code);

  const info: StackInfo = {
    temporalAddress: temporal.address,
    workflowBundlePath,
    chains: {
      'base-sepolia': { rpcUrl: base.rpcUrl, chainId: base.chainId },
      'optimism-sepolia': { rpcUrl: optimism.rpcUrl, chainId: optimism.chainId },
      base: { rpcUrl: baseMainnet.rpcUrl, chainId: baseMainnet.chainId },
      optimism: { rpcUrl: optimismMainnet.rpcUrl, chainId: optimismMainnet.chainId },
    },
    usdc: deployed.usdc,
    facilitator: deployed.facilitator,
    bridgeAttestationUrl: attester.url,
    solana: { rpcUrl: solana.url },
    inference: { providers: inference.providersJson, templatesUrl: inference.templatesUrl },
    gatewayApiUrl: gateway.url,
    gatewayWallet: gateway.gatewayWallet,
    mediaProviderUrl: media.url,
  };
  writeFileSync(infoPath, JSON.stringify(info, null, 2));
  process.env[STACK_INFO_ENV] = infoPath; // inherited by the test files
  (globalThis as any).__X402_STACK_FILES__ = [infoPath, workflowBundlePath];
}
