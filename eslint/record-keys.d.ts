import type { Rule } from 'eslint';

/** house/record-keys: see record-keys.js. */
declare const rule: Rule.RuleModule;
export default rule;
