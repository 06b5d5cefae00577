import { DASHBOARD_JS } from './dashboard.page';

describe('the dashboard page', () => {
  // stats() counts messages, groups, tasks or deliveries depending on the field: a bare "dead" beside a
  // list of dead batches read as batches when it counted their messages.
  it('names the unit of every figure it shows', () => {
    const labels = [...DASHBOARD_JS.matchAll(/figure\('([^']+)'/g)].map((match) => match[1]);
    expect(labels.length).toBeGreaterThan(10);
    const unitless = labels.filter((label) => label !== 'lag' && !/\b(messages|groups|tasks|deliveries)\b/.test(label));
    expect(unitless).toEqual([]);
  });

  it('says that a dead batch row holds many of the dead messages counted above it', () => {
    expect(DASHBOARD_JS).toContain("figure('messages in dead batches'");
    expect(DASHBOARD_JS).toMatch(/'dead batches \(a row per batch, with its count of messages\)'/);
  });
});
