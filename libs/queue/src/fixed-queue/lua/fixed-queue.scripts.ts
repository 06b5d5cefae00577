import { join } from 'node:path';
import { scriptSet } from '../../redis/script-set';

/** The FixedQueue's scripts: `<script>.lua` in this directory, its own includes in `includes/`. */
export const FIXED_QUEUE_SCRIPTS = scriptSet(__dirname, join(__dirname, 'includes'));
