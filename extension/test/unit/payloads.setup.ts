// Before the tests: the payloads they draw, made now by the Python side from recorded NVML
// answers and profiler captures (scripts/client_payloads.py), so the client is checked
// against what the server says today rather than a copy kept by hand.
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PAYLOADS, REPO } from './payloads';

export default function setup(): void {
  const venv = join(REPO, '.venv', 'bin', 'python');
  const python = process.env.GPULENS_PYTHON ?? (existsSync(venv) ? venv : 'python3');
  rmSync(PAYLOADS, { recursive: true, force: true });
  execFileSync(python, [join(REPO, 'scripts', 'client_payloads.py'), PAYLOADS], {
    stdio: 'inherit',
  });
}
