// gaia.libsonnet: the gaia Jsonnet library.
//
// It is compiled into the gaia binary and always importable, from any file of an app
// spec, as `local gaia = import 'gaia.libsonnet';` (no file on disk is needed, and a
// file of that name in the app directory does not replace it).
//
// Reads of the config center and the label center go through gaia.config and
// gaia.label. Each read is recorded (kind, key, value, revision, and whether the
// default was used) and listed under `reads:` in the rendered document, so a change of
// a value read can trigger a re-render and the render cache knows what it depends on.
// Only reads whose result is actually used are recorded (Jsonnet is lazy).
{
  // The version of this library's interface.
  version:: '1',

  // gaia.config(key, default=null): the value of config-center key `key` (a string such
  // as 'hdfs.replication') as seen by the render's tenant, or `default` when the key is
  // not set. `default` must be plain data (no functions).
  //   replication: gaia.config('hdfs.replication', 3),
  config(key, default=null)::
    assert std.isString(key) : 'gaia.config: key must be a string, got ' + std.type(key);
    std.parseJson(std.native('gaia_config')(key, std.manifestJsonMinified(default))),

  // gaia.label(kind, name, key, default=null): the label `key` of the object `name` of
  // `kind` ('node', 'app' or 'tenant') in the label center, or `default` when absent.
  //   zone: gaia.label('tenant', 'default', 'zone', 'z1'),
  label(kind, name, key, default=null)::
    assert std.isString(kind) && std.isString(name) && std.isString(key) :
           'gaia.label: kind, name and key must be strings';
    std.parseJson(std.native('gaia_label')(kind, name, key, std.manifestJsonMinified(default))),

  // gaia.serviceName(app, role, tenant='default'): the DNS name under which the
  // instances of `role` are discovered: '<role>.<app>.<tenant>.gaia'. `app` is either
  // the app name or the `app` object main.jsonnet receives (whose tenant is then used
  // unless `tenant` is given).
  //   gaia.serviceName(app, 'namenode')  // 'namenode.hdfs.default.gaia'
  serviceName(app, role, tenant=null)::
    local a = $._app(app, tenant);
    '%s.%s.%s.gaia' % [role, a.name, a.tenant],

  // gaia.instanceName(app, role, ordinal, tenant='default'): the DNS name of one
  // instance: '<ordinal>.<role>.<app>.<tenant>.gaia' (docs/spec.md section 6). Stateful roles keep ordinals.
  instanceName(app, role, ordinal, tenant=null)::
    assert std.isNumber(ordinal) && ordinal >= 0 && std.floor(ordinal) == ordinal :
           'gaia.instanceName: ordinal must be an integer >= 0';
    local a = $._app(app, tenant);
    '%d.%s.%s.%s.gaia' % [ordinal, role, a.name, a.tenant],

  // gaia.replicas(app, role, default): the replica count `gaia scale` set for `role`
  // (app.scale), or `default` when it set none. A template whose checks or other values
  // depend on a role's count reads the count through it, so a scale is rendered, and
  // refused when the template says so, as a submit of that count would be:
  //   local datanodes = gaia.replicas(app, 'datanode', config.datanodes);
  replicas(app, role, default)::
    assert std.isObject(app) : 'gaia.replicas: app must be the app object main.jsonnet receives';
    assert std.isString(role) : 'gaia.replicas: role must be a string';
    local scale = std.get(app, 'scale', {});
    if std.objectHas(scale, role) then scale[role] else default,

  _app(app, tenant)::
    if std.isObject(app) then
      { name: app.name, tenant: if tenant != null then tenant else std.get(app, 'tenant', 'default') }
    else
      assert std.isString(app) : 'gaia: app must be the app name or the app object';
      { name: app, tenant: if tenant != null then tenant else 'default' },

  // Quantities. gaia.cores(n): cpu as a string, whole cores ('2') or millicores for
  // fractions (gaia.cores(0.5) == '500m'). gaia.millicores(n) == n + 'm'.
  // gaia.gi(n) / gaia.mi(n): binary memory and disk sizes ('8Gi', '512Mi').
  cores(n)::
    assert std.isNumber(n) && n >= 0 : 'gaia.cores: n must be a number >= 0';
    if std.floor(n) == n then std.toString(n) else '%dm' % std.floor(n * 1000 + 0.5),
  millicores(n)::
    assert std.isNumber(n) && n >= 0 && std.floor(n) == n : 'gaia.millicores: n must be an integer >= 0';
    '%dm' % n,
  gi(n)::
    assert std.isNumber(n) && n >= 0 : 'gaia.gi: n must be a number >= 0';
    if std.floor(n) == n then '%dGi' % n else '%dMi' % std.floor(n * 1024 + 0.5),
  mi(n)::
    assert std.isNumber(n) && n >= 0 && std.floor(n) == n : 'gaia.mi: n must be an integer >= 0';
    '%dMi' % n,

  // gaia.role(fields): a role with the usual defaults (a service with one replica, no
  // env or labels, three restarts one second apart), overridden by `fields` with `+`
  // (so a nested object in `fields` replaces the default one as a whole).
  //   namenode: gaia.role({ image: 'apache/hadoop:3.3.4', resources: { cpu: '2', memory: '8Gi' } }),
  role(fields={})::
    {
      kind: 'service',
      replicas: 1,
      env: {},
      labels: {},
      restart: { retry_times: 3, backoff: '1s' },
    } + fields,

  // gaia.service(fields) and gaia.batch(fields): gaia.role with the kind set. Batch
  // roles restart less eagerly (backoff 10s) by default.
  service(fields={}):: $.role({ kind: 'service' } + fields),
  batch(fields={}):: $.role({ kind: 'batch', restart: { retry_times: 3, backoff: '10s' } } + fields),

  // gaia.port(name, port=0, protocol='TCP'): a port entry; port 0 asks the node to
  // allocate one.
  port(name, port=0, protocol='TCP'):: { name: name, port: port, protocol: protocol },

  // gaia.volume(name, size, mount, class='hdd', iops=0): a volume entry; roles with
  // volumes are stateful (each instance ordinal keeps its volume).
  volume(name, size, mount, class='hdd', iops=0)::
    { name: name, size: size, mount: mount, class: class, iops: iops },
}
