// The spec's rules on the free text of modules (header values, OAuth e-mail addresses and
// domains, session cookie prefixes, SAML IdP metadata), each a pattern that the wire schemas
// and CRD admission both check (src/api/rules.ts turns them into RULES), with the public
// reference's number for a value that breaks it.

/** A header value the API takes: no NUL, CR, LF or DEL (ERR_NGROK_7024; other controls pass). */
export const HEADER_VALUE_PATTERN = '^[^\\x00\\r\\n\\x7f]*$';
/**
 * The API's longest header name and value in bytes (ERR_NGROK_7105, 7106): the reference's pages
 * said 128 and 1,024 until they turned the numbers into placeholders (ngrok-docs, January 2024).
 */
export const HEADER_NAME_MAX_BYTES = 128;
export const HEADER_VALUE_MAX_BYTES = 1024;

/** A DNS name of two labels or more (letters in either case: lower case is a rule of its own). */
const DOMAIN = '[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+';
/** An e-mail domain an OAuth module lets in (ERR_NGROK_7039). */
export const EMAIL_DOMAIN_PATTERN = `^${DOMAIN}$`;
/** An e-mail address: RFC 5322 atoms and dots before the @, a domain after it (ERR_NGROK_7043). */
export const EMAIL_ADDRESS_PATTERN = `^[A-Za-z0-9!#$%&'*+/=?^_\`{|}~.-]+@${DOMAIN}$`;
/** A session cookie prefix: letters, digits and periods only (ERR_NGROK_7042). */
export const COOKIE_PREFIX_PATTERN = '^[A-Za-z0-9.]*$';
/**
 * SAML IdP metadata: an XML document (its declaration optional) whose root is an EntityDescriptor
 * or EntitiesDescriptor, in any namespace prefix (ERR_NGROK_7083). What a pattern can see: the
 * document's first element and its end; XML whitespace only (RE2 and JavaScript read \\s apart).
 */
export const SAML_METADATA_PATTERN =
  '^[ \\t\\r\\n]*(<\\?xml[^>]*\\?>[ \\t\\r\\n]*)?<([A-Za-z_][A-Za-z0-9_.-]*:)?Entit(y|ies)Descriptor[ \\t\\r\\n/>][^\\x00]*>[ \\t\\r\\n]*$';
/** Each rule's pattern and what a valid value is (rules.ts adds the test). */
export const TEXT_RULES = {
  headerValue: {
    must: 'hold no NUL, CR, LF or DEL character',
    errorCode: 'ERR_INVALID_HEADER_VALUE',
    pattern: HEADER_VALUE_PATTERN,
    maxLength: HEADER_VALUE_MAX_BYTES,
  },
  emailAddress: {
    must: 'be an e-mail address (name@example.com)',
    errorCode: 'ERR_OAUTH_EMAIL_INVALID',
    pattern: EMAIL_ADDRESS_PATTERN,
    maxLength: 254,
  },
  emailDomain: {
    must: 'be a domain name (example.com)',
    errorCode: 'ERR_OAUTH_EMAIL_DOMAIN_INVALID',
    pattern: EMAIL_DOMAIN_PATTERN,
    maxLength: 253,
  },
  cookiePrefix: {
    must: 'hold only letters, digits and periods',
    errorCode: 'ERR_COOKIE_PREFIX',
    pattern: COOKIE_PREFIX_PATTERN,
    maxLength: 255,
  },
  samlMetadata: {
    must: 'be SAML metadata XML: an EntityDescriptor (or EntitiesDescriptor) document',
    errorCode: 'ERR_SAML_METADATA_UNPARSABLE',
    pattern: SAML_METADATA_PATTERN,
    maxLength: 262_144,
  },
};
