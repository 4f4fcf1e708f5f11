import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { toFunctionSelector, type Abi } from 'viem';
import { x402ExactPermit2ProxyABI, x402UptoPermit2ProxyABI } from '@x402/evm';
import { x402ExactPermit2ProxyAbi, x402UptoPermit2ProxyAbi } from '../../../src/chains/evm/abi/generated';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('generated ABIs (npm run abis)', () => {
  // A child process: prettier formats the files, and it loads its parsers with dynamic imports, which Jest's VM refuses.
  test('the committed files are what the contracts compile to today (run `npm run abis` after changing a contract)', () => {
    const run = () =>
      execFileSync(process.execPath, ['--import', 'tsx', 'tools/abis.ts', '--check'], { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
    let output: string;
    try {
      output = run();
    } catch (err) {
      output = `${(err as { stderr?: string }).stderr ?? err}`;
    }
    expect(output.trim()).toBe('src/chains/evm/abi/generated is up to date');
  }, 120_000);

  test("our devnet Permit2 proxies' settle has the selector of x402's canonical proxies' settle", () => {
    const settle = (abi: Abi) => abi.filter((i) => i.type === 'function' && i.name === 'settle').map((i) => toFunctionSelector(i as never));
    expect(settle(x402ExactPermit2ProxyAbi)).toEqual(settle(x402ExactPermit2ProxyABI as Abi));
    expect(settle(x402UptoPermit2ProxyAbi)).toEqual(settle(x402UptoPermit2ProxyABI as Abi));
    expect(settle(x402ExactPermit2ProxyAbi)).toHaveLength(1);
    expect(settle(x402UptoPermit2ProxyAbi)).toHaveLength(1);
  });
});
