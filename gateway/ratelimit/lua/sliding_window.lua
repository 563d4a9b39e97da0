--[[
sliding_window: Cloudflare's weighted two-counter estimate, `prev * (1 - elapsed/W) + curr`, over
every window of one limit class in a single atomic call. Mirrors gateway/ratelimit/sliding.ts
(rollCounter, counterVerdict, counterFreeAt, pickReported) operation for operation, so the Redis and
memory stores decide alike. Time is Redis TIME (ms), never the caller's clock; Redis 7 replicates
scripts by effects, so reading TIME before writing is allowed.

KEYS[i]       <prefix>:{<kind>:<identity>}:<class>:<window_s>, one per window (i = 1..n), a hash:
              s = start of the current fixed window (epoch ms, a multiple of W),
              p = calls counted in the previous fixed window, c = in the current one.
              Written only when a call is admitted (and not peeking); expires 2*W after that write,
              since the previous window's counter is read for one more window.
ARGV[1]       "1": count the call if admitted; "0": peek (nothing is written, for GET /rate_limit)
ARGV[2]       unused here (the sliding_log nonce; kept so both scripts share one argument layout)
ARGV[2i+1]    limit of window i (calls)
ARGV[2i+2]    length W of window i (ms), or "<period>:<offset minutes>" for a calendar window
              (its key, verdict and count: calendar.lua)

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
  local limit = tonumber(ARGV[2 * i + 1])
  local w = tonumber(ARGV[2 * i + 2])
  if w == nil then
    fits[i], rems[i], resets[i] = calendar_window(i, limit)
    if not fits[i] then allowed = false end
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
    starts[i], prevs[i], currs[i] = s, p, c
    -- counterVerdict (Reset rule of SPEC §3: the end of the fixed window while calls remain, else the
    -- earliest time one more call fits)
    local estimate = p * (1 - (now - s) / w) + c
    if estimate + 1 <= limit then
      fits[i] = true
      rems[i] = math.max(0, math.floor(limit - estimate - 1))
      if rems[i] > 0 or not count then
        resets[i] = s + w
      else
        resets[i] = free_at(s, p, c + 1, w, limit - 1)
      end
    else
      fits[i] = false
      rems[i] = 0
      resets[i] = free_at(s, p, c, w, limit - 1)
      allowed = false
    end
  end
end

if allowed and count then
  for i = 1, n do
    if cal[i] then
      calendar_count(i)
    else
      redis.call('HSET', KEYS[i], 's', starts[i], 'p', prevs[i], 'c', currs[i] + 1)
      redis.call('PEXPIRE', KEYS[i], 2 * tonumber(ARGV[2 * i + 2]))
    end
  end
end

-- The reply (pickReported) is appended from reply.lua when the script is loaded.
