--[[
sliding_log: the exact sliding log (one sorted-set entry per admitted call) over every window of one
limit class in a single atomic call. Mirrors gateway/ratelimit/sliding.ts (logVerdict,
pickReported) so the Redis and memory stores decide alike. Time is Redis TIME (ms), never the
caller's clock (prologue.lua).

KEYS[i]       one per window (i = 1..n): the identity's windows, then each budget's (SPEC §22) the
              call belongs to; <prefix>:{<kind>:<identity>}:<class>:<window_s>:log, or, when the
              call belongs to a budget, <prefix>:{claim:<name>:<value>}[<identity or other
              budget>]:... (storage-keys.ts), a sorted set: one entry per unit,
              score = admission time (epoch ms), member = ARGV[2] (plus ".<j>" for the j-th unit of
              a call of several; unique per call, so calls in the same millisecond or microsecond,
              from one gateway or many, never collapse into one entry). Entries at or before
              now - W are trimmed when counting; the key expires W after the last admitted call.
ARGV[1]       "1": count the call if every window has ARGV[3] units left; "0": peek (nothing is
              written, for GET /rate_limit); "2": charge ARGV[4] units, never refused
ARGV[2]       nonce: a random tag per store instance (48 bits) + a per-instance call counter; short,
              because it is stored once per admitted unit
ARGV[3]       cost: units a call spends (SPEC §22; 1 without `cost`)
ARGV[4]       units of a charge when ARGV[1] is "2"; a peek's "1" asks for every window's state
              in the reply (reply.lua)
ARGV[2i+3]    limit of window i (units)
ARGV[2i+4]    length W of window i (ms), or "<period>:<offset minutes>" for a calendar window
              (its key, verdict and count: calendar.lua), optionally followed by
              ":<top>:<thresholds>" (SPEC §21, calendar.lua)
KEYS[n+k]     the top-caller sorted sets a calendar window's <top> names (SPEC §21; none unless
              configured, never in Cluster)
ARGV[2n+5]    the identity, those sets' member (only with such keys)

Loaded as prologue.lua (now, count, n) + calendar.lua + this + reply.lua (the reply; see there).
]]

-- Score of the entry at `offset` among those inside the window (ascending).
local function score_at(key, cutoff, offset)
  local r = redis.call('ZRANGE', key, '(' .. cutoff, '+inf', 'BYSCORE', 'LIMIT', offset, 1, 'WITHSCORES')
  return tonumber(r[2])
end

-- Adds `units` entries at now: the nonce alone for one unit (the common case), else nonce.j,
-- in ZADDs of at most 500 members (unpack's stack).
local function add_units(key, units)
  if units == 1 then
    redis.call('ZADD', key, now, ARGV[2])
    return
  end
  local j = 1
  while j <= units do
    local args = {}
    local last = math.min(units, j + 499)
    for k = j, last do
      args[#args + 1] = now
      args[#args + 1] = ARGV[2] .. '.' .. k
    end
    redis.call('ZADD', key, unpack(args))
    j = last + 1
  end
end

local fits, rems, resets = {}, {}, {}
local allowed = true
for i = 1, n do
  local limit = tonumber(ARGV[2 * i + 3])
  local w = tonumber(ARGV[2 * i + 4])
  if w == nil then
    fits[i], rems[i], resets[i] = calendar_window(i, limit)
  else
    local cutoff = now - w
    local size
    if count or charging then
      redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', cutoff)
      size = redis.call('ZCARD', KEYS[i])
    else
      size = redis.call('ZCOUNT', KEYS[i], '(' .. cutoff, '+inf')
    end
    if charging then
      add_units(KEYS[i], added)
      redis.call('PEXPIRE', KEYS[i], w)
      size = size + added
    end
    -- logVerdict
    if size + cost <= limit then
      fits[i] = true
      if count then rems[i] = limit - size - cost else rems[i] = limit - size end
      if count and rems[i] == 0 then
        -- The call's own entries come last: one more call fits once `cost` entries have left.
        if cost <= size then resets[i] = score_at(KEYS[i], cutoff, cost - 1) + w else resets[i] = now + w end
      elseif size > 0 then
        resets[i] = score_at(KEYS[i], cutoff, 0) + w
      else
        resets[i] = now + w
      end
    else
      fits[i] = false
      rems[i] = math.max(0, limit - size)
      resets[i] = score_at(KEYS[i], cutoff, size + cost - limit - 1) + w
    end
  end
  if not fits[i] then allowed = false end
end
if charging then allowed = true end

if (allowed and count) or charging then
  for i = 1, n do
    if cal[i] then
      calendar_count(i)
    elseif count then
      add_units(KEYS[i], cost)
      redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[2 * i + 4]))
    end
  end
end

-- The reply (pickReported) is appended from reply.lua when the script is loaded.
