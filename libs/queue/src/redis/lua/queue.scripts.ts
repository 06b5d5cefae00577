import { queueMeta } from './queue-meta';

/** The scripts of every queue, by their protocols (each script is `<script>.lua` in this directory). */
export const QUEUE_SCRIPTS = {
  dir: __dirname,
  protocols: [queueMeta],
};
