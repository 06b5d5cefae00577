import { scriptSet } from '../script-set';

/** The scripts of every queue (`<script>.lua` in this directory), which use only the shared includes. */
export const QUEUE_SCRIPTS = scriptSet(__dirname);
