import { recurringDeclare } from './recurring-declare';

/** The scripts of `@Recurring` schedules, by their protocols (each script is `<script>.lua` in this directory). */
export const RECURRING_SCRIPTS = {
  dir: __dirname,
  protocols: [recurringDeclare],
};
