import { describe, expect, it } from 'vitest';
import { HEALTHY_RUN_MS, MAX_DELAY_MS, nextAttempt, restartDelayMs } from '../../src/core/backoff';
import { codeCellStarts } from '../../src/core/cells';

describe('restart back-off', () => {
  it('doubles from one second up to a minute', () => {
    expect([0, 1, 2, 3].map(restartDelayMs)).toEqual([1000, 2000, 4000, 8000]);
    expect(restartDelayMs(30)).toBe(MAX_DELAY_MS);
  });

  it('starts over after a server that ran long enough', () => {
    expect(nextAttempt(5, HEALTHY_RUN_MS)).toBe(0);
    expect(nextAttempt(2, 10)).toBe(3);
  });
});

describe('cell markers', () => {
  it('finds code cells the way the profiler splits them, not markdown ones', () => {
    const text = [
      'import x',
      '# %%',
      'a = 1',
      '#%% named',
      '# %% [markdown]',
      '# text',
      '# In[3]:',
      'b',
      '  # %% indented',
    ].join('\n');
    expect(codeCellStarts(text)).toEqual([1, 3, 6, 8]);
  });
});
