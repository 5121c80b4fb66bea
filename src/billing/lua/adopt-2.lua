--[[
  adopt: hold a reservation the ledger has open but this copy lost (see audit.ts): a rebuild that
  read the ledger just before the reservation's row committed, or a release sent after a commit
  whose answer was lost. Takes the credits from the balance as reserve-4 did, without its checks:
  the credits were reserved already.

  KEYS[1]  balance       string, available credits; its absence means "not loaded"
  KEYS[2]  reservations  hash conversionId -> credits held

  ARGV[1]  conversionId
  ARGV[2]  credits, integer >= 0

  Returns
  {0}            not loaded: nothing changed (the next rebuild reads the ledger)
  {1, balance}   adopted; the available balance after it
  {2}            already held: nothing changed
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {0}
end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then
  return {2}
end
return {1, redis.call('DECRBY', KEYS[1], ARGV[2])}
