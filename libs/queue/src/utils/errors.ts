/** Longest description of a thrown value put in a log line or kept as a failed task's `lastError`. */
export const MAX_ERROR_TEXT = 2000;

/**
 * What a thrown value says, for a log line or an error message. Handlers may throw anything: a value
 * `String()` cannot convert (`Object.create(null)`, a `toString` that throws) must not turn reporting
 * the failure into a second failure, and a 10 MB message must not become a 10 MB log line.
 */
export function describeError(error: unknown): string {
  return cap(safely(() => (error instanceof Error ? String(error.message) : String(error)), error));
}

/** Like `describeError`, with the stack when there is one: what is kept with a failed task. */
export function errorDetail(error: unknown): string {
  return cap(safely(() => (error instanceof Error ? String(error.stack ?? error.message) : String(error)), error));
}

/**
 * What a failed task or dead batch keeps as its `lastError`: the error's name and message, or its stack
 * with `keepStack` (opt-in: a stack holds server paths, and dashboards show lastError).
 */
export function failureText(error: unknown, keepStack: boolean): string {
  return cap(
    safely(() => {
      if (!(error instanceof Error)) return String(error);
      if (keepStack && error.stack) return String(error.stack);
      return `${String(error.name)}: ${String(error.message)}`;
    }, error),
  );
}

function safely(text: () => string, error: unknown): string {
  try {
    return text();
  } catch {
    try {
      // `[object Object]` for a null-prototype object: says at least that it was not an Error.
      return Object.prototype.toString.call(error);
    } catch {
      return 'a value that cannot be printed';
    }
  }
}

/** At most MAX_ERROR_TEXT characters, the note of what was cut included. */
function cap(text: string): string {
  if (text.length <= MAX_ERROR_TEXT) return text;
  const note = `… (${text.length} characters in all)`;
  return text.slice(0, MAX_ERROR_TEXT - note.length) + note;
}
