// No Docker engine runs here: these tests read the Dockerfile, .dockerignore, docker-compose.yml
// and deploy/nginx.conf and check what an image build and `docker compose up` rely on.
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { createServer } from 'node:http';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { SERVER_ENTRY, serverNodeArgs } from '../../bench/docpipe.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (f: string): string => readFileSync(path.join(root, f), 'utf8');

interface Instruction { op: string; args: string; stage: number }

/** Instructions of a Dockerfile: comments dropped, `\` continuations joined, stages numbered. */
export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = '';
  let stage = -1;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!pending && (line === '' || line.startsWith('#'))) continue;
    if (pending && line.startsWith('#')) continue;
    if (line.endsWith('\\')) { pending += `${line.slice(0, -1)} `; continue; }
    const full = (pending + line).trim();
    pending = '';
    const m = /^(\w+)\s+([\s\S]*)$/.exec(full);
    if (!m) throw new Error(`cannot parse Dockerfile line: ${full}`);
    const op = m[1]!.toUpperCase();
    if (op === 'FROM') stage++;
    out.push({ op, args: m[2]!.trim(), stage });
  }
  return out;
}

/** The JSON array of an exec-form instruction (after any --flags), or undefined for shell form. */
function execForm(args: string): string[] | undefined {
  const i = args.indexOf('[');
  if (i < 0 || /^\s*[^-\s]/.test(args.slice(0, i))) return undefined;
  try {
    const v = JSON.parse(args.slice(i));
    return Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;
  } catch {
    return undefined;
  }
}

const steps = parseDockerfile(read('Dockerfile'));
const stages = steps.filter((s) => s.op === 'FROM').map((s) => ({ image: s.args.split(/\s+/)[0]!, name: /\sAS\s+(\S+)/i.exec(s.args)?.[1] }));
const last = stages.length - 1;
const final = steps.filter((s) => s.stage === last);
const one = (op: string): Instruction | undefined => final.filter((s) => s.op === op).pop();

t.test('the Dockerfile builds on Node 20 bookworm in several stages', async (t) => {
  t.ok(stages.length >= 2, 'multi-stage');
  for (const s of stages) t.match(s.image, /^node:20-bookworm(-slim)?$/, s.name ?? s.image);
  const runs = (i: number): string => steps.filter((s) => s.stage === i && s.op === 'RUN').map((s) => s.args).join('\n');
  t.ok(stages.some((_, i) => i !== last && /npm ci(?![^\n]*--omit=dev)/.test(runs(i))), 'a build stage installs dev dependencies');
  t.ok(stages.some((_, i) => /npm run typecheck/.test(runs(i))), 'the build stage type-checks');
  t.notMatch(runs(last), /npm (ci|install)/, 'the runtime stage installs nothing itself');
  const modules = final.find((s) => s.op === 'COPY' && /node_modules/.test(s.args));
  const from = /--from=(\S+)/.exec(modules?.args ?? '')?.[1];
  const source = stages.findIndex((s) => s.name === from);
  t.ok(source >= 0, 'the runtime stage copies node_modules from another stage');
  t.match(runs(source), /npm ci --omit=dev/, 'and that stage installed production dependencies only');
});

t.test('the runtime stage runs as a non-root user with a health check and exec-form CMD', async (t) => {
  const user = one('USER')?.args.split(':')[0];
  t.ok(user, 'USER is set');
  t.not(user, 'root');
  t.not(user, '0');
  t.match(one('EXPOSE')?.args ?? '', /(^|\s)8080(\/tcp)?(\s|$)/);
  t.equal(one('STOPSIGNAL')?.args, 'SIGTERM');
  t.match(one('VOLUME')?.args ?? '', '/data');
  t.match(final.filter((s) => s.op === 'ENV').map((s) => s.args).join(' '), /DATA_DIR=\/data/);
  const cmd = execForm(one('CMD')?.args ?? '');
  t.ok(cmd, 'CMD is exec form, so SIGTERM reaches node');
  t.equal(cmd?.[0], 'node');
  t.notOk(cmd?.some((a) => /\bnpm\b/.test(a)), 'no npm between docker and node');
  const entry = cmd?.find((a) => a.endsWith('.ts') || a.endsWith('.js'));
  if (entry?.startsWith('dist/')) {
    // Compiled in the build stage (scripts/build.mjs: dist/src/x.js from src/x.ts) and copied over.
    const source = entry.slice('dist/'.length).replace(/\.js$/, '.ts');
    t.ok(existsSync(path.join(root, source)), `the entry ${entry} is compiled from ${source}, which exists`);
    const from = final.map((s) => (s.op === 'COPY' ? /--from=(\S+)\s+\S*\bdist\b/.exec(s.args)?.[1] : undefined)).find(Boolean);
    const stage = stages.findIndex((s) => s.name === from);
    t.ok(stage >= 0, 'the runtime stage copies dist/ from another stage');
    t.match(steps.filter((s) => s.stage === stage && s.op === 'RUN').map((s) => s.args).join('\n'), /npm run build/,
      'and that stage built it');
  } else t.ok(entry && existsSync(path.join(root, entry)), `the entry ${entry} exists`);
  const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
  if (cmd?.includes('--import=tsx')) t.ok(pkg.dependencies.tsx, 'tsx is a production dependency');
});

t.test('the image, npm start and the bench launch the server with the same node flags', async (t) => {
  const cmd = execForm(one('CMD')?.args ?? '') ?? [];
  const pkg = JSON.parse(read('package.json')) as { scripts: { start: string } };
  t.same(cmd, pkg.scripts.start.trim().split(/\s+/), 'the CMD is the start script');
  t.same(['node', ...serverNodeArgs(), SERVER_ENTRY], cmd, 'the bench runs what the image runs');
  // The HTTP threads' young generation, V8's collections without helper threads and when marking
  // starts (README, "How work runs"): the main thread's heap can only be set at launch, and every
  // thread takes the process's flags.
  t.ok(cmd.includes('--max-semi-space-size=32'), 'the semi-space size is set at launch');
  t.ok(cmd.includes('--single-threaded-gc'), 'each thread collects its own heap, without helper threads');
  t.ok(cmd.includes('--incremental-marking-soft-trigger=80') && cmd.includes('--incremental-marking-hard-trigger=95'),
    'a thread starts marking its old generation at a share of its limit');
});

t.test('everything the server loads at run time is a production dependency', async (t) => {
  const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
  const files = ['bin', 'src'].flatMap((d) => (readdirSync(path.join(root, d), { recursive: true }) as string[])
    .filter((f) => /\.(ts|mjs|js)$/.test(f)).map((f) => path.join(d, f)));
  t.ok(files.length > 20, 'the sources were found');
  const used = new Set<string>();
  for (const f of files) {
    for (const m of read(f).matchAll(/(?:from\s+|import\(\s*|require(?:\.resolve)?\(\s*)'([^'.][^']*)'/g)) {
      const spec = m[1]!;
      if (spec.startsWith('node:') || builtinModules.includes(spec)) continue;
      used.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
    }
  }
  t.ok(used.has('tsx') && used.has('postgres'), 'imports were read');
  t.same([...used].filter((u) => !(u in pkg.dependencies)), [], 'no devDependency is needed by the image');
});

t.test('the HEALTHCHECK command reports a live and a dead /healthz', async (t) => {
  const hc = one('HEALTHCHECK');
  t.ok(hc, 'HEALTHCHECK is present');
  const cmd = execForm(hc!.args.replace(/^.*?\bCMD\s+/, ''));
  t.ok(cmd, 'exec form (no shell or curl needed in a slim image)');
  t.match(cmd!.join(' '), '/healthz');
  const server = createServer((req, res) => { res.statusCode = req.url === '/healthz' ? 200 : 404; res.end('{}'); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = String((server.address() as { port: number }).port);
  // Run as Docker would; asynchronously, so this process's server can answer meanwhile.
  const run = (p: string): Promise<number | null> => new Promise((resolve) => {
    const child = spawn(cmd![0]!, cmd!.slice(1), { env: { ...process.env, PORT: p }, stdio: 'ignore', timeout: 10_000 });
    child.on('exit', (code) => resolve(code));
  });
  t.equal(await run(port), 0, 'healthy when /healthz answers 200');
  await new Promise((r) => server.close(r));
  t.equal(await run(port), 1, 'unhealthy when nothing answers');
});

t.test('every file the Dockerfile copies from the context exists and is not ignored', async (t) => {
  const ignored = read('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  for (const must of ['node_modules', '.git', 'data']) t.ok(ignored.includes(must), `.dockerignore leaves out ${must}`);
  for (const s of steps.filter((x) => x.op === 'COPY' && !x.args.includes('--from='))) {
    const parts = s.args.split(/\s+/).filter((p) => !p.startsWith('--'));
    for (const src of parts.slice(0, -1)) {
      t.ok(existsSync(path.join(root, src)), `${src} exists`);
      t.notOk(ignored.includes(src), `${src} is in the build context`);
    }
  }
});

type Service = {
  image?: string; build?: unknown; ports?: unknown[]; environment?: Record<string, string>; volumes?: string[];
  healthcheck?: { test: string[] }; depends_on?: Record<string, { condition: string }>;
};
const compose = parseYaml(read('docker-compose.yml')) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const services = compose.services;

t.test('compose runs Postgres 16, Redis 7 and two app instances that share them', async (t) => {
  t.match(services.postgres?.image, /^postgres:16/);
  t.match(services.redis?.image, /^redis:7/);
  const apps = Object.entries(services).filter(([, s]) => s.build !== undefined);
  t.equal(apps.length, 2, 'two docpipe services');
  const dataVolumes = new Set<string>();
  for (const [name, s] of apps) {
    const env = s.environment ?? {};
    t.match(env.DATABASE_URL, /^postgres(ql)?:\/\/[^@]+@postgres:5432\//, `${name} DATABASE_URL points at the postgres service`);
    t.match(env.REDIS_URL, /^redis:\/\/redis:6379/, `${name} REDIS_URL points at the redis service`);
    const dataDir = env.DATA_DIR ?? '/data';
    const mount = (s.volumes ?? []).find((v) => v.split(':')[1] === dataDir);
    t.ok(mount, `${name} mounts a volume at DATA_DIR`);
    if (mount) dataVolumes.add(mount.split(':')[0]!);
    t.match(s.healthcheck?.test.join(' '), /readyz|healthz/, `${name} has a health check`);
    t.same(s.depends_on, { postgres: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } }, `${name} waits for its dependencies`);
  }
  t.equal(dataVolumes.size, 1, 'both instances see the same blobs');
  t.ok([...dataVolumes][0]! in compose.volumes, 'the blob volume is a named volume');
  for (const name of ['postgres', 'redis']) t.ok(services[name]!.healthcheck, `${name} has a health check`);
  t.match(services.redis!.healthcheck!.test.join(' ') + JSON.stringify(services.redis), /noeviction/, 'Redis never evicts the gate\'s keys');
});

t.test('one published port, on the proxy, spreads requests over both instances', async (t) => {
  const published = Object.entries(services).flatMap(([name, s]) => (s.ports ?? []).map((p) => [name, String(p)] as const));
  t.equal(published.length, 1, 'exactly one published port');
  const [proxyName, port] = published[0]!;
  t.match(port, /:8080$/);
  const proxy = services[proxyName]!;
  const conf = (proxy.volumes ?? []).map((v) => v.split(':')).find(([src]) => src!.startsWith('./'));
  t.ok(conf && existsSync(path.join(root, conf[0]!)), 'the proxy config is committed');
  const nginx = read(conf![0]!);
  const upstream = /upstream\s+(\w+)\s*\{([^}]*)\}/.exec(nginx);
  t.ok(upstream, 'an upstream block');
  const servers = [...upstream![2]!.matchAll(/server\s+([\w.-]+):(\d+)/g)].map((m) => `${m[1]}:${m[2]}`);
  const apps = Object.entries(services).filter(([, s]) => s.build !== undefined).map(([n]) => `${n}:8080`);
  t.same(servers.sort(), apps.sort(), 'both app services, on their port');
  t.notMatch(upstream![2]!, /\b(ip_hash|hash|least_conn|random)\b/, 'round-robin (the default balancing)');
  t.match(nginx, new RegExp(`proxy_pass\\s+http://${upstream![1]};`));
  t.match(nginx, /listen\s+8080;/);
  t.same(Object.keys(proxy.depends_on ?? {}).sort(), apps.map((a) => a.split(':')[0]).sort());
});
