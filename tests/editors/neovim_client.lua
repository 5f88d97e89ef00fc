-- Neovim's built-in LSP client driving `gpulens serve`, headless, for tests/editors/test_neovim.py.
-- Run as: nvim --headless -u NONE -i NONE -n -c "luafile neovim_client.lua"
-- Reads GPULENS_SERVER (the command, as JSON), GPULENS_WORKSPACE (a folder holding
-- train.py, other.py and cells.py) and GPULENS_RESULT (where to write what happened, as JSON).
-- Works with the Neovim 0.7 API (vim.lsp.start_client) that later versions keep.

local result = { messages = {}, errors = {} }
local timeout = 20000

local function finish()
  local file = io.open(vim.env.GPULENS_RESULT, 'w')
  file:write(vim.fn.json_encode(result))
  file:close()
  vim.cmd('qa!')
end

-- a step that fails is recorded and the next one runs: each test reads its own step
local function step(name, fn)
  local ok, err = pcall(fn)
  if not ok then
    result.errors[name] = tostring(err)
  end
  return ok
end

local function open(name)
  vim.cmd('edit ' .. vim.fn.fnameescape(vim.env.GPULENS_WORKSPACE .. '/' .. name))
  vim.bo.filetype = 'python'
  return vim.api.nvim_get_current_buf()
end

local function codes(bufnr)
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(found, d.code)
  end
  table.sort(found)
  return found
end

local function has_code(bufnr, code)
  return vim.tbl_contains(codes(bufnr), code)
end

local function wait_for(what, condition)
  if not vim.wait(timeout, condition, 50) then
    error('timed out waiting for ' .. what)
  end
end

local ok, err = pcall(function()
  local client_id
  local started = step('start', function()
    client_id = vim.lsp.start_client({
      name = 'gpulens',
      cmd = vim.fn.json_decode(vim.env.GPULENS_SERVER),
      root_dir = vim.env.GPULENS_WORKSPACE,
      -- an empty section: Lua's {} goes out as [] in every message that carries it
      settings = { gpulens = {} },
      handlers = {
        ['window/showMessage'] = function(_, params)
          table.insert(result.messages, params.message)
        end,
      },
    })
    assert(client_id, 'the client did not start')
  end)
  if not started then
    return
  end
  local client = vim.lsp.get_client_by_id(client_id)

  -- diagnostics for a GPU001 file
  local train = open('train.py')
  vim.lsp.buf_attach_client(train, client_id)
  step('diagnostics', function()
    wait_for('GPU001 in train.py', function() return has_code(train, 'GPU001') end)
    local d = vim.diagnostic.get(train)[1]
    result.diagnostic = { code = d.code, lnum = d.lnum, col = d.col, end_col = d.end_col,
                          message = d.message, source = d.source }
  end)

  -- hover on the finding
  step('hover', function()
    local d = result.diagnostic
    local params = {
      textDocument = vim.lsp.util.make_text_document_params(train),
      position = { line = d.lnum, character = d.col + 1 },
    }
    local answers = vim.lsp.buf_request_sync(train, 'textDocument/hover', params, timeout)
    local hover = answers[client_id].result
    result.hover = { kind = hover.contents.kind, value = hover.contents.value }
  end)

  -- the preferred quick-fix, picked in vim.lsp.buf.code_action's menu, then the file saved
  step('quick-fix', function()
    local d = result.diagnostic
    vim.api.nvim_win_set_cursor(0, { d.lnum + 1, d.col + 1 })
    local offered = {}
    vim.ui.select = function(items, _, on_choice)
      local chosen
      for index, item in ipairs(items) do
        local action = item.action or item[2]
        table.insert(offered, action.title)
        if action.isPreferred and chosen == nil then
          chosen = index
        end
      end
      on_choice(items[chosen], chosen)
    end
    local before = vim.api.nvim_buf_get_changedtick(train)
    vim.lsp.buf.code_action()
    wait_for('the quick-fix', function()
      return vim.api.nvim_buf_get_changedtick(train) ~= before
    end)
    vim.cmd('write')
    result.offered = offered
    result.fixed = table.concat(vim.fn.readfile(vim.api.nvim_buf_get_name(train), 'b'), '\n')
  end)

  -- code lens on a `# %%` file
  local cells = open('cells.py')
  vim.lsp.buf_attach_client(cells, client_id)
  step('code lens', function()
    wait_for('the code lenses', function()
      vim.lsp.codelens.refresh()
      return #vim.lsp.codelens.get(cells) > 0
    end)
    result.lenses = {}
    for _, lens in ipairs(vim.lsp.codelens.get(cells)) do
      table.insert(result.lenses, { line = lens.range.start.line, title = lens.command.title })
    end
  end)

  -- a setting takes effect, and removing the section gives the defaults back
  local other = open('other.py')
  vim.lsp.buf_attach_client(other, client_id)
  step('settings', function()
    wait_for('GPU001 in other.py', function() return has_code(other, 'GPU001') end)
    client.config.settings = { gpulens = { rules = { ignore = { 'GPU001' } } } }
    client.notify('workspace/didChangeConfiguration', { settings = client.config.settings })
    wait_for('GPU001 ignored', function() return not has_code(other, 'GPU001') end)
    result.ignored = codes(other)
    client.config.settings = {}
    client.notify('workspace/didChangeConfiguration', { settings = client.config.settings })
    wait_for('GPU001 back', function() return has_code(other, 'GPU001') end)
    result.restored = codes(other)
  end)

  step('stop', function()
    vim.lsp.stop_client(client_id)
    wait_for('the server to exit', function() return vim.lsp.get_client_by_id(client_id) == nil end)
  end)
end)
if not ok then
  result.errors.script = tostring(err)
end
finish()
