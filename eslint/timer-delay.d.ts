import type { Rule } from 'eslint';

/** house/timer-delay: see timer-delay.js. */
declare const rule: Rule.RuleModule;
export default rule;
