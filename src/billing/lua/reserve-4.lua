--[[
  reserve: claim an idempotency key and reserve credits for one conversion, in one atomic step
  (DESIGN.md §3, §5). The checks run in this order and the first that answers wins.

  KEYS[1]  balance       string, available credits; its absence means "not loaded"
  KEYS[2]  reservations  hash conversionId -> credits held; its size is the running count
  KEYS[3]  epoch         string, rewritten whenever money moves while the account is not loaded
  KEYS[4]  idempotency   hash {conversion, fingerprint} with a TTL; untouched when ARGV[4] is ''

  ARGV[1]  conversionId
  ARGV[2]  credits to reserve, integer >= 0
  ARGV[3]  concurrency limit, integer
  ARGV[4]  request fingerprint, '' when the request carries no idempotency key
  ARGV[5]  idempotency key TTL in seconds, integer >= 1

  Returns
   {0, epoch}          not loaded: rebuild with load-3, passing this epoch ('' when none)
   {1, balance}        reserved; the available balance after it
   {2, conversionId}   replay: the key already names this conversion
  {-1, balance}        refused, insufficient credits; the available balance
  {-2, running}        refused, concurrency limit reached; the running count
  {-4}                 refused, idempotency key reused with another fingerprint
  error DUPLICATE      ARGV[1] already holds a reservation (a caller bug; nothing changed)
]]
local balance = redis.call('GET', KEYS[1])
if not balance then
  return {0, redis.call('GET', KEYS[3]) or ''}
end

local fingerprint = ARGV[4]
if fingerprint ~= '' then
  local claim = redis.call('HMGET', KEYS[4], 'conversion', 'fingerprint')
  if claim[1] then
    if claim[2] == fingerprint then
      return {2, claim[1]}
    end
    return {-4}
  end
end

if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return redis.error_reply('DUPLICATE conversion already holds a reservation')
end

local running = redis.call('HLEN', KEYS[2])
if running >= tonumber(ARGV[3]) then
  return {-2, running}
end

-- Free work (0 credits) is never refused for money, even on a negative balance.
local credits = tonumber(ARGV[2])
balance = tonumber(balance)
if credits > 0 and balance < credits then
  return {-1, balance}
end

local after = redis.call('DECRBY', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
if fingerprint ~= '' then
  redis.call('HSET', KEYS[4], 'conversion', ARGV[1], 'fingerprint', fingerprint)
  redis.call('EXPIRE', KEYS[4], ARGV[5])
end
return {1, after}
