import { IsInt, Min } from 'class-validator';

/** The task-source suites' payload: validated, so that a row of the wrong shape is refused. */
export class Meal {
  @IsInt()
  @Min(0)
  grams!: number;
}

export const HOUR = 3_600_000;
