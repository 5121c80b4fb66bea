// What the Markdown → HTML renderers (markdown.ts, plain-markdown.ts) write of the input's text
// and link targets: text escaped, and targets with a script-capable scheme refused.

/** The entity each character HTML text must not hold as itself is written as. */
export const HTML_ENTITIES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => HTML_ENTITIES[c]!);
}

/** http(s), mailto, relative and fragment links are kept; javascript:, data:, vbscript: … are not. */
export function safeHref(href: string): string | null {
  const trimmed = href.trim();
  // Browsers ignore control characters and whitespace inside a scheme: strip them before looking.
  // eslint-disable-next-line no-control-regex
  const probe = trimmed.replace(/[\u0000-\u0020]/g, '').toLowerCase();
  const scheme = /^([a-z][a-z0-9+.-]*):/.exec(probe);
  if (!scheme) return trimmed;
  return ['http', 'https', 'mailto', 'tel', 'ftp'].includes(scheme[1]!) ? trimmed : null;
}
