// Pagination cursors, opaque to clients: the conversion's files (conversion-json.ts), and the
// list endpoints of conversions, webhook endpoints and deliveries.

/** Cursors are opaque to clients: base64url of what the next page starts after. */
export function encodeCursor(parts: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

export function decodeCursor(cursor: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    return v && typeof v === 'object' && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}
