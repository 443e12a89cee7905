/**
 * house/function-lines: no function longer than `max` lines, counted from its first line to its last
 * (blank lines and comments included, as `wc -l` would count them), like core `max-lines-per-function`
 * — except functions passed straight to one of `exemptCallees`, however the call is chained
 * (`describe(…, () => {…})`, `describe.each(rows)(…, () => {…})`, `describe.skipIf(c)(…, () => {…})`).
 * The test files exempt `describe` only: its callback is a container of test cases, not logic. Test
 * bodies (`it`, `test`), hooks and helper functions are counted.
 */

/** The name a call is made under: `describe` for `describe(…)`, `describe.skip(…)`, `describe.each(rows)(…)`. */
function calleeRoot(node) {
  let n = node;
  for (;;) {
    if (n.type === 'Identifier') return n.name;
    if (n.type === 'MemberExpression') n = n.object;
    else if (n.type === 'CallExpression') n = n.callee;
    else if (n.type === 'TaggedTemplateExpression') n = n.tag;
    else return undefined;
  }
}

/** @type {import('eslint').Rule.RuleModule} */
export default {
  meta: {
    type: 'suggestion',
    docs: { description: 'limit the lines of a function, callbacks of the named callees exempt' },
    schema: [
      {
        type: 'object',
        properties: { max: { type: 'integer', minimum: 1 }, exemptCallees: { type: 'array', items: { type: 'string' } } },
        additionalProperties: false,
      },
    ],
    messages: { tooLong: '{{name}} has too many lines ({{lines}}). Maximum allowed is {{max}}.' },
  },
  create(context) {
    const { max = 70, exemptCallees = [] } = context.options[0] ?? {};
    const exempt = new Set(exemptCallees);
    function check(fn) {
      const parent = fn.parent;
      if (parent?.type === 'CallExpression' && parent.arguments.includes(fn) && exempt.has(calleeRoot(parent.callee))) return;
      // A method's lines start at its name (and decorators), as core max-lines-per-function counts them.
      const owner = parent && (parent.type === 'MethodDefinition' || (parent.type === 'Property' && (parent.method || parent.kind !== 'init'))) ? parent : fn;
      const lines = owner.loc.end.line - owner.loc.start.line + 1;
      if (lines <= max) return;
      const name = fn.id?.name ?? (owner.key && owner.key.type === 'Identifier' ? owner.key.name : undefined)
        ?? (parent?.type === 'VariableDeclarator' && parent.id.type === 'Identifier' ? parent.id.name : undefined);
      context.report({ node: owner, loc: owner.loc.start, messageId: 'tooLong', data: { name: name ? `Function '${name}'` : 'Function', lines, max } });
    }
    return { FunctionDeclaration: check, FunctionExpression: check, ArrowFunctionExpression: check };
  },
};
