import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { mayBeStuck, X402_KINDS } from '../../src/temporal/states';

/** The README's operator table of kinds and states is X402_KINDS, row for row (docs and code cannot drift). */
const ROOT = join(__dirname, '..', '..');

function readmeTable(): string[][] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = /<!-- states:begin -->\n([\s\S]*?)<!-- states:end -->/.exec(readme);
  if (!block) throw new Error('README.md has no states table');
  return block[1]!
    .trim()
    .split('\n')
    .slice(2) // header and separator
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
}

const code = (xs: readonly string[]) => xs.map((x) => `\`${x}\``);

describe('kinds and states', () => {
  test('the README table lists every kind with its non-terminal (patient marked) and terminal states', () => {
    const expected = Object.entries(X402_KINDS).map(([kind, k]) => {
      const patient = k.patient as readonly string[];
      const terminal = k.terminal as readonly string[];
      const open = k.states.filter((s) => !terminal.includes(s)).map((s) => `\`${s}\`${patient.includes(s) ? ' (patient)' : ''}`);
      return [`\`${kind}\``, k.what, open.join(', '), code(terminal).join(', ')];
    });
    expect(readmeTable()).toEqual(expected);
  });

  test('terminal and patient states are states of their kind, and no state is both', () => {
    for (const k of Object.values(X402_KINDS)) {
      const states = k.states as readonly string[];
      for (const s of [...k.terminal, ...k.patient]) expect(states).toContain(s);
      for (const s of k.patient) expect(k.terminal as readonly string[]).not.toContain(s);
    }
  });

  test('mayBeStuck: only known, non-terminal, non-patient states, and those awaiting an operator', () => {
    expect(mayBeStuck('settle', 'submitted')).toBe(true);
    expect(mayBeStuck('settle', 'settled')).toBe(false);
    expect(mayBeStuck('withdrawal', 'waiting')).toBe(false);
    expect(mayBeStuck('refund', 'guard')).toBe(false);
    expect(mayBeStuck('topup', 'bridging')).toBe(true);
    expect(mayBeStuck('settle', 'made-up')).toBe(false);
    expect(mayBeStuck('toString', 'submitted')).toBe(false);
    // A running settlement or top-up in needs_review waits for a human: it raises its hand; a bridge
    // leg in needs_review has ended (its settlement waits instead).
    expect(mayBeStuck('settle', 'needs_review')).toBe(true);
    expect(mayBeStuck('topup', 'needs_review')).toBe(true);
    expect(mayBeStuck('bridge', 'needs_review')).toBe(false);
  });

  test('a state awaiting an operator is a terminal state of its kind', () => {
    for (const k of Object.values(X402_KINDS) as { terminal: readonly string[]; awaitsOperator?: readonly string[] }[])
      for (const s of k.awaitsOperator ?? []) expect(k.terminal).toContain(s);
  });

  test('every workflow that moves between states does so through the shared helper', () => {
    const dir = join(ROOT, 'workflows');
    for (const f of readdirSync(dir).filter((f) => f.endsWith('.ts') && f !== 'x402-state.ts')) {
      const src = readFileSync(join(dir, f), 'utf8');
      expect({ file: f, upserts: src.includes('upsertSearchAttributes') }).toEqual({ file: f, upserts: false });
    }
  });
});
