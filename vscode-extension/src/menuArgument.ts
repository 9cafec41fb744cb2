// The expression a "Show in all lanes" invocation refers to. The Variables
// view passes {sessionId, container, variable}; the Watch view passes its
// element, which serializes to {sessionId, variable} (a watch expression's
// variable.name is the expression text). Bare {name, evaluateName} objects
// are accepted too, for older VS Code versions.

export interface MenuTarget {
  expression: string;
  sessionId?: string;
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

export function expressionFromMenuArgument(arg: unknown): MenuTarget | undefined {
  if (typeof arg !== 'object' || arg === null) return undefined;
  const a = arg as Record<string, unknown>;
  const sessionId = str(a.sessionId);
  const variable = a.variable;
  if (typeof variable === 'object' && variable !== null) {
    const v = variable as Record<string, unknown>;
    const expression = str(v.evaluateName) ?? str(v.name);
    return expression === undefined ? undefined : { expression, sessionId };
  }
  const expression = str(a.evaluateName) ?? str(a.expression) ?? str(a.name);
  return expression === undefined ? undefined : { expression, sessionId };
}
