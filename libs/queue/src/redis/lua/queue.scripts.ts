import { scriptSet } from '../script-set';
import { processAnnounce } from './process-announce';
import { queueMeta } from './queue-meta';
import { queuePass } from './queue-pass';

/** The scripts of every queue (`<script>.lua` in this directory), which use only the shared includes. */
export const QUEUE_SCRIPTS = scriptSet(__dirname, [], [processAnnounce, queueMeta, queuePass]);
