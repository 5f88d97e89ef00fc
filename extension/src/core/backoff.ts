/** When to start the language server again after it stopped on its own. Pure. */

export const FIRST_DELAY_MS = 1_000;
export const MAX_DELAY_MS = 60_000;
/** A server that ran this long before it stopped counts as healthy: the next delay starts over. */
export const HEALTHY_RUN_MS = 60_000;

/** 1 s, 2 s, 4 s … up to a minute, for the `attempt`-th restart in a row (from 0). */
export function restartDelayMs(attempt: number): number {
  return Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.max(0, attempt));
}

/** The attempt number for the restart after a server that ran `ranForMs`. */
export function nextAttempt(previousAttempt: number, ranForMs: number): number {
  return ranForMs >= HEALTHY_RUN_MS ? 0 : previousAttempt + 1;
}
