/** The reply of a script built on includes/per-delivery.lua: per delivery, whether it did its work. */
export function decodePerDelivery(reply: unknown): boolean[] {
  return (reply as number[]).map((done) => done === 1);
}
