// A set of keys kept as the one key while it holds one. The indexes that map something to the
// objects holding it (a conflict key, a referenced object, a listed resource's conflict key)
// have one holder for almost every entry, and a Set of one costs about 150 bytes where the key
// itself costs nothing more (the cache already holds it): at 10,000 objects, megabytes.

export type Holders = string | Set<string>;

/** `h` with `k` added (a new Set only at the second holder). */
export function withHolder(h: Holders | undefined, k: string): Holders {
  if (h === undefined || h === k) return k;
  if (typeof h === 'string') return new Set([h, k]);
  return h.add(k);
}

/** `h` without `k`: undefined once empty, the one key left once one is left. */
export function withoutHolder(h: Holders | undefined, k: string): Holders | undefined {
  if (h === undefined || h === k) return undefined;
  if (typeof h === 'string') return h;
  h.delete(k);
  if (h.size > 1) return h;
  return h.size ? h.values().next().value : undefined;
}

/** The keys held (in the order they were added). */
export function holdersOf(h: Holders | undefined): Iterable<string> {
  return h === undefined ? [] : typeof h === 'string' ? [h] : h;
}
