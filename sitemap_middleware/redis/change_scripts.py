"""The Lua scripts of the change log in Redis (`changes`): claim, renew, release, commit,
trim; the outbox's (`change_outbox`): subscribe, deliver, acknowledge, give back, pending; mark.

Each runs atomically in Redis: a claim takes a section's lock and returns what a record
reads first; the commit applies every write of a record only while its lock is held, and
releases it in the same step.
"""

from __future__ import annotations

__all__ = [
    "ACKNOWLEDGE",
    "CLAIM",
    "COMMIT",
    "DELIVER",
    "GIVE_BACK",
    "MARK",
    "PENDING",
    "RELEASE",
    "RENEW",
    "SUBSCRIBE",
    "TRIM",
]

# KEYS: lock, state, digests, pass, missing, behind. ARGV: token, lock ms, prefetch limit.
# {0, PTTL} when held by another; else {1, state, missing count, digests | nil, pass | nil,
# behind count}.
CLAIM = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('PTTL', KEYS[1])}
end
local digests, passed = false, false
if redis.call('HLEN', KEYS[3]) <= tonumber(ARGV[3]) then
  digests = redis.call('HGETALL', KEYS[3])
  passed = redis.call('ZRANGE', KEYS[4], 0, -1)
end
return {1, redis.call('HGETALL', KEYS[2]), redis.call('SCARD', KEYS[5]), digests, passed,
  redis.call('SCARD', KEYS[6])}
"""

# KEYS: lock. ARGV: token, lock ms. 1 while the lock is this token's (renewed), else 0.
RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""

# KEYS: lock, wake. ARGV: token, lock ms. Deletes the lock while it is this token's, and
# wakes one waiter.
RELEASE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('RPUSH', KEYS[2], 1)
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
"""

# KEYS: lock, done, clock, wake. ARGV: token, lock ms, then commands, each as its argument
# count and name; 'LOG' appends (kind, loc, at in us, lastmod or page) quadruples to a
# stream under IDs from the shared clock (field 'x' only when not empty; a sequence stays
# under 2^32, so an ID is one int: `changes.position`). 1: committed; 2: committed before
# (a retried call); 0: lock lost.
COMMIT = """
local token = ARGV[1]
if redis.call('GET', KEYS[1]) ~= token then
  if redis.call('GET', KEYS[2]) == token then return 2 end
  return 0
end
local i, n = 3, #ARGV
while i <= n do
  local count, name = tonumber(ARGV[i]), ARGV[i + 1]
  if name == 'LOG' then
    local clock = redis.call('GET', KEYS[3])
    local ms, seq = -1, 0
    if clock then
      local dash = string.find(clock, '-', 1, true)
      ms, seq = tonumber(string.sub(clock, 1, dash - 1)), tonumber(string.sub(clock, dash + 1))
    end
    local stream = ARGV[i + 2]
    for j = i + 3, i + 1 + count, 4 do
      local at = math.max(0, math.floor(tonumber(ARGV[j + 2]) / 1000))
      if at > ms then ms, seq = at, (at == 0) and 1 or 0 else seq = seq + 1 end
      if seq > 4294967295 then ms, seq = ms + 1, 0 end
      local id = string.format('%.0f-%.0f', ms, seq)
      if ARGV[j + 3] == '' then
        redis.call('XADD', stream, id, 'k', ARGV[j], 'l', ARGV[j + 1], 'a', ARGV[j + 2])
      else
        redis.call('XADD', stream, id, 'k', ARGV[j], 'l', ARGV[j + 1], 'a', ARGV[j + 2], 'x', ARGV[j + 3])
      end
    end
    redis.call('SET', KEYS[3], string.format('%.0f-%.0f', ms, seq))
  else
    redis.call(name, unpack(ARGV, i + 2, i + 1 + count))
  end
  i = i + 2 + count
end
redis.call('DEL', KEYS[1], KEYS[4])
redis.call('SET', KEYS[2], token, 'PX', ARGV[2])
redis.call('RPUSH', KEYS[4], 1)
redis.call('PEXPIRE', KEYS[4], ARGV[2])
return 1
"""

# KEYS: horizon, a section's log. ARGV: the newest 'a' (us) of the entries to remove, the
# ID just past the last of them. The horizon raised to it (never lowered) before they go, in
# one step, so a reader never finds a change gone that the horizon does not cover. XTRIM
# MINID (Redis 6.2) frees whole stream nodes: ~50 us for 1,000 entries, where XDEL of the
# same IDs takes ~3 ms. How many were removed (fewer when another trim took some first).
TRIM = """
local horizon = redis.call('GET', KEYS[1])
if not horizon or tonumber(horizon) < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return redis.call('XTRIM', KEYS[2], 'MINID', ARGV[2])
"""

# What the outbox and the mark scripts share: stream IDs compared as numbers (an ID's
# ms and sequence are below 2^53), every section's stream found from the sections hash.
_STREAMS = """
local function parse(id)
  local dash = string.find(id, '-', 1, true)
  return tonumber(string.sub(id, 1, dash - 1)), tonumber(string.sub(id, dash + 1))
end
local function before(a, b)
  local am, as = parse(a)
  local bm, bs = parse(b)
  return am < bm or (am == bm and as < bs)
end
local function sections(key, prefix, scope)
  local found, flat = {}, redis.call('HGETALL', key)
  local below = scope and (scope .. '/')
  for i = 1, #flat, 2 do
    local name = flat[i + 1]
    local its = string.sub(name, 1, string.find(name, '\\n', 1, true) - 1)
    if not scope or its == scope or string.sub(its, 1, #below) == below then
      table.insert(found, {prefix .. ':' .. flat[i] .. ':log', name})
    end
  end
  return found
end
"""

# KEYS: outbox (the consumer's hash: pos, holder, until), clock. A cursor at the newest
# change, unless the consumer has one.
SUBSCRIBE = """
if redis.call('HEXISTS', KEYS[1], 'pos') == 0 then
  redis.call('HSET', KEYS[1], 'pos', redis.call('GET', KEYS[2]) or '0-0')
end
return 1
"""

# KEYS: outbox, sections, clock. ARGV: prefix, holder, now, lease, limit, scope ('' for every
# scope), has scope ('1'/'0'). {-1}: never subscribed; {0}: another holder's lease runs, or
# nothing waits (the cursor then passes every entry to the clock: other sites' changes on a
# shared log, never to be sent to this consumer); else {1, {id, section name, fields}...}: the
# oldest `limit` entries past the cursor, merged across sections by ID, leased to holder
# until now + lease.
DELIVER = (
    _STREAMS
    + """
local pos = redis.call('HGET', KEYS[1], 'pos')
if not pos then return {-1} end
local held, untl = redis.call('HGET', KEYS[1], 'holder'), redis.call('HGET', KEYS[1], 'until')
if held and held ~= ARGV[2] and untl and tonumber(untl) > tonumber(ARGV[3]) then return {0} end
local limit = tonumber(ARGV[5])
local found = {}
for _, section in ipairs(sections(KEYS[2], ARGV[1], ARGV[7] == '1' and ARGV[6] or nil)) do
  for _, entry in ipairs(redis.call('XRANGE', section[1], '(' .. pos, '+', 'COUNT', limit)) do
    table.insert(found, {entry[1], section[2], entry[2]})
  end
end
if #found == 0 then
  redis.call('HDEL', KEYS[1], 'holder', 'until')
  local clock = redis.call('GET', KEYS[3])
  if clock and before(pos, clock) then redis.call('HSET', KEYS[1], 'pos', clock) end
  return {0}
end
table.sort(found, function(a, b) return before(a[1], b[1]) end)
local reply = {1}
for i = 1, math.min(limit, #found) do reply[i + 1] = found[i] end
redis.call('HSET', KEYS[1], 'holder', ARGV[2], 'until', tostring(tonumber(ARGV[3]) + tonumber(ARGV[4])))
return reply
"""
)

# KEYS: outbox. ARGV: holder, last ID. 1: the cursor moved past last (never back) and the
# lease freed; 0: the lease is not holder's any more.
ACKNOWLEDGE = (
    _STREAMS
    + """
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then return 0 end
if before(redis.call('HGET', KEYS[1], 'pos'), ARGV[2]) then redis.call('HSET', KEYS[1], 'pos', ARGV[2]) end
redis.call('HDEL', KEYS[1], 'holder', 'until')
return 1
"""
)

# KEYS: outbox. ARGV: holder. The lease freed, if holder's; the cursor stays.
GIVE_BACK = """
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] then redis.call('HDEL', KEYS[1], 'holder', 'until') end
return 1
"""

# KEYS: outbox, sections. ARGV: prefix. How many entries (URLs and pages) of every section
# are past the cursor (0 when never subscribed); read in chunks, never all at once.
PENDING = (
    _STREAMS
    + """
local pos = redis.call('HGET', KEYS[1], 'pos')
if not pos then return 0 end
local count = 0
for _, section in ipairs(sections(KEYS[2], ARGV[1], nil)) do
  local start = '(' .. pos
  while true do
    local batch = redis.call('XRANGE', section[1], start, '+', 'COUNT', 1000)
    count = count + #batch
    if #batch < 1000 then break end
    start = '(' .. batch[#batch][1]
  end
end
return count
"""
)

# KEYS: clock, sections. ARGV: prefix, first ID that may be after `when`, when (seconds).
# The newest entry's ID and the oldest one's recorded after `when` ('' if none): a change's
# ID is at least its time, and only one recorded with a clock behind the log's precedes it.
MARK = (
    _STREAMS
    + """
local oldest = nil
local when = tonumber(ARGV[3])
for _, section in ipairs(sections(KEYS[2], ARGV[1], nil)) do
  local start, seeking = ARGV[2], true
  while seeking do
    local batch = redis.call('XRANGE', section[1], start, '+', 'COUNT', 16)
    for _, entry in ipairs(batch) do
      local fields = entry[2]
      for i = 1, #fields, 2 do
        if fields[i] == 'a' and tonumber(fields[i + 1]) / 1000000 > when then
          if not oldest or before(entry[1], oldest) then oldest = entry[1] end
          seeking = false
        end
      end
      if not seeking then break end
    end
    if seeking and #batch < 16 then break end
    if seeking then start = '(' .. batch[#batch][1] end
  end
end
return (redis.call('GET', KEYS[1]) or '') .. ':' .. (oldest or '')
"""
)
