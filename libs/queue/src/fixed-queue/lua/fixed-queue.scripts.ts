import { join } from 'node:path';
import { scriptSet } from '../../redis/script-set';
import { fixedAck } from './fixed-ack';
import { fixedClaimOrdered } from './fixed-claim-ordered';
import { fixedClaimUnordered } from './fixed-claim-unordered';
import { fixedClear } from './fixed-clear';
import { fixedDeadHeader } from './fixed-dead-header';
import { fixedDead } from './fixed-dead';
import { fixedExpire } from './fixed-expire';
import { fixedExtend } from './fixed-extend';
import { fixedFail } from './fixed-fail';
import { fixedIdle } from './fixed-idle';
import { fixedObliterate } from './fixed-obliterate';
import { fixedPauseGroup } from './fixed-pause-group';
import { fixedPush } from './fixed-push';
import { fixedRelease } from './fixed-release';
import { fixedRequeue } from './fixed-requeue';
import { fixedResumeGroup } from './fixed-resume-group';
import { fixedStats } from './fixed-stats';
import { fixedUpgrade } from './fixed-upgrade';

/** The FixedQueue's scripts: `<script>.lua` in this directory, its own includes in `includes/`. */
export const FIXED_QUEUE_SCRIPTS = scriptSet(
  __dirname,
  [join(__dirname, 'includes')],
  [
    fixedAck,
    fixedClaimOrdered,
    fixedClaimUnordered,
    fixedClear,
    fixedDeadHeader,
    fixedDead,
    fixedExpire,
    fixedExtend,
    fixedFail,
    fixedIdle,
    fixedObliterate,
    fixedPauseGroup,
    fixedPush,
    fixedRelease,
    fixedRequeue,
    fixedResumeGroup,
    fixedStats,
    fixedUpgrade,
  ],
);
