import { getAddress } from 'viem';
import { relayerTxId, settleWorkflowId } from '../../src/temporal/workflow-ids';

const PAYER_LOWER = '0x9965507d1a55bcc2695c58ba16fb37d819b0a4dc';
const PAYER_CHECKSUM = getAddress(PAYER_LOWER);
const NONCE_LOWER = `0x${'ab'.repeat(16)}${'cd'.repeat(16)}`;
const NONCE_UPPER = `0x${'AB'.repeat(16)}${'CD'.repeat(16)}`;

describe('settleWorkflowId', () => {
  test('has the format settle:<network>:<payer>:<nonce> with lower-case hex', () => {
    expect(settleWorkflowId('base-sepolia', PAYER_CHECKSUM, NONCE_UPPER)).toBe(`settle:base-sepolia:${PAYER_LOWER}:${NONCE_LOWER}`);
  });

  test('checksum and lower-case spellings of payer and nonce give the same id', () => {
    expect(PAYER_CHECKSUM).not.toBe(PAYER_LOWER);
    const ids = new Set([
      settleWorkflowId('base-sepolia', PAYER_CHECKSUM, NONCE_UPPER),
      settleWorkflowId('base-sepolia', PAYER_LOWER, NONCE_LOWER),
      settleWorkflowId('base-sepolia', PAYER_CHECKSUM, NONCE_LOWER),
      settleWorkflowId('base-sepolia', PAYER_LOWER.toUpperCase().replace('0X', '0x'), NONCE_UPPER),
    ]);
    expect([...ids]).toEqual([`settle:base-sepolia:${PAYER_LOWER}:${NONCE_LOWER}`]);
  });

  test('network, payer and nonce each separate ids', () => {
    const id = settleWorkflowId('base-sepolia', PAYER_LOWER, NONCE_LOWER);
    expect(settleWorkflowId('optimism-sepolia', PAYER_LOWER, NONCE_LOWER)).not.toBe(id);
    expect(settleWorkflowId('base-sepolia', '0x0000000000000000000000000000000000000001', NONCE_LOWER)).not.toBe(id);
    expect(settleWorkflowId('base-sepolia', PAYER_LOWER, `0x${'ab'.repeat(32)}`)).not.toBe(id);
  });

  test('the network id is used as given', () => {
    expect(settleWorkflowId('optimism-sepolia', PAYER_LOWER, NONCE_LOWER)).toBe(`settle:optimism-sepolia:${PAYER_LOWER}:${NONCE_LOWER}`);
  });
});

describe('relayerTxId', () => {
  test('is <workflowId>:<purpose>', () => {
    const wf = settleWorkflowId('base-sepolia', PAYER_CHECKSUM, NONCE_UPPER);
    expect(relayerTxId(wf, 'settle')).toBe(`settle:base-sepolia:${PAYER_LOWER}:${NONCE_LOWER}:settle`);
    expect(relayerTxId('wf-1', 'refund')).toBe('wf-1:refund');
  });

  test('different purposes of one workflow are different records', () => {
    expect(relayerTxId('wf-1', 'settle')).not.toBe(relayerTxId('wf-1', 'bridge'));
  });
});
