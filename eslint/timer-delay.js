/**
 * house/timer-delay: a delay handed to Node's `setTimeout` or `setInterval` (the globals, or those of
 * `node:timers` and `node:timers/promises`) must be bounded by a constant the reader can see: a number
 * literal, a `const` initialised with one, `Math.min(...)` with such a bound among its arguments, or
 * arithmetic and conditionals of those. Node keeps a delay in a signed 32-bit millisecond count and turns
 * anything larger into 1 ms (TimeoutOverflowWarning), so a configured or client-given duration of more
 * than about 24.8 days would fire at once. Such a delay goes through `setLongTimeout` (src/util/timer.ts),
 * which waits it out in full; that file is the one place that calls setTimeout with a variable delay.
 */

/** The variable `name` refers to at `node`, looked up through the enclosing scopes. */
function variableOf(sourceCode, node, name) {
  for (let scope = sourceCode.getScope(node); scope; scope = scope.upper) {
    const found = scope.set.get(name);
    if (found) return found;
  }
  return undefined;
}

const timerModules = new Set(['timers', 'node:timers', 'timers/promises', 'node:timers/promises']);
const timerNames = new Set(['setTimeout', 'setInterval']);

/**
 * Where the delay is among the call's arguments when `callee` is one of Node's timer functions: 1 for the
 * globals and `node:timers` (callback first), 0 for `node:timers/promises`; undefined for anything else.
 */
function delayIndex(sourceCode, callee) {
  if (callee.type !== 'Identifier') return undefined;
  const variable = variableOf(sourceCode, callee, callee.name);
  if (!variable || variable.defs.length === 0) return timerNames.has(callee.name) ? 1 : undefined;
  const def = variable.defs[0];
  if (def.type !== 'ImportBinding' || def.node.type !== 'ImportSpecifier') return undefined;
  const from = def.parent.source.value;
  const imported = def.node.imported.name ?? def.node.imported.value;
  if (!timerModules.has(from) || !timerNames.has(imported)) return undefined;
  return from.endsWith('promises') ? 0 : 1;
}

/** True when `node` is bounded by constants (see the file comment); `seen` stops cycles through consts. */
function bounded(sourceCode, node, seen = new Set()) {
  while (node.type === 'TSAsExpression' || node.type === 'TSSatisfiesExpression' || node.type === 'TSNonNullExpression') node = node.expression;
  switch (node.type) {
    case 'Literal': return typeof node.value === 'number';
    case 'UnaryExpression': return bounded(sourceCode, node.argument, seen);
    case 'BinaryExpression': return bounded(sourceCode, node.left, seen) && bounded(sourceCode, node.right, seen);
    case 'ConditionalExpression': return bounded(sourceCode, node.consequent, seen) && bounded(sourceCode, node.alternate, seen);
    case 'CallExpression': return boundedCall(sourceCode, node, seen);
    case 'Identifier': return boundedConst(sourceCode, node, seen);
    default: return false;
  }
}

/** `Math.min(...)` with one bounded argument; `Math.max`, `Math.round`, `Math.floor`, `Math.ceil` of bounded ones; `Math.random()`. */
function boundedCall(sourceCode, node, seen) {
  const c = node.callee;
  if (c.type !== 'MemberExpression' || c.object.type !== 'Identifier' || c.object.name !== 'Math' || c.property.type !== 'Identifier') return false;
  if (c.property.name === 'min') return node.arguments.some((a) => bounded(sourceCode, a, seen));
  if (['max', 'round', 'floor', 'ceil', 'random'].includes(c.property.name)) return node.arguments.every((a) => bounded(sourceCode, a, seen));
  return false;
}

/** An identifier declared once with `const` and a bounded initialiser. */
function boundedConst(sourceCode, node, seen) {
  const variable = variableOf(sourceCode, node, node.name);
  if (!variable || variable.defs.length !== 1 || seen.has(variable)) return false;
  const def = variable.defs[0];
  if (def.type !== 'Variable' || def.parent.kind !== 'const' || !def.node.init || def.node.id.type !== 'Identifier') return false;
  seen.add(variable);
  return bounded(sourceCode, def.node.init, seen);
}

/** @type {import('eslint').Rule.RuleModule} */
export default {
  meta: {
    type: 'problem',
    docs: { description: 'delays past 2^31-1 ms go through setLongTimeout, not Node\'s timers, which fire them after 1 ms' },
    schema: [],
    messages: {
      unbounded: '{{name}} with a delay not bounded by a constant: Node fires a delay past 2^31-1 ms (about 24.8 days) after 1 ms; use setLongTimeout (src/util/timer.ts), or bound it with Math.min(<const>, …).',
    },
  },
  create(context) {
    const sourceCode = context.sourceCode;
    return {
      CallExpression(node) {
        const at = delayIndex(sourceCode, node.callee);
        if (at === undefined) return;
        const delay = node.arguments[at];
        if (delay === undefined || delay.type === 'SpreadElement' || bounded(sourceCode, delay)) return;
        context.report({ node, messageId: 'unbounded', data: { name: node.callee.name } });
      },
    };
  },
};
