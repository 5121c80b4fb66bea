--[[
  rate: per-account request rate limit, a fixed window opened by the first allowed request and
  lasting ARGV[1] ms. Only allowed requests are counted. One call decides one or more requests of
  the account, in order, each as if alone (the requests that arrived together in one process:
  one script run instead of one each). An allowed request also reads the account's balance, so
  that a request that reserves nothing (a render) answers its balance without a second round trip.

  KEYS[1]  rate     string, requests allowed in the current window, expiring with the window
  KEYS[2]  balance  string, the account's available credits (read only)
  KEYS[3]  epoch    string, the account's load epoch (read only)

  ARGV[1]  window length in milliseconds
  ARGV[2…] for each request, the requests allowed per window, integer (0 refuses everything)

  Returns the balance ('' when the account is not loaded) and the epoch ('' when none), then two
  values per request, in the order of ARGV:
   1, remaining       allowed; requests left in this window
  -3, retryAfter      refused, rate limited; whole seconds until the window ends (>= 1)
]]
local window = tonumber(ARGV[1])
-- The counter is read once and kept here; the requests allowed are added in one INCRBY at the
-- end, and the window's end is read only when a request is refused.
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
local allowed = 0
local ttl
local out = {}
for i = 2, #ARGV do
  local limit = tonumber(ARGV[i])
  if count >= limit then
    if ttl == nil then
      ttl = redis.call('PTTL', KEYS[1])
      if ttl == -1 then
        -- A counter without expiry would refuse forever: give it a window.
        redis.call('PEXPIRE', KEYS[1], window)
      end
      if ttl < 0 then
        -- no counter yet (or one just given its window): the window is whole
        ttl = window
      end
    end
    out[#out + 1] = -3
    out[#out + 1] = math.max(1, math.ceil(ttl / 1000))
  else
    count = count + 1
    allowed = allowed + 1
    out[#out + 1] = 1
    out[#out + 1] = limit - count
  end
end
if allowed > 0 then
  local now = redis.call('INCRBY', KEYS[1], allowed)
  -- A new counter opens the window; one left without expiry is given one.
  if now == allowed or redis.call('PTTL', KEYS[1]) == -1 then
    redis.call('PEXPIRE', KEYS[1], window)
  end
end
local held = redis.call('MGET', KEYS[2], KEYS[3])
table.insert(out, 1, held[2] or '')
table.insert(out, 1, held[1] or '')
return out
