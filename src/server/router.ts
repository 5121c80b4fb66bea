// The route table: method + path pattern (`:name` segments) → handler. One table answers
// 404 for unknown paths and 405 (with Allow) for known paths asked with another method.
import type { Ctx } from './respond.js';

export type Handler = (ctx: Ctx) => Promise<void> | void;

export interface Route {
  method: string;
  pattern: string;
  handler: Handler;
}

interface Compiled extends Route {
  parts: string[];
}

export class Router {
  private routes: Compiled[] = [];

  add(method: string, pattern: string, handler: Handler): this {
    this.routes.push({ method, pattern, handler, parts: pattern.split('/').filter(Boolean) });
    return this;
  }

  list(): Route[] {
    return this.routes.map(({ method, pattern, handler }) => ({ method, pattern, handler }));
  }

  /** The matching route and its params, or the methods the path takes when none matches. */
  match(method: string, path: string): { route: Route; params: Record<string, string> } | { allow: string[] } {
    const segs = path.split('/').filter(Boolean);
    const allow: string[] = [];
    for (const r of this.routes) {
      const params = matchParts(r.parts, segs);
      if (!params) continue;
      if (r.method === method || (method === 'HEAD' && r.method === 'GET')) return { route: r, params };
      allow.push(r.method);
    }
    return { allow };
  }
}

function matchParts(parts: string[], segs: string[]): Record<string, string> | undefined {
  if (parts.length !== segs.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (p.startsWith(':')) {
      let v: string;
      try {
        v = decodeURIComponent(segs[i]!);
      } catch {
        return undefined;
      }
      params[p.slice(1)] = v;
    } else if (p !== segs[i]) return undefined;
  }
  return params;
}
