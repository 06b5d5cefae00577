import { join } from 'node:path';
import { scriptSet } from '../../redis/script-set';

/** The DelayQueue's scripts: `<script>.lua` in this directory, its own includes in `includes/`. */
export const DELAY_QUEUE_SCRIPTS = scriptSet(__dirname, join(__dirname, 'includes'));
