/**
 * A message or task payload stored with the trace context of the operation that wrote it:
 * `0,"<carrier>",<json>` where a plain one is `<json>`. A lone JSON value never starts with `0,`, so the
 * two cannot be confused, and a queue that does not trace stores exactly what it stored before.
 * The carrier is a W3C `traceparent` (always 55 characters) followed by the `tracestate`, if any: no
 * separator is needed, and neither holds a `"` (a tracestate that does is not stored), so the carrier
 * ends at the next quote.
 */
export function withCarrier(carrier: string, json: string): string {
  return '0,"' + carrier + '",' + json;
}

/** Where the JSON of a stored text that starts at `from` begins. */
export function jsonFrom(text: string, from: number): number {
  if (text.charCodeAt(from) !== 48 || text.charCodeAt(from + 1) !== 44) return from;
  return text.indexOf('"', from + 3) + 2;
}

/** The carrier of a stored text that starts at `from`, or undefined when it carries none. */
export function carrierAt(text: string, from: number): string | undefined {
  if (text.charCodeAt(from) !== 48 || text.charCodeAt(from + 1) !== 44) return undefined;
  return text.slice(from + 3, text.indexOf('"', from + 3));
}

/**
 * The JSON of a stored task payload (a DelayQueue data hash value), which a debounced task not yet
 * claimed leads with `1,<ms its window opened>,` (see the DelayQueue's debounce-window include).
 */
export function storedJson(text: string): string {
  const windowed = text.charCodeAt(0) === 49 && text.charCodeAt(1) === 44;
  const from = jsonFrom(text, windowed ? text.indexOf(',', 2) + 1 : 0);
  return from === 0 ? text : text.slice(from);
}
