-- melchior's Lua client: framing, JSON, discovery and the verbs, in plain Lua with no
-- dependencies. Printed by `melchior lua-api` (which fills in the constants below from
-- melchior's limits); this file is not meant to be loaded as it stands.
--
--   local melchior = load(src)(host.stream [, options])      -- Lua 5.2+, LuaJIT
--   local melchior = loadstring(src)(host.stream [, options]) -- Lua 5.1
--
-- host.stream(path) dials the Unix socket at `path` (plain Lua has no sockets) and returns an
-- object with s:read(n) (exactly n bytes, or nil at end of input), s:write(data) and s:close();
-- or nil and one of "unknown_session" (no such socket), "gone" (nobody answers it), "timeout".
-- options: getenv (default os.getenv), uid (for the runtime directory without
-- XDG_RUNTIME_DIR; default read from /proc/self/status).
--
-- Refusals are raised as Lua errors whose value is a table {code = "<code>"} (tostring gives
-- "melchior: <code>"). Runs unchanged on Lua 5.1 to 5.4 and LuaJIT: no goto, no integer
-- division, no bitwise operators, no string.pack. It never lists a directory and never
-- reaches past what the walls let a Python caller with the same environment reach: it reads
-- the key notes of the sessions it names to check the walls as the tool does, and
-- the callee checks every call again. It holds the caller's secret only to say `hello`.

local stream_of, options = ...
options = options or {}

local K = __MELCHIOR_CONSTANTS__
-- Nesting deeper than this is refused (bad_json), well inside what every runtime's stack
-- and Python's recursion limit allow.
local MAX_DEPTH = 512

local byte, char, sub, find, format = string.byte, string.char, string.sub, string.find,
    string.format
local concat, sort = table.concat, table.sort
local floor = math.floor
local numtype = rawget(math, "type") -- 5.3+: "integer" or "float"; nil before
local tointeger = rawget(math, "tointeger")

local M = { limits = K }

-- ---------------------------------------------------------------- errors

local Refusal = {}
Refusal.__index = Refusal
Refusal.__tostring = function(self)
  return "melchior: " .. self.code
end

local function refuse(code)
  error(setmetatable({ code = code }, Refusal), 0)
end

-- The code carried by an error value raised here (nil for any other error).
function M.code_of(err)
  if getmetatable(err) == Refusal then
    return err.code
  end
  return nil
end

-- ---------------------------------------------------------------- values

-- JSON null, and markers that keep [] and {} apart once decoded.
M.null = setmetatable({}, {
  __tostring = function()
    return "null"
  end,
})
local ARRAY = { __name = "melchior.array" }
local OBJECT = { __name = "melchior.object" }

function M.array(t)
  return setmetatable(t or {}, ARRAY)
end

function M.object(t)
  return setmetatable(t or {}, OBJECT)
end

function M.is_array(t)
  return getmetatable(t) == ARRAY
end

function M.is_object(t)
  return getmetatable(t) == OBJECT
end

-- ---------------------------------------------------------------- UTF-8

-- True if `s` is well-formed UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF).
local function utf8_ok(s)
  local i, n = 1, #s
  while i <= n do
    local a = find(s, "[\128-\255]", i)
    if not a then
      return true
    end
    local c = byte(s, a)
    local len, lo, hi
    if c >= 0xC2 and c <= 0xDF then
      len = 2
    elseif c >= 0xE0 and c <= 0xEF then
      len = 3
      lo = (c == 0xE0) and 0xA0 or 0x80
      hi = (c == 0xED) and 0x9F or 0xBF
    elseif c >= 0xF0 and c <= 0xF4 then
      len = 4
      lo = (c == 0xF0) and 0x90 or 0x80
      hi = (c == 0xF4) and 0x8F or 0xBF
    else
      return false
    end
    for k = 1, len - 1 do
      local d = byte(s, a + k)
      local dlo, dhi = 0x80, 0xBF
      if k == 1 and lo then
        dlo, dhi = lo, hi
      end
      if not d or d < dlo or d > dhi then
        return false
      end
    end
    i = a + len
  end
  return true
end
M.utf8_ok = utf8_ok

local function utf8_char(cp)
  if cp < 0x80 then
    return char(cp)
  elseif cp < 0x800 then
    return char(0xC0 + floor(cp / 64), 0x80 + cp % 64)
  elseif cp < 0x10000 then
    return char(0xE0 + floor(cp / 4096), 0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
  end
  return char(0xF0 + floor(cp / 262144), 0x80 + floor(cp / 4096) % 64,
    0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
end

-- Characters (code points) in well-formed UTF-8: every byte that does not continue one.
local function utf8_len(s)
  local _, count = string.gsub(s, "[^\128-\191]", "")
  return count
end

-- ---------------------------------------------------------------- JSON decoding

local json = {}
M.json = json

local WS = "^[ \t\n\r]*"
local ESCAPES = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n",
  r = "\r", t = "\t" }

local function bad()
  refuse("bad_json")
end

local decode_value

local function skip_ws(s, i)
  local _, e = find(s, WS, i)
  return e + 1
end

local function hex4(s, i)
  local h = sub(s, i, i + 3)
  if not find(h, "^%x%x%x%x$") then
    bad()
  end
  return tonumber(h, 16)
end

local function decode_string(s, i)
  -- s[i] is the opening quote
  local parts = {}
  i = i + 1
  while true do
    local a = find(s, '["\\%z\1-\31]', i)
    if not a then
      bad()
    end
    parts[#parts + 1] = sub(s, i, a - 1)
    local c = sub(s, a, a)
    if c == '"' then
      return concat(parts), a + 1
    elseif c ~= "\\" then
      bad() -- a raw control character
    end
    local e = sub(s, a + 1, a + 1)
    if e == "u" then
      local cp = hex4(s, a + 2)
      i = a + 6
      if cp >= 0xD800 and cp <= 0xDBFF then
        if sub(s, i, i + 1) ~= "\\u" then
          bad() -- a lone high surrogate has no UTF-8 spelling
        end
        local low = hex4(s, i + 2)
        if low < 0xDC00 or low > 0xDFFF then
          bad()
        end
        cp = 0x10000 + (cp - 0xD800) * 1024 + (low - 0xDC00)
        i = i + 6
      elseif cp >= 0xDC00 and cp <= 0xDFFF then
        bad()
      end
      parts[#parts + 1] = utf8_char(cp)
    else
      local r = ESCAPES[e]
      if not r then
        bad()
      end
      parts[#parts + 1] = r
      i = a + 2
    end
  end
end

local function decode_number(s, i)
  local _, e = find(s, "^-?0", i)
  if not e then
    _, e = find(s, "^-?[1-9]%d*", i)
  end
  if not e then
    bad()
  end
  local integral = true
  local _, f = find(s, "^%.%d+", e + 1)
  if f then
    e, integral = f, false
  end
  _, f = find(s, "^[eE][-+]?%d+", e + 1)
  if f then
    e, integral = f, false
  end
  local text = sub(s, i, e)
  local n = tonumber(text)
  if n == math.huge or n == -math.huge then
    bad() -- `1e999` reads as Infinity, which no encoder writes back
  end
  if integral and tointeger then
    n = tointeger(n) or n -- an integer, if it fits 64 bits; else the nearest float
  elseif not integral and numtype and numtype(n) == "integer" then
    n = n + 0.0
  end
  return n, e + 1
end

local function decode_array(s, i, depth)
  local out = M.array()
  i = skip_ws(s, i + 1)
  if sub(s, i, i) == "]" then
    return out, i + 1
  end
  while true do
    local v
    v, i = decode_value(s, i, depth)
    out[#out + 1] = v
    i = skip_ws(s, i)
    local c = sub(s, i, i)
    if c == "]" then
      return out, i + 1
    elseif c ~= "," then
      bad()
    end
    i = skip_ws(s, i + 1)
  end
end

local function decode_object(s, i, depth)
  local out = M.object()
  i = skip_ws(s, i + 1)
  if sub(s, i, i) == "}" then
    return out, i + 1
  end
  while true do
    if sub(s, i, i) ~= '"' then
      bad()
    end
    local key
    key, i = decode_string(s, i)
    if out[key] ~= nil then
      bad() -- a duplicate: two readers would disagree on which one wins
    end
    i = skip_ws(s, i)
    if sub(s, i, i) ~= ":" then
      bad()
    end
    out[key], i = decode_value(s, skip_ws(s, i + 1), depth)
    i = skip_ws(s, i)
    local c = sub(s, i, i)
    if c == "}" then
      return out, i + 1
    elseif c ~= "," then
      bad()
    end
    i = skip_ws(s, i + 1)
  end
end

function decode_value(s, i, depth)
  if depth >= MAX_DEPTH then
    bad()
  end
  local c = sub(s, i, i)
  if c == "{" then
    return decode_object(s, i, depth + 1)
  elseif c == "[" then
    return decode_array(s, i, depth + 1)
  elseif c == '"' then
    return decode_string(s, i)
  elseif sub(s, i, i + 3) == "true" then
    return true, i + 4
  elseif sub(s, i, i + 4) == "false" then
    return false, i + 5
  elseif sub(s, i, i + 3) == "null" then
    return M.null, i + 4
  end
  return decode_number(s, i)
end

-- One JSON value filling `s` (whitespace around it allowed). Raises {code = "bad_json"}.
function json.decode(s)
  if not utf8_ok(s) then
    bad()
  end
  local value, i = decode_value(s, skip_ws(s, 1), 0)
  if skip_ws(s, i) <= #s then
    bad()
  end
  return value
end

-- ---------------------------------------------------------------- JSON encoding
-- The canonical encoding: compact, keys sorted by code point (UTF-8 byte order), UTF-8 text
-- unescaped except '"', '\', \b \f \n \r \t and \u00xx for other control characters.

local SHORT = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
  ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function escape_char(c)
  return SHORT[c] or format("\\u%04x", byte(c))
end

local function encode_string(s, out)
  if not utf8_ok(s) then
    refuse("bad_args")
  end
  out[#out + 1] = '"' .. string.gsub(s, '[%z\1-\31"\\]', escape_char) .. '"'
end

-- Bytewise comparison: `<` on strings follows the C library's collation locale.
local function byte_less(a, b)
  local n = math.min(#a, #b)
  for k = 1, n do
    local x, y = byte(a, k), byte(b, k)
    if x ~= y then
      return x < y
    end
  end
  return #a < #b
end

-- "d.ddde+XX" with its last digit moved by delta (+1 or -1); nil when the first digit
-- would carry out (the exponent would change).
local function nudge(s, delta)
  local sign, d1, rest, e = string.match(s, "^(-?)(%d)%.?(%d*)e([-+]%d+)$")
  local digits = d1 .. rest
  local t, n = {}, #digits
  for i = 1, n do
    t[i] = tonumber(sub(digits, i, i))
  end
  t[n] = t[n] + delta
  local i = n
  while i > 1 and (t[i] < 0 or t[i] > 9) do
    local carry = t[i] < 0 and -1 or 1
    t[i] = t[i] - 10 * carry
    t[i - 1] = t[i - 1] + carry
    i = i - 1
  end
  if t[1] < 1 or t[1] > 9 then
    return nil
  end
  for k = 1, n do
    t[k] = format("%d", t[k])
  end
  local out = table.concat(t)
  return sign .. sub(out, 1, 1) .. (n > 1 and "." .. sub(out, 2) or "") .. "e" .. e
end

-- A float as Python's repr writes it: the shortest digits that read back the same, in
-- fixed notation for exponents -4..15 and scientific notation otherwise. The correctly
-- rounded p digits can miss where a neighbour reads back (a power of two has a narrower
-- interval below it), as 2^-24 = 5.960464477539063e-08 shows.
local function float_repr(x)
  local s
  for p = 0, 16 do
    s = format("%." .. p .. "e", x)
    if tonumber(s) == x then
      break
    end
    local up, down = nudge(s, 1), nudge(s, -1)
    if up and tonumber(up) == x then
      s = up
      break
    elseif down and tonumber(down) == x then
      s = down
      break
    end
  end
  local sign, d1, rest, e = string.match(s, "^(-?)(%d)%.?(%d*)e([-+]%d+)$")
  local digits = string.gsub(d1 .. rest, "0+$", "")
  if digits == "" then
    digits = "0"
  end
  e = tonumber(e)
  if e < -4 or e >= 16 then
    local mantissa = sub(digits, 1, 1)
    if #digits > 1 then
      mantissa = mantissa .. "." .. sub(digits, 2)
    end
    return format("%s%se%s%02d", sign, mantissa, e < 0 and "-" or "+", math.abs(e))
  elseif e < 0 then
    return sign .. "0." .. string.rep("0", -e - 1) .. digits
  end
  digits = digits .. string.rep("0", e + 1 - #digits)
  local frac = sub(digits, e + 2)
  return sign .. sub(digits, 1, e + 1) .. "." .. (frac == "" and "0" or frac)
end

local function encode_number(x)
  if x ~= x or x == math.huge or x == -math.huge then
    refuse("bad_args") -- NaN and Infinity are not JSON
  end
  if numtype then
    if numtype(x) == "integer" then
      return format("%d", x)
    end
    return float_repr(x)
  end
  -- One number type (5.1, 5.2, LuaJIT): a whole number in the range of 5.3's integers is
  -- written as an integer, anything else as 5.3 writes a float.
  if x == floor(x) and math.abs(x) <= 2 ^ 63 then
    return x == 0 and "0" or format("%.0f", x)
  end
  return float_repr(x)
end

local encode_into

local function is_sequence(t)
  local n = #t
  local count = 0
  for _ in pairs(t) do
    count = count + 1
  end
  return count == n
end

local function encode_table(t, out, depth)
  if depth >= MAX_DEPTH then
    refuse("bad_args")
  end
  local mt = getmetatable(t)
  local as_array = mt == ARRAY or (mt ~= OBJECT and is_sequence(t))
  if as_array then
    out[#out + 1] = "["
    for k = 1, #t do
      if k > 1 then
        out[#out + 1] = ","
      end
      encode_into(t[k], out, depth + 1)
    end
    out[#out + 1] = "]"
    return
  end
  local keys = {}
  for k in pairs(t) do
    if type(k) ~= "string" then
      refuse("bad_args")
    end
    keys[#keys + 1] = k
  end
  sort(keys, byte_less)
  out[#out + 1] = "{"
  for n, k in ipairs(keys) do
    if n > 1 then
      out[#out + 1] = ","
    end
    encode_string(k, out)
    out[#out + 1] = ":"
    encode_into(t[k], out, depth + 1)
  end
  out[#out + 1] = "}"
end

function encode_into(v, out, depth)
  local t = type(v)
  if v == M.null then
    out[#out + 1] = "null"
  elseif t == "table" then
    encode_table(v, out, depth)
  elseif t == "string" then
    encode_string(v, out)
  elseif t == "number" then
    out[#out + 1] = encode_number(v)
  elseif t == "boolean" then
    out[#out + 1] = v and "true" or "false"
  else
    refuse("bad_args")
  end
end

-- The canonical bytes of a value. A table marked by melchior.array() or melchior.object()
-- is written as that; an unmarked table is an array when its keys are exactly 1..#t (so an
-- empty one is []), else an object. Raises {code = "bad_args"} for what JSON cannot say.
function json.encode(v)
  local out = {}
  encode_into(v, out, 0)
  return concat(out)
end

-- ---------------------------------------------------------------- the wire

local wire = {}
M.wire = wire

local FOREIGN = {}
for _, name in ipairs(K.FOREIGN_TAGS) do
  FOREIGN[name] = true
end

local function is_int(v)
  return type(v) == "number" and v == floor(v) and (not numtype or numtype(v) == "integer")
end

-- Classify a decoded value as call, event or reply; return it, or nil and a refusal code.
function wire.check(v, family)
  family = family or K.FAMILY
  if not M.is_object(v) then
    return nil, "bad_shape"
  end
  for key in pairs(v) do
    if FOREIGN[key] then
      return nil, "bad_tag"
    end
  end
  local shapes = (v.call ~= nil and 1 or 0) + (v.event ~= nil and 1 or 0) +
      (v.ok ~= nil and 1 or 0)
  if shapes ~= 1 then
    return nil, "bad_shape"
  end
  if v.family ~= nil or v.ok ~= nil then
    if not is_int(v.family) then
      return nil, "bad_shape"
    end
    if v.family < K.MIN_FAMILY or v.family > family then
      return nil, "unknown_family"
    end
  end
  if v.call ~= nil then
    if type(v.call) ~= "string" or #v.call == 0 or utf8_len(v.call) > K.MAX_CALL then
      return nil, "bad_shape"
    end
    if not M.is_array(v.args) then
      return nil, "bad_shape"
    end
  elseif v.event ~= nil then
    if type(v.event) ~= "string" or v.event == "" then
      return nil, "bad_shape"
    end
  else
    if type(v.ok) ~= "boolean" or not M.is_array(v.result) then
      return nil, "bad_shape"
    end
    if not is_int(v.n) or v.n ~= #v.result then
      return nil, "bad_shape"
    end
    if not v.ok and type(v.code) ~= "string" then
      return nil, "bad_shape"
    end
  end
  return v
end

-- One JSON document to a checked message, or nil and a refusal code. Never raises.
function wire.parse(body, family)
  local ok, v = pcall(json.decode, body) -- a stack limit met on hostile input counts too
  if not ok then
    return nil, "bad_json"
  end
  return wire.check(v, family)
end

-- u32 big-endian, by arithmetic (string.pack is 5.3+).
local function u32(n)
  return char(floor(n / 16777216) % 256, floor(n / 65536) % 256, floor(n / 256) % 256, n % 256)
end

local function read_u32(s, i)
  local a, b, c, d = byte(s, i, i + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

function wire.encode_json(message)
  return json.encode(message)
end

function wire.encode_socket(message)
  local body = json.encode(message)
  return u32(#body) .. body
end

function wire.encode_pipe(message)
  return json.encode(message) .. "\n"
end

wire.encode_argv = wire.encode_pipe

-- Items are {message = value} or {refused = code}, as in the golden vectors.
local function item(v, code)
  if v == nil then
    return { refused = code }
  end
  return { message = v }
end

-- Length-prefixed frames: feed(data) any split of the bytes, get the same items.
function wire.socket_decoder(max_frame, family)
  max_frame = max_frame or K.MAX_FRAME
  local buf, skip = "", 0
  local self = {}
  function self.feed(data)
    buf = buf .. data
    local out = {}
    while true do
      if skip > 0 then
        local dropped = math.min(skip, #buf)
        buf, skip = sub(buf, dropped + 1), skip - dropped
        if skip > 0 then
          return out
        end
      end
      if #buf < K.FRAME_HEADER then
        return out
      end
      local size = read_u32(buf, 1)
      if size > max_frame then
        buf, skip = sub(buf, K.FRAME_HEADER + 1), size
        out[#out + 1] = { refused = "frame_too_large" }
      elseif #buf < K.FRAME_HEADER + size then
        return out
      else
        local body = sub(buf, K.FRAME_HEADER + 1, K.FRAME_HEADER + size)
        buf = sub(buf, K.FRAME_HEADER + size + 1)
        out[#out + 1] = item(wire.parse(body, family))
      end
    end
  end
  function self.pending()
    return buf ~= "" or skip > 0
  end
  return self
end

local function blank(s)
  return not find(s, "[^ \t\n\r\v\f]")
end

-- Newline-delimited JSON, split on "\n" only; blank lines are ignored.
function wire.pipe_decoder(max_line, family)
  max_line = max_line or K.MAX_LINE
  local buf, discarding = "", false
  local self = {}
  local function take(piece, out)
    if discarding then
      return
    end
    buf = buf .. piece
    if #buf > max_line then
      buf, discarding = "", true
      out[#out + 1] = { refused = "frame_too_large" }
    end
  end
  function self.feed(data)
    local out, start = {}, 1
    while true do
      local nl = find(data, "\n", start, true)
      if not nl then
        take(sub(data, start), out)
        return out
      end
      take(sub(data, start, nl - 1), out)
      if discarding then
        discarding = false
      elseif not blank(buf) then
        out[#out + 1] = item(wire.parse(buf, family))
      end
      buf = ""
      start = nl + 1
    end
  end
  function self.close()
    if discarding or blank(buf) then
      return {}
    end
    local line = buf
    buf = ""
    return { item(wire.parse(line, family)) }
  end
  return self
end

-- The argv transport: exactly one JSON object on stdout (a trailing newline allowed).
function wire.decode_argv(stdout, family)
  local body = stdout
  if sub(body, -1) == "\n" then
    body = sub(body, 1, -2)
  end
  if #body > K.MAX_ARGV then
    return { refused = "frame_too_large" }
  end
  if find(body, "\n", 1, true) then
    return { refused = "bad_json" }
  end
  return item(wire.parse(body, family))
end

-- ---------------------------------------------------------------- sha256
-- Pure arithmetic on 32-bit words (no bit library exists in every runtime). Used only to
-- shorten a long project name, so it favours portability over speed.

local XOR4, AND4 = {}, {}
for a = 0, 15 do
  for b = 0, 15 do
    local x, y, bit, rx, ra = a, b, 1, 0, 0
    for _ = 1, 4 do
      local p, q = x % 2, y % 2
      if p ~= q then
        rx = rx + bit
      end
      if p == 1 and q == 1 then
        ra = ra + bit
      end
      x, y, bit = (x - p) / 2, (y - q) / 2, bit * 2
    end
    XOR4[a * 16 + b], AND4[a * 16 + b] = rx, ra
  end
end

local function bitop(tab, a, b)
  local r, m = 0, 1
  for _ = 1, 8 do
    local x, y = a % 16, b % 16
    r = r + tab[x * 16 + y] * m
    a, b, m = (a - x) / 16, (b - y) / 16, m * 16
  end
  return r
end

local function bxor(a, b)
  return bitop(XOR4, a, b)
end

local function band(a, b)
  return bitop(AND4, a, b)
end

local function bnot(a)
  return 4294967295 - a
end

local function rrot(x, n)
  local low = x % 2 ^ n
  return (x - low) / 2 ^ n + low * 2 ^ (32 - n)
end

local function shr(x, n)
  return floor(x / 2 ^ n)
end

local SHA_K = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
  0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
  0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
  0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
  0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
  0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
  0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
  0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
}

local function sha256_block(h, s, at)
  local w = {}
  for t = 0, 15 do
    w[t] = read_u32(s, at + t * 4)
  end
  for t = 16, 63 do
    local a, b = w[t - 15], w[t - 2]
    local s0 = bxor(bxor(rrot(a, 7), rrot(a, 18)), shr(a, 3))
    local s1 = bxor(bxor(rrot(b, 17), rrot(b, 19)), shr(b, 10))
    w[t] = (w[t - 16] + s0 + w[t - 7] + s1) % 4294967296
  end
  local a, b, c, d, e, f, g, hh = h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8]
  for t = 0, 63 do
    local S1 = bxor(bxor(rrot(e, 6), rrot(e, 11)), rrot(e, 25))
    local ch = bxor(band(e, f), band(bnot(e), g))
    local t1 = (hh + S1 + ch + SHA_K[t + 1] + w[t]) % 4294967296
    local S0 = bxor(bxor(rrot(a, 2), rrot(a, 13)), rrot(a, 22))
    local maj = bxor(bxor(band(a, b), band(a, c)), band(b, c))
    local t2 = (S0 + maj) % 4294967296
    hh, g, f, e, d, c, b, a = g, f, e, (d + t1) % 4294967296, c, b, a, (t1 + t2) % 4294967296
  end
  local out = { a, b, c, d, e, f, g, hh }
  for k = 1, 8 do
    h[k] = (h[k] + out[k]) % 4294967296
  end
end

-- The hex sha256 of a byte string.
function M.sha256(s)
  local h = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c,
    0x1f83d9ab, 0x5be0cd19 }
  local bits = #s * 8
  local padded = s .. "\128" .. string.rep("\0", (55 - #s) % 64) ..
      u32(floor(bits / 4294967296)) .. u32(bits % 4294967296)
  for at = 1, #padded, 64 do
    sha256_block(h, padded, at)
  end
  local hex = {}
  for k = 1, 8 do
    hex[k] = format("%08x", h[k])
  end
  return concat(hex)
end

-- ---------------------------------------------------------------- names and discovery
-- The same rules as melchior's names.py, registry.py and identity.py.

local getenv = options.getenv or os.getenv

function M.valid_id(s)
  return type(s) == "string" and #s > 0 and #s <= K.ID_MAX and find(s, "^[a-z][a-z0-9%-]*$")
      ~= nil and not find(s, "--", 1, true)
end

function M.valid_project(s)
  return type(s) == "string" and #s > 0 and #s <= K.PROJECT_MAX and
      find(s, "^[A-Za-z0-9][A-Za-z0-9._%-]*$") ~= nil and not find(s, "..", 1, true)
end

local TALK = { instance = 1, run = 2, project = 3 }
local TALK_NAMES = { "instance", "run", "project" }

local function narrowest(a, b)
  local ra, rb = TALK[a] or 1, TALK[b] or 1
  return TALK_NAMES[math.min(ra, rb)]
end

-- The session's talk setting after its project's (which may only narrow it).
local function talk_from_env()
  local user, project = getenv("MAGI_MELCHIOR_TALK"), getenv("MAGI_MELCHIOR_PROJECT_TALK")
  if user == nil or user == "" then
    user = "instance"
  end
  if project == nil then
    return narrowest(user, user)
  end
  return narrowest(user, project)
end

-- Who this process is, from MAGI_MELCHIOR_*: a table, or nil when it has no identity.
local function identity()
  local project = getenv("MAGI_MELCHIOR_PROJECT") or ""
  local id, token = getenv("MAGI_MELCHIOR_ID") or "", getenv("MAGI_MELCHIOR_TOKEN") or ""
  if not (M.valid_project(project) and M.valid_id(id) and token ~= "") then
    return nil
  end
  local parent = getenv("MAGI_MELCHIOR_PARENT")
  if parent == "" then
    parent = nil
  end
  if parent ~= nil and not M.valid_id(parent) then
    return nil
  end
  return { project = project, id = id, token = token, parent = parent, talk = talk_from_env() }
end

-- What the caller is, without its secret.
function M.whoami()
  local me = identity()
  if me == nil then
    return nil
  end
  return { project = me.project, id = me.id, parent = me.parent, talk = me.talk }
end

local function join(dir, name)
  if sub(dir, -1) == "/" then
    return dir .. name
  end
  return dir .. "/" .. name
end

local function uid()
  if options.uid ~= nil then
    return options.uid
  end
  local ok, f = pcall(io.open, "/proc/self/status", "r")
  if ok and f then
    local text = f:read("*a")
    f:close()
    local found = string.match(text or "", "\nUid:%s*(%d+)")
    if found then
      return tonumber(found)
    end
  end
  refuse("unsafe_dir") -- the runtime directory cannot be named without the uid
end

-- melchior's base directory: $XDG_RUNTIME_DIR/melchior when that is set and absolute, else
-- <temp dir>/melchior-<uid> (the temp dir as Python finds it: TMPDIR, TEMP, TMP, /tmp).
function M.base_dir()
  local runtime = getenv("XDG_RUNTIME_DIR") or ""
  if sub(runtime, 1, 1) == "/" then
    return join(runtime, "melchior")
  end
  local tmp = "/tmp"
  for _, name in ipairs({ "TMPDIR", "TEMP", "TMP" }) do
    local v = getenv(name)
    if v and sub(v, 1, 1) == "/" then
      tmp = v
      break
    end
  end
  tmp = string.gsub(tmp, "(.)/+$", "%1")
  return join(tmp, "melchior-" .. format("%d", uid()))
end

-- The project's directory, shortened to `<prefix>~<16 hex of sha256>` so any id fits sun_path.
function M.project_dir(project)
  if not M.valid_project(project) then
    refuse("usage")
  end
  local base = M.base_dir()
  local budget = K.SUN_PATH_MAX - #base - 2 - K.ID_MAX
  if budget < K.PROJECT_DIGEST + 2 then
    refuse("path_too_long")
  end
  local name = project
  if #project > budget then
    local keep = budget - 1 - K.PROJECT_DIGEST
    name = sub(project, 1, keep) .. "~" .. sub(M.sha256(project), 1, K.PROJECT_DIGEST)
  end
  return join(base, name)
end

-- ---------------------------------------------------------------- the walls
-- As melchior's policy.py, over the key notes in the caller's own project directory (read,
-- never listed). The callee checks again whatever this decides; this check
-- only makes a session the caller may not reach look absent, as the tool does.

local io_open = io and io.open -- absent in a sandbox: then only the callee checks

local function read_note(path)
  local ok, f = pcall(io_open, path, "rb")
  if not ok or not f then
    return nil
  end
  local data = f:read(65536)
  f:close()
  return data
end

local function key_of(dir, id)
  local raw = read_note(join(dir, id .. ".key"))
  local ok, key = pcall(json.decode, raw or "")
  if not ok or not M.is_object(key) or type(key.sha256) ~= "string" then
    return nil
  end
  if key.role ~= "main" and key.role ~= "sub" then
    return nil
  end
  return key
end

local function node_of(dir, id)
  local key = key_of(dir, id)
  if key == nil then
    return nil
  end
  -- The parent is the minter while the minter's key has the digest this key recorded (as
  -- registry.linked): a session later given the minter's id is no parent.
  local parent, minter = nil, key.minter
  if type(minter) == "string" and type(key.minter_key) == "string" and M.valid_id(minter) then
    local theirs = key_of(dir, minter)
    if theirs ~= nil and theirs.sha256 == key.minter_key then
      parent = minter
    end
  end
  return { role = key.role, parent = parent }
end

local function ancestry(lookup, id)
  local chain, seen, current = {}, {}, id
  while current ~= nil and not seen[current] do
    seen[current] = true
    local node = lookup(current)
    if node == nil then
      break
    end
    chain[#chain + 1] = { id = current, node = node }
    current = node.parent
  end
  return chain
end

local function instance_of(lookup, id)
  local chain = ancestry(lookup, id)
  for _, link in ipairs(chain) do
    if link.node.role == "main" then
      return link.id
    end
  end
  return chain[#chain] and chain[#chain].id or id
end

local function root_of(lookup, id)
  local chain = ancestry(lookup, id)
  return chain[#chain] and chain[#chain].id or id
end

local function reachable(dir, caller, target, talk)
  if caller == target then
    return true
  end
  local known = {}
  local function lookup(id)
    if known[id] == nil then
      known[id] = node_of(dir, id) or false
    end
    return known[id] or nil
  end
  local a, b = lookup(caller), lookup(target)
  if a == nil or b == nil then
    return false
  end
  if a.parent == target or b.parent == caller then
    return true
  end
  if instance_of(lookup, caller) == instance_of(lookup, target) or talk == "project" then
    return true
  end
  local same_run = talk == "run" and root_of(lookup, caller) == root_of(lookup, target)
  return (a.role == "main" or same_run) and (b.role == "main" or same_run)
end

-- ---------------------------------------------------------------- connections

local DIAL_CODES = { unknown_session = true, gone = true, timeout = true }

-- A method callable as conn.f(...) or conn:f(...).
local function method(conn, f)
  return function(first, ...)
    if first == conn then
      return f(...)
    end
    return f(first, ...)
  end
end

local function guarded(f, ...)
  local ok, a, b = pcall(f, ...)
  if not ok then
    refuse("broken") -- the host's error text stays on the host's side
  end
  return a, b
end

-- Dial session `id` in the caller's own project and prove who we are with `hello`.
function M.connect(id)
  local me = identity()
  if me == nil then
    refuse("no_identity")
  end
  if not M.valid_id(id) then
    refuse("unknown_session")
  end
  local dir = M.project_dir(me.project)
  if io_open and not reachable(dir, me.id, id, me.talk) then
    refuse("unknown_session") -- as if it did not exist: private sessions do not leak
  end
  local s, why = guarded(stream_of, join(dir, id))
  if not s then
    refuse(DIAL_CODES[why] and why or "broken")
  end
  local conn, open = {}, true

  local function close()
    if open then
      open = false
      pcall(s.close, s)
    end
  end

  -- A stream that failed mid-frame is out of step: it is closed, and later calls are broken.
  local function io_step(f, ...)
    local ok, data = pcall(f, s, ...)
    if not ok then
      close()
      refuse("broken")
    end
    return data
  end

  local function read_exactly(n)
    local data = io_step(s.read, n)
    if type(data) ~= "string" or #data ~= n then
      close()
      refuse("broken")
    end
    return data
  end

  -- One call, one reply: the reply's result list, or a raised refusal.
  local function call(name, args)
    if not open then
      refuse("broken")
    end
    local frame = wire.encode_socket(M.object({ call = name, args = M.array(args or {}) }))
    io_step(s.write, frame)
    local size = read_u32(read_exactly(K.FRAME_HEADER), 1)
    if size > K.MAX_FRAME then
      while size > 0 do -- skip it whole, so the connection stays in step
        local n = math.min(size, 65536)
        read_exactly(n)
        size = size - n
      end
      refuse("frame_too_large")
    end
    local reply, code = wire.parse(read_exactly(size))
    if reply == nil then
      refuse(code)
    end
    if reply.ok == nil then
      refuse("broken")
    end
    if not reply.ok then
      refuse(reply.code)
    end
    return reply.result
  end

  local function first(name, args)
    return call(name, args)[1]
  end

  local ok, err = pcall(call, "hello", { M.object({ id = me.id, token = me.token,
    talk = me.talk }) })
  if not ok then
    close()
    error(err, 0)
  end
  conn.call = method(conn, call)
  conn.status = method(conn, function()
    return first("status")
  end)
  conn.tell = method(conn, function(text, how)
    return first("tell", { text, how or "note" })
  end)
  conn.ask = method(conn, function(text)
    return first("ask", { text })
  end)
  conn.task = method(conn, function(handle)
    return first("task", { handle })
  end)
  conn.cancel = method(conn, function(handle)
    return first("cancel", { handle })
  end)
  conn.report = method(conn, function(page, revision)
    return first("report", { page or 0, revision })
  end)
  conn.close = method(conn, close)
  return conn
end

-- Offsets (0-based) cutting UTF-8 `text` into pieces of at most `size` bytes, never inside a
-- character: as melchior's reports.cut.
local function cut(text, size)
  local edges = { 0 }
  while #text - edges[#edges] > size do
    local edge = edges[#edges] + size
    while byte(text, edge + 1) >= 0x80 and byte(text, edge + 1) < 0xC0 do
      edge = edge - 1
    end
    edges[#edges + 1] = edge
  end
  edges[#edges + 1] = #text
  return edges
end

-- Store the caller's own report (UTF-8 text, at most MAX_REPORT bytes): chunks of at most
-- REPORT_CHUNK bytes on one connection to its own session, stored whole as a new revision.
-- Returns the summary {revision, sha256, bytes, pages}.
function M.report(text)
  if type(text) ~= "string" or not utf8_ok(text) then
    refuse("bad_args")
  end
  if #text > K.MAX_REPORT then
    refuse("report_too_large")
  end
  local me = identity()
  if me == nil then
    refuse("no_identity")
  end
  local conn = M.connect(me.id)
  local ok, summary = pcall(function()
    local edges, last = cut(text, K.REPORT_CHUNK), nil
    for k = 1, #edges - 1 do
      local chunk = sub(text, edges[k] + 1, edges[k + 1])
      last = conn.call("report_put", { chunk, k == #edges - 1 })[1]
    end
    return last
  end)
  conn.close()
  if not ok then
    error(summary, 0)
  end
  return summary
end

return M
