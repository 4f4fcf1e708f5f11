#!/usr/bin/env node
/**
 * `npm run lock:fix` after any `npm install`. The registry this project installs from does not serve
 * some optional per-platform packages (other OS/CPU builds of @swc/core and anvil); `npm install`
 * then leaves them out of package-lock.json and `npm ci` refuses the lock ("Missing: ... from lock
 * file"). This adds a platform-only entry for each, which npm ci skips on other platforms.
 */
const fs = require('node:fs');
const path = process.argv[2] ?? 'package-lock.json';
const lock = JSON.parse(fs.readFileSync(path, 'utf8'));
const pkgs = lock.packages;
const CPUS = [
  ['amd64', 'x64'],
  ['x64', 'x64'],
  ['arm64', 'arm64'],
  ['arm-gnueabihf', 'arm'],
  ['ppc64', 'ppc64'],
  ['s390x', 's390x'],
  ['ia32', 'ia32'],
];
const OSES = ['darwin', 'linux', 'win32', 'freebsd', 'android'];
const added = new Map(); // entry key -> [parent key, entry]
for (const [key, node] of Object.entries(pkgs)) {
  for (const [dep, version] of Object.entries(node.optionalDependencies ?? {})) {
    const k = `node_modules/${dep}`;
    if (pkgs[k] || added.has(k)) continue;
    const short = dep.split('/').pop();
    const os = OSES.find((o) => short.includes(o));
    const cpu = CPUS.find(([c]) => short.includes(c))?.[1];
    if (!os || !cpu) continue; // not a platform package
    const entry = { version, cpu: [cpu] };
    if (node.dev) entry.dev = true;
    if (node.license) entry.license = node.license;
    if (short.includes('gnu')) entry.libc = ['glibc'];
    if (short.includes('musl')) entry.libc = ['musl'];
    entry.optional = true;
    entry.os = [os];
    added.set(k, [key, entry]);
  }
}
const out = {};
for (const [key, node] of Object.entries(pkgs)) {
  out[key] = node;
  for (const [k, [parent, entry]] of added) if (parent === key) out[k] = entry;
}
lock.packages = out;
fs.writeFileSync(path, JSON.stringify(lock, null, 2) + '\n');
console.log(
  `lock:fix added ${added.size} platform entries${added.size ? ': ' + [...added.keys()].map((k) => k.slice(13)).join(', ') : ''}`,
);
