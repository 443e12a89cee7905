import type { Rule } from 'eslint';

/** house/function-lines: see function-lines.js. */
declare const rule: Rule.RuleModule;
export default rule;
