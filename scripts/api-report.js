#!/usr/bin/env node
// Usage: npm run api [-- --update]
// The public API of the package, as API Extractor reads it from the built declarations of each entry
// point (nestjs-redis-queues and nestjs-redis-queues/testing), compared with the reports committed in
// libs/queue/api/: a change of the public surface fails here (and in CI) until its report is updated
// with --update and reviewed with the change. Then the data contract (scripts/data-contract.js).
'use strict';

const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { Extractor, ExtractorConfig } = require('@microsoft/api-extractor');

const lib = path.join(__dirname, '..', 'libs', 'queue');
const update = process.argv.includes('--update');

const build = spawnSync(process.execPath, [path.join(__dirname, 'build-lib.js')], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

let failed = false;
for (const file of ['api-extractor.json', 'api-extractor.testing.json']) {
  const config = ExtractorConfig.loadFileAndPrepare(path.join(lib, file));
  const result = Extractor.invoke(config, { localBuild: update, showVerboseMessages: false });
  if (!result.succeeded || (!update && result.apiReportChanged)) {
    failed = true;
    console.error(
      `${path.relative(process.cwd(), config.reportFilePath)} does not match the public API of ${config.mainEntryPointFilePath}: ` +
        'if the change is meant, run `npm run api -- --update` and commit the report with it',
    );
  }
}
// The other contract a release keeps: what its scripts read and write in Redis.
const contract = spawnSync(process.execPath, [path.join(__dirname, 'data-contract.js'), ...process.argv.slice(2)], {
  stdio: 'inherit',
});
process.exit(failed || contract.status !== 0 ? 1 : 0);
