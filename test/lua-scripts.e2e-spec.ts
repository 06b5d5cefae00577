import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCRIPT_NAMES } from '../libs/queue/src/redis/scripts';
import { rawClient } from './support/testing';

describe('Lua scripts', () => {
  it.each(SCRIPT_NAMES)('%s compiles on the server', async (name) => {
    const redis = rawClient();
    try {
      const lua = readFileSync(join(__dirname, '../libs/queue/src/redis/lua', `${name}.lua`), 'utf8');
      expect(await redis.script('LOAD', lua)).toMatch(/^[0-9a-f]{40}$/);
    } finally {
      redis.disconnect();
    }
  });
});
