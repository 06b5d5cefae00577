/** `FixedQueue.obliterate` / `DelayQueue.obliterate`. */
export interface ObliterateOptions {
  /**
   * Obliterate even while consumers of the queue run in this process: their deliveries under way find
   * nothing to acknowledge, and they go on polling an empty queue. Default false.
   */
  force?: boolean;
}
