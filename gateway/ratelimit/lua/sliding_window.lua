--[[
sliding_window: Cloudflare's weighted two-counter estimate, `prev * (1 - elapsed/W) + curr`, over
every window of one limit class in a single atomic call. Mirrors gateway/ratelimit/sliding.ts
(rollCounter, counterVerdict, counterFreeAt, pickReported) operation for operation, so the Redis and
memory stores decide alike. Time is Redis TIME (ms), never the caller's clock; Redis 7 replicates
scripts by effects, so reading TIME before writing is allowed.

KEYS[i]       one per window (i = 1..n): the identity's windows, then each budget's (SPEC §22) the
              call belongs to; <prefix>:{<kind>:<identity>}:<class>:<window_s>, or, when the call
              belongs to a budget, <prefix>:{claim:<name>:<value>}[<identity or other budget>]:...
              (storage-keys.ts), a hash:
              s = start of the current fixed window (epoch ms, a multiple of W),
              p = units counted in the previous fixed window, c = in the current one.
              Written only when a call is admitted (and not peeking) or charged; expires 2*W after
              that write, since the previous window's counter is read for one more window.
ARGV[1]       "1": count the call if every window has ARGV[3] units left; "0": peek (nothing is
              written, for GET /rate_limit); "2": charge ARGV[4] units, never refused
ARGV[2]       unused here (the sliding_log nonce; kept so both scripts share one argument layout)
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

-- Earliest time the estimate drops to `target` or below with no new calls (counterFreeAt).
local function free_at(s, p, c, w, target)
  if p * (1 - (now - s) / w) + c <= target then return now end
  if c <= target and p > 0 then
    return math.max(now, s + math.ceil(w * (1 - (target - c) / p)))
  end
  return s + w + math.ceil(w * (1 - target / c))
end

local starts, prevs, currs, fits, rems, resets = {}, {}, {}, {}, {}, {}
local allowed = true
for i = 1, n do
  local limit = tonumber(ARGV[2 * i + 3])
  local w = tonumber(ARGV[2 * i + 4])
  if w == nil then
    fits[i], rems[i], resets[i] = calendar_window(i, limit)
  else
    local h = redis.call('HMGET', KEYS[i], 's', 'p', 'c')
    local s = tonumber(h[1] or '0') or 0
    local p = tonumber(h[2] or '0') or 0
    local c = tonumber(h[3] or '0') or 0
    -- rollCounter
    local start = now - (now % w)
    if start ~= s then
      if start - s == w then p = c else p = 0 end
      c = 0
      s = start
    end
    if charging then c = c + added end
    starts[i], prevs[i], currs[i] = s, p, c
    -- counterVerdict (Reset rule of SPEC §3: the end of the fixed window while units remain, else
    -- the earliest time one more call of `cost` fits)
    local estimate = p * (1 - (now - s) / w) + c
    local left = math.floor(limit - estimate)
    if estimate + cost <= limit then
      fits[i] = true
      if count then
        rems[i] = math.max(0, left - cost)
        if rems[i] > 0 then
          resets[i] = s + w
        else
          resets[i] = free_at(s, p, c + cost, w, limit - cost)
        end
      else
        rems[i] = math.max(0, left)
        resets[i] = s + w
      end
    else
      fits[i] = false
      rems[i] = math.max(0, left)
      resets[i] = free_at(s, p, c, w, limit - cost)
    end
  end
  if not fits[i] then allowed = false end
end
if charging then allowed = true end

if (allowed and count) or charging then
  for i = 1, n do
    if cal[i] then
      calendar_count(i)
    else
      local c = currs[i]
      if count then c = c + cost end
      redis.call('HSET', KEYS[i], 's', starts[i], 'p', prevs[i], 'c', c)
      redis.call('PEXPIRE', KEYS[i], 2 * tonumber(ARGV[2 * i + 4]))
    end
  end
end

-- The reply (pickReported) is appended from reply.lua when the script is loaded.
