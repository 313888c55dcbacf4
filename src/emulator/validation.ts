// zod issues -> the API's error body: the field path, the rule, and a stable code.
import type { z } from 'zod';
import { EmulatorError } from './errors.ts';

const CODE_BY_ISSUE: Record<string, string> = {
  unrecognized_keys: 'ERR_UNKNOWN_FIELD',
  invalid_type: 'ERR_INVALID_TYPE',
  invalid_value: 'ERR_INVALID_VALUE',
  invalid_format: 'ERR_INVALID_FORMAT',
  too_big: 'ERR_OUT_OF_RANGE',
  too_small: 'ERR_OUT_OF_RANGE',
  invalid_union: 'ERR_INVALID_VALUE',
  invalid_key: 'ERR_INVALID_VALUE',
  custom: 'ERR_INVALID',
};

export function describeIssue(issue: z.core.$ZodIssue): { code: string; msg: string } {
  if (issue.code === 'invalid_key' && issue.issues[0]) {
    // a map key failed its own rule: report that rule at the map's path
    return describeIssue({
      ...issue.issues[0],
      path: [...issue.path, ...issue.issues[0].path],
    } as z.core.$ZodIssue);
  }
  const path = issue.path.map(String).join('.');
  const custom = (issue as { params?: { error_code?: string } }).params?.error_code;
  if (issue.code === 'unrecognized_keys') {
    const at = path ? ` in ${path}` : '';
    return {
      code: 'ERR_UNKNOWN_FIELD',
      msg: `unknown field${issue.keys.length > 1 ? 's' : ''}${at}: ${issue.keys.join(', ')}`,
    };
  }
  if (issue.code === 'invalid_type' && /received undefined/.test(issue.message)) {
    return { code: 'ERR_MISSING_FIELD', msg: `${path}: is required` };
  }
  const code =
    custom ??
    (issue.code === 'invalid_format' && issue.format === 'regex'
      ? 'ERR_INVALID_FORMAT'
      : (CODE_BY_ISSUE[issue.code] ?? 'ERR_INVALID'));
  return { code, msg: path ? `${path}: ${issue.message}` : issue.message };
}

export function zodToApiError(err: z.ZodError): EmulatorError {
  const issues = err.issues.map(describeIssue);
  const first = issues[0] ?? { code: 'ERR_INVALID', msg: 'invalid request' };
  const more =
    issues.length > 1
      ? ` (and ${issues.length - 1} more: ${issues
          .slice(1)
          .map((i) => i.msg)
          .join('; ')})`
      : '';
  return new EmulatorError(400, first.code, first.msg + more);
}
