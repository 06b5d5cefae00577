import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DASHBOARD_JS } from './dashboard.page';

/** The labels of the figures a card shows, in order, and its section headings. */
function labels(source: string): { figures: string[]; headings: string[] } {
  return {
    figures: [...source.matchAll(/figure\('([^']+)'/g)].map((match) => match[1]),
    headings: [...source.matchAll(/(?:el\('h3', \{\}, '|<h3>)([^'<]+)/g)].map((match) => match[1]),
  };
}

describe('the dashboard page', () => {
  const page = labels(DASHBOARD_JS);

  // stats() counts messages, groups, tasks or deliveries depending on the field: a bare "dead" beside a
  // list of dead batches read as batches when it counted their messages.
  it('names the unit of every figure it shows', () => {
    expect(page.figures.length).toBeGreaterThan(10);
    const unitless = page.figures.filter(
      (label) => label !== 'lag' && !/\b(messages|groups|tasks|deliveries)\b/.test(label),
    );
    expect(unitless).toEqual([]);
  });

  it('says that a dead batch row holds many of the dead messages counted above it', () => {
    expect(page.figures).toContain('messages in dead batches');
    expect(page.headings).toContain('dead batches (a row per batch, with its count of messages)');
  });

  it('labels the first overview, rendered with the page, as the script labels the live one', () => {
    const snapshot = labels(readFileSync(join(__dirname, 'dashboard.snapshot.ts'), 'utf8'));
    expect(snapshot.figures).toEqual(page.figures);
    expect(page.headings).toEqual(expect.arrayContaining(snapshot.headings));
  });
});
