/** The methods the Data API answers (every endpoint is a GET), and its `Allow` header naming them. */
export const ALLOW = 'GET, HEAD, OPTIONS';
export const ACCEPTED_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);
