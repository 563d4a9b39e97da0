--[[
reply: the common tail of every limiter script, appended to it when the script is loaded
(gateway/ratelimit/redis-store.ts luaSource, after prologue.lua and the script), so both algorithms report alike. Mirrors pickReported in
gateway/ratelimit/sliding.ts: when admitted, the window with the fewest remaining calls (ties: the
later reset); when rejected, the non-fitting window that frees capacity last.

Expects the script's locals: n (windows), allowed, count, fits[i], rems[i], resets[i], now (ms),
and ARGV[2i+1] = limit of window i.
Reply: { allowed (1|0), limit, remaining, reset_at_ms, now_ms, window_index } of the reported
window (window_index counts from 0, as Decision.windowIndex does); when peeking, remaining is what
is left now, not after one more call. Then, for each calendar window (calendar.lua's cal[i]), two
more: its index (from 0) and the calls counted in its current period after this call, which a
replica keeps to go on counting from while Redis fails (SPEC §19, ratelimit/spent-quotas.ts).
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
local reply = { allowed and 1 or 0, limit, remaining, resets[best], now, best - 1 }
for i = 1, n do
  local w = cal[i]
  if w then
    reply[#reply + 1] = i - 1
    reply[#reply + 1] = (allowed and count) and w[2] + 1 or w[2]
  end
end
return reply
