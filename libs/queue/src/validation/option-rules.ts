import { IsBoolean, IsNumber, ValidateBy, ValidateIf } from 'class-validator';
import { nameProblem } from './payload';

/** Checked when given: undefined means left out, but null is a value like any other (and refused). */
export const Given = (): PropertyDecorator => ValidateIf((_options, value) => value !== undefined);

/**
 * A number, NaN and infinities included: a time's range and whole milliseconds are checked where it is
 * used, in the words of its kind (a Date, a string or a number).
 */
export const IsAnyNumber = (): PropertyDecorator =>
  IsNumber({ allowNaN: true, allowInfinity: true }, { message: '$property must be a number' });

export const IsTrueOrFalse = (): PropertyDecorator => IsBoolean({ message: '$property must be true or false' });

/** A point in time as the methods take it; whether it parses is checked where it is used. */
export const IsTime = (): PropertyDecorator =>
  ValidateBy({
    name: 'isTime',
    validator: {
      validate: (value) => value instanceof Date || typeof value === 'number' || typeof value === 'string',
      defaultMessage: () => '$property must be a Date, epoch milliseconds or an ISO 8601 string',
    },
  });

/** A string that can name a group, a task or a schedule (`nameProblem`); other values are `@IsString`'s to refuse. */
export const IsName = (): PropertyDecorator =>
  ValidateBy({
    name: 'isName',
    validator: {
      validate: (value) => typeof value !== 'string' || nameProblem(value) === undefined,
      defaultMessage: (args) => `$property ${nameProblem(args?.value)}`,
    },
  });
