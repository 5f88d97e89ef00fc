# VS Code extension: build, test (unit + end-to-end in code-server), package.
# Included by the root Makefile (`include extension/make.mk`, after STAMP is defined); paths
# are relative to the repository root.
#
#   make vscode-build     type-check (strict) and bundle into extension/out/
#   make vscode-lint      eslint (typescript-eslint, strict and type-checked) and prettier;
#                         part of `make lint`
#   make vscode-test      unit tests (vitest), then the end-to-end test: the .vsix installed
#                         into code-server, driven by Debian's Chromium through playwright-core.
#                         First run on a fresh machine also installs (cached in .cache/):
#                         apt packages (chromium, build deps of code-server's native modules,
#                         ripgrep) and code-server; later runs reuse them.
#   make vscode-package   dist/gpulens-<version>.vsix

VSCODE_VERSION := $(shell node -p "require('./extension/package.json').version" 2>/dev/null)
VSCODE_VSIX    := dist/gpulens-$(VSCODE_VERSION).vsix
VSCODE_DEPS    := node_modules/.gpulens-vscode-deps
VSCODE_SOURCES := $(shell find extension/src -name '*.ts' 2>/dev/null) extension/package.json \
                  extension/esbuild.mjs extension/tsconfig.json extension/README.md extension/.vscodeignore

.PHONY: vscode-build vscode-lint vscode-test vscode-unit vscode-e2e vscode-package

$(VSCODE_DEPS): extension/package.json package.json
	npm install --workspace extension --no-audit --no-fund
	@touch $@

vscode-lint: $(VSCODE_DEPS)
	cd extension && npm run --silent lint

lint: vscode-lint

vscode-build: $(VSCODE_DEPS)
	cd extension && npx tsc -p .
	cd extension && node esbuild.mjs

$(VSCODE_VSIX): $(VSCODE_DEPS) $(VSCODE_SOURCES)
	cd extension && npx tsc -p .
	@mkdir -p dist
	cd extension && node esbuild.mjs --production
	cd extension && npx vsce package --no-dependencies --skip-license --out ../$(VSCODE_VSIX)

vscode-package: $(VSCODE_VSIX)

# the unit tests draw payloads the Python side makes as they start: they need the .venv
vscode-unit: $(VSCODE_DEPS) $(STAMP)
	cd extension && npx tsc -p .
	cd extension && npx vitest run

# the end-to-end test runs the server from the repository's .venv (gpulens installed editable)
vscode-e2e: $(VSCODE_VSIX) $(STAMP)
	cd extension && GPULENS_VSIX=$(CURDIR)/$(VSCODE_VSIX) node --test --test-concurrency=1 --test-timeout=300000 test/e2e/

vscode-test: vscode-unit vscode-e2e
