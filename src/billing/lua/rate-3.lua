--[[
  rate: per-account request rate limit, a fixed window opened by the first allowed request and
  lasting ARGV[2] ms. Only allowed requests are counted. An allowed request also reads the
  account's balance, so that a request that reserves nothing (a render) answers its balance
  without a second round trip.

  KEYS[1]  rate     string, requests allowed in the current window, expiring with the window
  KEYS[2]  balance  string, the account's available credits (read only)
  KEYS[3]  epoch    string, the account's load epoch (read only)

  ARGV[1]  requests allowed per window, integer (0 refuses everything)
  ARGV[2]  window length in milliseconds

  Returns
   {1, remaining, balance, epoch}
                      allowed; requests left in this window; the balance ('' when the account
                      is not loaded) and the epoch ('' when none)
  {-3, retryAfter}    refused, rate limited; whole seconds until the window ends (>= 1)
]]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local count = tonumber(redis.call('GET', KEYS[1]) or '0')

if count >= limit then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl == -1 then
    -- A counter without expiry would refuse forever: give it a window.
    redis.call('PEXPIRE', KEYS[1], window)
  end
  if ttl < 0 then
    ttl = window
  end
  return {-3, math.max(1, math.ceil(ttl / 1000))}
end

count = redis.call('INCR', KEYS[1])
if count == 1 or redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], window)
end
local held = redis.call('MGET', KEYS[2], KEYS[3])
return {1, limit - count, held[1] or '', held[2] or ''}
