import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Abi, Hex } from 'viem';

/**
 * Offline compile of the devnet's own Solidity (`devnet/contracts/**.sol`) with solc-js.
 *
 * The result is cached on disk under `.data/artifacts/<sha256>.json`, keyed by the sources, the solc
 * version and the compiler settings, so only the first call after a source change pays for loading
 * the solc wasm (seconds); later calls read one JSON file. An in-process memo makes repeated calls
 * in one process free.
 */

export interface CompiledContract {
  abi: Abi;
  /** Creation bytecode, 0x-prefixed. */
  bytecode: Hex;
  /** The source file (relative to `devnet/contracts`) that defines the contract. */
  source: string;
}

export type CompiledContracts = Record<string, CompiledContract>;

export const CONTRACTS_DIR = path.resolve(__dirname, 'contracts');
const ARTIFACTS_DIR = path.resolve(__dirname, '..', '.data', 'artifacts');

const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'cancun',
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
} as const;

let memo: { key: string; contracts: CompiledContracts } | undefined;

/** Every `.sol` under `dir`, keyed by its path relative to `dir` with `/` separators. */
function readSources(dir: string): Record<string, string> {
  const sources: Record<string, string> = {};
  const walk = (sub: string): void => {
    for (const entry of fs.readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(rel);
      else if (entry.isFile() && entry.name.endsWith('.sol')) sources[rel] = fs.readFileSync(path.join(dir, rel), 'utf8');
    }
  };
  walk('');
  return sources;
}

function solcPackageVersion(): string {
  // Reading the package manifest is cheap; `require('solc')` loads ~10 MB of wasm and is deferred
  // until a compile is actually needed.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('solc/package.json') as { version: string }).version;
}

function cacheKey(sources: Record<string, string>, solcVersion: string): string {
  const hash = createHash('sha256');
  hash.update(`solc ${solcVersion}\n`);
  hash.update(JSON.stringify(SETTINGS));
  for (const name of Object.keys(sources).sort()) {
    hash.update(`\n--- ${name} ${Buffer.byteLength(sources[name]!)}\n`);
    hash.update(sources[name]!);
  }
  return hash.digest('hex');
}

interface SolcError {
  severity: 'error' | 'warning' | 'info';
  formattedMessage?: string;
  message: string;
}

interface SolcOutput {
  errors?: SolcError[];
  contracts?: Record<string, Record<string, { abi: Abi; evm?: { bytecode?: { object?: string } } }>>;
}

function runSolc(sources: Record<string, string>): CompiledContracts {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const solc = require('solc') as { compile(input: string, callbacks?: unknown): string };
  const input = {
    language: 'Solidity',
    sources: Object.fromEntries(Object.entries(sources).map(([name, content]) => [name, { content }])),
    settings: SETTINGS,
  };
  const findImports = (importPath: string): { contents: string } | { error: string } => {
    const resolved = path.resolve(CONTRACTS_DIR, importPath);
    if (!resolved.startsWith(CONTRACTS_DIR + path.sep) || !fs.existsSync(resolved)) {
      return { error: `import not found under devnet/contracts: ${importPath}` };
    }
    return { contents: fs.readFileSync(resolved, 'utf8') };
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports })) as SolcOutput;

  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) {
    const list = errors.map((e) => (e.formattedMessage ?? e.message).trim()).join('\n\n');
    throw new Error(`solc failed to compile devnet/contracts (${errors.length} error(s)):\n\n${list}`);
  }

  const contracts: CompiledContracts = {};
  for (const [source, byName] of Object.entries(output.contracts ?? {})) {
    for (const [name, artifact] of Object.entries(byName)) {
      const object = artifact.evm?.bytecode?.object ?? '';
      if (object.length === 0) continue; // interfaces and abstract contracts
      const existing = contracts[name];
      if (existing) {
        throw new Error(`devnet/contracts: contract name ${name} is defined in both ${existing.source} and ${source}`);
      }
      if (/__\$[0-9a-f]{34}\$__/.test(object)) {
        throw new Error(`devnet/contracts: ${source}:${name} needs library linking, which is not supported`);
      }
      contracts[name] = { abi: artifact.abi, bytecode: `0x${object}`, source };
    }
  }
  return contracts;
}

/**
 * Compiles every `.sol` file under `devnet/contracts` (optimizer on, evmVersion cancun) and returns
 * the deployable contracts by name. Throws an error listing solc's errors when compilation fails.
 */
export function compileContracts(): CompiledContracts {
  const sources = readSources(CONTRACTS_DIR);
  const key = cacheKey(sources, solcPackageVersion());
  if (memo?.key === key) return memo.contracts;

  const file = path.join(ARTIFACTS_DIR, `${key}.json`);
  let contracts: CompiledContracts | undefined;
  try {
    contracts = JSON.parse(fs.readFileSync(file, 'utf8')) as CompiledContracts;
  } catch {
    contracts = undefined; // missing or torn cache entry: recompile
  }
  if (!contracts) {
    contracts = runSolc(sources);
    fs.mkdirSync(ARTIFACTS_DIR, { recursive: true });
    // Write-then-rename so concurrent processes (parallel jest workers) never read a partial file.
    const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(contracts));
    fs.renameSync(tmp, file);
  }
  memo = { key, contracts };
  return contracts;
}

/** One compiled contract by name; throws if no such deployable contract exists. */
export function getContract(name: string): CompiledContract {
  const contract = compileContracts()[name];
  if (!contract) throw new Error(`devnet/contracts: no deployable contract named ${name}`);
  return contract;
}
