--[[
prologue: the common head of every limiter script, prepended to it when the script is loaded
(gateway/ratelimit/redis-store.ts luaSource), with reply.lua appended after it: one chunk, so these
locals are the script's own. Time is Redis TIME (ms), never the caller's clock; Redis 7 replicates
scripts by effects, so reading TIME before writing is allowed.

Defines: now (epoch ms); count (ARGV[1] == "1": count the call if admitted), charging (ARGV[1] ==
"2": add ARGV[4] units to every window, never refused, SPEC §22 charge), neither: peek, writing
nothing; cost (ARGV[3]: units a call spends, SPEC §22; 1 without `cost`); added (ARGV[4]: the
units of a charge, else 0); n (windows: the pairs after ARGV[4], the identity's and then each
budget's; KEYS[1..n] are theirs, and any KEYS after them are top-caller sets, calendar.lua);
member (ARGV[2n+5]: the identity as a top-caller set's member, present only with such keys).
]]

-- Redis 6.2: opt in to effects replication (a no-op on 7, where it is the only mode).
if redis.replicate_commands then redis.replicate_commands() end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local count = ARGV[1] == '1'
local charging = ARGV[1] == '2'
local cost = tonumber(ARGV[3])
local added = tonumber(ARGV[4])
local n = math.floor((#ARGV - 4) / 2)
local member = ARGV[2 * n + 5]
