import { getMetadataStorage, ValidationTypes } from 'class-validator';

/** Whether options pass every rule of their class. */
type DirectRules = (options: Record<string, unknown>) => boolean;

/** The kinds of rule run here; a class with any other (nested options, `@IsDefined`) is left to class-validator. */
const RUN_HERE = new Set<string>([
  ValidationTypes.CUSTOM_VALIDATION,
  ValidationTypes.CONDITIONAL_VALIDATION,
  ValidationTypes.WHITELIST,
]);

const compiled = new WeakMap<object, DirectRules | undefined>();

/**
 * The rules of a class run straight from class-validator's metadata, as its `validateSync` runs them
 * (unknown keys refused, `@ValidateIf` / `@IsOptional` conditions, then each constraint), without the
 * error tree it builds either way. Per-call options are checked on every call: `schedule` costs about
 * 6 µs of Node CPU, and `validateSync` would add 4 µs to it, this a tenth of that. Only options it
 * refuses go to `validateSync`, for the messages. Undefined for a class with rules of another kind.
 */
export function directRules(rules: new () => object): DirectRules | undefined {
  if (compiled.has(rules)) return compiled.get(rules);
  const storage = getMetadataStorage();
  const metadata = storage.getTargetValidationMetadatas(rules, '', true, false);
  const runnable = metadata.every((rule) => RUN_HERE.has(rule.type) && !rule.each && !rule.groups?.length);
  const properties = [...new Set(metadata.map((rule) => rule.propertyName))].map((property) => {
    const own = metadata.filter((rule) => rule.propertyName === property);
    return {
      property,
      conditions: own
        .filter((rule) => rule.type === ValidationTypes.CONDITIONAL_VALIDATION)
        .map((rule) => rule.constraints[0] as (options: object, value: unknown) => boolean),
      constraints: own
        .filter((rule) => rule.type === ValidationTypes.CUSTOM_VALIDATION)
        .flatMap((rule) =>
          storage.getTargetValidatorConstraints(rule.constraintCls).map(({ instance, async }) => ({
            instance,
            async,
            constraints: rule.constraints,
          })),
        ),
    };
  });
  const known = new Set(properties.map(({ property }) => property));
  const run: DirectRules | undefined =
    runnable && properties.every(({ constraints }) => constraints.every(({ async }) => !async))
      ? (options) =>
          Object.keys(options).every((key) => known.has(key)) &&
          properties.every(({ property, conditions, constraints }) => {
            const value = options[property];
            if (!conditions.every((condition) => condition(options, value))) return true;
            // Written out: spreading shared arguments into each call's cost ten times the check itself. Only
            // classes without async constraints come here; any answer but true goes on to validateSync, which decides.
            return constraints.every(
              ({ instance, constraints }) =>
                instance.validate(value, { targetName: rules.name, property, object: options, value, constraints }) ===
                true,
            );
          })
      : undefined;
  compiled.set(rules, run);
  return run;
}
