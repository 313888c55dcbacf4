// The public API's error numbers (its error reference), by the emulator's descriptive
// code. Clients test errors by `error_code` (`ERR_NGROK_<number>`): where the reference has
// a number for a case the emulator answers with it; the descriptive name always stays in
// `details.code`, and a case the reference has no number for keeps its descriptive name.
export const PUBLIC_ERROR_NUMBERS: Readonly<Record<string, number>> = {
  ERR_METADATA_TOO_LONG: 100,
  ERR_UNAUTHORIZED: 200,
  ERR_BAD_AUTHORIZATION: 201,
  ERR_FORBIDDEN: 203,
  ERR_INVALID_ID: 223,
  ERR_INVALID_LIMIT: 230,
  ERR_INVALID_FILTER: 230,
  ERR_UNKNOWN_QUERY_PARAMETER: 231,
  ERR_REFERENCE_NOT_FOUND: 380,
  ERR_IP_POLICY_NOT_FOUND: 1402,
  ERR_IP_POLICY_RULE_NOT_FOUND: 1404,
  ERR_ONLY_RULE_IN_USE: 1419,
  ERR_IP_POLICY_IN_USE: 1420,
  ERR_RATE_LIMITED: 1214,
  ERR_IP_RESTRICTION_POLICY_NOT_FOUND: 1801,
  ERR_OWNER_NOT_ALLOWED: 3403,
  ERR_INVALID_JSON: 3411,
  ERR_BACKEND_NOT_FOUND: 6501,
  ERR_MODULE_IP_POLICY_NOT_FOUND: 7007,
};

export const publicErrorCode = (code: string): string => {
  const n = PUBLIC_ERROR_NUMBERS[code];
  return n === undefined ? code : `ERR_NGROK_${n}`;
};
