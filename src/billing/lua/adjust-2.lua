--[[
  adjust: add a credit grant or refund (or, negative, a debit) to a loaded balance. When the
  account is not loaded nothing is applied: the ledger already holds the change and the next
  rebuild reads it; the epoch is stamped so a rebuild that read the ledger earlier is stale.

  KEYS[1]  balance  string, available credits; its absence means "not loaded"
  KEYS[2]  epoch    string, rewritten here when the account is not loaded

  ARGV[1]  delta, integer (may be negative)
  ARGV[2]  a fresh random epoch stamp
  ARGV[3]  epoch TTL in seconds

  Returns
  {0}            not loaded: nothing applied, epoch stamped
  {1, balance}   applied; the available balance after it
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[3])
  return {0}
end
return {1, redis.call('INCRBY', KEYS[1], ARGV[1])}
