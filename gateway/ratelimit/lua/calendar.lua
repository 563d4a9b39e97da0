--[[
calendar: calendar windows (SPEC §19), the Lua twin of gateway/ratelimit/calendar.ts. Inserted
after prologue.lua (it reads `now`) and before the algorithm's body when a script is loaded
(gateway/ratelimit/redis-store.ts luaSource), so every script counts calendar windows alike, in
the same single call as the class's sliding windows. A property test
(test/integration/calendar-lua-agrees.test.ts) runs period_bounds through a real redis-server and
requires it to agree with periodBounds in calendar.ts.

A calendar window's ARGV[2i+4] is "<period>:<offset minutes>" (e.g. "month:540" for +09:00)
instead of a length in ms; the body tells the two apart with tonumber. Its KEYS[i]
(<prefix>:{<kind>:<identity>}:<class>:<period>) is a hash: s = start of the period counted
(epoch ms), c = units counted in it. A stored s of another period counts as 0. Written only
when a call is admitted (and not peeking) or charged; expires when its period ends (PEXPIREAT the period's
end, on the same TIME).

Usage operations (SPEC §21), both absent unless configured, so a plain "month:540" costs nothing
more: the argument may go on as "<period>:<offset>:<top>:<thresholds>".
- <top> (0: none) k: KEYS[n + k] is the top-caller sorted set of this class and period
  (<prefix>:top:<class>:<period>, standalone and Sentinel only; in Cluster the store updates it
  itself, redis-store.ts): an admitted count or a charge sets the identity's score (ARGV[2n+5]) to
  its count in the period (ZADD, exact and idempotent), and the set expires when the period ends.
- <thresholds>: "<fraction>@<units>,..." (e.g. "0.8@80000,1@100000", units = the fraction of the
  limit rounded up, computed by the store): a count or charge taking the period's count from below
  <units> to <units> or more crosses that threshold; a counted call refused by this window crosses
  the one of fraction 1. Each crossing is reported once per period across every replica: the
  window's own hash keeps field "n<fraction>" = the start of the period last notified (the
  dedup key: same slot, expires with the hash at the period's end), read by the same HMGET.
  calendar_notify(i) records the crossings for reply.lua: crossed = { -(i), position, ... }
  (position from 1 in the list).

Defines: period_bounds(now_ms, period, offset_ms) -> start_ms, end_ms;
calendar_window(i, limit) -> fits (`cost` units left; a charge's units already added), remaining
(units left after this call when counting, else now; may be > 0 when it does not fit),
reset_at_ms (the period's end); calendar_count(i): writes window i (+cost when counting; a charge's
units were added by calendar_window).
]]

local DAY = 86400000
local FIXED = { minute = 60000, hour = 3600000, day = DAY, week = 7 * DAY }

-- Days since 1970-01-01 to (year, month 1-12, day of month): Howard Hinnant's civil_from_days
-- ("chrono-Compatible Low-Level Date Algorithms"), proleptic Gregorian.
local function civil(z)
  z = z + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m, d
end

local function month_days(y, m)
  if m == 2 then
    if (y % 4 == 0 and y % 100 ~= 0) or y % 400 == 0 then return 29 end
    return 28
  end
  if m == 4 or m == 6 or m == 9 or m == 11 then return 30 end
  return 31
end

-- The period containing now_ms, periods starting at local midnight (Mondays, the 1st) of the
-- fixed offset offset_ms east of UTC. Lua's % takes the divisor's sign, as calendar.ts's mod.
local function period_bounds(now_ms, period, offset_ms)
  local lt = now_ms + offset_ms
  local len = FIXED[period]
  if len then
    -- 1970-01-01 was a Thursday: weeks are aligned to the Monday four days later.
    local origin = 0
    if period == 'week' then origin = 4 * DAY end
    local start = lt - (lt - origin) % len
    return start - offset_ms, start + len - offset_ms
  end
  if period ~= 'month' then error('calendar: unknown period ' .. tostring(period)) end
  local days = math.floor(lt / DAY)
  local y, m, d = civil(days)
  local first = (days - d + 1) * DAY
  return first - offset_ms, first + month_days(y, m) * DAY - offset_ms
end

-- cal[i] = { start, counted, end, top, fractions, units, notified } of calendar window i (nil for
-- sliding windows); the last four only when its argument carries them.
local cal = {}
-- Threshold crossings of this call: -(window i), position of the threshold, ...
local crossed = {}

local function calendar_window(i, limit)
  local period, off, top, list = string.match(ARGV[2 * i + 4], '^(%a+):(-?%d+):?(%d*):?(.*)$')
  local start, stop = period_bounds(now, period, tonumber(off) * 60000)
  local w = { start, 0, stop }
  local h
  if list ~= '' then
    local fractions, units, fields = {}, {}, { 's', 'c' }
    for f, u in string.gmatch(list, '([^@,]+)@(%d+)') do
      fractions[#fractions + 1] = f
      units[#units + 1] = tonumber(u)
      fields[#fields + 1] = 'n' .. f
    end
    h = redis.call('HMGET', KEYS[i], unpack(fields))
    w[5], w[6], w[7] = fractions, units, h
  else
    h = redis.call('HMGET', KEYS[i], 's', 'c')
  end
  if top ~= '' and top ~= '0' then w[4] = KEYS[n + tonumber(top)] end
  local c = 0
  if tonumber(h[1]) == start then c = tonumber(h[2]) or 0 end
  if charging then c = c + added end
  w[2] = c
  cal[i] = w
  -- Reset is the next period's start whatever remains (SPEC §19).
  if c + cost <= limit then
    if count then return true, limit - c - cost, stop end
    return true, limit - c, stop
  end
  return false, math.max(0, limit - c), stop
end

local function calendar_count(i)
  local w = cal[i]
  local c = w[2]
  if count then c = c + cost end
  redis.call('HSET', KEYS[i], 's', w[1], 'c', c)
  redis.call('PEXPIREAT', KEYS[i], w[3])
  if w[4] then
    -- A new member (the set's first included) sets the expiry: the set ends with its period.
    if redis.call('ZADD', w[4], c, member) == 1 then redis.call('PEXPIREAT', w[4], w[3]) end
  end
end

-- Crossings of window i once the call is decided: from `before` to `after` units counted
-- (admitted or charged), or a refusal by this window (fits false: the threshold of fraction 1).
local function calendar_notify(i, admitted, fits)
  local w = cal[i]
  local fractions = w[5]
  if not fractions then return end
  local before, after = w[2], w[2]
  if admitted then
    if charging then before = w[2] - added elseif count then after = w[2] + cost end
  end
  for k = 1, #fractions do
    local u = w[6][k]
    local hit
    if admitted then hit = before < u and u <= after else hit = not fits and count and fractions[k] == '1' end
    if hit and tonumber(w[7][k + 2]) ~= w[1] then
      redis.call('HSET', KEYS[i], 'n' .. fractions[k], w[1])
      crossed[#crossed + 1] = -i
      crossed[#crossed + 1] = k
    end
  end
end
