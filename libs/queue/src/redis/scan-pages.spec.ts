import { QueueInputError } from '../errors';
import { ScanPages, type ScanStep } from './scan-pages';

/** Shards whose scans answer fixed steps: step i of a shard is its i-th array, its cursor `i`. */
function stepsOf(shards: string[][][]): ScanStep<string> {
  return async (shard, scan) => {
    const steps = shards[shard];
    const at = Number(scan);
    return [at + 1 >= steps.length ? '0' : String(at + 1), steps[at] ?? []];
  };
}

async function everyPage(pages: ScanPages, step: ScanStep<string>, limit: number): Promise<string[][]> {
  const all: string[][] = [];
  let cursor: string | undefined;
  do {
    const page = await pages.page(cursor, limit, step);
    all.push(page.items);
    cursor = page.cursor ?? undefined;
  } while (cursor !== undefined);
  return all;
}

describe('ScanPages', () => {
  it('lists every shard once, taking a step too large for a page again past what was listed', async () => {
    const step = stepsOf([[['a', 'b', 'c', 'd', 'e'], ['f']], [[]], [['g', 'h']]]);
    const pages = await everyPage(new ScanPages(3), step, 3);
    expect(pages).toEqual([
      ['a', 'b', 'c'],
      ['d', 'e', 'f'],
      ['g', 'h'],
    ]);
  });

  it('ends a page early where the steps answer nothing, rather than stepping on without bound', async () => {
    const step = stepsOf([Array.from({ length: 30 }, (): string[] => []).concat([['late']])]);
    const [first, ...rest] = await everyPage(new ScanPages(1), step, 10);
    expect(first).toEqual([]);
    expect(rest.flat()).toEqual(['late']);
  });

  it('refuses a cursor it did not make', async () => {
    const pages = new ScanPages(2);
    const step = stepsOf([[[]], [[]]]);
    for (const cursor of ['nonsense', Buffer.from('[5,"0",0]').toString('base64url'), 7 as unknown as string])
      await expect(pages.page(cursor, 10, step)).rejects.toThrow(
        new QueueInputError(`cursor "${String(cursor)}" is not one this queue returned; start again without a cursor`),
      );
  });
});
