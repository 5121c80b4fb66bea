// A small JSON Schema (2020-12 subset) checker for tests, used until a real validator (ajv) is a
// dev dependency. It knows the keywords the OpenAPI document uses and refuses any other, so a
// typo in a schema or a keyword it cannot check fails loudly instead of passing silently.
export type Schema = Record<string, unknown>;

const ANNOTATIONS = new Set(['description', 'title', 'examples', 'default', 'contentMediaType', 'deprecated', 'readOnly', 'writeOnly']);
const KEYWORDS = new Set([
  '$ref', 'type', 'enum', 'const', 'required', 'properties', 'additionalProperties', 'items', 'anyOf', 'oneOf',
  'allOf', 'minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems', 'pattern', 'format',
]);

/** Every keyword used anywhere in `schema` that this checker does not know. */
export function unknownKeywords(schema: unknown, at = '#'): string[] {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(schema as Schema)) {
    if (!KEYWORDS.has(k) && !ANNOTATIONS.has(k) && !k.startsWith('x-')) out.push(`${at}/${k}`);
    if (k === 'properties') for (const [p, s] of Object.entries(v as Schema)) out.push(...unknownKeywords(s, `${at}/properties/${p}`));
    if (k === 'items' || k === 'additionalProperties') out.push(...unknownKeywords(v, `${at}/${k}`));
    if (k === 'anyOf' || k === 'oneOf' || k === 'allOf') (v as unknown[]).forEach((s, i) => out.push(...unknownKeywords(s, `${at}/${k}/${i}`)));
  }
  return out;
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** Errors of `value` against `schema`; `root` resolves `#/...` references. Empty = valid. */
export function validate(schema: Schema, value: unknown, root: unknown, at = '$'): string[] {
  const errs: string[] = [];
  const unknown = Object.keys(schema).filter((k) => !KEYWORDS.has(k) && !ANNOTATIONS.has(k) && !k.startsWith('x-'));
  if (unknown.length) return [`${at}: schema keyword(s) this checker does not know: ${unknown.join(', ')}`];
  if (typeof schema.$ref === 'string') errs.push(...validate(resolve(root, schema.$ref), value, root, at));
  const t = typeOf(value);
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type as string[] : [schema.type as string];
    if (!types.some((x) => x === t || (x === 'number' && t === 'integer'))) return [...errs, `${at}: is ${t}, not ${types.join('|')}`];
  }
  if (schema.enum && !(schema.enum as unknown[]).some((e) => e === value)) errs.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  if ('const' in schema && schema.const !== value) errs.push(`${at}: ${JSON.stringify(value)} is not ${JSON.stringify(schema.const)}`);
  if (t === 'string') {
    const s = value as string;
    if (typeof schema.minLength === 'number' && s.length < schema.minLength) errs.push(`${at}: shorter than ${schema.minLength}`);
    if (typeof schema.maxLength === 'number' && s.length > schema.maxLength) errs.push(`${at}: longer than ${schema.maxLength}`);
    if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(s)) errs.push(`${at}: does not match ${schema.pattern}`);
    if (schema.format === 'date-time' && !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(s)) errs.push(`${at}: not a date-time`);
    if (schema.format === 'uri' && !URL.canParse(s)) errs.push(`${at}: not a URI`);
  }
  if (t === 'integer' || t === 'number') {
    if (typeof schema.minimum === 'number' && (value as number) < schema.minimum) errs.push(`${at}: below ${schema.minimum}`);
    if (typeof schema.maximum === 'number' && (value as number) > schema.maximum) errs.push(`${at}: above ${schema.maximum}`);
  }
  if (t === 'array') {
    const a = value as unknown[];
    if (typeof schema.minItems === 'number' && a.length < schema.minItems) errs.push(`${at}: fewer than ${schema.minItems} items`);
    if (typeof schema.maxItems === 'number' && a.length > schema.maxItems) errs.push(`${at}: more than ${schema.maxItems} items`);
    if (schema.items) a.forEach((v, i) => errs.push(...validate(schema.items as Schema, v, root, `${at}[${i}]`)));
  }
  if (t === 'object') {
    const o = value as Record<string, unknown>;
    for (const r of (schema.required as string[] | undefined) ?? []) if (!(r in o)) errs.push(`${at}: missing "${r}"`);
    const props = (schema.properties as Record<string, Schema> | undefined) ?? {};
    for (const [k, v] of Object.entries(o)) {
      if (props[k]) errs.push(...validate(props[k]!, v, root, `${at}.${k}`));
      else if (schema.additionalProperties === false) errs.push(`${at}: unexpected property "${k}"`);
      else if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        errs.push(...validate(schema.additionalProperties as Schema, v, root, `${at}.${k}`));
      }
    }
  }
  if (schema.allOf) for (const s of schema.allOf as Schema[]) errs.push(...validate(s, value, root, at));
  if (schema.anyOf && !(schema.anyOf as Schema[]).some((s) => validate(s, value, root, at).length === 0)) {
    errs.push(`${at}: matches none of anyOf`);
  }
  if (schema.oneOf && (schema.oneOf as Schema[]).filter((s) => validate(s, value, root, at).length === 0).length !== 1) {
    errs.push(`${at}: does not match exactly one of oneOf`);
  }
  return errs;
}

/** The object a local reference (`#/a/b`) points at; throws when it points nowhere. */
export function resolve(root: unknown, pointer: string): Schema {
  if (!pointer.startsWith('#/')) throw new Error(`only local references are supported: ${pointer}`);
  let cur: unknown = root;
  for (const raw of pointer.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (!cur || typeof cur !== 'object' || !(key in (cur as object))) throw new Error(`unresolvable reference ${pointer}`);
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur as Schema;
}
