// Parameters of the web service. Replicas and feature flags live in the config
// center so they can change without a release.
local gaia = import 'gaia.libsonnet';

{
  image: 'registry.example.com/shop/web:1.4.2',
  replicas: gaia.config('web.replicas', 3),
  feature_flags: gaia.config('web.feature_flags', {
    new_checkout: false,
    recommendations: true,
    dark_mode: false,
  }),
  // Masked in `gaia diff` output because app.yaml lists it under secrets.
  session_secret: gaia.config('web.session_secret', 'change-me'),
  // The service tier sizes the instances. null: use the tenant's `tier` label from
  // the label center (main.jsonnet reads it, since only main knows the tenant);
  // `--set tier=premium` overrides it.
  tier: null,
  sizes: {
    standard: { cpu: '500m', memory: '1Gi' },
    premium: { cpu: '2', memory: '4Gi' },
  },
  clicks_topic: 'web.clicks',
  profiles_table: 'profiles',
  log_level: 'info',
}
