/**
 * Process accounting for the benchmarks, from Linux /proc: process trees, liveness, CPU time and
 * resident memory. Elsewhere the readings are 0 (and a tree is just its root).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** `pid` and all its descendants. */
export function processTree(pid: number): number[] {
  const out = [pid];
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out; // gone already, or no /proc
  }
  for (const tid of tids) {
    let kids: string;
    try {
      kids = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
    } catch {
      continue; // that thread ended meanwhile
    }
    for (const kid of kids ? kids.split(/\s+/).map(Number) : []) if (!out.includes(kid)) out.push(...processTree(kid));
  }
  return out;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** The oldest process of this command name (a server's parent process, e.g. `postgres`), if any. */
export function oldestProcessNamed(name: string): number | undefined {
  try {
    return Number(execFileSync('pgrep', ['-o', '-x', name], { encoding: 'utf8' }).trim()) || undefined;
  } catch {
    return undefined; // none running, or no pgrep
  }
}

/** User + system CPU time (ms) of one process so far; 0 when it is gone. */
function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name (which may hold spaces): utime is field 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks();
  } catch {
    return 0;
  }
}

/** CPU ms so far of each process (by pid) in the trees of named groups (e.g. api, worker, temporal, anvil). */
export type CpuSnapshot = Record<string, Map<number, number>>;
/** CPU ms each group spent between two snapshots. */
export type CpuSpent = Record<string, number>;

/**
 * The groups' CPU per process, and under `self` this process's own (not its children's): the load
 * generator runs on the same cores as the stack it measures.
 */
export function cpuSnapshot(groups: Record<string, number[]>, self?: string): CpuSnapshot {
  const out: CpuSnapshot = {};
  for (const [name, roots] of Object.entries(groups)) {
    out[name] = new Map(roots.flatMap(processTree).map((pid) => [pid, cpuMsOf(pid)]));
  }
  if (self) {
    const { user, system } = process.cpuUsage();
    out[self] = new Map([[process.pid, (user + system) / 1000]]);
  }
  return out;
}

/**
 * What each group's processes spent in between, process by process: one that ended meanwhile (a
 * database backend) takes its CPU with it, and must not make the sum fall.
 */
export function cpuDelta(before: CpuSnapshot, after: CpuSnapshot): CpuSpent {
  const spent = (name: string) => {
    let sum = 0;
    for (const [pid, ms] of after[name]) if (ms > 0) sum += ms - (before[name]?.get(pid) ?? 0); // 0: gone before it was read
    return sum;
  };
  return Object.fromEntries(Object.keys(after).map((name) => [name, spent(name)]));
}

/** Resident set size (bytes) of one process tree. */
export function rssBytes(pid: number): number {
  return processTree(pid).reduce((sum, p) => {
    try {
      const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      return sum + (m ? Number(m[1]) * 1024 : 0);
    } catch {
      return sum;
    }
  }, 0);
}
