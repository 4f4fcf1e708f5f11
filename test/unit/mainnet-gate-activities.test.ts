import { randomBytes } from 'node:crypto';
import { getAddress, type Address } from 'viem';
import { buildNetworkTable, type EvmNetworkId } from '../../src/chains/networks';
import type { Relayer } from '../../src/chains/evm/relayer';
import type { PermitInput } from '../../src/permit/types';
import type { WithdrawalInput } from '../../src/gateway/withdrawal-types';
import { createPermitActivities } from '../../activities/permit';
import { createWithdrawalActivities } from '../../activities/withdrawal';

/**
 * docs/security.md threat model: "the worker refuses a switched-off mainnet (`MAINNETS_ENABLED`) in
 * every settlement, permit and withdrawal activity", so a workflow started by hand on Temporal cannot
 * move mainnet money. Every signer here records any use: with the switch off none may be touched.
 */

const randomAddress = (): Address => getAddress(`0x${randomBytes(20).toString('hex')}`);

/** A stand-in Relayer: any property read (send, account, ...) but its `address` is recorded and throws. */
function recordingRelayer(touched: string[], address?: Address): Relayer {
  return new Proxy({} as Relayer, {
    get(_target, key) {
      if (key === 'address' && address) return address;
      touched.push(String(key));
      throw new Error(`relayer.${String(key)} used`);
    },
  });
}

const networks = buildNetworkTable({});
const env = {};

describe('the mainnet gate in the permit and withdrawal activities (MAINNETS_ENABLED off): nothing signed', () => {
  test('precondition: base is a mainnet of the table, base-sepolia a testnet', () => {
    expect(networks.get('base')!.testnet).toBe(false);
    expect(networks.get('base-sepolia')!.testnet).toBe(true);
  });

  test('submitPermit on base: refused with the reason, no relayer asked for; enabled (or a testnet) it reaches the relayer', async () => {
    const permitOn = (network: EvmNetworkId): PermitInput => ({
      workflowId: `permit:${network}:x`,
      organizationId: 'o',
      apiKeyId: 'k',
      network,
      token: randomAddress(),
      owner: randomAddress(),
      spender: randomAddress(),
      recipient: randomAddress(),
      value: '1000',
      deadline: '9999999999',
      v: 27,
      r: `0x${'11'.repeat(32)}`,
      s: `0x${'22'.repeat(32)}`,
    });
    const asked: string[] = [];
    const touched: string[] = [];
    const activities = (MAINNETS_ENABLED: boolean) =>
      createPermitActivities({
        config: { MIN_VALIDITY_SECONDS: 6, RECEIPT_WAIT_MS: 1000, MAINNETS_ENABLED, env },
        db: undefined as never,
        networks,
        relayerFor: (id) => {
          asked.push(id);
          return recordingRelayer(touched);
        },
      });

    expect(await activities(false).submitPermit(permitOn('base'))).toEqual({
      submitted: false,
      detail: 'base is a mainnet and MAINNETS_ENABLED is off',
    });
    expect({ asked, touched }).toEqual({ asked: [], touched: [] });

    // The same call goes to the relayer once the switch is on, and on a testnet with it off.
    await expect(activities(true).submitPermit(permitOn('base'))).rejects.toThrow('relayer.send used');
    await expect(activities(false).submitPermit(permitOn('base-sepolia'))).rejects.toThrow('relayer.send used');
    expect({ asked, touched }).toEqual({ asked: ['base', 'base-sepolia'], touched: ['send', 'send'] });
  });

  test('initiate and withdraw on base: refused with the reason, no signer asked for; enabled it reaches the depositor', async () => {
    const depositor = randomAddress();
    const input: WithdrawalInput = {
      workflowId: 'withdrawal:base:x',
      organizationId: 'o',
      apiKeyId: 'k',
      network: 'base',
      gatewayWallet: networks.get('base')!.gatewayWallet,
      token: networks.get('base')!.usdc!,
      depositor,
      amount: '1000',
      pollMs: 1000,
    };
    const asked: string[] = [];
    const touched: string[] = [];
    const activities = (MAINNETS_ENABLED: boolean) =>
      createWithdrawalActivities({
        config: { RECEIPT_WAIT_MS: 1000, MAINNETS_ENABLED, env },
        networks,
        relayerFor: (id) => {
          asked.push(`relayerFor:${id}`);
          return recordingRelayer(touched);
        },
        signerFor: (role, id) => {
          asked.push(`signerFor:${role}:${id}`);
          return recordingRelayer(touched, depositor);
        },
      });

    const refused = { submitted: false, reason: 'refused', detail: 'base is a mainnet and MAINNETS_ENABLED is off' };
    expect(await activities(false).initiateGatewayWithdrawal(input)).toEqual(refused);
    expect(await activities(false).withdrawFromGateway(input)).toEqual(refused);
    expect({ asked, touched }).toEqual({ asked: [], touched: [] });

    await expect(activities(true).initiateGatewayWithdrawal(input)).rejects.toThrow('relayer.send used');
    expect({ asked, touched }).toEqual({ asked: ['signerFor:depositor:base'], touched: ['send'] });
  });
});
