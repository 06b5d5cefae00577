import type { ValidationError } from 'class-validator';

/** Flattens class-validator's tree into `path: rule` lines a person can act on. */
export function describeViolations(errors: ValidationError[], parent = ''): string[] {
  const lines: string[] = [];
  for (const error of errors) {
    const path = parent ? `${parent}.${error.property}` : error.property;
    for (const message of Object.values(error.constraints ?? {})) {
      lines.push(
        message.startsWith(error.property) ? path + message.slice(error.property.length) : `${path}: ${message}`,
      );
    }
    if (error.children?.length) lines.push(...describeViolations(error.children, path));
  }
  return lines;
}
