// The test environment of every project: Node's, and a suite fails when a promise rejected with no handler
// attached by the end of its turn. Outside a test runner that ends the process (Node's default
// --unhandled-rejections=throw), so in the library it is a crash whatever the test asserted. Jest fails a
// test for a rejection it traces to it, but forgives one handled a turn later, which Node would not have.
'use strict';

const { inspect } = require('node:util');
const { TestEnvironment } = require('jest-environment-node');

class FailOnUnhandledRejection extends TestEnvironment {
  unhandled = [];
  record = (reason) => this.unhandled.push(reason);

  constructor(config, context) {
    super(config, context);
    const clock = context.docblockPragmas['memory-clock'];
    if (clock !== undefined) this.global.process.env.NRQ_MEMORY_CLOCK = String(clock);
  }

  async handleTestEvent(event, state) {
    // Registered after Jest's own handlers, which replace every listener at run_start.
    if (event.name === 'run_start') process.on('unhandledRejection', this.record);
    if (event.name !== 'run_finish') return;
    process.off('unhandledRejection', this.record);
    if (this.unhandled.length === 0) return;
    const reasons = this.unhandled.splice(0).map((reason) => inspect(reason, { depth: 2 }));
    state.unhandledErrors.push(
      new Error(`${reasons.length} unhandled promise rejection(s) in this suite:\n${reasons.join('\n\n')}`),
    );
  }
}

module.exports = FailOnUnhandledRejection;
