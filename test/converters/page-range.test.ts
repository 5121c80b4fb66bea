// Page selections: parsing "1-3,5,8-" and choosing the pages of a document.
import t from 'tap';
import { parsePageRanges, selectPages } from '../../src/converters/shared/page-range.js';

t.test('a list of numbers, closed and open ranges parses into ranges', async (t) => {
  t.same(parsePageRanges('1-3,5,8-'), [{ from: 1, to: 3 }, { from: 5, to: 5 }, { from: 8, to: null }]);
  t.same(parsePageRanges(' 2 - 4 , 7 '), [{ from: 2, to: 4 }, { from: 7, to: 7 }]);
  t.same(parsePageRanges('4-4'), [{ from: 4, to: 4 }]);
});

t.test('garbage is refused with invalid_request', async (t) => {
  for (const bad of ['', ' ', 'abc', '1-2-3', '0', '3-1', '1,,2', '-3', '1.5', '2-x', '1;2', '99999999999']) {
    t.throws(() => parsePageRanges(bad), { name: 'ApiError', code: 'invalid_request' }, `"${bad}" is refused`);
  }
});

t.test('ranges select 1-based pages in order, without duplicates', async (t) => {
  t.same(selectPages(parsePageRanges('5,1-3,2'), 10), [1, 2, 3, 5]);
  t.same(selectPages(parsePageRanges('8-'), 10), [8, 9, 10]);
});

t.test('pages past the end of the document are ignored', async (t) => {
  t.same(selectPages(parsePageRanges('2,4-9,20-'), 5), [2, 4, 5]);
  t.same(selectPages(parsePageRanges('7-'), 5), []);
});

t.test('no ranges select every page', async (t) => {
  t.same(selectPages(undefined, 4), [1, 2, 3, 4]);
  t.same(selectPages(undefined, 0), []);
});
