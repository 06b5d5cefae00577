import type { ValidationError } from 'class-validator';

/** Flattens class-validator's tree into `path: rule` lines a person can act on, each said once. */
export function describeViolations(errors: ValidationError[], parent = ''): string[] {
  const lines: string[] = [];
  for (const error of errors) {
    const path = parent ? `${parent}.${error.property}` : error.property;
    // A set: rules that share one message (`must be an integer from 1 to 1000`) name it once.
    const messages = new Set(Object.values(error.constraints ?? {}));
    for (const message of messages) {
      lines.push(
        message.startsWith(error.property) ? path + message.slice(error.property.length) : `${path}: ${message}`,
      );
    }
    if (error.children?.length) lines.push(...describeViolations(error.children, path));
  }
  return lines;
}
