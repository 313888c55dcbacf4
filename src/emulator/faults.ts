// Fault injection, off by default and seeded so a run can be repeated.
import { z } from 'zod';
import { DEFAULT_ACCOUNT } from './defaults.ts';

export const FaultConfig = z.strictObject({
  /** Fraction of API requests answered 500/502/503 before any work is done. */
  errorRate: z.number().min(0).max(1).default(0),
  errorStatuses: z.array(z.union([z.literal(500), z.literal(502), z.literal(503)])).default([500, 502, 503]),
  /** Fraction answered 429 with Retry-After. */
  rateLimitRate: z.number().min(0).max(1).default(0),
  retryAfterSeconds: z.number().int().min(0).default(1),
  /** Fraction of requests whose connection is dropped after the work was done (the response is lost). */
  dropRate: z.number().min(0).max(1).default(0),
  /**
   * Fraction of requests a gateway in front of the API answers 504 (its own HTML page) at once,
   * while the API does the work `lateMs` later: the answer is lost, the change is not, and a
   * client that looks for it at once does not find it yet.
   */
  lateRate: z.number().min(0).max(1).default(0),
  lateMs: z.number().int().min(0).max(600_000).default(2000),
  /** Faults injected in all, at most (default: no limit): one fault at a chosen moment. */
  maxFaults: z.number().int().min(0).optional(),
  /** Added latency: a uniform delay in [0, latencyMs]. */
  latencyMs: z.number().int().min(0).default(0),
  /** Only paths matching this regular expression are affected (default: all API paths). */
  pathPattern: z
    .string()
    .refine(
      (p) => {
        try {
          new RegExp(p);
          return true;
        } catch {
          return false;
        }
      },
      { message: 'must be a valid regular expression' },
    )
    .optional(),
  /** Only these methods are affected (default: all). */
  methods: z.array(z.string()).optional(),
  /** Only requests with a key of these accounts are affected (default: all; the first is `default`). */
  accounts: z.array(z.string()).optional(),
  seed: z.number().int().default(1),
});
export type FaultConfig = z.infer<typeof FaultConfig>;

/** mulberry32: small, fast, seeded. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export type FaultDecision =
  | { kind: 'none' }
  | { kind: 'error'; status: number }
  | { kind: 'rate-limit'; retryAfter: number }
  | { kind: 'late'; afterMs: number };

export class Faults {
  config: FaultConfig = FaultConfig.parse({});
  private rand = seeded(1);
  private pattern: RegExp | undefined;
  /** Faults injected since the configuration was set. */
  private injected = 0;

  set(input: unknown): FaultConfig {
    this.config = FaultConfig.parse(input);
    this.injected = 0;
    this.rand = seeded(this.config.seed);
    this.pattern = this.config.pathPattern ? new RegExp(this.config.pathPattern) : undefined;
    return this.config;
  }

  private applies(method: string, path: string, account: string): boolean {
    if (this.config.maxFaults !== undefined && this.injected >= this.config.maxFaults) return false;
    if (this.config.accounts && !this.config.accounts.includes(account)) return false;
    if (this.pattern && !this.pattern.test(path)) return false;
    return !this.config.methods || this.config.methods.includes(method);
  }

  latency(method: string, path: string, account = DEFAULT_ACCOUNT): number {
    return this.config.latencyMs && this.applies(method, path, account)
      ? Math.floor(this.rand() * this.config.latencyMs)
      : 0;
  }

  before(method: string, path: string, account = DEFAULT_ACCOUNT): FaultDecision {
    const c = this.config;
    if (!this.applies(method, path, account)) return { kind: 'none' };
    if (c.errorRate && this.rand() < c.errorRate) {
      this.injected++;
      return {
        kind: 'error',
        status: c.errorStatuses[Math.floor(this.rand() * c.errorStatuses.length)] ?? 503,
      };
    }
    if (c.rateLimitRate && this.rand() < c.rateLimitRate) {
      this.injected++;
      return { kind: 'rate-limit', retryAfter: c.retryAfterSeconds };
    }
    if (c.lateRate && this.rand() < c.lateRate) {
      this.injected++;
      return { kind: 'late', afterMs: c.lateMs };
    }
    return { kind: 'none' };
  }

  dropAfter(method: string, path: string, account = DEFAULT_ACCOUNT): boolean {
    const drop =
      !!this.config.dropRate && this.applies(method, path, account) && this.rand() < this.config.dropRate;
    if (drop) this.injected++;
    return drop;
  }
}
