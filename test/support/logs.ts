import { ConsoleLogger, type LoggerService, type LogLevel } from '@nestjs/common';

/**
 * A logger for test applications: it prints the levels given, as Nest prints them, except error lines
 * declared expected (`expect`), which it keeps (`expected`) for the test to assert instead. A test that
 * causes errors on purpose declares them, so a green run prints little and an unexpected error still
 * shows, next to the failure it explains.
 */
export class TestLogger implements LoggerService {
  readonly expected: string[] = [];
  private patterns: RegExp[] = [];
  private readonly console = new ConsoleLogger();

  constructor(printed: LogLevel[] = ['error', 'fatal']) {
    this.console.setLogLevels(printed);
  }

  /** Error lines matching any of `patterns` are kept instead of printed. */
  expect(...patterns: RegExp[]): void {
    this.patterns.push(...patterns);
  }

  /** Forgets what was expected and kept. */
  reset(): void {
    this.patterns = [];
    this.expected.length = 0;
  }

  error(message: unknown, ...rest: unknown[]): void {
    if (!this.isExpected(message)) this.console.error(message, ...rest);
  }

  fatal(message: unknown, ...rest: unknown[]): void {
    if (!this.isExpected(message)) this.console.fatal(message, ...rest);
  }

  warn(message: unknown, ...rest: unknown[]): void {
    this.console.warn(message, ...rest);
  }

  log(message: unknown, ...rest: unknown[]): void {
    this.console.log(message, ...rest);
  }

  debug(message: unknown, ...rest: unknown[]): void {
    this.console.debug(message, ...rest);
  }

  verbose(message: unknown, ...rest: unknown[]): void {
    this.console.verbose(message, ...rest);
  }

  private isExpected(message: unknown): boolean {
    const text = String(message);
    if (!this.patterns.some((pattern) => pattern.test(text))) return false;
    this.expected.push(text);
    return true;
  }
}

/**
 * The logger of applications a test starts without one of its own (errors only). One per test file, as
 * Jest gives each file its own modules; what a test expected is forgotten after it.
 */
export const testLogs = new TestLogger();
afterEach(() => testLogs.reset());

/**
 * Declares error lines the current test causes on purpose: until it ends, applications started without
 * a logger of their own keep those lines (`expectedErrors`) instead of printing them.
 */
export function expectErrors(...patterns: RegExp[]): void {
  testLogs.expect(...patterns);
}

/** The expected error lines logged so far in the current test. */
export function expectedErrors(): string[] {
  return [...testLogs.expected];
}
