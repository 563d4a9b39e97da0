--[[
sliding_log: the exact sliding log (one sorted-set entry per admitted call) over every window of one
limit class in a single atomic call. Mirrors gateway/ratelimit/sliding.ts (logVerdict,
pickReported) so the Redis and memory stores decide alike. Time is Redis TIME (ms), never the
caller's clock (prologue.lua).

KEYS[i]       <prefix>:{<kind>:<identity>}:<class>:<window_s>:log, one per window (i = 1..n), a sorted set:
              score = admission time (epoch ms), member = ARGV[2] (unique per call, so calls in
              the same millisecond or microsecond, from one gateway or many, never collapse into
              one entry). Entries at or before now - W are trimmed when counting; the key
              expires W after the last admitted call.
ARGV[1]       "1": count the call if admitted; "0": peek (nothing is written, for GET /rate_limit)
ARGV[2]       nonce: a random tag per store instance (48 bits) + a per-instance call counter; short,
              because it is stored once per admitted call
ARGV[2i+1]    limit of window i (calls)
ARGV[2i+2]    length W of window i (ms), or "<period>:<offset minutes>" for a calendar window
              (its key, verdict and count: calendar.lua)

Loaded as prologue.lua (now, count, n) + calendar.lua + this + reply.lua (the reply; see there).
]]

-- Score of the entry at `offset` among those inside the window (ascending).
local function score_at(key, cutoff, offset)
  local r = redis.call('ZRANGE', key, '(' .. cutoff, '+inf', 'BYSCORE', 'LIMIT', offset, 1, 'WITHSCORES')
  return tonumber(r[2])
end

local fits, rems, resets = {}, {}, {}
local allowed = true
for i = 1, n do
  local limit = tonumber(ARGV[2 * i + 1])
  local w = tonumber(ARGV[2 * i + 2])
  if w == nil then
    fits[i], rems[i], resets[i] = calendar_window(i, limit)
    if not fits[i] then allowed = false end
  else
    local cutoff = now - w
    local size
    if count then
      redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', cutoff)
      size = redis.call('ZCARD', KEYS[i])
    else
      size = redis.call('ZCOUNT', KEYS[i], '(' .. cutoff, '+inf')
    end
    -- logVerdict
    if size < limit then
      fits[i] = true
      rems[i] = limit - size - 1
      if size > 0 then resets[i] = score_at(KEYS[i], cutoff, 0) + w else resets[i] = now + w end
    else
      fits[i] = false
      rems[i] = 0
      resets[i] = score_at(KEYS[i], cutoff, size - limit) + w
      allowed = false
    end
  end
end

if allowed and count then
  for i = 1, n do
    if cal[i] then
      calendar_count(i)
    else
      redis.call('ZADD', KEYS[i], now, ARGV[2])
      redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[2 * i + 2]))
    end
  end
end

-- The reply (pickReported) is appended from reply.lua when the script is loaded.
