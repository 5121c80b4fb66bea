import t, { type Test } from 'tap';
import { oneMode, startWorld, type World } from '../helpers/world.js';
import { resolve, unknownKeywords, validate, type Schema } from '../helpers/json-schema.js';
import { openApiDocument } from '../../src/server/openapi.js';
import { ERRORS } from '../../src/errors.js';

type Doc = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every `$ref` anywhere in the document, with where it was found. */
function refs(node: unknown, at = '#', out: Array<[string, string]> = []): Array<[string, string]> {
  if (Array.isArray(node)) node.forEach((v, i) => refs(v, `${at}/${i}`, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push([at, v]);
      else refs(v, `${at}/${k}`, out);
    }
  }
  return out;
}

const deref = (doc: Doc, o: Doc): Doc => (typeof o.$ref === 'string' ? resolve(doc, o.$ref) as Doc : o);

/** What an OpenAPI 3.1 validator checks first, done by hand (no validator is installed). */
function structuralProblems(doc: Doc): string[] {
  const p: string[] = [];
  if (!/^3\.1\.\d+$/.test(doc.openapi)) p.push('openapi is not 3.1.x');
  if (typeof doc.info?.title !== 'string' || typeof doc.info?.version !== 'string') p.push('info.title/version missing');
  const ids = new Set<string>();
  const tags = new Set((doc.tags as Array<{ name: string }>).map((x) => x.name));
  const schemes = Object.keys(doc.components.securitySchemes);
  for (const req of doc.security) for (const k of Object.keys(req)) if (!schemes.includes(k)) p.push(`security names unknown scheme ${k}`);
  for (const [path, item] of Object.entries(doc.paths as Doc)) {
    if (!path.startsWith('/')) p.push(`${path}: does not start with /`);
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    for (const [method, op] of Object.entries(item as Doc)) {
      const where = `${method.toUpperCase()} ${path}`;
      if (!METHODS.includes(method)) { p.push(`${where}: not an HTTP method`); continue; }
      if (ids.has(op.operationId)) p.push(`${where}: duplicate operationId ${op.operationId}`);
      ids.add(op.operationId);
      for (const tag of op.tags ?? []) if (!tags.has(tag)) p.push(`${where}: undeclared tag ${tag}`);
      const params = (op.parameters ?? []).map((x: Doc) => deref(doc, x));
      const seen = new Set<string>();
      for (const prm of params) {
        if (!['query', 'header', 'path', 'cookie'].includes(prm.in)) p.push(`${where}: parameter ${prm.name} has in=${prm.in}`);
        if (!prm.schema) p.push(`${where}: parameter ${prm.name} has no schema`);
        if (seen.has(`${prm.in}:${prm.name}`)) p.push(`${where}: duplicate parameter ${prm.name}`);
        seen.add(`${prm.in}:${prm.name}`);
        if (prm.in === 'path' && (prm.required !== true || !templated.includes(prm.name))) p.push(`${where}: path parameter ${prm.name} is not required or not in the path`);
      }
      for (const name of templated) if (!params.some((x: Doc) => x.in === 'path' && x.name === name)) p.push(`${where}: {${name}} has no parameter`);
      if (!op.responses || Object.keys(op.responses).length === 0) p.push(`${where}: no responses`);
      for (const [code, r] of Object.entries(op.responses as Doc)) {
        if (!/^([1-5](\d\d|XX)|default)$/.test(code)) p.push(`${where}: response key ${code}`);
        if (typeof deref(doc, r as Doc).description !== 'string') p.push(`${where} ${code}: no description`);
      }
    }
  }
  for (const [at, ref] of refs(doc)) {
    try { resolve(doc, ref); } catch { p.push(`${at}: $ref ${ref} does not resolve`); }
  }
  for (const [name, s] of Object.entries(doc.components.schemas as Doc)) p.push(...unknownKeywords(s, `#/components/schemas/${name}`));
  return p;
}

const doc = openApiDocument() as Doc;

t.test('the OpenAPI document is a structurally valid 3.1 document', async (t) => {
  t.same(structuralProblems(doc), []);
});

// Used automatically once the lead adds one of these dev dependencies.
const VALIDATORS = ['@readme/openapi-parser', '@apidevtools/swagger-parser'];
let validator: { name: string; mod: Doc } | undefined;
for (const name of VALIDATORS) {
  try { validator = { name, mod: await import(name) as Doc }; break; } catch { /* not installed */ }
}

t.test('a real OpenAPI validator accepts the document', { skip: validator ? false : `no OpenAPI validator installed (${VALIDATORS.join(' or ')})` }, async (t) => {
  const { name, mod } = validator!;
  const self = mod.default?.validate ? mod.default : mod;
  const r = await self.validate(structuredClone(doc));
  if (r && typeof r === 'object' && 'valid' in r) t.ok(r.valid, `${name}: ${JSON.stringify(r.errors ?? '')}`);
  else t.pass(`${name} validated it`);
});

t.test('main_content is documented for HTML and URL conversions, with their defaults, and nowhere else', async (t) => {
  const bodies = doc.components.requestBodies as Doc;
  for (const [id, byDefault] of [['html', false], ['url', true]] as const) {
    const content = bodies[`Convert_${id}`].content;
    t.match(content['application/json'].schema.properties.main_content, { type: 'boolean', default: byDefault }, `${id}: JSON`);
    t.match(content['multipart/form-data'].schema.properties.main_content, { type: 'string' }, `${id}: multipart`);
    t.same(validate(content['application/json'].schema, { [id]: 'https://example.org/', main_content: !byDefault }, doc), [], `${id}: a body with it validates`);
  }
  const others = Object.entries(bodies).filter(([name]) => !['Convert_html', 'Convert_url'].includes(name));
  t.same(others.filter(([, b]) => (b as Doc).content['application/json'].schema.properties.main_content).map(([name]) => name), []);
});

t.test('every error code of src/errors.ts is in the document, grouped by status', async (t) => {
  t.same(doc.components.schemas.ErrorCode.enum, Object.keys(ERRORS));
  for (const [code, spec] of Object.entries(ERRORS)) {
    const r = doc.components.responses[`Problem${spec.status}`];
    t.ok(r, `a Problem${spec.status} response exists`);
    t.ok(r.content['application/problem+json'].schema.allOf[1].properties.error.enum.includes(code), `${code} is listed under ${spec.status}`);
  }
});

t.test('the document names the headers, security schemes and webhook signature', async (t) => {
  const s = doc.components.securitySchemes;
  t.match(s.ApiKey, { type: 'apiKey', in: 'header', name: 'x-api-key' });
  t.match(s.Bearer, { type: 'http', scheme: 'bearer' });
  const names = Object.values(doc.components.parameters as Doc).map((p) => (p as Doc).name);
  for (const h of ['Idempotency-Key', 'Prefer', 'x-request-id']) t.ok(names.includes(h), h);
  const convert = doc.paths['/v1/convert/pdf'].post;
  t.ok(convert.responses['202'].headers['Idempotent-Replayed'], 'Idempotent-Replayed on convert');
  t.ok(doc.components.responses.Problem429.headers['Retry-After'], 'Retry-After on 429');
  t.same(convert.security, undefined, 'convert uses the document-wide key security');
  t.same(doc.paths['/healthz'].get.security, [], 'health needs no key');
  for (const type of ['conversion.completed', 'conversion.failed']) {
    const hook = doc.webhooks[type].post;
    t.same(hook.parameters.map((p: Doc) => p.name), ['webhook-id', 'webhook-timestamp', 'webhook-signature'], type);
    t.equal(hook.requestBody.content['application/json'].schema.$ref, '#/components/schemas/WebhookEvent');
  }
});

/** The schema an operation declares for `status` and `type`, or a reason there is none. */
function declared(method: string, template: string, status: number, type: string): Schema | string {
  const op = doc.paths[template]?.[method.toLowerCase()];
  if (!op) return `${method} ${template} is not in the document`;
  const r = op.responses[String(status)] ?? op.responses.default;
  if (!r) return `${method} ${template} declares no ${status}`;
  const content = deref(doc, r).content?.[type];
  return content ? content.schema : `${method} ${template} ${status} declares no ${type}`;
}

async function conforms(t: Test, w: World, method: string, path: string, template: string, opts: Parameters<World['req']>[2] = {}): Promise<Doc> {
  const res = await w.req(method, path, opts);
  const type = (res.headers.get('content-type') ?? '').split(';')[0]!;
  const body = await res.json() as Doc;
  const schema = declared(method, template, res.status, type);
  if (typeof schema === 'string') t.fail(schema);
  else t.same(validate(schema, body, doc), [], `${method} ${path} → ${res.status} ${type} matches its schema`);
  return { status: res.status, body };
}

for (const mode of oneMode()) {
  t.test(`the served document and the routes agree (${mode})`, async (t) => {
    const w = await startWorld(mode, { ALLOW_PRIVATE_NETWORK: '1' });
    t.teardown(() => w.close());

    await t.test('GET /v1/openapi.json needs no key and serves the document', async (t) => {
      const res = await w.req('GET', '/v1/openapi.json', { key: null });
      t.equal(res.status, 200);
      t.match(res.headers.get('content-type'), /^application\/json/);
      t.same(await res.json(), JSON.parse(JSON.stringify(doc)));
    });

    await t.test('every registered route is documented and every documented route is registered', async (t) => {
      const routes = new Set(w.app.router.list().map((r) => `${r.method} ${r.pattern.replace(/:(\w+)/g, '{$1}')}`));
      const documented = new Set<string>();
      for (const [path, item] of Object.entries(doc.paths as Doc)) {
        for (const method of Object.keys(item as Doc)) documented.add(`${method.toUpperCase()} ${path}`);
      }
      t.same([...routes].filter((r) => !documented.has(r)), [], 'registered but not documented');
      t.same([...documented].filter((r) => !routes.has(r)), [], 'documented but not registered');
    });

    await t.test('live responses match their documented schemas', async (t) => {
      const made = await conforms(t, w, 'POST', '/v1/convert/markdown/text', '/v1/convert/markdown/text', { json: { markdown: '# Hi\n\nthere', formats: ['text', 'html'] } });
      t.equal(made.status, 200);
      const id = made.body.id as string;
      await conforms(t, w, 'GET', '/v1/conversions', '/v1/conversions');
      await conforms(t, w, 'GET', `/v1/conversions/${id}`, '/v1/conversions/{id}');
      for (const f of made.body.files as Array<{ id: string }>) {
        const res = await w.req('GET', `/v1/conversions/${id}/files/${f.id}/content`);
        const type = (res.headers.get('content-type') ?? '').split(';')[0]!;
        t.equal(typeof declared('GET', '/v1/conversions/{id}/files/{fileId}/content', res.status, type), 'object', `content ${res.status} ${type} is documented`);
        await res.arrayBuffer();
      }
      await conforms(t, w, 'POST', '/v1/convert/text/estimate', '/v1/convert/text/estimate', { json: { text: 'a few words' } });
      // a binary file beside a text file: an error on its estimate entry, a failed file at submit
      const mixed = (): FormData => {
        const fd = new FormData();
        fd.append('file', new Blob(['plain words']), 'notes.txt');
        fd.append('file', new Blob([Buffer.from([0x25, 0x50, 0x44, 0x46, 0, 1, 2, 0, 0])]), 'blob.bin');
        return fd;
      };
      const est = await conforms(t, w, 'POST', '/v1/convert/text/estimate', '/v1/convert/text/estimate', { body: mixed() });
      t.equal(est.body.sources[1].error.error, 'input_format_mismatch');
      const partial = await conforms(t, w, 'POST', '/v1/convert/text', '/v1/convert/text', { body: mixed() });
      t.equal(partial.body.status, 'completed_with_errors');
      await conforms(t, w, 'GET', '/healthz', '/healthz', { key: null });
      await conforms(t, w, 'GET', '/readyz', '/readyz', { key: null });
      const missing = await conforms(t, w, 'GET', '/v1/conversions/conv_nope', '/v1/conversions/{id}');
      t.equal(missing.body.error, 'not_found');
      const anon = await conforms(t, w, 'GET', '/v1/conversions', '/v1/conversions', { key: null });
      t.equal(anon.body.error, 'unauthorized');
      const bad = await conforms(t, w, 'POST', '/v1/convert/text', '/v1/convert/text', { json: { text: 'x', colour: 'red' } });
      t.equal(bad.body.error, 'invalid_request');
      await conforms(t, w, 'DELETE', `/v1/conversions/${id}`, '/v1/conversions/{id}');
      const upload = await conforms(t, w, 'POST', '/v1/uploads', '/v1/uploads', { json: { bytes: 200_000_000, name: 'big.pdf' } });
      if (upload.status === 201) await conforms(t, w, 'GET', `/v1/uploads/${upload.body.id}`, '/v1/uploads/{id}');
      const hook = await conforms(t, w, 'POST', '/v1/webhooks', '/v1/webhooks', { json: { url: 'http://127.0.0.1:9/hook', eventTypes: ['conversion.completed'] } });
      await conforms(t, w, 'GET', '/v1/webhooks', '/v1/webhooks');
      if (hook.status === 201) {
        await conforms(t, w, 'GET', `/v1/webhooks/${hook.body.id}/deliveries`, '/v1/webhooks/{id}/deliveries');
        await conforms(t, w, 'DELETE', `/v1/webhooks/${hook.body.id}`, '/v1/webhooks/{id}');
      }
    });

    await t.test('the schema check catches a response that does not match', async (t) => {
      const schema = declared('GET', '/v1/conversions/{id}', 200, 'application/json') as Schema;
      const wrong = { id: 'conv_x', object: 'conversion', name: 'x', operation: 'parse', status: 'done', created_at: 'yesterday', summary: {}, usage: {} };
      const errs = validate(schema, wrong, doc);
      t.ok(errs.some((e) => e.includes('$.status')), 'a bad status is caught');
      t.ok(errs.some((e) => e.includes('$.created_at')), 'a bad date is caught');
      t.ok(validate(resolve(doc, '#/components/schemas/Problem'), { error: 'teapot' }, doc).length > 0, 'a bad Problem is caught');
    });
  });
}
