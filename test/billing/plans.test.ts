// The plans config matches DESIGN.md §2 and free has no API access.
import t from 'tap';
import { PLANS, hasApiAccess, isPlan, planLimits, type Plan, type PlanLimits } from '../../src/plans.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

const expected: Record<Plan, PlanLimits> = {
  lite: { fileBytes: 100 * MiB, pageCap: 300, filesPerMonth: 1_000, storageBytes: GiB, concurrency: 2, requestsPerMinute: 120 },
  pro: { fileBytes: GiB, pageCap: 2_000, filesPerMonth: 20_000, storageBytes: 25 * GiB, concurrency: 8, requestsPerMinute: 1_200 },
  max: { fileBytes: 5 * GiB, pageCap: 10_000, filesPerMonth: 200_000, storageBytes: 250 * GiB, concurrency: 32, requestsPerMinute: 6_000 },
  free: { fileBytes: 0, pageCap: 0, filesPerMonth: 0, storageBytes: 0, concurrency: 0, requestsPerMinute: 0 },
};

for (const plan of PLANS) {
  t.test(`the ${plan} plan has the limits of the design table`, async (t) => {
    t.strictSame(planLimits(plan), expected[plan]);
  });
}

t.test('lite, pro and max have API access and free does not', async (t) => {
  t.equal(hasApiAccess('lite'), true);
  t.equal(hasApiAccess('pro'), true);
  t.equal(hasApiAccess('max'), true);
  t.equal(hasApiAccess('free'), false);
});

t.test('each paid plan allows more than the one below it', async (t) => {
  const order: Plan[] = ['lite', 'pro', 'max'];
  for (let i = 1; i < order.length; i++) {
    const lower = planLimits(order[i - 1]!);
    const upper = planLimits(order[i]!);
    for (const k of Object.keys(lower) as Array<keyof PlanLimits>) {
      t.ok(upper[k] > lower[k], `${order[i]} ${k} > ${order[i - 1]} ${k}`);
    }
  }
});

t.test('an unknown plan name is refused rather than given limits', async (t) => {
  t.equal(isPlan('enterprise'), false);
  t.equal(isPlan('pro'), true);
  t.throws(() => planLimits('enterprise' as Plan), TypeError);
  t.equal(hasApiAccess('enterprise' as Plan), false);
});

t.test('the limits cannot be changed by a caller', async (t) => {
  const lite = planLimits('lite') as PlanLimits;
  t.throws(() => { lite.concurrency = 99; });
  t.equal(planLimits('lite').concurrency, 2);
});
