/** What the adapters (cluster/) use of the generic helpers. */
export { SeqRing, seqAt } from './seq-ring.ts';
export { SlotSet, type Slotted } from './slot-set.ts';
export { setLongInterval, setLongTimeout, sleepMs, type LongTimer } from './timer.ts';
