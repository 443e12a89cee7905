/** `?filter=` on list endpoints: compiled once per request against the endpoint's schema. */
import { RegistryError } from '../domain/errors.ts';
import { compileFilter, FilterError, type Schema } from '../filter/index.ts';
import { param, type Request } from './request.ts';

/** Compiles `?filter` against the endpoint's schema; a bad expression is 400/1009 (consul: 500). */
export function filterOf(req: Request, schema: Schema): (value: unknown) => boolean {
  const expression = param(req, 'filter');
  if (expression === undefined || expression.trim() === '') return () => true;
  try {
    return compileFilter(expression, schema);
  } catch (err) {
    if (!(err instanceof FilterError)) throw err;
    throw new RegistryError('filterInvalid', { why: err.message });
  }
}

