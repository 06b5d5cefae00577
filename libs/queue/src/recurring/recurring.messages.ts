/** The texts of `@Recurring`'s errors, in one place. */

export const nameTaken = (where: string, name: string, other: string) =>
  `${where}: the name "${name}" is already used by @Recurring on ${other}`;

export const stillDeclared = (name: string, label: string) =>
  `"${name}" is still declared by @Recurring on ${label}: remove the decorator first`;
