local gaia = import 'gaia.libsonnet';

{
  replicas: gaia.config('hits.replicas', 2),
  greeting: gaia.config('hits.greeting', 'hello'),
}
