import { Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';

export const BULLMQ = 'BullMQ';

/** BullMQ's workers need `maxRetriesPerRequest: null` on their blocking connection. */
export function bullConnection(url: string): ConnectionOptions {
  const { hostname, port, username, password } = new URL(url);
  return {
    host: hostname,
    port: Number(port || 6379),
    ...(username ? { username: decodeURIComponent(username) } : {}),
    ...(password ? { password: decodeURIComponent(password) } : {}),
    maxRetriesPerRequest: null,
  };
}

/**
 * A queue whose finished jobs are deleted at once, as the library deletes acknowledged tasks: BullMQ's
 * default keeps every completed job, which would weigh on its memory and throughput figures.
 */
export function bullQueue(url: string, prefix: string, name: string): Queue {
  return new Queue(name, {
    connection: bullConnection(url),
    prefix,
    defaultJobOptions: { removeOnComplete: true, removeOnFail: true },
  });
}

export async function bullWorker<T>(
  url: string,
  prefix: string,
  name: string,
  concurrency: number,
  handle: (job: Job<T>) => unknown,
): Promise<Worker<T>> {
  const worker = new Worker<T>(name, async (job) => handle(job), {
    connection: bullConnection(url),
    prefix,
    concurrency,
  });
  await worker.waitUntilReady();
  return worker;
}
