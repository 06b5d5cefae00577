#!/usr/bin/env node
// Run before the browser test: Debian's chromium, installed with apt-get when missing (as root).
// The test drives it with playwright-core, which never downloads a browser of its own.
'use strict';

const { ensureExecutable } = require('./redis');

try {
  const chromium = ensureExecutable(
    'chromium',
    'chromium',
    'chromium not found: install it (Debian/Ubuntu: sudo apt-get install -y chromium) or set CHROMIUM_PATH',
  );
  if (!process.env.CHROMIUM_PATH) process.stderr.write(`[browser] using ${chromium}\n`);
} catch (error) {
  if (!process.env.CHROMIUM_PATH) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}
