// Builds the federated extension into ../server/gpulens/labextension with @jupyter/builder,
// against the JupyterLab core described by @jupyterlab/core-meta: no Python, no network.
// Packages are found by node's resolution, so a hoisted (workspace) install works too.
const { spawnSync } = require('node:child_process');

const builder = require.resolve('@jupyter/builder/lib/build-labextension.js');
const core = require.resolve('@jupyterlab/core-meta/core.package.json');
const args = [builder, '--core-package-file', core, ...process.argv.slice(2), __dirname];
const result = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: __dirname });
process.exit(result.status ?? 1);
