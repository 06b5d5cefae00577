/**
 * The data contract this version speaks: what its scripts write and what they expect to read. 2 is
 * 0.2.0's (storage layout 2). A release that changes what an earlier one cannot read raises it, keeps
 * writing the earlier contract while a process speaking it is alive, and says so in docs/upgrading.md.
 */
export const DATA_CONTRACT = 2;

/** The lowest contract this version works beside: a live process speaking less makes it refuse to start. */
export const SERVES_FROM = 2;
