"""The Lua scripts of the change log in Redis (`changes`): claim, renew, release, commit.

Each runs atomically in Redis: a claim takes a section's lock and returns what a record
reads first; the commit applies every write of a record only while its lock is held, and
releases it in the same step.
"""

from __future__ import annotations

__all__ = ["CLAIM", "COMMIT", "RELEASE", "RENEW"]

# KEYS: lock, state, digests, pass, missing. ARGV: token, lock ms, prefetch limit.
# {0, PTTL} when held by another; else {1, state, missing count, digests | nil, pass | nil}.
CLAIM = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('PTTL', KEYS[1])}
end
local digests, passed = false, false
if redis.call('HLEN', KEYS[3]) <= tonumber(ARGV[3]) then
  digests = redis.call('HGETALL', KEYS[3])
  passed = redis.call('ZRANGE', KEYS[4], 0, -1)
end
return {1, redis.call('HGETALL', KEYS[2]), redis.call('SCARD', KEYS[5]), digests, passed}
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
# count and name; 'LOG' appends (kind, loc, at in us) triples to a stream under IDs from
# the shared clock. 1: committed; 2: committed before (a retried call); 0: lock lost.
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
    for j = i + 3, i + 1 + count, 3 do
      local at = math.max(0, math.floor(tonumber(ARGV[j + 2]) / 1000))
      if at > ms then ms, seq = at, (at == 0) and 1 or 0 else seq = seq + 1 end
      local id = string.format('%.0f-%.0f', ms, seq)
      redis.call('XADD', stream, id, 'k', ARGV[j], 'l', ARGV[j + 1], 'a', ARGV[j + 2])
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
