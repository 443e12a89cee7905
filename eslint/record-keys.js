/**
 * house/record-keys: no computed-key assignment into an object that was created as `{}`
 * (`const out = {}; out[name] = v`), and no `Object.assign` into one from a value that is not an
 * object literal. A plain object's `__proto__` is an accessor: assigning that key sets the object's
 * prototype instead of adding an entry, so a service, check, tag or header a client names
 * `__proto__` would vanish from the answer. Objects keyed by names build their entries with
 * `Object.fromEntries`, a spread (`{ ...raw }`) or `Object.create(null)`, which all define the key
 * as an own property; an object created any of those ways is not reported.
 */

/** The variable `name` refers to at `node`, looked up through the enclosing scopes. */
function variableOf(sourceCode, node, name) {
  for (let scope = sourceCode.getScope(node); scope; scope = scope.upper) {
    const found = scope.set.get(name);
    if (found) return found;
  }
  return undefined;
}

/** True when `node` is `{}`, or an identifier only ever assigned by `let|const|var x = {}` (type annotations allowed). */
function createdEmpty(sourceCode, node) {
  if (node.type === 'ObjectExpression') return node.properties.length === 0;
  if (node.type !== 'Identifier') return false;
  const variable = variableOf(sourceCode, node, node.name);
  if (!variable || variable.defs.length !== 1) return false;
  // Assigned again somewhere: not known to be {} where it is used.
  if (variable.references.some((r) => r.isWrite() && !r.init)) return false;
  const def = variable.defs[0].node;
  if (def.type !== 'VariableDeclarator' || !def.init) return false;
  let init = def.init;
  while (init.type === 'TSAsExpression' || init.type === 'TSSatisfiesExpression') init = init.expression;
  return init.type === 'ObjectExpression' && init.properties.length === 0;
}

/** @type {import('eslint').Rule.RuleModule} */
export default {
  meta: {
    type: 'problem',
    docs: { description: 'build name-keyed objects so that a key named __proto__ stays an entry' },
    schema: [],
    messages: {
      computedKey: "'{{name}}[…] = …' into an object created as {}: a key named __proto__ sets its prototype instead; build it with Object.fromEntries or Object.create(null).",
      assign: 'Object.assign into an object created as {}: a key named __proto__ sets its prototype instead; use a spread ({ ...value }).',
    },
  },
  create(context) {
    const sourceCode = context.sourceCode;
    return {
      AssignmentExpression(node) {
        const left = node.left;
        if (left.type !== 'MemberExpression' || !left.computed) return;
        if (left.property.type === 'Literal' && left.property.value !== '__proto__') return;
        if (createdEmpty(sourceCode, left.object)) {
          context.report({ node, messageId: 'computedKey', data: { name: left.object.type === 'Identifier' ? left.object.name : '{}' } });
        }
      },
      CallExpression(node) {
        const callee = node.callee;
        const isAssign = callee.type === 'MemberExpression' && !callee.computed && callee.object.type === 'Identifier'
          && callee.object.name === 'Object' && callee.property.type === 'Identifier' && callee.property.name === 'assign';
        if (!isAssign || node.arguments.length < 2 || !createdEmpty(sourceCode, node.arguments[0])) return;
        if (node.arguments.slice(1).every((a) => a.type === 'ObjectExpression')) return;
        context.report({ node, messageId: 'assign' });
      },
    };
  },
};
