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
import { delayRelease } from './delay-release';
import { delayRepeat } from './delay-repeat';
import { delayRequeueDead } from './delay-requeue-dead';
import { delayRequeue } from './delay-requeue';
import { delaySchedule } from './delay-schedule';
import { delayStats } from './delay-stats';
import { delaySweep } from './delay-sweep';
import { delaySweepMark } from './delay-sweep-mark';
import { delayUnrepeat } from './delay-unrepeat';

/** The DelayQueue's scripts, by their protocols (each script is `<script>.lua` in this directory). */
export const DELAY_QUEUE_SCRIPTS = {
  dir: __dirname,
  protocols: [
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
    delayRelease,
    delayRepeat,
    delayRequeueDead,
    delayRequeue,
    delaySchedule,
    delayStats,
    delaySweep,
    delaySweepMark,
    delayUnrepeat,
  ],
};
