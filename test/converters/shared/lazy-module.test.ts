// lazyModule: a converter's work module is loaded once per thread and kept; a failed load is not.
import t from 'tap';
import { lazyModule } from '../../../src/converters/shared/lazy-module.js';

t.test('the load runs once, for calls one after another and at the same time', async (t) => {
  let loads = 0;
  const work = lazyModule(async () => ({ n: ++loads }));
  const [a, b] = await Promise.all([work(), work()]);
  const c = await work();
  t.equal(loads, 1);
  t.equal(a, b, 'the same module object');
  t.equal(a, c);
});

t.test('a load that failed is tried again by the next call, and then kept', async (t) => {
  let loads = 0;
  const work = lazyModule(async () => {
    loads++;
    if (loads === 1) throw new Error('EMFILE: too many open files');
    return { n: loads };
  });
  await t.rejects(work(), { message: /EMFILE/ });
  t.same(await work(), { n: 2 });
  t.same(await work(), { n: 2 });
  t.equal(loads, 2);
});
