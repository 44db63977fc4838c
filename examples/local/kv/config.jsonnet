// The memory cap comes from the config center, so `gaia config set kv.maxmemory=128mb`
// restarts the server with the new cap.
local gaia = import 'gaia.libsonnet';

{
  maxmemory: gaia.config('kv.maxmemory', '64mb'),
}
