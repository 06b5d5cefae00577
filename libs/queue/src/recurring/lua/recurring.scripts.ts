import { scriptSet } from '../../redis/script-set';
import { DELAY_QUEUE_SCRIPTS } from '../../delay-queue/lua/delay-queue.scripts';
import { recurringDeclare } from './recurring-declare';

/** The scripts of `@Recurring` schedules (`<script>.lua` in this directory), built on the DelayQueue's includes. */
export const RECURRING_SCRIPTS = scriptSet(__dirname, DELAY_QUEUE_SCRIPTS.includes, [recurringDeclare]);
