"""Key names, generation tokens, and the Lua scripts that read and write them in one round trip.

A cache key (`caching.resources`) embeds a *generation token* per section, which
`RedisStore.generation` writes with this process's last view of the section's generation::

    token("products", "9f2c.0")      # '\\x1eproducts\\x1f9f2c.0\\x1e'
    Template.parse("page|https://shop.example|products|\\x1eproducts\\x1f9f2c.0\\x1e|2|None")

Every script resolves a key's tokens against the generations *in Redis*, atomically with what
it does to the document, so a request never needs to know the current generations first
(one round trip), and a view gone stale can only cost a refused store, never a stale answer.
The control characters cannot occur in the rest of a key: its URLs are percent-encoded and
its version tokens are ``repr``s.

Redis holds, under the store's prefix:

- ``generations`` (hash): ``""`` the epoch (random; replaced by ``invalidate()`` for every
  section, and by a new Redis instance), ``<section>`` its generation (random per
  ``invalidate(section)``), ``":run"`` the run id of the instance the epoch belongs to.
- ``doc:<key>`` (hash, with the TTL): ``e`` ETag, ``m`` Last-Modified, ``s`` identity size,
  ``b`` the gzip body.
- ``lock:<key>`` (string, with the lock timeout): the leader's token and its progress.
- ``order`` (sorted set): document key → when it was stored (ms); ``sizes`` (hash):
  document key → bytes charged, and ``""`` → their total, for the byte budget.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = ["SCRIPTS", "Keys", "Template", "token"]

_MARK, _SEP = "\x1e", "\x1f"
_TOKEN = re.compile("\x1e([^\x1e\x1f]*)\x1f([^\x1e]*)\x1e")


def token(section: str, value: str) -> str:
    """A section's generation token as it goes into keys (``value``: ``<epoch>.<generation>``)."""
    return f"{_MARK}{section}{_SEP}{value}{_MARK}"


@dataclass(frozen=True, slots=True)
class Template:
    """A key split around its generation tokens: what a script needs to rebuild it."""

    parts: tuple[str, ...]  # one more than sections
    sections: tuple[str, ...]
    values: tuple[str, ...]  # the generations the key was built with

    @staticmethod
    @functools.lru_cache(maxsize=4096)
    def parse(key: str) -> Template:
        pieces = _TOKEN.split(key)
        return Template(tuple(pieces[0::3]), tuple(pieces[1::3]), tuple(pieces[2::3]))

    def args(self) -> list[str]:
        """The key as script arguments: the section count, the sections, the parts."""
        return [str(len(self.sections)), *self.sections, *self.parts]

    def render(self, values: tuple[str, ...]) -> str:
        """The key with ``values`` for its generations (as Redis names it, without marks)."""
        out = [self.parts[0]]
        for value, part in zip(values, self.parts[1:], strict=True):
            out += (value, part)
        return "".join(out)


class Keys:
    """The Redis key names under one prefix."""

    __slots__ = ("generations", "order", "prefix", "sizes")

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.generations = f"{prefix}generations"
        self.order = f"{prefix}order"
        self.sizes = f"{prefix}sizes"

    def doc(self, name: str) -> str:
        return f"{self.prefix}doc:{name}"

    def lock(self, name: str) -> str:
        return f"{self.prefix}lock:{name}"


# Rebuilds the key whose template starts at ARGV[at] with the generations in Redis:
# returns the key, its generation values, and where the arguments after the template start.
_RESOLVE = """
local function resolve(generations, at, candidate)
  local n = tonumber(ARGV[at])
  local fields = {''}
  for i = 1, n do fields[i + 1] = ARGV[at + i] end
  local got = redis.call('HMGET', generations, unpack(fields))
  local epoch = got[1]
  if not epoch then
    epoch = candidate
    redis.call('HSET', generations, '', epoch)
  end
  local values = {}
  local key = ARGV[at + n + 1]
  for i = 1, n do
    values[i] = epoch .. '.' .. (got[i + 1] or '0')
    key = key .. values[i] .. ARGV[at + n + 1 + i]
  end
  return key, values, at + 2 * n + 2
end
"""

# KEYS: generations. ARGV: prefix, candidate epoch, ETag and Last-Modified this process
# holds the body of ('' for none), template. {values} on a miss; {values, e, m, s} when the
# held body is the stored one; {values, e, m, s, body} otherwise.
_GET = """
local key, values = resolve(KEYS[1], 5, ARGV[2])
local doc = ARGV[1] .. 'doc:' .. key
local meta = redis.call('HMGET', doc, 'e', 'm', 's')
if not meta[1] then return {values} end
if ARGV[3] ~= '' and meta[1] == ARGV[3] and meta[2] == ARGV[4] then
  return {values, meta[1], meta[2], meta[3]}
end
return {values, meta[1], meta[2], meta[3], redis.call('HGET', doc, 'b')}
"""

# KEYS: generations, order, sizes. ARGV: prefix, candidate epoch, ttl ms, budget, charge,
# e, m, s, body, the generation values it was rendered under (space-separated), template.
# Stores only when no generation moved since those values were read; then drops expired
# entries, and the oldest ones while the total is over the budget. {values, 1 or 0}.
_SET = """
local key, values = resolve(KEYS[1], 11, ARGV[2])
if table.concat(values, ' ') ~= ARGV[10] then return {values, 0} end
local doc = ARGV[1] .. 'doc:' .. key
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local ttl = tonumber(ARGV[3])
local total = tonumber(redis.call('HGET', KEYS[3], '') or '0')
local function drop(name)
  total = total - tonumber(redis.call('HGET', KEYS[3], name) or '0')
  redis.call('HDEL', KEYS[3], name)
  redis.call('DEL', name)
end
local expired = string.format('%d', now - ttl)
for _, name in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', expired)) do drop(name) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', expired)
drop(doc)
redis.call('HSET', doc, 'e', ARGV[6], 'm', ARGV[7], 's', ARGV[8], 'b', ARGV[9])
redis.call('PEXPIRE', doc, ttl)
redis.call('ZADD', KEYS[2], string.format('%d', now), doc)
redis.call('HSET', KEYS[3], doc, ARGV[5])
total = total + tonumber(ARGV[5])
while total > tonumber(ARGV[4]) do
  local oldest = redis.call('ZPOPMIN', KEYS[2])
  if #oldest == 0 then break end
  drop(oldest[1])
end
if total < 0 then total = 0 end
redis.call('HSET', KEYS[3], '', string.format('%d', total))
return {values, 1}
"""

# KEYS: generations. ARGV: prefix, candidate epoch, lock ms, lock value, the token of a
# stalled leader being replaced ('' for none), template.
# {values, 'stored'}, {values, 'lead'}, or {values, 'held', lock value, its PTTL}.
_CLAIM = """
local key, values = resolve(KEYS[1], 6, ARGV[2])
if redis.call('EXISTS', ARGV[1] .. 'doc:' .. key) == 1 then return {values, 'stored'} end
local lock = ARGV[1] .. 'lock:' .. key
local held = redis.call('GET', lock)
if held and (ARGV[5] == '' or string.sub(held, 1, #ARGV[5] + 1) ~= ARGV[5] .. '|') then
  return {values, 'held', held, redis.call('PTTL', lock)}
end
redis.call('SET', lock, ARGV[4], 'PX', ARGV[3])
return {values, 'lead'}
"""

# KEYS: lock. ARGV: token, new value, lock ms. Renews the lock while it is this token's.
_RENEW = """
local held = redis.call('GET', KEYS[1])
if held and string.sub(held, 1, #ARGV[1] + 1) == ARGV[1] .. '|' then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
"""

# KEYS: lock. ARGV: token. Deletes the lock only while it is this token's.
_RELEASE = """
local held = redis.call('GET', KEYS[1])
if held and string.sub(held, 1, #ARGV[1] + 1) == ARGV[1] .. '|' then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

# KEYS: generations. ARGV: candidate epoch, then (field, new value) pairs; '' is the epoch.
_INVALIDATE = """
if not redis.call('HGET', KEYS[1], '') then redis.call('HSET', KEYS[1], '', ARGV[1]) end
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
"""

# KEYS: generations. ARGV: this instance's run id, a new epoch. Run (with EVAL, never
# cached ahead) by the first process to meet an instance without our scripts: a restart or
# a failover may have brought back documents from before invalidations it never heard, so
# a new instance starts a new epoch. 1 if it did.
ADOPT = """
local known = redis.call('HGET', KEYS[1], ':run')
if known == ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], ':run', ARGV[1])
if known or redis.call('HEXISTS', KEYS[1], '') == 1 then
  redis.call('HSET', KEYS[1], '', ARGV[2])
  return 1
end
return 0
"""

SCRIPTS = {
    "get": _RESOLVE + _GET,
    "set": _RESOLVE + _SET,
    "claim": _RESOLVE + _CLAIM,
    "renew": _RENEW,
    "release": _RELEASE,
    "invalidate": _INVALIDATE,
}
