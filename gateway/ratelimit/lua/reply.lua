--[[
reply: the common tail of every limiter script, appended to it when the script is loaded
(gateway/ratelimit/redis-store.ts luaSource, after prologue.lua and the script), so both algorithms report alike. Mirrors pickReported in
gateway/ratelimit/sliding.ts: when admitted, the window with the fewest remaining calls (ties: the
later reset); when rejected, the non-fitting window that frees capacity last.

Expects the script's locals: n (windows), allowed, count, fits[i], rems[i], resets[i], now (ms),
and ARGV[2i+1] = limit of window i.
Reply: { allowed (1|0), limit, remaining, reset_at_ms, now_ms, window_index } of the reported
window (window_index counts from 0, as Decision.windowIndex does); when peeking, remaining is what
is left now, not after one more call.
]]
local best = 0
for i = 1, n do
  if allowed or not fits[i] then
    if best == 0 then
      best = i
    elseif allowed then
      if rems[i] < rems[best] or (rems[i] == rems[best] and resets[i] > resets[best]) then best = i end
    elseif resets[i] > resets[best] then
      best = i
    end
  end
end

local limit = tonumber(ARGV[2 * best + 1])
local remaining = rems[best]
if allowed and not count then remaining = math.min(limit, remaining + 1) end
return { allowed and 1 or 0, limit, remaining, resets[best], now, best - 1 }
