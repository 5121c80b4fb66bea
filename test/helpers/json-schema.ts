// JSON Schema checks for tests. Validation is ajv (draft 2020-12, with ajv-formats); this file
// only adapts it to the OpenAPI document: `#/components/...` references resolve against the
// document, and errors read as `$.path: message`. `unknownKeywords` stays as a lint: it refuses
// keywords the OpenAPI document is not meant to use, so a typo in a schema fails loudly.
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';

// ajv-formats is CommonJS: under NodeNext its default import is the module, the plugin is `.default`.
const addFormats = ((formats as unknown as { default?: unknown }).default ?? formats) as unknown as (ajv: Ajv2020) => void;

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

/** One ajv per document: OpenAPI's own keywords (discriminator, example…) are not schema errors. */
const validators = new WeakMap<object, Ajv2020>();
function ajvFor(root: object): Ajv2020 {
  let ajv = validators.get(root);
  if (!ajv) {
    ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
    addFormats(ajv);
    validators.set(root, ajv);
  }
  return ajv;
}

/** Errors of `value` against `schema`; `root` resolves `#/...` references. Empty = valid. */
export function validate(schema: Schema, value: unknown, root: unknown): string[] {
  // The schema travels with the document's components so its `#/components/...` refs resolve.
  const wrapped = { ...schema, components: (root as { components?: unknown }).components };
  const check = ajvFor(root as object).compile(wrapped);
  if (check(value)) return [];
  return (check.errors ?? []).map((e: ErrorObject) => `$${e.instancePath.replace(/\//g, '.')}: ${e.message ?? e.keyword}`);
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
