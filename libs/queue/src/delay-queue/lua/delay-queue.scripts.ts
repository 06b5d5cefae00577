import { join } from 'node:path';
import { scriptSet } from '../../redis/script-set';
import { delayAck } from './delay-ack';
import { delayAdvance } from './delay-advance';
import { delayCancel } from './delay-cancel';
import { delayClaim } from './delay-claim';
import { delayDead } from './delay-dead';
import { delayDeleteDead } from './delay-delete-dead';
import { delayExtend } from './delay-extend';
import { delayFail } from './delay-fail';
import { delayGet } from './delay-get';
import { delayMove } from './delay-move';
import { delayPass } from './delay-pass';
import { delayRelease } from './delay-release';
import { delayRepeat } from './delay-repeat';
import { delayRequeueDead } from './delay-requeue-dead';
import { delayRequeue } from './delay-requeue';
import { delaySchedule } from './delay-schedule';
import { delayStats } from './delay-stats';
import { delaySweepMark } from './delay-sweep-mark';
import { delaySweep } from './delay-sweep';
import { delayUnrepeat } from './delay-unrepeat';

/** The DelayQueue's scripts: `<script>.lua` in this directory, its own includes in `includes/`. */
export const DELAY_QUEUE_SCRIPTS = scriptSet(
  __dirname,
  [join(__dirname, 'includes')],
  [
    delayAck,
    delayAdvance,
    delayCancel,
    delayClaim,
    delayDead,
    delayDeleteDead,
    delayExtend,
    delayFail,
    delayGet,
    delayMove,
    delayPass,
    delayRelease,
    delayRepeat,
    delayRequeueDead,
    delayRequeue,
    delaySchedule,
    delayStats,
    delaySweepMark,
    delaySweep,
    delayUnrepeat,
  ],
);
