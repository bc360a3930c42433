/**
 * The layers of ARCHITECTURE.md, checked on every `npm test` (test/unit/architecture.test.ts).
 * Layers point down only:
 *
 *   domain/          pure rules and types, no I/O
 *   config.ts        the configuration, validated once (its schema: config-schema.ts, with
 *                    config-notifications.ts and config-limits.ts; its environment variables,
 *                    derived from the schema: config-env.ts)
 *   store/ports.ts   storage interfaces, store/backend.ts a backend whole (+ store/*.ts helpers every backend shares)
 *   store/sqlite/    the embedded backend; store/postgres/ + store/redis/ the shared one (being built);
 *                    store/open.ts picks a backend from the configuration
 *   upstream/        the provider client
 *   gateway/         the pipeline, typed against the ports
 *   notify/          budget notifications (evaluator, webhook sender), typed against the ports
 *   http/ admin/ dashboard/ obs/ cli/ app.ts cli.ts   the edges (dashboard/: pages over admin/'s functions)
 *
 * A rule's name says which boundary it keeps; its comment says why.
 */
const EDGES = '^src/(http|admin|dashboard|cli|app\\.ts|cli\\.ts)';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle makes two files one module in disguise: neither can be read, tested or replaced alone.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'domain-is-pure',
      severity: 'error',
      comment: 'Pure rules and types (DESIGN §9) import nothing but each other: no storage, no network, no framework, no configuration.',
      from: { path: '^src/domain/' },
      to: { pathNot: ['^src/domain/', '^(node:)?(crypto|net)$', '^ulid$', 'node_modules/ulid/'] },
    },
    {
      name: 'config-above-domain-only',
      severity: 'error',
      comment: 'The configuration is validated with the domain parsers and nothing above them.',
      from: { path: '^src/config(-schema|-env|-notifications|-limits)?\\.ts$' },
      to: { path: '^src/(store|gateway|upstream|http|admin|obs|cli|simulator)/' },
    },
    {
      name: 'store-below-the-pipeline',
      severity: 'error',
      comment: 'Storage knows rules and types, never the pipeline or the edges that use it.',
      from: { path: '^src/store/' },
      to: { path: ['^src/(gateway|http|admin|cli|upstream|simulator)/', EDGES] },
    },
    {
      name: 'only-open-chooses-a-backend',
      severity: 'error',
      comment: 'Outside store/, a backend is reached through store/open.ts and the ports, so a second backend is one branch in open.ts.',
      from: { path: '^src/', pathNot: ['^src/store/'] },
      to: { path: '^src/store/(sqlite|postgres|redis)/' },
    },
    {
      name: 'no-sqlite-driver-outside-its-backend',
      severity: 'error',
      comment: 'better-sqlite3 is the embedded backend\'s business alone.',
      from: { path: '^src/', pathNot: ['^src/store/sqlite/'] },
      to: { path: 'better-sqlite3' },
    },
    {
      name: 'no-postgres-driver-outside-its-backend',
      severity: 'error',
      comment: 'node-postgres is the shared backend\'s business alone (store/postgres/).',
      from: { path: '^src/', pathNot: ['^src/store/postgres/'] },
      to: { path: 'node_modules/pg/' },
    },
    {
      name: 'no-redis-driver-outside-its-backend',
      severity: 'error',
      comment: 'node-redis is the shared backend\'s business alone (store/redis/).',
      from: { path: '^src/', pathNot: ['^src/store/redis/'] },
      to: { path: ['node_modules/redis/', 'node_modules/@redis/'] },
    },
    {
      name: 'pipeline-knows-no-http-framework',
      severity: 'error',
      comment: 'The pipeline turns an Incoming into an Answer; how it arrived (node:http, Fastify, a proxy) is the data plane\'s.',
      from: { path: '^src/gateway/' },
      to: { path: ['^(node:)?(http|https|net)$', '(^|/)fastify(/|$)', 'http-proxy-3', '^src/(http|admin|cli)/', '^src/obs/(?!logger\\.ts$)', EDGES] },
    },
    {
      name: 'upstream-below-the-pipeline',
      severity: 'error',
      comment: 'The provider client serves the pipeline; it never reaches back into it, into storage or into the edges.',
      from: { path: '^src/upstream/' },
      to: { path: ['^src/(gateway|store|http|admin|cli)/', EDGES] },
    },
    {
      name: 'notify-below-the-edges',
      comment: 'Budget notifications run beside the pipeline on the ports; the edges start them and read their store, never the reverse.',
      severity: 'error',
      from: { path: '^src/notify/' },
      to: { path: ['^src/(gateway|http|admin|cli|obs|upstream)/', EDGES] },
    },
    {
      name: 'obs-below-the-edges',
      severity: 'error',
      comment: 'Logging, metrics and health are used by the edges and the pipeline; they import neither.',
      from: { path: '^src/obs/' },
      to: { path: ['^src/(gateway|http|admin|cli|notify|store/sqlite)/', EDGES] },
    },
    {
      name: 'dashboard-over-the-admin-functions',
      severity: 'error',
      comment: 'The dashboard is an edge beside /admin: it calls admin/ and what lies below, never the other edges, so that a page and the admin API cannot disagree about a change.',
      from: { path: '^src/dashboard/' },
      to: { path: ['^src/(http|cli)/', '^src/(app|cli)\\.ts$'] },
    },
    {
      name: 'only-the-control-plane-mounts-the-dashboard',
      severity: 'error',
      comment: 'Nothing depends on the dashboard\'s pages but the server wiring that registers them.',
      from: { path: '^src/', pathNot: ['^src/dashboard/', '^src/http/control-plane\\.ts$'] },
      to: { path: '^src/dashboard/' },
    },
    {
      name: 'simulator-stands-alone',
      severity: 'error',
      comment: 'The provider simulator plays the other side of the wire: it shares only the domain\'s types with the gateway.',
      from: { path: '^src/simulator/' },
      to: { path: '^src/', pathNot: ['^src/(simulator|domain)/'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js'] },
    moduleSystems: ['es6', 'cjs'],
  },
};
