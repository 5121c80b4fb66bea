// An image's format from its first bytes: what the image endpoint accepts, decided without
// loading any image library (the event loop sniffs; pool threads decode).

export type Format = 'png' | 'jpeg' | 'gif' | 'webp' | 'bmp' | 'tiff';

export function sniff(b: Buffer): Format | null {
  if (b.length >= 8 && b.readUInt32BE(0) === 0x89504e47 && b.readUInt32BE(4) === 0x0d0a1a0a) return 'png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  const head = b.subarray(0, 12).toString('latin1');
  if (head.startsWith('GIF87a') || head.startsWith('GIF89a')) return 'gif';
  if (head.startsWith('RIFF') && head.slice(8, 12) === 'WEBP') return 'webp';
  if (head.startsWith('II*\0') || head.startsWith('MM\0*') || head.startsWith('II+\0') || head.startsWith('MM\0+')) return 'tiff';
  if (head.startsWith('BM') && b.length >= 18 && [12, 40, 52, 56, 64, 108, 124].includes(b.readUInt32LE(14))) return 'bmp';
  return null;
}
