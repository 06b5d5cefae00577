/**
 * What Redis gives a script besides Lua 5.1's standard library: the `redis` table and `cjson`
 * (encode with `%.14g` numbers and escaped `/`, as lua-cjson does). `__nrq_call` is the engine's
 * command function; it answers an error as `{ err = message }`, which `redis.call` raises and
 * `redis.pcall` returns, as Redis does.
 */
export const LUA_PRELUDE = String.raw`
local command = __nrq_call
__nrq_call = nil
redis = {
  call = function(...)
    local reply = command(...)
    if type(reply) == 'table' and reply.err ~= nil then error(reply, 0) end
    return reply
  end,
  pcall = function(...) return command(...) end,
  error_reply = function(message) return { err = message } end,
  status_reply = function(message) return { ok = message } end,
  log = function() end,
  setresp = function() end,
  set_repl = function() end,
  replicate_commands = function() return true end,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
}

cjson = { null = setmetatable({}, { __tostring = function() return 'null' end }) }
local escapes = {
  ['"'] = '\\"', ['\\'] = '\\\\', ['/'] = '\\/', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n', ['\r'] = '\\r',
  ['\t'] = '\\t',
}
local function escape(c) return escapes[c] or string.format('\\u%04x', string.byte(c)) end
local encode
local function encodeTable(t)
  local count, max = 0, 0
  for k in pairs(t) do
    if type(k) == 'number' and k > 0 and math.floor(k) == k then
      if k > max then max = k end
      count = count + 1
    else
      count = -1
      break
    end
  end
  local parts = {}
  if count > 0 and max == count then
    for i = 1, max do parts[i] = encode(t[i]) end
    return '[' .. table.concat(parts, ',') .. ']'
  end
  for k, v in pairs(t) do parts[#parts + 1] = encode(tostring(k)) .. ':' .. encode(v) end
  return '{' .. table.concat(parts, ',') .. '}'
end
encode = function(v)
  local kind = type(v)
  if kind == 'string' then return '"' .. (string.gsub(v, '[%c"\\/]', escape)) .. '"' end
  if kind == 'number' then
    if v ~= v or v == math.huge or v == -math.huge then error('Cannot serialise number: must not be NaN or Inf') end
    return string.format('%.14g', v)
  end
  if kind == 'boolean' then return tostring(v) end
  if v == nil or v == cjson.null then return 'null' end
  if kind == 'table' then return encodeTable(v) end
  error('Cannot serialise ' .. kind .. ': type not supported')
end
cjson.encode = function(v) return encode(v) end

local function utf8char(code)
  if code < 0x80 then return string.char(code) end
  if code < 0x800 then return string.char(0xC0 + math.floor(code / 0x40), 0x80 + code % 0x40) end
  if code < 0x10000 then
    return string.char(0xE0 + math.floor(code / 0x1000), 0x80 + math.floor(code / 0x40) % 0x40, 0x80 + code % 0x40)
  end
  return string.char(0xF0 + math.floor(code / 0x40000), 0x80 + math.floor(code / 0x1000) % 0x40,
    0x80 + math.floor(code / 0x40) % 0x40, 0x80 + code % 0x40)
end
local unescapes = { b = '\b', f = '\f', n = '\n', r = '\r', t = '\t', ['"'] = '"', ['\\'] = '\\', ['/'] = '/' }
local function skip(s, i) return string.find(s, '[^ \t\r\n]', i) or (#s + 1) end
local function decodeString(s, i)
  local parts, j = {}, i + 1
  while true do
    local c = string.sub(s, j, j)
    if c == '' then error('Expected closing quote in JSON string') end
    if c == '"' then return table.concat(parts), j + 1 end
    if c == '\\' then
      local e = string.sub(s, j + 1, j + 1)
      if e == 'u' then
        local code = tonumber(string.sub(s, j + 2, j + 5), 16)
        j = j + 6
        if code >= 0xD800 and code <= 0xDBFF and string.sub(s, j, j + 1) == '\\u' then
          code = 0x10000 + (code - 0xD800) * 0x400 + (tonumber(string.sub(s, j + 2, j + 5), 16) - 0xDC00)
          j = j + 6
        end
        parts[#parts + 1] = utf8char(code)
      else
        parts[#parts + 1] = unescapes[e] or error('Invalid escape in JSON string')
        j = j + 2
      end
    else
      local k = string.find(s, '["\\]', j)
      if not k then error('Expected closing quote in JSON string') end
      parts[#parts + 1] = string.sub(s, j, k - 1)
      j = k
    end
  end
end
-- After an item of an object or array: whether the object or array ended (at close), and where to read on.
local function nextItem(s, i, close, what)
  i = skip(s, i)
  local c = string.sub(s, i, i)
  if c == close then return true, i + 1 end
  if c ~= ',' then error('Expected comma or ' .. what .. ' end in JSON') end
  return false, i + 1
end
local decodeValue
decodeValue = function(s, i)
  i = skip(s, i)
  local c = string.sub(s, i, i)
  if c == '{' then
    local object = {}
    i = skip(s, i + 1)
    if string.sub(s, i, i) == '}' then return object, i + 1 end
    while true do
      local key
      key, i = decodeString(s, skip(s, i))
      i = skip(s, i)
      if string.sub(s, i, i) ~= ':' then error('Expected colon in JSON object') end
      object[key], i = decodeValue(s, i + 1)
      local ended
      ended, i = nextItem(s, i, '}', 'object')
      if ended then return object, i end
    end
  elseif c == '[' then
    local array, n = {}, 0
    i = skip(s, i + 1)
    if string.sub(s, i, i) == ']' then return array, i + 1 end
    while true do
      n = n + 1
      array[n], i = decodeValue(s, i)
      local ended
      ended, i = nextItem(s, i, ']', 'array')
      if ended then return array, i end
    end
  elseif c == '"' then
    return decodeString(s, i)
  elseif string.sub(s, i, i + 3) == 'true' then
    return true, i + 4
  elseif string.sub(s, i, i + 4) == 'false' then
    return false, i + 5
  elseif string.sub(s, i, i + 3) == 'null' then
    return cjson.null, i + 4
  end
  local number = string.match(s, '^-?%d+%.?%d*[eE]?[-+]?%d*', i)
  if not number then error('Expected value but found invalid token in JSON at character ' .. i) end
  return tonumber(number), i + #number
end
cjson.decode = function(s)
  local value, i = decodeValue(s, 1)
  if skip(s, i) <= #s then error('Expected the end but found invalid token in JSON at character ' .. i) end
  return value
end
`;
