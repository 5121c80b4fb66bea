// Charset handling shared by the text, HTML and URL converters: BOM first, then the declared
// charset, then UTF-8 validity, then detection; and the helpers that find a declaration.
import iconv from 'iconv-lite';
import t from 'tap';
import {
  bomOf, charsetFromContentType, chooseCharset, declaredInMarkup, decodeText, normaliseCharset,
} from '../../src/converters/shared/charset.js';

const RUSSIAN = 'Съешь же ещё этих мягких французских булок, да выпей чаю. Широкая электрификация южных губерний даст мощный толчок подъёму сельского хозяйства.';
const CHINESE = '我能吞下玻璃而不伤身体。中华人民共和国是一个位于东亚的国家，人口众多，历史悠久，文化灿烂。';

t.test('a byte-order mark wins over a declared charset', async (t) => {
  const le = Buffer.concat([Buffer.from([0xff, 0xfe]), iconv.encode('Ärger', 'utf-16le')]);
  const be = Buffer.concat([Buffer.from([0xfe, 0xff]), iconv.encode('Ärger', 'utf-16be')]);
  const u8 = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('Ärger')]);
  t.equal(decodeText(le, 'windows-1252'), 'Ärger');
  t.equal(decodeText(be, 'shift_jis'), 'Ärger');
  t.equal(decodeText(u8, 'koi8-r'), 'Ärger');
  t.same(bomOf(le), { encoding: 'utf-16le', length: 2 });
  t.equal(bomOf(Buffer.from('abc')), null);
});

t.test('a declared charset is used for bytes that are not UTF-8', async (t) => {
  t.equal(decodeText(iconv.encode(RUSSIAN, 'koi8-r'), 'KOI8-R'), RUSSIAN);
  t.equal(decodeText(iconv.encode(RUSSIAN, 'windows-1251'), '"windows-1251"'), RUSSIAN);
});

t.test('latin1 and ascii labels mean windows-1252, as in browsers', async (t) => {
  t.equal(normaliseCharset('ISO-8859-1'), 'windows-1252');
  t.equal(normaliseCharset('us-ascii'), 'windows-1252');
  t.equal(decodeText(Buffer.from([0x80, 0x20, 0x93, 0x71, 0x94]), 'iso-8859-1'), '€ “q”');
});

t.test('a page labelled UTF-8 that is not UTF-8 falls back to detection', async (t) => {
  const text = 'Le café était crème, la brûlée très réussie ; à côté, un garçon naïf lisait près de la fenêtre en été.';
  t.equal(decodeText(iconv.encode(text, 'windows-1252'), 'utf-8'), text);
});

t.test('undeclared legacy encodings are detected', async (t) => {
  t.equal(decodeText(iconv.encode(RUSSIAN, 'windows-1251')), RUSSIAN);
  t.equal(decodeText(iconv.encode(CHINESE, 'gb18030')), CHINESE);
  t.equal(chooseCharset(Buffer.from('plain ascii')).encoding, 'utf-8');
});

t.test('unknown labels are ignored and undecodable bytes never throw', async (t) => {
  t.equal(normaliseCharset('no-such-charset'), null);
  t.equal(normaliseCharset(''), null);
  t.equal(decodeText(Buffer.from('héllo'), 'no-such-charset'), 'héllo');
  const noise = Buffer.from(Array.from({ length: 512 }, (_, i) => (i * 7919) % 256));
  t.type(decodeText(noise), 'string');
});

t.test('the charset parameter of a Content-Type header is found', async (t) => {
  t.equal(charsetFromContentType('text/html; charset=Shift_JIS'), 'Shift_JIS');
  t.equal(charsetFromContentType('text/plain;charset="windows-1252"; format=flowed'), 'windows-1252');
  t.equal(charsetFromContentType('application/pdf'), undefined);
  t.equal(charsetFromContentType(undefined), undefined);
});

t.test('a markup declaration is found in <meta charset>, http-equiv and <?xml?>', async (t) => {
  t.equal(declaredInMarkup(Buffer.from('<html><head><meta charset="euc-jp">')), 'euc-jp');
  t.equal(declaredInMarkup(Buffer.from('<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">')), 'windows-1251');
  t.equal(declaredInMarkup(Buffer.from('<?xml version="1.0" encoding="ISO-8859-2"?><html>')), 'ISO-8859-2');
  t.equal(declaredInMarkup(Buffer.from('<meta charset="utf-16">')), 'utf-8', 'a readable <meta> cannot be UTF-16');
  t.equal(declaredInMarkup(Buffer.from('<html><body>no declaration</body></html>')), undefined);
});
