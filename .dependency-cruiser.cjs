// One-way layers (docs/architecture.md "Layers"): imports point down only.
//   entry points → workflow starters → workflows and activities → leaf contracts → protocol → primitives
// Type-only imports count: a type-only edge up a layer is still a back-edge.
const PRIMITIVES =
  '^src/(x402|chains|db|observability|upstream)/|^src/(config|errors|logger)\\.ts$|^src/temporal/(workflow-ids|search-attributes|states|codec-keys|payload-codec|operator-decisions)\\.ts$';
const PROTOCOL = '^src/schemes/';
const ORCHESTRATION = '^(workflows|activities)/';
const STARTERS =
  '^src/(api|http)/|^src/topup/(app|context|health|quote|replies|topup-service)\\.ts$|^src/settle/(run|routes|batched|crosschain)\\.ts$|^src/temporal/start-or-attach\\.ts$';
const ENTRY = '^(workers|ops|devnet|bench|scripts|tools|temporal)/|^src/(api|topup)/main\\.ts$|^src/temporal/codec-server-main\\.ts$';

// The violations known when this check was added are listed in .dependency-cruiser-known-violations.json
// (regenerate with `npx depcruise-baseline --config .dependency-cruiser.cjs src activities workflows workers ops`
// only when one is removed); `npm run lint` fails on any other.
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'An import cycle: layers point one way.', from: {}, to: { circular: true } },
    {
      name: 'worker-loads-no-http',
      severity: 'error',
      comment: 'The worker runs workflows and activities only; no API or HTTP module is reachable from it.',
      from: { path: '^workers/main\\.ts$' },
      to: { path: '^src/(api|http|topup/app)', reachable: true },
    },
    {
      name: 'primitives-point-down',
      severity: 'error',
      from: { path: PRIMITIVES },
      to: { path: `${PROTOCOL}|${ORCHESTRATION}|${STARTERS}|${ENTRY}|^src/(settle|topup|media|inference|permit|gateway|auth)/` },
    },
    { name: 'protocol-points-down', severity: 'error', from: { path: PROTOCOL }, to: { path: `${ORCHESTRATION}|${STARTERS}|${ENTRY}` } },
    { name: 'orchestration-points-down', severity: 'error', from: { path: ORCHESTRATION }, to: { path: `${STARTERS}|${ENTRY}` } },
    { name: 'nothing-imports-entry-points', severity: 'error', from: { pathNot: ENTRY }, to: { path: ENTRY } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|\\.data|\\.tools|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
