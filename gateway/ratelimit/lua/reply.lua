--[[
reply: the common tail of every limiter script, appended to it when the script is loaded
(gateway/ratelimit/redis-store.ts luaSource, after prologue.lua and the script), so both algorithms report alike. Mirrors pickReported in
gateway/ratelimit/sliding.ts: when admitted, the window with the fewest remaining calls (ties: the
later reset); when rejected, the non-fitting window that frees capacity last.

Expects the script's locals: n (windows), allowed (true for a charge), fits[i], rems[i] (units
left after the call when counting, else now), resets[i], now (ms), and ARGV[2i+3] = limit of
window i.
Reply: { allowed (1|0), limit, remaining, reset_at_ms, now_ms, window_index } of the reported
window (window_index counts from 0 over the windows of this call; the store maps it to the
policy's flat index); when peeking or charging, remaining is what is left now. A peek with
ARGV[4] == "1" appends remaining, reset_at_ms of every window i = 1..n (per-budget status, SPEC §22).
A count or a charge appends, for each calendar window (calendar.lua's cal[i]), its index (from 0)
and the units counted in its current period after this call, which a replica keeps to go on
counting from while Redis fails (SPEC §19, ratelimit/spent-quotas.ts); then, for each threshold
crossing of this call (calendar.lua's calendar_notify, SPEC §21), -(index + 1) and the threshold's
position (from 1) in that window's list: a negative first element tells a crossing from a count.
]]
if count or charging then
  for i = 1, n do
    if cal[i] then calendar_notify(i, allowed, fits[i]) end
  end
end

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

local reply = { allowed and 1 or 0, tonumber(ARGV[2 * best + 3]), rems[best], resets[best], now, best - 1 }
if not count and not charging then
  -- A peek asked for every window (ARGV[4] == "1": GET /rate_limit with budgets, SPEC §22): then
  -- each window's remaining and reset follow, in KEYS order.
  if ARGV[4] == '1' then
    for i = 1, n do
      reply[#reply + 1] = rems[i]
      reply[#reply + 1] = resets[i]
    end
  end
else
  for i = 1, n do
    local w = cal[i]
    if w then
      reply[#reply + 1] = i - 1
      reply[#reply + 1] = (allowed and count) and w[2] + cost or w[2]
    end
  end
  for j = 1, #crossed do
    reply[#reply + 1] = crossed[j]
  end
end
return reply
